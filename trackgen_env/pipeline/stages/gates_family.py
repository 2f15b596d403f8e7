"""The gate family: its result, the masked commit of the staged rows, and the settings of
``GateGenConfig`` with their checks and fit rules, in one place (``check_gates``;
``presets.gates`` compiles them to a :class:`~trackgen_env.pipeline.spec.PipelineSpec`).
"""

from __future__ import annotations

import math

import warp as wp

from ...core.checks import check_float, check_int, resolve_device
from ...core.types import GateLayout, GateResult
from ..stage import Family, check_settings
from .gates import DEFAULT_GATE_HEIGHT, MAX_GATES, GateFrames, Layout, env_gate_shape

__all__ = ["GATES", "GATES_DEFAULTS", "GATES_PARAMS", "SETTINGS", "check_gates", "spec_fields"]

wp.set_module_options({"enable_backward": False})

# Fit rules of a procedural course (check_gates), from a Monte-Carlo sweep of the checks over
# num_gates 3..64 and the jitter ranges: at a bound about half or more of the first draws
# still pass that check, so with the default 8 retries >= 99 % of envs are valid; the
# defaults meet each rule (the start and turn rules with little room).
FIT_SPACING = 1.15  # mean leg / required spacing
FIT_START = 1.35  # size sin(pi / n) (1 - radius_jitter / 2) / the regular loop's bound 2 start_clearance cos(pi / n)
FIT_CLIMB = 0.5  # least share of first draws whose every leg climbs within max_climb (uniform altitudes)
FIT_TURN_RADIAL = 1.2  # [rad] turn added per radius_jitter, times the angular step
FIT_TURN_ANGLE = 0.5  # turn added per angle_jitter, as a fraction of the angular step
FIT_TURN_MARGIN = 0.003  # [rad] headroom over the regular loop's turn (float32 positions)



# --- the commit ----------------------------------------------------------------------------
@wp.kernel
def _commit(
    envs_per_thread: int,
    lanes: int,
    mask: wp.array(dtype=wp.int32),
    use_mask: int,
    # staged
    s_position: wp.array2d(dtype=wp.vec3),
    s_orientation: wp.array2d(dtype=wp.quat),
    s_start_position: wp.array(dtype=wp.vec3),
    s_start_orientation: wp.array(dtype=wp.quat),
    s_num_gates: wp.array(dtype=wp.int32),
    s_valid: wp.array(dtype=wp.int32),
    width: wp.array(dtype=float),
    height: wp.array(dtype=float),
    # committed
    gate_position: wp.array2d(dtype=wp.vec3),
    gate_orientation: wp.array2d(dtype=wp.quat),
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    num_gates: wp.array(dtype=wp.int32),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    valid: wp.array(dtype=wp.int32),
    generation: wp.array(dtype=wp.int32),
):
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, valid.shape[0])):
        if use_mask != 0 and mask[e] == 0:
            continue
        for j in range(lane, gate_position.shape[1], lanes):
            gate_position[e, j] = s_position[e, j]
            gate_orientation[e, j] = s_orientation[e, j]
        if lane == 0:
            gate_width[e] = wp.max(width[e], 0.0)
            gate_height[e] = wp.max(height[e], 0.0)
            num_gates[e] = s_num_gates[e]
            start_position[e] = s_start_position[e]
            start_orientation[e] = s_start_orientation[e]
            valid[e] = s_valid[e]
            generation[e] = generation[e] + 1


# --- the family: result, commit, settings ----------------------------------------------------
_RESULT = ("gate_position", "gate_orientation", "gate_width", "gate_height", "num_gates", "start_position",
           "start_orientation", "valid", "generation")


class _Gates(Family):
    name, config_name = "gates", "GateGenConfig"
    commit_reads = ("gate_position", "gate_orientation", "start_position", "start_orientation", "num_gates",
                    "gate_width", "gate_height")

    def check(self, spec):
        check_settings(spec, SETTINGS)
        check_gates(spec_fields(spec), fit=False)

    def result_fields(self, spec):
        E, G = spec.num_envs, spec.settings["num_gates"]
        return {"gate_position": ((E, G), wp.vec3, "zeros"), "gate_orientation": ((E, G), wp.quat, "identity"),
                "gate_width": ((E,), wp.float32, "zeros"), "gate_height": ((E,), wp.float32, "zeros"),
                "num_gates": ((E,), wp.int32, "zeros"), "start_position": ((E,), wp.vec3, "zeros"),
                "start_orientation": ((E,), wp.quat, "identity"), "valid": ((E,), wp.int32, "zeros"),
                "generation": ((E,), wp.int32, "zeros")}

    def make_result(self, arrays):
        return GateResult(**{n: arrays[n] for n in _RESULT})

    def layout(self, spec):
        return GateLayout(num_envs=spec.num_envs, max_gates=spec.settings["num_gates"])

    def commit(self, ctx, result, mask, use_mask):
        f, r = ctx.fields, result
        dim, per, lanes = env_gate_shape(ctx)
        wp.launch(
            _commit, dim,
            inputs=[per, lanes, mask, use_mask, f["gate_position"], f["gate_orientation"], f["start_position"],
                    f["start_orientation"], f["num_gates"], ctx.valid, f["gate_width"], f["gate_height"]],
            outputs=[getattr(r, name) for name in _RESULT], device=ctx.device,
        )


