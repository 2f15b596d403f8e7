"""The built-in stages, one module per family (``track``, ``gates``), the given courses' (``given``),
the circuit-like track layout (``circuit``), the race-like gate layout (``race_gates``) and the
track's optional ``banking``; the track family's curve math (``track_curves``), self-intersection
checks (``track_checks``) and result, commit and settings (``track_family``), and the gate
family's (``gates_family``)."""

from . import banking, circuit, gates, gates_family, given, race_gates, track, track_checks, track_curves, track_family

__all__ = ["track", "track_curves", "track_checks", "track_family", "gates", "gates_family", "given", "circuit",
           "race_gates", "banking"]
