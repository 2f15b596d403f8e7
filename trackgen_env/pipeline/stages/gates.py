"""The gate family's built-in stages: layout, gate_frames, start, checks.

One round of the retry loop, for the pending envs (``Program`` runs it)::

    layout      (per env x gate: jittered angle, radius and altitude from the env's
                 stream, keyed by its attempt; then each gate's yaw, facing along the loop)
    gate_frames (per env: the openings, "gate_frames.gate_width" x "gate_frames.gate_height")
    start       (per env: start_clearance before gate 0, at its altitude, facing it)
    checks      (per env x gate: spacing / non-overlap, turn, climb, start and ground clearance)

then the masked commit copies the staged rows into ``result``. A given layout
(``GateGenConfig(source="layout")``, ``stages.given.GateLayoutInput``) replaces layout,
start and checks, and draws nothing.

The layout is the usual polar construction of procedural race courses: gates at jittered
angles around a centre, at jittered radii, so they stay in loop order and the loop is
star-shaped around the centre. A gate's normal (local +x) is the bisector of the horizontal
directions of its incoming and outgoing legs, so a path along the loop crosses every gate
front to back and at equal angles on both sides.

The family (its result, the commit, the settings ``GateGenConfig`` documents and their
checks with the fit rules) is ``gates_family``.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from ...core import env_loop
from ...core.checks import refused_env
from ...core.polyline import TWO_PI, X_AXIS, next_point, prev_point, yaw_quat
from ...core.seeding import ATTEMPT_STREAMS, Stream, random_key, uniform
from ..stage import Param, Stage

__all__ = ["Layout", "GateFrames", "Start", "Checks", "GATE_STAGES", "LAYOUT_STAGES", "horizontal_dir",
           "has_horizontal", "gate_normal", "env_gate_shape", "MAX_GATES", "DEFAULT_GATE_HEIGHT"]

wp.set_module_options({"enable_backward": False})

#: the most gates a course holds (``num_gates``), a given layout's too
MAX_GATES = 64

# Stage names in execution order, of a procedural course and of a given layout.
GATE_STAGES = ("layout", "gate_frames", "start", "checks")
LAYOUT_STAGES = ("gates", "gate_frames")

# Default gate height when neither it nor the width is given: the square 0.1 m opening of
# the spec's micro-drone example (``presets.gates(..., gate_width=0.1)``).
DEFAULT_GATE_HEIGHT = 0.1

_STREAM_LAYOUT = wp.constant(int(Stream.LAYOUT) * ATTEMPT_STREAMS)  # + attempt: the layout stage's streams
# Float tolerance of the checks whose bound the construction meets exactly (gate 0 sits at
# exactly start_clearance from the start; the lowest drawn altitude is exactly the ground bound).
_TOL = wp.constant(1.0e-4)


# --- geometry shared by the stages ---------------------------------------------------------
@wp.func
def horizontal_dir(d: wp.vec3) -> wp.vec3:
    """Unit horizontal direction of ``d`` (+x when ``d`` is vertical or zero)."""
    h = wp.vec3(d[0], d[1], 0.0)
    n = wp.length(h)
    if n > 1.0e-9:
        return h / n
    return X_AXIS


@wp.func
def has_horizontal(d: wp.vec3) -> bool:
    """Whether ``d`` has a horizontal direction (:func:`horizontal_dir` is not its +x fallback)."""
    return wp.length(wp.vec3(d[0], d[1], 0.0)) > 1.0e-9


@wp.func
def gate_normal(prev: wp.vec3, p: wp.vec3, nxt: wp.vec3) -> wp.vec3:
    """Horizontal unit normal of the gate at ``p``: the bisector of the incoming leg
    ``prev -> p`` and the outgoing leg ``p -> nxt`` (the outgoing one for a U-turn); a leg with
    no horizontal extent (a gate stacked above its neighbour, as in a split-S) gives way to the other."""
    d_in = horizontal_dir(p - prev)
    d_out = horizontal_dir(nxt - p)
    if not has_horizontal(p - prev):
        return d_out
    if not has_horizontal(nxt - p):
        return d_in
    b = d_in + d_out
    n = wp.length(b)
    if n > 1.0e-6:
        return b / n
    return d_out


# --- kernels -------------------------------------------------------------------------------
@wp.kernel
def _layout(
    envs_per_thread: int,
    lanes: int,
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    size: wp.array(dtype=float),
    radius_jitter: wp.array(dtype=float),
    angle_jitter: wp.array(dtype=float),
    altitude_min: wp.array(dtype=float),
    altitude_max: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    ground_clearance: float,
    # outputs
    position: wp.array2d(dtype=wp.vec3),
):
    thread, lane = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        key = random_key(seeds[e], counters[e], _STREAM_LAYOUT + attempt[e])
        num_gates = position.shape[1]
        # one phase and sense per course: the loop may start anywhere and run either way round
        phase = TWO_PI * uniform(key, 0)
        sense = 1.0
        if uniform(key, 1) < 0.5:
            sense = -1.0
        step = TWO_PI / float(num_gates)
        aj = wp.clamp(angle_jitter[e], 0.0, 0.9)
        rj = wp.clamp(radius_jitter[e], 0.0, 0.9)
        for j in range(lane, num_gates, lanes):
            theta = phase + sense * (float(j) + aj * (uniform(key, 8 + 3 * j) - 0.5)) * step
            r = 0.5 * wp.max(size[e], 0.0) * (1.0 - rj * uniform(key, 9 + 3 * j))
            # the gate's bottom edge must clear the ground: raise the range where it would not
            lowest = ground_clearance + 0.5 * wp.max(gate_height[e], 0.0)
            z_lo = wp.max(altitude_min[e], lowest)
            z_hi = wp.max(altitude_max[e], z_lo)
            z = z_lo + (z_hi - z_lo) * uniform(key, 10 + 3 * j)
            position[e, j] = wp.vec3(r * wp.cos(theta), r * wp.sin(theta), z)


@wp.kernel
def _orient(
    envs_per_thread: int,
    lanes: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    position: wp.array2d(dtype=wp.vec3),
    # outputs
    orientation: wp.array2d(dtype=wp.quat),
):
    thread, lane = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        g = position.shape[1]
        for j in range(lane, g, lanes):
            orientation[e, j] = yaw_quat(gate_normal(position[e, prev_point(j, g)], position[e, j],
                                                     position[e, next_point(j, g)]))


@wp.kernel
def _openings(
    envs_per_thread: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    width: wp.array(dtype=float),
    height: wp.array(dtype=float),
    # outputs
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        gate_width[e] = wp.max(width[e], 0.0)
        gate_height[e] = wp.max(height[e], 0.0)


@wp.kernel
def _start(
    envs_per_thread: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    position: wp.array2d(dtype=wp.vec3),
    start_clearance: float,
    # outputs
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        g = position.shape[1]
        p = position[e, 0]
        n = gate_normal(position[e, prev_point(0, g)], p, position[e, next_point(0, g)])
        # before gate 0, at its altitude, facing it
        start_position[e] = p - start_clearance * n
        start_orientation[e] = yaw_quat(n)


@wp.func
def _gate_fails(
    e: int,
    j: int,
    position: wp.array2d(dtype=wp.vec3),
    start_position: wp.array(dtype=wp.vec3),
    w: float,
    h: float,
    min_gate_spacing: float,
    max_turn: float,
    max_climb: float,
    start_clearance: float,
    ground_clearance: float,
) -> bool:
    """Whether gate ``j`` of env ``e`` breaks a check (opening ``w`` by ``h``)."""
    g = position.shape[1]
    p = position[e, j]
    # ground: the bottom edge of the opening
    if p[2] - 0.5 * h < ground_clearance - _TOL:
        return True
    # start clearance (horizontal)
    ds = p - start_position[e]
    if ds[0] * ds[0] + ds[1] * ds[1] < (start_clearance * (1.0 - _TOL)) * (start_clearance * (1.0 - _TOL)):
        return True
    # spacing and non-overlap: frames (or posts down to the ground) up to half the opening
    # thick fit in a vertical column of radius hypot(w, h) around the centre
    spacing = wp.max(min_gate_spacing, 2.0 * wp.sqrt(w * w + h * h))
    for k in range(j + 1, g):
        d = position[e, k] - p
        if d[0] * d[0] + d[1] * d[1] < spacing * spacing:
            return True
    # climb of the outgoing leg, and the heading change at this gate
    prev = position[e, prev_point(j, g)]
    nxt = position[e, next_point(j, g)]
    leg = nxt - p
    run_h = wp.sqrt(leg[0] * leg[0] + leg[1] * leg[1])
    if wp.abs(leg[2]) > max_climb * run_h:
        return True
    d_in = horizontal_dir(p - prev)
    d_out = horizontal_dir(leg)
    turn = wp.abs(wp.atan2(d_in[0] * d_out[1] - d_in[1] * d_out[0], wp.dot(d_in, d_out)))
    return turn > max_turn


@wp.kernel
def _checks(
    envs_per_thread: int,
    lanes: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    position: wp.array2d(dtype=wp.vec3),
    start_position: wp.array(dtype=wp.vec3),
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    min_gate_spacing: float,
    max_turn: wp.array(dtype=float),
    max_climb: float,
    start_clearance: float,
    ground_clearance: float,
    # output: cleared on failure (every writer writes 0: no race on the value)
    ok: wp.array(dtype=wp.int32),
):
    thread, lane = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        w = wp.max(gate_width[e], 0.0)
        h = wp.max(gate_height[e], 0.0)
        for j in range(lane, position.shape[1], lanes):
            if _gate_fails(e, j, position, start_position, w, h, min_gate_spacing, max_turn[e], max_climb,
                           start_clearance, ground_clearance):
                ok[e] = 0
                break  # the draw is rejected: its other gates need no check


# --- the stages ----------------------------------------------------------------------------
def env_gate_shape(ctx):
    """``(dim, envs_per_thread, lanes)`` of a kernel over (env, gate): on the CPU one thread
    looping over envs and gates (``env_loop``), on CUDA a thread per (env, gate)."""
    threads, per = env_loop.shape(ctx.device, ctx.num_envs)
    lanes = 1 if ctx.device.is_cpu else ctx.settings["num_gates"]
    return (threads, lanes), per, lanes


class Layout(Stage):
    """Gate centres at jittered angles, radii and altitudes (the env's own stream), each gate
    facing along the loop."""

    name, family = "layout", "gates"
    params = (
        Param("size", 8.0, 0.0, math.inf, "[m] diameter of the disc the gate centres lie in", lo_open=True, stream=7),
        Param("radius_jitter", 0.45, 0.0, 0.9, "fraction of the radius drawn away", stream=6),
        Param("angle_jitter", 0.4, 0.0, 0.9, "fraction of the angular step drawn around each gate", stream=4),
        Param("max_turn", 1.75, 0.0, math.pi, "[rad] largest heading change between legs", lo_open=True, stream=5),
        Param("altitude_min", 0.5, 0.0, math.inf, "[m] lowest gate centre", lo_open=True, stream=3),
        Param("altitude_max", 2.5, 0.0, math.inf, "[m] highest gate centre", lo_open=True, stream=2),
    )
    ordered = (("altitude_min", "altitude_max"),)
    writes = ("gate_position", "gate_orientation", "num_gates")
    draws = True

    def allocate(self, ctx):
        shape = (ctx.num_envs, ctx.settings["num_gates"])
        ctx.field("gate_position", shape, wp.vec3)
        ctx.field("gate_orientation", shape, wp.quat, fill="identity")
        ctx.field("num_gates", ctx.num_envs, wp.int32, fill=shape[1])  # a procedural course uses all G

    def enqueue(self, ctx, pending):
        p, f = ctx.params, ctx.fields
        dim, per, lanes = env_gate_shape(ctx)
        wp.launch(
            _layout, dim,
            inputs=[per, lanes, ctx.seeds.seeds, ctx.seeds.counters, ctx.attempt, pending, ctx.pending_envs,
                    ctx.num_pending, p["layout.size"],
                    p["layout.radius_jitter"], p["layout.angle_jitter"], p["layout.altitude_min"],
                    p["layout.altitude_max"], p["gate_frames.gate_height"], ctx.settings["ground_clearance"]],
            outputs=[f["gate_position"]], device=ctx.device,
        )
        wp.launch(_orient, dim, inputs=[per, lanes, pending, ctx.pending_envs, ctx.num_pending, f["gate_position"]],
                  outputs=[f["gate_orientation"]],
                  device=ctx.device)


class GateFrames(Stage):
    """The gates' openings: ``gate_width`` (local y) by ``gate_height`` (local z)."""

    name, family = "gate_frames", "gates"
    params = (
        Param("gate_width", 0.0, 0.0, math.inf, "[m] width of each opening", stream=1),
        Param("gate_height", DEFAULT_GATE_HEIGHT, 0.0, math.inf, "[m] height of each opening", lo_open=True, stream=0),
    )
    writes = ("gate_width", "gate_height")

    def allocate(self, ctx):
        ctx.field("gate_width", ctx.num_envs, float)
        ctx.field("gate_height", ctx.num_envs, float)

    def enqueue(self, ctx, pending):
        p, f = ctx.params, ctx.fields
        threads, per = env_loop.shape(ctx.device, ctx.num_envs)
        wp.launch(_openings, threads,
                  inputs=[per, pending, ctx.pending_envs, ctx.num_pending, p["gate_frames.gate_width"],
                          p["gate_frames.gate_height"]],
                  outputs=[f["gate_width"], f["gate_height"]], device=ctx.device)


class Start(Stage):
    """The start pose: ``start_clearance`` before gate 0 along its normal, at its altitude, facing it."""

    name, family = "start", "gates"
    reads = ("gate_position",)
    writes = ("start_position", "start_orientation")

    def allocate(self, ctx):
        ctx.field("start_position", ctx.num_envs, wp.vec3)
        ctx.field("start_orientation", ctx.num_envs, wp.quat, fill="identity")

    def enqueue(self, ctx, pending):
        f = ctx.fields
        threads, per = env_loop.shape(ctx.device, ctx.num_envs)
        wp.launch(_start, threads,
                  inputs=[per, pending, ctx.pending_envs, ctx.num_pending, f["gate_position"],
                          ctx.settings["start_clearance"]],
                  outputs=[f["start_position"], f["start_orientation"]], device=ctx.device)


_ROOM_PARAMS = ("layout.size", "layout.radius_jitter", "gate_frames.gate_width", "gate_frames.gate_height",
                "layout.max_turn")
#: the end of each that leaves the most room: the largest size, jitter and turn, the smallest opening
_FAVOURABLE = {"layout.size": "most", "layout.radius_jitter": "most", "gate_frames.gate_width": "least",
               "gate_frames.gate_height": "least", "layout.max_turn": "most"}


def _widest_neighbours(size: np.ndarray, radius_jitter: np.ndarray, num_gates: int) -> np.ndarray:
    """[m] the largest distance two angularly neighbouring gates of the built-in layout can be
    apart: the centres lie at radii in ``[R (1 - j), R]`` (``R = size / 2``, ``j`` the radius
    jitter, clamped to 0.9 as the layout does), and of ``num_gates`` angles around the centre two
    neighbours are at most the mean ``2 pi / num_gates`` apart. The distance is convex in each
    radius, so its largest value is at the ends."""
    R = 0.5 * np.maximum(size, 0.0)
    inner = R * (1.0 - np.clip(radius_jitter, 0.0, 0.9))
    angle = 2.0 * math.pi / num_gates
    same = 2.0 * R * math.sin(0.5 * angle)
    mixed = np.sqrt(np.maximum(R * R + inner * inner - 2.0 * R * inner * math.cos(angle), 0.0))
    return np.maximum(same, mixed)


def _gates_have_room(params, settings):
    """A check of :data:`_ROOM_PARAMS` (live sets, range ends, and the construction values at build)
    where the built-in layout and checks run: refuse values with which no draw can pass the checks,
    in any env, the others taken at their most favourable (:data:`_FAVOURABLE`).

    * Spacing: the checks want every two gates ``max(min_gate_spacing, 2 hypot(gate_width,
      gate_height))`` apart (horizontally), and two neighbouring gates of the layout are at most
      :func:`_widest_neighbours` apart.
    * Turn: the heading changes of a closed loop of ``num_gates`` legs add up to at least 2 pi
      (Fenchel's theorem, for a closed polygon: do Carmo, *Differential Geometry of Curves and
      Surfaces*, 1976, section 5-7), so one is at least ``2 pi / num_gates``, and the checks want
      each at most ``layout.max_turn``."""
    spacing_floor, num_gates = settings["min_gate_spacing"], settings["num_gates"]
    least_turn = 2.0 * math.pi / num_gates

    def check(name, values, what=None):
        v = {n: getattr(params, _FAVOURABLE[n])(n) for n in _ROOM_PARAMS}
        v[name] = np.broadcast_to(np.asarray(values, dtype=np.float64), (params.num_envs,))
        subject = what or f"params[{name!r}] leaves"
        spacing = np.maximum(spacing_floor, 2.0 * np.hypot(v["gate_frames.gate_width"], v["gate_frames.gate_height"]))
        widest = _widest_neighbours(v["layout.size"], v["layout.radius_jitter"], num_gates)
        crowded = spacing > widest
        if np.any(crowded):
            e, where = refused_env(crowded)
            raise ValueError(
                f"{subject} no room for the gates{where}: the checks want every two max(min_gate_spacing, 2 * "
                f"hypot(gate_width, gate_height)) = {spacing[e]:.6g} m apart (min_gate_spacing {spacing_floor:g} m, "
                f"openings {v['gate_frames.gate_width'][e]:g} x {v['gate_frames.gate_height'][e]:g} m), and two "
                f"neighbouring gates of {num_gates} within layout.size / 2 = {0.5 * v['layout.size'][e]:g} m of the "
                f"centre (radius jitter {v['layout.radius_jitter'][e]:g}) are at most {widest[e]:.6g} m apart: every "
                f"draw would fail and the env would hold no course")
        tight = v["layout.max_turn"] < least_turn
        if np.any(tight):
            e, where = refused_env(tight)
            raise ValueError(
                f"{subject} no closed loop{where}: layout.max_turn must be >= 2 pi / num_gates = {least_turn:.6g} rad "
                f"(the turns of a closed loop of {num_gates} legs add up to at least 2 pi), got "
                f"{v['layout.max_turn'][e]:g}: every draw would fail and the env would hold no course")

    return check


class Checks(Stage):
    """Rejects a course whose gates overlap, turn or climb too much, or crowd the start or the ground."""

    name, family = "checks", "gates"
    reads = ("gate_position", "start_position")

    def allocate(self, ctx):
        # the argument is about the built-in layout's gates: it holds while no plugin moves them
        moved = ctx.plugin_writes & {"gate_position", "num_gates"}
        if not moved and all(name in ctx.params for name in _ROOM_PARAMS):
            room = _gates_have_room(ctx.params, ctx.settings)
            what = ("stage 'checks': the construction values (or randomize ranges) of "
                    + ", ".join(_ROOM_PARAMS) + " leave")
            for name, end in _FAVOURABLE.items():  # each one's least favourable end (as a live range end is)
                room(name, getattr(ctx.params, "least" if end == "most" else "most")(name), what)
            for name in _ROOM_PARAMS:
                ctx.params.add_validator(name, room)

    def enqueue(self, ctx, pending):
        p, f, s = ctx.params, ctx.fields, ctx.settings
        dim, per, lanes = env_gate_shape(ctx)
        wp.launch(
            _checks, dim,
            inputs=[per, lanes, pending, ctx.pending_envs, ctx.num_pending, f["gate_position"], f["start_position"],
                    p["gate_frames.gate_width"],
                    p["gate_frames.gate_height"], s["min_gate_spacing"], p["layout.max_turn"], s["max_climb"],
                    s["start_clearance"], s["ground_clearance"]],
            outputs=[ctx.ok], device=ctx.device,
        )
