"""The built-in stages, one module per family (``track``, ``gates``), the given courses' (``given``),
the circuit-like track layout (``circuit``) and the track's optional ``banking``."""

from . import banking, circuit, gates, given, track

__all__ = ["track", "gates", "given", "circuit", "banking"]