GATES = _Gates()

# --- settings: the checks of GateGenConfig, in one place -------------------------------------
#: config field -> the ``"stage.param"`` it sets (the other fields are settings)
GATES_PARAMS = {"size": "layout.size", "radius_jitter": "layout.radius_jitter", "angle_jitter": "layout.angle_jitter",
                "max_turn": "layout.max_turn", "altitude_min": "layout.altitude_min",
                "altitude_max": "layout.altitude_max", "gate_width": "gate_frames.gate_width",
                "gate_height": "gate_frames.gate_height"}
_DECLARED = {**Layout.full_params(), **GateFrames.full_params()}
#: every config field's default (a param's default is its declared one; gate_height None: see GateGenConfig)
GATES_DEFAULTS = {
    "num_envs": 1, "device": None,
    **{field: _DECLARED[name].default for field, name in GATES_PARAMS.items()}, "gate_height": None,
    "min_gate_spacing": 1.5, "max_climb": 1.0, "start_clearance": 1.0, "ground_clearance": 0.2, "max_retries": 8,
    "source": "procedural", "num_gates": 7,
}
SETTINGS = tuple(k for k in GATES_DEFAULTS if k not in GATES_PARAMS and k not in ("num_envs", "device"))


def spec_fields(spec) -> dict:
    """The config fields of a gates spec (settings, and the construction values of its params)."""
    params = {f: spec.params[n] for f, n in GATES_PARAMS.items() if n in spec.params}
    return {**GATES_DEFAULTS, "num_envs": spec.num_envs, "device": spec.device, **params, **spec.settings}


def check_gates(fields: dict, *, fit: bool = True) -> dict:
    """Check the fields of a gates config and fill the derived ones (``GateGenConfig``'s rules).

    Args:
        fields: every field of ``GateGenConfig`` by name.
        fit: also check the construction values of the parameters against the config's
            ranges and the fit rules (a procedural source). A spec's construction values are
            checked against their declared bounds instead (``build``).

    Returns:
        the fields, normalised (``device`` resolved, ``gate_height`` filled in).

    Raises:
        TypeError / ValueError: a field of the wrong type or range, or (``fit``) a
            procedural combination that breaks a fit rule.
    """
    v = dict(fields)
    v["num_envs"] = check_int("num_envs", v["num_envs"], lo=1)
    v["device"] = resolve_device(v["device"])
    v["num_gates"] = check_int("num_gates", v["num_gates"], lo=3, hi=MAX_GATES)
    if fit:
        v["size"] = check_float("size", v["size"], lo=0.0, lo_open=True)
        v["radius_jitter"] = check_float("radius_jitter", v["radius_jitter"], lo=0.0, hi=0.5)
        v["angle_jitter"] = check_float("angle_jitter", v["angle_jitter"], lo=0.0, hi=0.7)
        v["altitude_min"] = check_float("altitude_min", v["altitude_min"], lo=0.0, lo_open=True)
        v["altitude_max"] = check_float("altitude_max", v["altitude_max"], lo=0.0, lo_open=True)
        if v["altitude_max"] < v["altitude_min"]:
            raise ValueError(f"altitude_max must be >= altitude_min = {v['altitude_min']}, got {v['altitude_max']}")
        v["gate_width"] = check_float("gate_width", v["gate_width"], lo=0.0)
        if v["gate_height"] is None:
            v["gate_height"] = v["gate_width"] if v["gate_width"] > 0.0 else DEFAULT_GATE_HEIGHT
        v["gate_height"] = check_float("gate_height", v["gate_height"], lo=0.0, lo_open=True)
    v["min_gate_spacing"] = check_float("min_gate_spacing", v["min_gate_spacing"], lo=0.0, lo_open=True)
    if fit:
        v["max_turn"] = check_float("max_turn", v["max_turn"], lo=0.0, lo_open=True)
        if v["max_turn"] >= math.pi:
            raise ValueError(f"max_turn must be < pi (a gate cannot face a U-turn), got {v['max_turn']}")
    v["max_climb"] = check_float("max_climb", v["max_climb"], lo=0.0, lo_open=True)
    v["start_clearance"] = check_float("start_clearance", v["start_clearance"], lo=0.0, lo_open=True)
    v["ground_clearance"] = check_float("ground_clearance", v["ground_clearance"], lo=0.0)
    if v["source"] not in ("procedural", "layout"):
        raise ValueError(f"source must be 'procedural' or 'layout', got {v['source']!r}")
    procedural = v["source"] == "procedural"
    v["max_retries"] = check_int("max_retries", v["max_retries"], lo=2 if procedural else 0, hi=64)
    if not (fit and procedural):
        return v
    if v["max_turn"] <= 2.0 * math.pi / v["num_gates"]:
        raise ValueError(
            f"max_turn must be > 2 pi / num_gates = {2.0 * math.pi / v['num_gates']:.6g} rad (a closed loop of "
            f"{v['num_gates']} gates turns by 2 pi in all), got {v['max_turn']}"
        )
    lowest = v["ground_clearance"] + 0.5 * v["gate_height"]
    if v["altitude_max"] < lowest:
        raise ValueError(
            f"altitude_max must be >= ground_clearance + gate_height / 2 = {lowest} "
            f"(the gate's bottom edge must clear the ground), got {v['altitude_max']}"
        )
    _check_fit(v)
    return v


