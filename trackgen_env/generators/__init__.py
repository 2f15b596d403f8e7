"""The two course families' configs and public generators (thin wrappers of ``pipeline.build``),
and loaders of given courses (circuit CSVs, gate layouts)."""

from .gates import GateGenConfig, GateGenerator
from .track import TrackGenConfig, TrackGenerator

__all__ = ["TrackGenConfig", "TrackGenerator", "GateGenConfig", "GateGenerator"]
