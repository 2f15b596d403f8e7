"""Presets: a config's keyword arguments in, a :class:`PipelineSpec` out.

The keyword arguments are the fields of ``TrackGenConfig`` / ``GateGenConfig`` (checked by
the same rules, ``stages.track_family.check_track`` / ``stages.gates_family.check_gates``).
"""

from __future__ import annotations

import math

from ..core.checks import check_float, check_int, check_range, resolve_device
from .spec import PipelineSpec
from .stage import check_ordered
from .stages import circuit as _circuit
from .stages import gates as _gates
from .stages import gates_family as _gates_family
from .stages import race_gates as _race
from .stages import track as _track
from .stages import track_family as _track_family

__all__ = ["track", "gates", "circuit", "race_gates", "CIRCUIT_STAGES"]

#: the circuit family's stages: the track stages with ``circuit_layout`` for ``layout``
CIRCUIT_STAGES = ("band", "circuit_layout", "spline", "resample", "checks", "start")


def track(**kwargs) -> PipelineSpec:
    """The closed-track pipeline: the spec of ``TrackGenConfig(**kwargs)``.

    Raises:
        TypeError / ValueError: an unknown or bad field (see ``TrackGenConfig``).
    """
    unknown = sorted(set(kwargs) - set(_track_family.TRACK_DEFAULTS))
    if unknown:
        raise TypeError(f"presets.track() got unknown fields {unknown}; "
                        f"the fields are {list(_track_family.TRACK_DEFAULTS)}")
    v = _track_family.check_track({**_track_family.TRACK_DEFAULTS, **kwargs})
    settings = {k: v[k] for k in _track_family.SETTINGS}
    stages = _track.CENTERLINE_STAGES if v["source"] == "centerline" else _track.TRACK_STAGES
    if v["banking"] > 0.0:
        at = stages.index("resample") + 1
        stages = stages[:at] + ("banking",) + stages[at:]
    # the params of the stages present (a given centreline has no band or layout stage)
    params = {name: v[field] for field, name in _track_family.TRACK_PARAMS.items() if name.split(".")[0] in stages}
    if "layout" in stages:
        params["layout.num_turns"] = v["num_control_points"]  # every control point bends the loop
    return PipelineSpec("track", v["num_envs"], v["device"], settings, stages, params)


def gates(*, gate_width: float = 0.0, **kwargs) -> PipelineSpec:
    """The gate-course pipeline: the spec of ``GateGenConfig(gate_width=gate_width, **kwargs)``.

    ``gate_width`` defaults to 0, which ``Course.gates`` refuses: pass one, or randomize
    ``"gate_frames.gate_width"`` with a lo > 0.

    Raises:
        TypeError / ValueError: an unknown or bad field (see ``GateGenConfig``).
    """
    kwargs["gate_width"] = gate_width
    unknown = sorted(set(kwargs) - set(_gates_family.GATES_DEFAULTS))
    if unknown:
        raise TypeError(f"presets.gates() got unknown fields {unknown}; "
                        f"the fields are {list(_gates_family.GATES_DEFAULTS)}")
    v = _gates_family.check_gates({**_gates_family.GATES_DEFAULTS, **kwargs})
    settings = {k: v[k] for k in _gates_family.SETTINGS}
    stages = _gates.GATE_STAGES if v["source"] == "procedural" else _gates.LAYOUT_STAGES
    # a given layout has no layout stage: only the openings are parameters
    params = {name: v[field] for field, name in _gates_family.GATES_PARAMS.items() if name.split(".")[0] in stages}
    return PipelineSpec("gates", v["num_envs"], v["device"], settings, stages, params)


def race_gates(*, num_envs: int = 1, device=None, num_gates: int = 6, start_clearance: float = 1.0,
               min_gate_spacing: float = 0.5, max_retries: int = 16, **layout) -> PipelineSpec:
    """The race-like gate family: courses shaped like real drone-racing layouts, at any scale.

    The gate stages with ``race_layout`` (``stages.race_gates``) in place of ``layout`` and
    ``gate_frames``, and ``race_checks`` in place of ``checks``: every length in gate sizes, the
    (square) gate size drawn per course in ``[size_lo, size_hi]``, legs of about 2.8-8 gate
    sizes, turns up to hairpins, climbs and dives, and on ``split_s_share`` of the courses a
    split-S (a gate stacked above the next, flown the opposite way). The gate family's checks
    hold (ground, start and gate clearance, climb, turn), the split-S pair exempt from spacing
    and climb between its two gates. :mod:`trackgen_env.core.gate_stats` compares the courses with
    real layouts (``benchmarks/gate_stats.py --family race``).

    Args:
        num_envs: ``E``, >= 1. device: the Warp device (None: the default).
        num_gates: gates per course, in [4, 64].
        start_clearance: [m] the start's distance before gate 0 (and from every gate), > 0.
        min_gate_spacing: [m] the least horizontal distance of two gates besides the size-relative
            ``2 sqrt(2)`` gate sizes (the split-S pair excepted), > 0.
        max_retries: the retry bound, in [2, 64].
        layout: construction values of the ``"race_layout.*"`` parameters by their short name
            (``size_lo=0.4``, ``split_s_share=0.5``; see ``stages.race_gates.RaceGatesLayout.params``).

    Returns:
        a gates :class:`PipelineSpec` (``build`` it, or pass it to ``GatesVectorEnv(gates=...)``).

    Raises:
        TypeError: an unknown ``layout`` name. ValueError: a value out of its range.
    """
    declared = _race.RaceGatesLayout.full_params()
    unknown = sorted(k for k in layout if f"race_layout.{k}" not in declared)
    if unknown:
        raise TypeError(f"presets.race_gates() got unknown layout parameters {unknown}; they are "
                        f"{[n.split('.', 1)[1] for n in declared]}")
    num_envs = check_int("num_envs", num_envs, lo=1)
    device = resolve_device(device)
    params = {name: p.default for name, p in declared.items()}
    params.update({f"race_layout.{k}": check_float(k, v) for k, v in layout.items()})
    settings = {**{k: _gates_family.GATES_DEFAULTS[k] for k in _gates_family.SETTINGS},
                "num_gates": check_int("num_gates", num_gates, lo=4, hi=_gates.MAX_GATES),
                "start_clearance": check_float("start_clearance", start_clearance, lo=0.0, lo_open=True),
                "min_gate_spacing": check_float("min_gate_spacing", min_gate_spacing, lo=0.0, lo_open=True),
                "max_retries": check_int("max_retries", max_retries, lo=2, hi=64)}
    return PipelineSpec("gates", num_envs, device, settings, _race.RACE_STAGES, params)


