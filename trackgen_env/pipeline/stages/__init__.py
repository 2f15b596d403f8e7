"""The built-in stages, one module per family (``track``, ``gates``), the given courses' (``given``) and the
circuit-like track layout (``circuit``)."""

from . import circuit, gates, given, track

__all__ = ["track", "gates", "given", "circuit"]
