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

The settings and their checks (``check_gates``, with the fit rules) are the ones
``GateGenConfig`` documents; ``gates_spec`` compiles them to a spec.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from ... import env_loop
from ...checks import check_float, check_int, refused_env, resolve_device
from ...polyline import TWO_PI, X_AXIS, next_point, prev_point, yaw_quat
from ...seeding import ATTEMPT_STREAMS, Stream, random_key, uniform
from ...types import GateLayout, GateResult
from ..stage import Family, Param, Stage, check_settings

__all__ = ["Layout", "GateFrames", "Start", "Checks", "GATES", "GATE_STAGES", "LAYOUT_STAGES", "GATES_DEFAULTS",
           "check_gates", "SETTINGS", "GATES_PARAMS", "spec_fields", "horizontal_dir", "DEFAULT_GATE_HEIGHT",
           "MAX_GATES"]

wp.set_module_options({"enable_backward": False})

#: the most gates a course holds (``num_gates``), a given layout's too
MAX_GATES = 64

# Stage names in execution order, of a procedural course and of a given layout.
GATE_STAGES = ("layout", "gate_frames", "start", "checks")
LAYOUT_STAGES = ("gates", "gate_frames")

# Default gate height when neither it nor the width is given: the square 0.1 m opening of
# the spec's micro-drone example (``presets.gates(..., gate_width=0.1)``).
DEFAULT_GATE_HEIGHT = 0.1

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
def gate_normal(prev: wp.vec3, p: wp.vec3, nxt: wp.vec3) -> wp.vec3:
    """Horizontal unit normal of the gate at ``p``: the bisector of the incoming leg
    ``prev -> p`` and the outgoing leg ``p -> nxt`` (the outgoing one for a U-turn)."""
    d_in = horizontal_dir(p - prev)
    d_out = horizontal_dir(nxt - p)
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
