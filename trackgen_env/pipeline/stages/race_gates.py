"""The race-like gate family's stages: ``race_layout`` and ``race_checks`` (with ``start``).

A drone-racing course as real race layouts are built (:mod:`trackgen_env.core.gate_stats` measures
them): every length in gate sizes, the gate size drawn per course, legs of 2-8 gate sizes,
turns up to hairpins, climbs and dives, and, on a share of the courses, a split-S: a gate
stacked directly above the next, flown in the opposite direction (a vertical half loop).

One round of the retry loop, for the pending envs::

    race_layout  (per env: the gate size, then gates at jittered angles and radii around a
                  centre (every length in gate sizes), altitudes, the split-S pair; each gate
                  facing along the loop, the bisector of its horizontal legs (a vertical leg
                  gives way to the other); the square openings)
    start        (per env: start_clearance before gate 0, at its altitude, facing it)
    race_checks  (per env x gate: the gate family's checks: ground, start clearance, spacing,
                  climb and turn; the split-S pair is exempt from spacing and climb between
                  its two gates, which must be at least 1.5 openings apart vertically)

The construction is the gate family's polar one (``stages.gates``), so the loop is
star-shaped around its centre and its gates stay in loop order. Hairpins come from the radius
jitter (a gate far in between two far out, or the reverse); the split-S pair stands at the
outer radius with both neighbours pulled in, so the loop flies out to it, down and back.
"""

from __future__ import annotations

import math

import warp as wp

from ...core import env_loop
from ...core.polyline import TWO_PI, next_point, prev_point, yaw_quat
from ...core.seeding import ATTEMPT_STREAMS, Stream, random_key, uniform
from ..stage import Param, Stage
from .gates import gate_normal, horizontal_dir

__all__ = ["RaceGatesLayout", "RaceGatesChecks", "RACE_STAGES"]

wp.set_module_options({"enable_backward": False})

#: Stage names in execution order.
RACE_STAGES = ("race_layout", "start", "race_checks")

_STREAM_LAYOUT = wp.constant(int(Stream.LAYOUT) * ATTEMPT_STREAMS)
_TOL = wp.constant(1.0e-4)