def _check_fit(v: dict) -> None:
    """Refuse a combination of fields whose courses would rarely pass the checks (the
    bounds, measured in ``benchmarks/valid_rates.py``, keep >= 99 % of envs valid)."""
    n = v['num_gates']
    # the typical leg: the regular loop's chord shortened by half of each jitter
    leg = v['size'] * math.sin(math.pi / n) * (1.0 - 0.5 * v['radius_jitter']) * (1.0 - 0.5 * v['angle_jitter'])
    leg_formula = "size * sin(pi / num_gates) * (1 - radius_jitter / 2) * (1 - angle_jitter / 2)"
    what = f"the mean leg {leg_formula} = {leg:.6g} m"
    spacing = max(v['min_gate_spacing'], 2.0 * math.hypot(v['gate_width'], v['gate_height']))
    if leg < FIT_SPACING * spacing:
        raise ValueError(
            f"{what} must be >= {FIT_SPACING} * max(min_gate_spacing, 2 * hypot(gate_width, gate_height)) = "
            f"{FIT_SPACING * spacing:.6g} m (gates that far apart rarely fit: raise size, or lower num_gates, "
            f"the jitters, min_gate_spacing or the openings), got size={v['size']}, num_gates={n}, "
            f"min_gate_spacing={v['min_gate_spacing']}, gate_width={v['gate_width']}, "
            f"gate_height={v['gate_height']}"
        )
    # the start sits start_clearance behind gate 0 along its normal: in the regular loop of
    # chord c the last gate is start_clearance from it where c = 2 start_clearance cos(pi / n)
    chord = v['size'] * math.sin(math.pi / n) * (1.0 - 0.5 * v['radius_jitter'])
    start = 2.0 * v['start_clearance'] * math.cos(math.pi / n)
    if chord < FIT_START * start:
        raise ValueError(
            f"size * sin(pi / num_gates) * (1 - radius_jitter / 2) = {chord:.6g} m must be >= {FIT_START} * 2 * "
            f"start_clearance * cos(pi / num_gates) = {FIT_START * start:.6g} m (the start, start_clearance behind "
            f"gate 0, must stay start_clearance from the last gate: lower start_clearance or raise size), got "
            f"start_clearance={v['start_clearance']}, size={v['size']}, num_gates={n}"
        )
    # climb: two uniform altitudes in a range ``span`` differ by at most ``t * span`` with
    # probability 1 - (1 - t)^2; all n legs pass with probability FIT_CLIMB where t is
    span = v['altitude_max'] - max(v['altitude_min'], v['ground_clearance'] + 0.5 * v['gate_height'])
    share = 1.0 - math.sqrt(1.0 - FIT_CLIMB ** (1.0 / n))
    if span * share > v['max_climb'] * leg:
        raise ValueError(
            f"the drawn altitude range altitude_max - max(altitude_min, ground_clearance + gate_height / 2) = "
            f"{span:.6g} m must be <= max_climb * {leg_formula} / (1 - sqrt(1 - {FIT_CLIMB} ** (1 / num_gates))) "
            f"= {v['max_climb'] * leg / share:.6g} m (legs that short rarely climb it: narrow the altitude range "
            f"or raise max_climb or size), got altitude_min={v['altitude_min']}, altitude_max={v['altitude_max']}, "
            f"max_climb={v['max_climb']}"
        )
    step = 2.0 * math.pi / n
    turn = (step + FIT_TURN_MARGIN + FIT_TURN_RADIAL * v['radius_jitter'] / step
            + FIT_TURN_ANGLE * v['angle_jitter'] * step)
    if v['max_turn'] < turn:
        raise ValueError(
            f"max_turn must be >= 2 pi / num_gates + {FIT_TURN_MARGIN} + {FIT_TURN_RADIAL} * radius_jitter / "
            f"(2 pi / num_gates) + "
            f"{FIT_TURN_ANGLE} * angle_jitter * 2 pi / num_gates = {turn:.6g} rad (the regular loop's turn and "
            f"what the jitters add to it: raise max_turn, use more gates, or lower the jitters), got "
            f"max_turn={v['max_turn']}, num_gates={n}, radius_jitter={v['radius_jitter']}, "
            f"angle_jitter={v['angle_jitter']}"
        )
