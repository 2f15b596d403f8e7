"""Generators of the two course families, registered with ``pipeline.build``."""

from ..pipeline import register_family
from .gates import GateGenConfig, GateGenerator
from .track import TrackGenConfig, TrackGenerator

register_family("track", TrackGenerator)
register_family("gates", GateGenerator)

__all__ = ["TrackGenConfig", "TrackGenerator", "GateGenConfig", "GateGenerator"]
