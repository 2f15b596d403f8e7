"""The bounds of a generator's parameters that grids are sized from (one reader of the spec).

``HeightFieldBake`` sizes its square from the largest course a generator can draw, and
the presets' grid-resolution checks read the same bound: both go through
:func:`construction_bound`, the one place that reads a generator's spec for it.
"""

from __future__ import annotations

__all__ = ["construction_bound"]


def construction_bound(source, name: str, bound: str = "hi") -> float | None:
    """The largest (``bound="hi"``) or smallest (``"lo"``) value of the parameter ``name``
    (``"layout.size"``, ``"band.width"``) a generation of ``source`` can use: a randomizer's
    construction bound when one draws it, else the construction value.

    Args:
        source: a built generator (its ``spec``) or a ``PipelineSpec``.

    Returns:
        The value, or None when ``source`` has no spec or its spec no such parameter (a
        given centreline has no ``"layout.size"``).
    """
    spec = getattr(source, "spec", source)
    read = getattr(spec, "construction_value", None)
    if read is None:
        return None
    try:
        return float(read(name, bound))
    except KeyError:
        return None
