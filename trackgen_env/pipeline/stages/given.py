"""The stages of given courses: a closed centreline, a gate layout (inputs the user writes).

A given course draws nothing: its pipeline has no retries (another round would rebuild the
same course), and it is used as given (a real circuit may cross itself on a bridge).
"""

from __future__ import annotations

import warp as wp

from ...core import env_loop
from ...core.polyline import X_AXIS, next_point, prev_point, yaw_quat
from ...core.types import InputInfo
from ..stage import Stage
from .gates import env_gate_shape, horizontal_dir

__all__ = ["CenterlineInput", "GateLayoutInput"]

wp.set_module_options({"enable_backward": False})


@wp.kernel
def _centerline_input(
    envs_per_thread: int,
    xy: wp.array2d(dtype=wp.vec4),
    count: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_hw: wp.array2d(dtype=float),
    ctrl_count: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        n = wp.clamp(count[e], 0, xy.shape[1])
        ctrl_count[e] = n
        if n < 3:
            continue
        # The band is [centre - w_right, centre + w_left]: its middle line is the centreline here.
        for k in range(n):
            a = xy[e, prev_point(k, n)]
            b = xy[e, k]
            c = xy[e, next_point(k, n)]
            d = wp.vec2(c[0] - a[0], c[1] - a[1])
            ln = wp.length(d)
            left = wp.vec2(0.0, 0.0)
            if ln > 0.0:
                left = wp.vec2(-d[1], d[0]) / ln
            shift = 0.5 * (b[3] - b[2])
            ctrl[e, k] = wp.vec3(b[0] + shift * left[0], b[1] + shift * left[1], 0.0)
            ctrl_hw[e, k] = 0.5 * (b[2] + b[3])


@wp.kernel
def _layout_input(
    envs_per_thread: int,
    lanes: int,
    pose: wp.array2d(dtype=wp.transform),
    count: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    start_clearance: float,
    # outputs
    position: wp.array2d(dtype=wp.vec3),
    orientation: wp.array2d(dtype=wp.quat),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    staged_count: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
):
    thread, lane = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        g = position.shape[1]
        n = count[e]
        for j in range(lane, g, lanes):
            t = pose[e, j]
            position[e, j] = wp.transform_get_translation(t)
            orientation[e, j] = wp.normalize(wp.transform_get_rotation(t))
        if lane == 0:
            # fewer than 3 gates is no course (nor is a count over the capacity): invalid
            ok[e] = wp.where(n >= 3 and n <= g, 1, 0)
            staged_count[e] = wp.clamp(n, 0, g)
            # as for a generated course: start_clearance behind gate 0 along its horizontal
            # normal, at its altitude, level, facing it (lane 0 wrote gate 0 above)
            d = horizontal_dir(wp.quat_rotate(orientation[e, 0], X_AXIS))
            start_position[e] = position[e, 0] - start_clearance * d
            start_orientation[e] = yaw_quat(d)


class CenterlineInput(Stage):
    """Control points of a given closed centreline (``TrackGenConfig(source="centerline")``).

    Inputs: ``"centerline.xy"`` (``[E, max_input_points]`` vec4: x [m], y [m], width right
    [m], width left [m]) and ``"centerline.count"`` (``[E]`` int32, points in use, >= 3).
    The control point is the middle of the band; its half width is half the full width.
    """

    name, family = "centerline", "track"
    reads = ("centerline.xy", "centerline.count")
    writes = ("ctrl", "ctrl_hw", "ctrl_count")

    def input_info(self, ctx):
        E, n = ctx.num_envs, ctx.settings["max_input_points"]
        return {
            "centerline.xy": InputInfo(wp.vec4, (E, n),
                                       "closed centreline per env: x [m], y [m], width right [m], width left [m]"),
            "centerline.count": InputInfo(wp.int32, (E,), "points in use per env (>= 3)"),
        }

    def allocate(self, ctx):
        shape = (ctx.num_envs, ctx.settings["max_input_points"])
        ctx.field("ctrl", shape, wp.vec3)
        ctx.field("ctrl_hw", shape, float)
        ctx.field("ctrl_count", ctx.num_envs, wp.int32)

    def enqueue(self, ctx, pending):
        f = ctx.fields
        threads, per = env_loop.shape(ctx.device, ctx.num_envs)
        wp.launch(_centerline_input, threads,
                  inputs=[per, ctx.inputs["centerline.xy"], ctx.inputs["centerline.count"], pending, ctx.pending_envs,
                          ctx.num_pending],
                  outputs=[f["ctrl"], f["ctrl_hw"], f["ctrl_count"]], device=ctx.device)


class GateLayoutInput(Stage):
    """A given gate layout (``GateGenConfig(source="layout")``, e.g. a real race course).

    Inputs: ``"gates.pose"`` (``[E, num_gates]`` ``wp.transform``: gate centre [m],
    orientation with local +x the normal) and ``"gates.count"`` (``[E]`` int32, gates in
    use, 3 .. num_gates). Places the start ``start_clearance`` behind gate 0, level, facing it.
    """

    name, family = "gates", "gates"
    reads = ("gates.pose", "gates.count")
    writes = ("gate_position", "gate_orientation", "num_gates", "start_position", "start_orientation")

    def input_info(self, ctx):
        E, G = ctx.num_envs, ctx.settings["num_gates"]
        return {
            "gates.pose": InputInfo(wp.transform, (E, G), "gates in race order per env: centre [m], orientation "
                                                          "(local +x = the normal, the direction of travel)"),
            "gates.count": InputInfo(wp.int32, (E,), "gates in use per env (3 .. num_gates)"),
        }

    def allocate(self, ctx):
        shape = (ctx.num_envs, ctx.settings["num_gates"])
        ctx.field("gate_position", shape, wp.vec3)
        ctx.field("gate_orientation", shape, wp.quat, fill="identity")
        ctx.field("num_gates", ctx.num_envs, wp.int32, fill=shape[1])
        ctx.field("start_position", ctx.num_envs, wp.vec3)
        ctx.field("start_orientation", ctx.num_envs, wp.quat, fill="identity")

    def enqueue(self, ctx, pending):
        f = ctx.fields
        dim, per, lanes = env_gate_shape(ctx)
        wp.launch(
            _layout_input, dim,
            inputs=[per, lanes, ctx.inputs["gates.pose"], ctx.inputs["gates.count"], pending, ctx.pending_envs,
                    ctx.num_pending, ctx.settings["start_clearance"]],
            outputs=[f["gate_position"], f["gate_orientation"], f["start_position"], f["start_orientation"],
                     f["num_gates"], ctx.ok], device=ctx.device,
        )
