"""The built-in stages, one module per family (``track``, ``gates``), the given courses'
(``given``) and the track's optional ``banking``."""

from . import banking, gates, given, track

__all__ = ["track", "gates", "given", "banking"]
