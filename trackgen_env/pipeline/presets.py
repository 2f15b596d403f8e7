"""Presets: a config's keyword arguments in, a :class:`PipelineSpec` out."""

from __future__ import annotations

from .gates_config import GateGenConfig
from .spec import PipelineSpec
from .track_config import TrackGenConfig

__all__ = ["track", "gates"]


def track(**kwargs) -> PipelineSpec:
    """The closed-track pipeline: ``TrackGenConfig(**kwargs).to_spec()``.

    Raises:
        TypeError / ValueError: a bad config value (see :class:`TrackGenConfig`).
    """
    return TrackGenConfig(**kwargs).to_spec()


def gates(*, gate_width: float = 0.0, **kwargs) -> PipelineSpec:
    """The gate-course pipeline: ``GateGenConfig(gate_width=gate_width, **kwargs).to_spec()``.

    ``gate_width`` defaults to 0, which ``Course.gates`` refuses: pass one, or randomize
    ``"gate_frames.gate_width"`` with a lo > 0.
    """
    return GateGenConfig(gate_width=gate_width, **kwargs).to_spec()
