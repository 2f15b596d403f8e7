"""``StepResult``: what ``Course.step()`` returns (the same instance every call).

Four dataclass fields plus read-only mapping access to the result of every per-step
component, by name (spec, "Reading results"). It is deliberately *not* a
``collections.abc.Mapping``: it stays a dataclass, so generic tree utilities
(Lightning's ``apply_to_collection``, dm-tree) walk its fields.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass

import warp as wp

__all__ = ["StepResult", "FIELD_ENTRIES"]

# field -> the component name whose result it is
FIELD_ENTRIES = {"events": "progress", "contacts": "collision", "frame": "localizer"}


@dataclass
class StepResult:
    """The per-step results of a course.

    Attributes:
        events: ``ProgressEvents`` of the ``progress`` component (``res["progress"]``), or None.
        contacts: ``Contacts`` of the ``collision`` component (``res["collision"]``), or None.
        frame: ``TrackFrame`` of the ``localizer`` component (``res["localizer"]``), or None.
        valid: ``[E] int32`` the generator result's ``valid`` (generator state: never write
            it; it is live, so read it before a regeneration).

    ``res[name]`` is the result of the per-step component ``name`` (a component that
    overrides ``Component.step``); ``keys()``, ``items()``, ``values()``, ``get()`` and
    ``in`` work as on a dict, and so do ``dict(res)`` and ``**res``. ``iter(res)`` raises
    TypeError (use ``keys()``), and ``bool(res)`` is True.

    Raises:
        KeyError: ``res[name]`` for a name that is no entry (the message lists the entries).
    """

    events: object = None
    contacts: object = None
    frame: object = None
    valid: object = None

    # Not iterable: a mapping-like dataclass that iterated would be taken for a sequence.
    __iter__ = None

    def __post_init__(self):
        # positional construction and dataclasses.replace: the entries of the four fields only
        entries = {FIELD_ENTRIES[f]: getattr(self, f) for f in FIELD_ENTRIES if getattr(self, f) is not None}
        object.__setattr__(self, "_entries", entries)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        entry = FIELD_ENTRIES.get(name)
        entries = self.__dict__.get("_entries")
        if entry is not None and entries is not None:
            # a field assignment updates its entry on this instance only; None removes it
            if value is None:
                entries.pop(entry, None)
            else:
                entries[entry] = value

    @classmethod
    def _from_entries(cls, entries: dict, valid) -> "StepResult":
        """The result of a course: ``entries`` name -> result, in execution order."""
        res = cls(**{f: entries.get(n) for f, n in FIELD_ENTRIES.items()}, valid=valid)
        object.__setattr__(res, "_entries", dict(entries))
        return res

    # -- read-only mapping access ------------------------------------------------------
    def __getitem__(self, name: str):
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise KeyError(f"{name!r} is no entry of this StepResult; entries: {list(self._entries)}") from None

    def __contains__(self, name) -> bool:
        try:
            return name in self._entries
        except TypeError:
            return False

    def keys(self):
        """Names of the per-step components, in execution order."""
        return self._entries.keys()

    def values(self):
        return self._entries.values()

    def items(self):
        return self._entries.items()

    def get(self, name: str, default=None):
        """``res[name]``, or ``default`` when ``name`` is no entry."""
        return self._entries.get(name, default)

    # -- copies ----------------------------------------------------------------------------
    def __copy__(self) -> "StepResult":
        """A shallow copy: the same entries, in a mapping of its own (assigning a field of the
        copy changes the copy only)."""
        return type(self)._from_entries(self._entries, self.valid)

    def __deepcopy__(self, memo) -> "StepResult":
        """A deep copy: each entry and ``valid`` copied as :meth:`clone` copies them (a
        ``wp.array`` with ``wp.clone``, which ``copy.deepcopy`` cannot copy), anything else
        with ``copy.deepcopy``; an object ``memo`` holds already is used as it is. Lightning's
        ``apply_to_collection`` deep-copies a dataclass with its fields in ``memo``: those stay
        shared and the other entries are cloned."""
        def deep(name, value):
            if id(value) in memo:
                return memo[id(value)]
            try:
                copied = _clone_entry(name, value)
            except TypeError:
                copied = copy.deepcopy(value, memo)
            memo[id(value)] = copied
            return copied

        return type(self)._from_entries({name: deep(name, v) for name, v in self._entries.items()},
                                        deep("valid", self.valid))

    def clone(self) -> "StepResult":
        """A deep copy of every entry and of ``valid`` (allocates: call it outside a graph).

        Copies a ``wp.array`` with ``wp.clone``, an object with a ``clone()`` method with it,
        and a dataclass by cloning its ``wp.array`` fields (other fields are shared).

        Raises:
            TypeError: an entry of another kind (the message names the component).
        """
        entries = {name: _clone_entry(name, value) for name, value in self._entries.items()}
        valid = wp.clone(self.valid) if isinstance(self.valid, wp.array) else copy.deepcopy(self.valid)
        return type(self)._from_entries(entries, valid)


def _clone_entry(name: str, value):
    if value is None:  # a per-step component without a result
        return None
    if isinstance(value, wp.array):
        return wp.clone(value)
    if callable(getattr(value, "clone", None)):
        return value.clone()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(
            value,
            **{
                f.name: wp.clone(getattr(value, f.name))
                for f in dataclasses.fields(value)
                if f.init and isinstance(getattr(value, f.name), wp.array)
            },
        )
    raise TypeError(
        f"StepResult.clone() cannot copy the entry of component {name!r} ({type(value).__name__}): "
        "give its result a clone() method, or make it a wp.array or a dataclass of wp.arrays"
    )