@wp.kernel
def _race_layout(
    envs_per_thread: int,
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    size_lo: wp.array(dtype=float),
    size_hi: wp.array(dtype=float),
    mean_leg: wp.array(dtype=float),
    radius_jitter: wp.array(dtype=float),
    angle_jitter: wp.array(dtype=float),
    altitude_span: wp.array(dtype=float),
    split_s_share: wp.array(dtype=float),
    split_s_drop: wp.array(dtype=float),
    ground_clearance: float,
    # outputs
    position: wp.array2d(dtype=wp.vec3),
    orientation: wp.array2d(dtype=wp.quat),
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    stacked: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        key = random_key(seeds[e], counters[e], _STREAM_LAYOUT + attempt[e])
        g = position.shape[1]
        s = size_lo[e] + (size_hi[e] - size_lo[e]) * uniform(key, 0)  # the gate size: every length below in it
        gate_width[e] = s
        gate_height[e] = s
        phase = TWO_PI * uniform(key, 1)
        sense = 1.0
        if uniform(key, 2) < 0.5:
            sense = -1.0
        step = TWO_PI / float(g)
        # the circle whose chords are the mean leg
        radius = 0.5 * mean_leg[e] * s / wp.sin(0.5 * step)
        aj = wp.clamp(angle_jitter[e], 0.0, 0.9)
        rj = wp.clamp(radius_jitter[e], 0.0, 0.9)
        lowest = ground_clearance + 0.5 * s
        span = wp.max(altitude_span[e], 0.0) * s
        drop = wp.max(split_s_drop[e], 0.0) * s
        pair = int(-1)
        if uniform(key, 3) < split_s_share[e] and g >= 4:
            # never gate 0 or the last: the start faces gate 0 along its horizontal legs
            pair = 1 + wp.min(int(uniform(key, 4) * float(g - 2)), g - 3)
        for j in range(g):
            theta = phase + sense * (float(j) + aj * (uniform(key, 8 + 3 * j) - 0.5)) * step
            r = radius * (1.0 - rj * uniform(key, 9 + 3 * j))
            z = lowest + span * uniform(key, 10 + 3 * j)
            position[e, j] = wp.vec3(r * wp.cos(theta), r * wp.sin(theta), z)
        stacked[e] = pair
        if pair >= 0:
            # the pair at the outer radius, its neighbours pulled in: out to it, down, and back
            below = next_point(pair, g)
            p = position[e, pair]
            h = wp.length(wp.vec3(p[0], p[1], 0.0))
            top = lowest + wp.max(span, drop)
            out = radius / wp.max(h, 1.0e-6)
            position[e, pair] = wp.vec3(p[0] * out, p[1] * out, top)
            position[e, below] = wp.vec3(p[0] * out, p[1] * out, top - drop)
            for k in range(2):
                n = prev_point(pair, g)
                if k == 1:
                    n = next_point(below, g)
                q = position[e, n]
                position[e, n] = wp.vec3(q[0] * (1.0 - rj), q[1] * (1.0 - rj), q[2])
        for j in range(g):
            orientation[e, j] = yaw_quat(gate_normal(position[e, prev_point(j, g)], position[e, j],
                                                     position[e, next_point(j, g)]))


@wp.func
def _race_gate_fails(e: int, j: int, position: wp.array2d(dtype=wp.vec3), start_position: wp.array(dtype=wp.vec3),
                     pair: int, s: float, min_gate_spacing: float, max_turn: float, max_climb: float,
                     start_clearance: float, ground_clearance: float) -> bool:
    g = position.shape[1]
    p = position[e, j]
    if p[2] - 0.5 * s < ground_clearance - _TOL:
        return True
    ds = p - start_position[e]
    if ds[0] * ds[0] + ds[1] * ds[1] < (start_clearance * (1.0 - _TOL)) * (start_clearance * (1.0 - _TOL)):
        return True
    spacing = wp.max(min_gate_spacing, 2.0 * wp.sqrt(2.0) * s)
    below = int(-1)
    if pair >= 0:
        below = next_point(pair, g)
    for k in range(j + 1, g):
        d = position[e, k] - p
        if (j == pair and k == below) or (k == pair and j == below):
            # the split-S pair: one above the other, frames clear of each other
            if wp.abs(d[2]) < 1.5 * s * (1.0 - _TOL):
                return True
            continue
        if d[0] * d[0] + d[1] * d[1] < spacing * spacing:
            return True
    prev = position[e, prev_point(j, g)]
    nxt = position[e, next_point(j, g)]
    leg = nxt - p
    run_h = wp.sqrt(leg[0] * leg[0] + leg[1] * leg[1])
    if j != pair and wp.abs(leg[2]) > max_climb * run_h:
        return True
    if j == pair or j == below:
        return False  # the half loop turns through the vertical leg
    d_in = horizontal_dir(p - prev)
    d_out = horizontal_dir(leg)
    turn = wp.abs(wp.atan2(d_in[0] * d_out[1] - d_in[1] * d_out[0], wp.dot(d_in, d_out)))
    return turn > max_turn


@wp.kernel
def _race_checks(
    envs_per_thread: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    position: wp.array2d(dtype=wp.vec3),
    start_position: wp.array(dtype=wp.vec3),
    gate_width: wp.array(dtype=float),
    stacked: wp.array(dtype=wp.int32),
    min_gate_spacing: float,
    max_turn: wp.array(dtype=float),
    max_climb: float,
    start_clearance: float,
    ground_clearance: float,
    ok: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        for j in range(position.shape[1]):
            if _race_gate_fails(e, j, position, start_position, stacked[e], gate_width[e], min_gate_spacing,
                                max_turn[e], max_climb, start_clearance, ground_clearance):
                ok[e] = 0
                break


class RaceGatesLayout(Stage):
    """Race-like gates, every length in gate sizes (the size drawn per course), with a split-S on a share
    of the courses."""

    name, family = "race_layout", "gates"
    params = (
        Param("size_lo", 0.6, 0.0, math.inf, "[m] smallest gate size (square opening) drawn", lo_open=True, stream=0),
        Param("size_hi", 2.4, 0.0, math.inf, "[m] largest gate size drawn", lo_open=True, stream=1),
        Param("mean_leg", 7.0, 1.0, 20.0, "mean leg in gate sizes (the circle's chord)", stream=2),
        Param("radius_jitter", 0.55, 0.0, 0.9, "fraction of the radius drawn away", stream=3),
        Param("angle_jitter", 0.6, 0.0, 0.9, "fraction of the angular step drawn around each gate", stream=4),
        Param("altitude_span", 1.4, 0.0, 10.0, "range of gate altitudes above the lowest, in gate sizes", stream=5),
        Param("split_s_share", 0.3, 0.0, 1.0, "share of courses with a split-S pair", stream=6),
        Param("split_s_drop", 1.85, 1.5, 10.0, "height of the split-S, in gate sizes", stream=7),
        Param("max_turn", 2.8, 0.0, math.pi, "[rad] largest heading change between legs", lo_open=True, stream=8),
    )
    ordered = (("size_lo", "size_hi"),)
    writes = ("gate_position", "gate_orientation", "num_gates", "gate_width", "gate_height", "split_s")
    draws = True

    def allocate(self, ctx):
        shape = (ctx.num_envs, ctx.settings["num_gates"])
        ctx.field("gate_position", shape, wp.vec3)
        ctx.field("gate_orientation", shape, wp.quat, fill="identity")
        ctx.field("num_gates", ctx.num_envs, wp.int32, fill=shape[1])
        ctx.field("gate_width", ctx.num_envs, float)
        ctx.field("gate_height", ctx.num_envs, float)
        ctx.field("split_s", ctx.num_envs, wp.int32)

    def enqueue(self, ctx, pending):
        p, f = ctx.params, ctx.fields
        threads, per = env_loop.shape(ctx.device, ctx.num_envs)
        wp.launch(
            _race_layout, threads,
            inputs=[per, ctx.seeds.seeds, ctx.seeds.counters, ctx.attempt, pending, ctx.pending_envs, ctx.num_pending,
                    p["race_layout.size_lo"], p["race_layout.size_hi"], p["race_layout.mean_leg"],
                    p["race_layout.radius_jitter"], p["race_layout.angle_jitter"], p["race_layout.altitude_span"],
                    p["race_layout.split_s_share"], p["race_layout.split_s_drop"], ctx.settings["ground_clearance"]],
            outputs=[f["gate_position"], f["gate_orientation"], f["gate_width"], f["gate_height"], f["split_s"]],
            device=ctx.device,
        )


class RaceGatesChecks(Stage):
    """The gate family's checks on a race-like course (the split-S pair exempt from spacing and climb)."""

    name, family = "race_checks", "gates"
    reads = ("gate_position", "start_position", "gate_width", "split_s")

    def enqueue(self, ctx, pending):
        p, f, s = ctx.params, ctx.fields, ctx.settings
        threads, per = env_loop.shape(ctx.device, ctx.num_envs)
        wp.launch(
            _race_checks, threads,
            inputs=[per, pending, ctx.pending_envs, ctx.num_pending, f["gate_position"], f["start_position"],
                    f["gate_width"], f["split_s"], s["min_gate_spacing"], p["race_layout.max_turn"], s["max_climb"],
                    s["start_clearance"], s["ground_clearance"]],
            outputs=[ctx.ok], device=ctx.device,
        )
