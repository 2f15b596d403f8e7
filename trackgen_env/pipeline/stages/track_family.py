"""The track family: its result, the masked commit of the staged rows, and the settings of
``TrackGenConfig`` with their checks, in one place (``check_track``; ``presets.track``
compiles them to a :class:`~trackgen_env.pipeline.spec.PipelineSpec`).
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from ...core import env_loop
from ...core.checks import check_float, check_int, resolve_device
from ...core.polyline import X_AXIS, Y_AXIS
from ...core.types import TrackLayout, TrackResult
from ..stage import Family, check_settings
from .banking import MAX_BANK, Banking
from .track import POINT_FIELDS, Band, Layout
from .track_curves import flat_loop_bound

__all__ = ["TRACK", "TRACK_DEFAULTS", "TRACK_PARAMS", "SETTINGS", "MAX_POINTS", "MAX_CONTROL_POINTS", "check_track",
           "check_num_turns", "spec_fields"]

wp.set_module_options({"enable_backward": False})

MAX_POINTS = 1 << 16  # the largest centreline capacity
MAX_CONTROL_POINTS = 4096  # the most control points of a spec (a config: 20)


# --- the commit ----------------------------------------------------------------------------
@wp.func
def _degenerate_row(
    e: int,
    j: int,
    centerline: wp.array2d(dtype=wp.vec3),
    tangent: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
):
    """Row ``j`` of env ``e`` where nothing usable was drawn: a degenerate, invalid track at the origin."""
    centerline[e, j] = wp.vec3()
    tangent[e, j] = X_AXIS
    normal[e, j] = Y_AXIS
    arc_length[e, j] = 0.0
    curvature[e, j] = 0.0
    half_width[e, j] = 0.0


@wp.kernel
def _commit(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    use_mask: int,
    lanes: int,
    # staged
    s_centerline: wp.array2d(dtype=wp.vec3),
    s_tangent: wp.array2d(dtype=wp.vec3),
    s_normal: wp.array2d(dtype=wp.vec3),
    s_arc_length: wp.array2d(dtype=float),
    s_curvature: wp.array2d(dtype=float),
    s_half_width: wp.array2d(dtype=float),
    s_num_points: wp.array(dtype=wp.int32),
    s_loop_length: wp.array(dtype=float),
    s_start_position: wp.array(dtype=wp.vec3),
    s_start_orientation: wp.array(dtype=wp.quat),
    s_valid: wp.array(dtype=wp.int32),
    # committed
    centerline: wp.array2d(dtype=wp.vec3),
    tangent: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    valid: wp.array(dtype=wp.int32),
    generation: wp.array(dtype=wp.int32),
):
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, valid.shape[0])):
        if use_mask != 0 and mask[e] == 0:
            continue
        count = s_num_points[e]
        ok = s_valid[e]
        if count < 1:
            ok = 0
        for j in range(lane, centerline.shape[1], lanes):
            if count < 1:
                _degenerate_row(e, j, centerline, tangent, normal, arc_length, curvature, half_width)
            else:
                centerline[e, j] = s_centerline[e, j]
                tangent[e, j] = s_tangent[e, j]
                normal[e, j] = s_normal[e, j]
                arc_length[e, j] = s_arc_length[e, j]
                curvature[e, j] = s_curvature[e, j]
                half_width[e, j] = s_half_width[e, j]
        if lane == 0:
            num_points[e] = wp.max(count, 0)
            loop_length[e] = s_loop_length[e]
            valid[e] = ok
            generation[e] = generation[e] + 1
            start_position[e] = s_start_position[e]
            start_orientation[e] = s_start_orientation[e]


@wp.kernel
def _commit_in_place(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    use_mask: int,
    lanes: int,
    s_valid: wp.array(dtype=wp.int32),
    # committed (the stages wrote the rows in place)
    centerline: wp.array2d(dtype=wp.vec3),
    tangent: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    generation: wp.array(dtype=wp.int32),
):
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, valid.shape[0])):
        if use_mask != 0 and mask[e] == 0:
            continue
        count = num_points[e]
        if count < 1:
            for j in range(lane, centerline.shape[1], lanes):
                _degenerate_row(e, j, centerline, tangent, normal, arc_length, curvature, half_width)
        if lane == 0:
            ok = s_valid[e]
            if count < 1:
                ok = 0
                num_points[e] = 0  # every lane read count before: each wrote its rows of the same case
            valid[e] = ok
            generation[e] = generation[e] + 1


# --- the family: result, commit, settings ----------------------------------------------------
_RESULT = ("centerline", "tangent", "normal", "arc_length", "curvature", "half_width", "num_points", "loop_length",
           "start_position", "start_orientation", "valid", "generation")


class _Track(Family):
    name, config_name = "track", "TrackGenConfig"
    commit_reads = ("centerline", "tangent", "normal", "arc_length", "curvature", "half_width", "num_points",
                    "loop_length", "start_position", "start_orientation")
    in_place_fields = commit_reads

    def check(self, spec):
        check_settings(spec, SETTINGS)
        check_track(spec_fields(spec), fit=False)
        check_num_turns(spec)

    def result_fields(self, spec):
        E, P = spec.num_envs, spec.settings["max_points"]
        per_point = {n: ((E, P), wp.vec3 if n in ("centerline", "tangent", "normal") else wp.float32, "zeros")
                     for n in POINT_FIELDS}
        return {**per_point, "num_points": ((E,), wp.int32, "zeros"), "loop_length": ((E,), wp.float32, "zeros"),
                "start_position": ((E,), wp.vec3, "zeros"), "start_orientation": ((E,), wp.quat, "identity"),
                "valid": ((E,), wp.int32, "zeros"), "generation": ((E,), wp.int32, "zeros")}

    def make_result(self, arrays):
        return TrackResult(**{n: arrays[n] for n in _RESULT})

    def layout(self, spec):
        s = spec.settings
        elevated = "layout.elevation" in spec.params and spec.construction_value("layout.elevation", "hi") > 0
        declared = None
        if not elevated and s["source"] == "procedural":
            # a loop of more than max_points points is rejected too: count = round(length / spacing)
            declared = min(s["max_loop_length"], (s["max_points"] + 0.5) * s["point_spacing"])
        return TrackLayout(num_envs=spec.num_envs, max_points=s["max_points"], max_loop_length=declared)

    def commit(self, ctx, result, mask, use_mask):
        f, r = ctx.fields, result
        n = env_loop.lanes(ctx.device, ctx.settings["max_points"])
        threads, per = env_loop.shape(ctx.device, ctx.num_envs)
        if ctx.in_place:
            wp.launch(
                _commit_in_place, (threads, n), inputs=[per, mask, use_mask, n, ctx.valid],
                outputs=[getattr(r, name) for name in POINT_FIELDS] + [r.num_points, r.valid, r.generation],
                device=ctx.device,
            )
            return
        wp.launch(
            _commit, (threads, n),
            inputs=[per, mask, use_mask, n] + [f[name] for name in POINT_FIELDS]
                   + [f["num_points"], f["loop_length"], f["start_position"], f["start_orientation"], ctx.valid],
            outputs=[getattr(r, name) for name in _RESULT], device=ctx.device,
        )


TRACK = _Track()

# --- settings: the checks of TrackGenConfig, in one place ------------------------------------
#: config field -> the ``"stage.param"`` it sets (the other fields are settings)
TRACK_PARAMS = {"size": "layout.size", "radius_jitter": "layout.radius_jitter", "angle_jitter": "layout.angle_jitter",
                "elevation": "layout.elevation", "width": "band.width", "banking": "banking.max_bank"}
_DECLARED = {**Band.full_params(), **Layout.full_params(), **Banking.full_params()}
#: every config field's default (a param's default is its declared one)
TRACK_DEFAULTS = {
    "num_envs": 1, "device": None,
    **{field: _DECLARED[name].default for field, name in TRACK_PARAMS.items()},
    "point_spacing": 0.1, "num_control_points": 12, "max_loop_length": None, "max_points": None,
    "min_turn_radius_factor": 2.0, "max_retries": 12, "source": "procedural", "max_input_points": 0,
}
SETTINGS = tuple(k for k in TRACK_DEFAULTS if k not in TRACK_PARAMS and k not in ("num_envs", "device"))


def spec_fields(spec) -> dict:
    """The config fields of a track spec (settings, and the construction values of its params)."""
    params = {f: spec.params[n] for f, n in TRACK_PARAMS.items() if n in spec.params}
    return {**TRACK_DEFAULTS, "num_envs": spec.num_envs, "device": spec.device, **params, **spec.settings}


def check_num_turns(spec) -> None:
    """Refuse a ``"layout.num_turns"`` construction value or randomize range beyond the
    ``num_control_points`` capacity (values are floored: below ``capacity + 1``).

    Raises:
        ValueError: naming the value and the capacity.
    """
    name, capacity = "layout.num_turns", spec.settings["num_control_points"]
    # as the float32 array holds it: 12.9999999 is stored (and drawn) as 13
    if name in spec.params and np.float32(spec.construction_value(name, "hi")) >= capacity + 1:
        raise ValueError(f"stage 'layout': {name} (construction value or randomize hi) must be < num_control_points "
                         f"+ 1 = {capacity + 1} (the capacity, floored), got {spec.construction_value(name, 'hi')}")



def check_track(fields: dict, *, fit: bool = True) -> dict:
    """Check the fields of a track config and fill the derived ones (``TrackGenConfig``'s rules).

    Args:
        fields: every field of ``TrackGenConfig`` by name.
        fit: also check the construction values of the parameters (``size``, ``width``,
            the jitters, ``elevation``, ``banking``) against the config's documented ranges and against
            each other. A spec's construction values are checked against their declared
            bounds instead (``build``), so a spec may reach beyond the config's ranges (it
            then warns at construction when few envs are valid).

    Returns:
        the fields, normalised (``device`` resolved, ``max_loop_length`` / ``max_points``
        filled in).

    Raises:
        TypeError / ValueError: a field of the wrong type or range (the message says what
            was expected and what was received).
    """
    v = dict(fields)
    v["num_envs"] = check_int("num_envs", v["num_envs"], lo=1)
    v["device"] = resolve_device(v["device"])
    if v["source"] not in ("procedural", "centerline"):
        raise ValueError(f"source must be 'procedural' or 'centerline', got {v['source']!r}")
    procedural = v["source"] == "procedural"
    v["point_spacing"] = check_float("point_spacing", v["point_spacing"], lo=0.0, lo_open=True)
    # a spec may hold more control points than a config (the circuit layout draws hundreds)
    v["num_control_points"] = check_int("num_control_points", v["num_control_points"], lo=5,
                                        hi=20 if fit else MAX_CONTROL_POINTS)
    v["min_turn_radius_factor"] = check_float("min_turn_radius_factor", v["min_turn_radius_factor"], lo=1.0)
    v["max_retries"] = check_int("max_retries", v["max_retries"], lo=12 if procedural else 0, hi=64)
    if procedural:
        v["max_input_points"] = check_int("max_input_points", v["max_input_points"], lo=0)
    else:
        v["max_input_points"] = check_int("max_input_points", v["max_input_points"], lo=3)
    if fit:
        v["size"] = check_float("size", v["size"], lo=0.0, lo_open=True)
        v["width"] = check_float("width", v["width"], lo=0.0, lo_open=True)
        v["radius_jitter"] = check_float("radius_jitter", v["radius_jitter"], lo=0.0, hi=0.7)
        v["angle_jitter"] = check_float("angle_jitter", v["angle_jitter"], lo=0.0, hi=0.3)
        v["elevation"] = check_float("elevation", v["elevation"], lo=0.0)
        v["banking"] = check_float("banking", v["banking"], lo=0.0, hi=MAX_BANK)
    if fit and procedural:
        widest = v["size"] / (2.0 * v["min_turn_radius_factor"] + 1.0)
        if v["width"] > widest:
            raise ValueError(
                f"width must be <= size / (2 * min_turn_radius_factor + 1) = {widest:.6g} m for size {v['size']:g} m "
                f"(the loop's outer radius size / 2 - width / 2 must be >= 2 least turn radii): got width "
                f"{v['width']}; "
                f"pass a narrower width or a larger size"
            )
        if v["elevation"] > v["size"] / 5.0:
            raise ValueError(f"elevation must be in [0, size / 5] = [0, {v['size'] / 5.0:.6g}] m, got {v['elevation']}")
    mll = 4.0 * float(v["size"]) if v["max_loop_length"] is None else v["max_loop_length"]
    v["max_loop_length"] = check_float("max_loop_length", mll, lo=0.0, lo_open=True)
    if fit and procedural and v["max_loop_length"] < math.pi * v["size"]:
        raise ValueError(
            f"max_loop_length must be >= pi * size = {math.pi * v['size']:.6g} m (the circumference of the "
            f"square's inscribed circle: a shorter bound rejects most loops), got {v['max_loop_length']}"
        )
    if v["max_points"] is None:
        mp = math.ceil(v["max_loop_length"] / v["point_spacing"]) + 2
        if mp < 8:
            raise ValueError(
                f"point_spacing must be <= max_loop_length / 6 = {v['max_loop_length'] / 6:.6g} m (a centreline "
                f"needs >= 8 points), got {v['point_spacing']}"
            )
        if procedural and v["elevation"] == 0.0:  # a flat loop: no longer than the layout draws
            longest = flat_loop_bound(v["size"], v["width"], v["radius_jitter"], v["min_turn_radius_factor"],
                                      v["num_control_points"])
            mp = min(mp, max(8, math.ceil(longest / v["point_spacing"]) + 2))
    else:
        mp = v["max_points"]
    v["max_points"] = check_int("max_points", mp, lo=8)
    if v["max_points"] > MAX_POINTS:
        if fields["max_points"] is not None:
            raise ValueError(f"max_points must be <= {MAX_POINTS}, got {v['max_points']}")
        origin = ", 4 * size when not given" if fields["max_loop_length"] is None else ""
        raise ValueError(
            f"max_points = {v['max_points']} is over {MAX_POINTS}: the longest loop of these settings (size "
            f"{v['size']:g} m, max_loop_length {v['max_loop_length']:g} m{origin}) needs that many points every "
            f"point_spacing = {v['point_spacing']:g} m: raise point_spacing, or lower size or max_loop_length")
    return v
