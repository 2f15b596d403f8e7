"""Checking a course's components and putting them in execution order (before any attach)."""

from __future__ import annotations

from collections.abc import Sequence

from ..tools.contract import validate_declarations, validate_structure

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
    validate_structure(components)
    deps = {c.name: set(getattr(c, "after", ())) | ({c.source} if getattr(c, "source", None) is not None else set())
            for c in components}
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
        validate_declarations(inputs, declarers, c.name, specs)
        for spec in specs:
            inputs.setdefault(spec.name, spec)
            declarers.setdefault(spec.name, []).append(c.name)
    return order
