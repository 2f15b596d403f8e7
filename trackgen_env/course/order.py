"""Checking a course's components and putting them in execution order (before any attach)."""

from __future__ import annotations

from collections.abc import Sequence

from ..tools.component import check_input_conflicts, check_name, missing_methods

__all__ = ["as_component_list", "sort_components"]


def as_component_list(components, what: str = "components") -> list:
    """``components`` as a list, refusing a single component or a non-sequence.

    Raises:
        TypeError: not a list / tuple (a single component included: wrap it in a list).
    """
    if isinstance(components, (str, bytes)) or not isinstance(components, Sequence):
        hint = " (a single component: wrap it in a list)" if callable(getattr(components, "attach", None)) else ""
        raise TypeError(f"{what} must be a sequence of components, got {type(components).__name__}{hint}")
    return list(components)


def sort_components(components: list) -> list:
    """Check ``components`` and return them in a stable topological order of after / source.

    The order is Kahn's algorithm that always takes the earliest given component whose
    ``after`` and ``source`` names are placed, so an already-ordered list is kept as is.

    Raises (before anything is attached; nothing is changed):
        TypeError: a name that is not a non-empty str; a component lacking one of
            attach, bind, on_generate, step, reset.
        ValueError: two components with one name; a component attached to another course
            or context; an after / source naming no component of the list; a cycle; two
            declarations of one input with different (dtype, slots).
    """
    names = [check_name(c) for c in components]
    for c in components:
        missing = missing_methods(c)
        if missing:
            raise TypeError(
                f"component {c.name!r} ({type(c).__name__}) lacks {missing}: "
                "subclass trackgen_env.tools.Component for the defaults"
            )
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"two components are named {name!r}: names are unique within a course")
        seen.add(name)
    for c in components:
        if getattr(c, "context", None) is not None:
            raise ValueError(f"component {c.name!r} is already attached to another course or context: build a new instance")
    deps = {}
    for c in components:
        after = getattr(c, "after", ())
        if isinstance(after, str) or not all(isinstance(a, str) for a in after):
            raise TypeError(f"component {c.name!r}: after must be a sequence of names, got {after!r}")
        source = getattr(c, "source", None)
        wanted = list(after) + ([source] if source is not None else [])
        for dep in wanted:
            if dep not in seen:
                kind = "source" if dep == source else "after"
                raise ValueError(
                    f"component {c.name!r} names {dep!r} in its {kind}, which is no component of this course; "
                    f"components: {names}"
                )
        deps[c.name] = set(wanted)
    order, placed, remaining = [], set(), list(components)
    while remaining:
        for i, c in enumerate(remaining):
            if deps[c.name] <= placed:
                order.append(remaining.pop(i))
                placed.add(c.name)
                break
        else:
            cycle = {c.name: sorted(deps[c.name] - placed) for c in remaining}
            raise ValueError(f"the after / source names of these components form a cycle: {cycle}")
    inputs, declarers = {}, {}
    for c in order:
        specs = tuple(getattr(c, "inputs", ()))
        check_input_conflicts(inputs, declarers, c.name, specs)
        for spec in specs:
            inputs.setdefault(spec.name, spec)
            declarers.setdefault(spec.name, []).append(c.name)
    return order
