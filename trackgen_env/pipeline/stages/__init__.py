"""The built-in stages, one module per family (``track``, ``gates``) and the given courses' (``given``)."""

from . import gates, given, track

__all__ = ["track", "gates", "given"]
