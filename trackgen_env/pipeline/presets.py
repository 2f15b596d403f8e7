"""Presets: a config's keyword arguments in, a :class:`PipelineSpec` out.

The keyword arguments are the fields of ``TrackGenConfig`` / ``GateGenConfig`` (checked by
the same rules, ``stages.track.check_track`` / ``stages.gates.check_gates``).
"""

from __future__ import annotations

from .spec import PipelineSpec
from .stages import gates as _gates
from .stages import track as _track

__all__ = ["track", "gates"]


def track(**kwargs) -> PipelineSpec:
    """The closed-track pipeline: the spec of ``TrackGenConfig(**kwargs)``.

    Raises:
        TypeError / ValueError: an unknown or bad field (see ``TrackGenConfig``).
    """
    unknown = sorted(set(kwargs) - set(_track.TRACK_DEFAULTS))
    if unknown:
        raise TypeError(f"presets.track() got unknown fields {unknown}; the fields are {list(_track.TRACK_DEFAULTS)}")
    v = _track.check_track({**_track.TRACK_DEFAULTS, **kwargs})
    settings = {k: v[k] for k in _track.SETTINGS}
    stages = _track.CENTERLINE_STAGES if v["source"] == "centerline" else _track.TRACK_STAGES
    if v["banking"] > 0.0:
        at = stages.index("resample") + 1
        stages = stages[:at] + ("banking",) + stages[at:]
    # the params of the stages present (a given centreline has no band or layout stage)
    params = {name: v[field] for field, name in _track.TRACK_PARAMS.items() if name.split(".")[0] in stages}
    return PipelineSpec("track", v["num_envs"], v["device"], settings, stages, params)


def gates(*, gate_width: float = 0.0, **kwargs) -> PipelineSpec:
    """The gate-course pipeline: the spec of ``GateGenConfig(gate_width=gate_width, **kwargs)``.

    ``gate_width`` defaults to 0, which ``Course.gates`` refuses: pass one, or randomize
    ``"gate_frames.gate_width"`` with a lo > 0.

    Raises:
        TypeError / ValueError: an unknown or bad field (see ``GateGenConfig``).
    """
    kwargs["gate_width"] = gate_width
    unknown = sorted(set(kwargs) - set(_gates.GATES_DEFAULTS))
    if unknown:
        raise TypeError(f"presets.gates() got unknown fields {unknown}; the fields are {list(_gates.GATES_DEFAULTS)}")
    v = _gates.check_gates({**_gates.GATES_DEFAULTS, **kwargs})
    settings = {k: v[k] for k in _gates.SETTINGS}
    stages = _gates.GATE_STAGES if v["source"] == "procedural" else _gates.LAYOUT_STAGES
    # a given layout has no layout stage: only the openings are parameters
    params = {name: v[field] for field, name in _gates.GATES_PARAMS.items() if name.split(".")[0] in stages}
    return PipelineSpec("gates", v["num_envs"], v["device"], settings, stages, params)
