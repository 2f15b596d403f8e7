"""Which course drives a generator: one course per generator (spec, "Ownership and lifetime").

A course registers itself once its construction completes (:func:`take_over`); the course it
replaces over the same generator object refuses its calls from then on. The registry holds
weak references, so a course that is collected leaves it. It lives below the course layer so
that ``tools.check_component`` can refuse a generator that a course drives.
"""

from __future__ import annotations

import weakref

__all__ = ["driver_of", "take_over"]

# id(generator) -> weakref to the course that drives it
_DRIVERS: dict[int, weakref.ref] = {}


def driver_of(generator):
    """The live course that drives ``generator``, or None."""
    ref = _DRIVERS.get(id(generator))
    course = ref() if ref is not None else None
    return course if course is not None and course.generator is generator else None


def take_over(course) -> None:
    """Make ``course`` the one course driving ``course.generator``; the older one (if any) gets
    ``_taken_over = True`` and refuses its calls."""
    key = id(course.generator)
    older = driver_of(course.generator)
    if older is not None and older is not course:
        older._taken_over = True

    def forget(r, key=key):
        if _DRIVERS.get(key) is r:
            del _DRIVERS[key]

    _DRIVERS[key] = weakref.ref(course, forget)