def circuit(*, width: float = 1.2, num_envs: int = 1, device=None, width_range=None, point_spacing: float = 0.25,
            min_turn_radius_factor: float = 1.0, max_retries: int = 16, **layout) -> PipelineSpec:
    """The circuit-like track family: long straights, slow and fast corners, hairpins,
    chicanes, at any scale (``width`` sets it).

    The track stages with the ``circuit_layout`` stage (``stages.circuit``: a filleted star
    polygon with a main straight, every length in band widths) in place of ``layout``. At
    the defaults >= 99 % of the envs are valid and >= 90 % of the tracks have every
    statistic of :mod:`trackgen_env.core.stats` inside the range of the 19 real circuits of the
    TUMFTM racetrack database (Heilmeier et al., 2020): loops of ~270-410 widths (p5-p95),
    ~60 % of the lap on straights, corner radii from 0.55 to ~80 widths, a loop's tightest
    corner 0.57 / 0.72 / 1.3 widths at p5 / median / p95 where the real circuits' is 0.45 /
    0.67 / 11 at min / median / max (``docs/courses.md``).

    Args:
        width: [m] full width of the band (``"band.width"``), > 0: 1.2 for a 1:10 RC car,
            12 for a full-size circuit. The same seed draws the same shape at any width.
        num_envs: ``E``, >= 1. device: the Warp device (None: the default).
        width_range: ``(lo, hi)`` [m] to draw ``"band.width"`` per env, per generation (the
            capacities are sized for ``hi``, the point spacing for ``lo``); None: ``width`` only.
            Randomize ``"band.width"`` through this argument, not ``with_randomize``, or the
            loops wider than the capacities allow are rejected.
        point_spacing: centreline point spacing in widths (of the narrowest band), in [0.05, 0.5].
        min_turn_radius_factor: the checks' least turn radius in half widths, >= 1 (1: half
            the width, the geometric limit, where the inner edge closes into a point; the
            layout's fillets stay at >= ``min_corner_radius`` = 0.55 widths, and real
            hairpins reach 0.45-0.7 widths by :mod:`trackgen_env.core.stats`).
        max_retries: the retry bound, in [12, 64].
        layout: construction values of the ``"circuit_layout.*"`` parameters by their short
            name (``corners_hi=12``, ``wiggle=0.2``; see ``stages.circuit.CircuitLayout.params``).

    Returns:
        a track :class:`PipelineSpec` (``build`` it, or pass it to ``Course.track``).

    Raises:
        TypeError: an unknown ``layout`` name; a non-number value; a ``width_range`` that is no
            ``(lo, hi)`` pair (:func:`~trackgen_env.core.checks.check_range`).
        ValueError: a value out of its range (``build`` checks the layout's declared bounds); a
            ``*_lo`` above its ``*_hi``.
    """
    declared = _circuit.CircuitLayout.full_params()
    unknown = sorted(k for k in layout if f"circuit_layout.{k}" not in declared)
    if unknown:
        raise TypeError(f"presets.circuit() got unknown layout parameters {unknown}; they are "
                        f"{[n.split('.', 1)[1] for n in declared]}")
    num_envs = check_int("num_envs", num_envs, lo=1)
    device = resolve_device(device)
    width = check_float("width", width, lo=0.0, lo_open=True)
    w_lo, w_hi = (check_range("width_range", width_range, 0.0, lo_open=True, none=True, what=" in metres")
                  or (width, width))
    spacing = check_float("point_spacing", point_spacing, lo=0.05, hi=0.5)
    params = {name: p.default for name, p in declared.items()}
    params.update({f"circuit_layout.{k}": check_float(k, v) for k, v in layout.items()})
    q = {n.split(".", 1)[1]: v for n, v in params.items()}
    for lo, hi in _circuit.CircuitLayout.ordered:  # before the capacities read them
        check_ordered("presets.circuit()", lo, hi, q[lo], q[hi])
    max_loop = q["max_length"] * w_hi
    settings = {
        "point_spacing": spacing * w_lo,
        "num_control_points": _circuit.control_point_capacity(q["corners_hi"], q["max_length"], q["straight_step"],
                                                              q["arc_step"], q["arc_chord"]),
        "max_loop_length": max_loop,
        "max_points": math.ceil(max_loop / (spacing * w_lo)) + 2,
        "min_turn_radius_factor": check_float("min_turn_radius_factor", min_turn_radius_factor, lo=1.0),
        "max_retries": check_int("max_retries", max_retries, lo=12, hi=64),
        "source": "procedural",
        "max_input_points": 0,
    }
    spec = PipelineSpec("track", num_envs, str(device), settings, CIRCUIT_STAGES, {"band.width": width, **params})
    return spec if width_range is None else spec.with_randomize({"band.width": (w_lo, w_hi)})
