"""The track family's built-in stages: band, layout, spline, resample, checks, start.

One round of the retry loop, for the pending envs (``Program`` runs it)::

    band     (per env: half width of every control point, from "band.width")
    layout   (per env: control points from the env's stream, keyed by its attempt)
    spline   (per env; on CUDA per env x control segment: the turn-radius bound on the dense
              samples, the knots first on the CPU, arc-length table of the closed spline, loop
              length, point count)
    resample (per env; on CUDA per env x point: points every ~point_spacing, tangent, normal,
              curvature)
    checks   (per env; on CUDA per env x block of 8 points: turn radius, band self-intersection)
    start    (per env: the start pose on the first point, facing along the loop)

A draw rejected in a round that is not its env's last stops at the first tight sample found
(its table unfinished) and gets no rows or pose: the next round draws again.

then the masked commit copies the staged rows into ``result`` (the stages write it in place when
all are built-ins: ``Program``). A given centreline
(source ``"centerline"``, ``stages.given.CenterlineInput``) replaces band and layout, and
draws nothing.

The curves (B-spline, Catmull-Rom) and the layout's loop geometry are in ``track_curves``;
arc-length resampling inverts the cumulative chord length of a dense sampling of the
spline. The family (its result, the commit, the settings ``TrackGenConfig`` documents and
their checks) is ``track_family``.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from ...core import env_loop
from ...core.checks import first_bad, refused_env
from ...core.polyline import TWO_PI, wrapped_point, yaw_quat
from ...core.seeding import ATTEMPT_STREAMS, Stream, random_key, uniform
from ..stage import Param, Stage
from .track_checks import Checks
from .track_curves import (BSPLINE, CATMULL_ROM, DENSE_SAMPLES, REF_CONTROL_POINTS, curve, dense_sample, dense_weights,
                           flat_loop_bound, layout_depth, segment_t)

__all__ = ["Band", "Layout", "Spline", "Resample", "Checks", "Start", "TRACK_STAGES", "CENTERLINE_STAGES",
           "POINT_FIELDS"]

wp.set_module_options({"enable_backward": False})

# Stage names in execution order, of a procedural track and of a given centreline.
TRACK_STAGES = ("band", "layout", "spline", "resample", "checks", "start")
CENTERLINE_STAGES = ("centerline", "spline", "resample", "start")
# a banked track (banking > 0) runs "banking" after "resample" (stages.banking)

_STREAM_LAYOUT = wp.constant(int(Stream.LAYOUT) * ATTEMPT_STREAMS)  # + attempt: the layout stage's streams
_HILLS = wp.constant(68)  # first random index of the height profile (past 8 + 3 * 20 control-point draws)


# --- kernels -----------------------------------------------------------------------------
@wp.kernel
def _layout(
    envs_per_thread: int,
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    size: wp.array(dtype=float),
    radius_jitter: wp.array(dtype=float),
    angle_jitter: wp.array(dtype=float),
    elevation: wp.array(dtype=float),
    num_turns: wp.array(dtype=float),
    ctrl_hw: wp.array2d(dtype=float),
    capacity: int,
    min_turn_radius_factor: float,
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_count: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        key = random_key(seeds[e], counters[e], _STREAM_LAYOUT + attempt[e])
        # the active control points: layout.num_turns floored, within [4, the capacity]
        num_ctrl = wp.clamp(int(wp.floor(num_turns[e])), 4, capacity)
        hw = ctrl_hw[e, 0]
        r_outer = 0.5 * size[e] - hw
        depth = layout_depth(radius_jitter[e], min_turn_radius_factor * hw, r_outer)
        # per-point noise of a fine loop: its wiggles bend as (noise / control spacing)^2
        noise = 0.2 * wp.min(1.0, (REF_CONTROL_POINTS / float(num_ctrl)) * (REF_CONTROL_POINTS / float(num_ctrl)))
        phase = TWO_PI * uniform(key, 0)
        direction = 1.0
        if uniform(key, 1) < 0.5:
            direction = -1.0
        step = TWO_PI / float(num_ctrl)
        # radial profile: a random mix of the low angular modes 2..4 (elongation, triangle,
        # square lobes), scaled to [0, 1]; its depth is radius_jitter
        a2 = uniform(key, 2)
        a3 = uniform(key, 3)
        a4 = 0.5 * uniform(key, 4)
        p2 = TWO_PI * uniform(key, 5)
        p3 = TWO_PI * uniform(key, 6)
        p4 = TWO_PI * uniform(key, 7)
        total = a2 + a3 + a4 + 1.0e-6
        # height profile (hills and crests): a random mix of the loop angle's harmonics 1..3,
        # drawn from indices past the control points' (68.. for <= 20 points)
        b1 = uniform(key, _HILLS)
        b2 = uniform(key, _HILLS + 1)
        b3 = 0.5 * uniform(key, _HILLS + 2)
        q1 = TWO_PI * uniform(key, _HILLS + 3)
        q2 = TWO_PI * uniform(key, _HILLS + 4)
        q3 = TWO_PI * uniform(key, _HILLS + 5)
        # a flat loop (elevation +-0) skips the profile: its height elevation * clamp(...) is the
        # elevation itself (the clamp is finite and >= +0), so the bytes are those of the profile
        flat = elevation[e] == 0.0
        g_lo = float(1.0e30)
        g_hi = float(-1.0e30)
        for k in range(num_ctrl):
            u = (float(k) + angle_jitter[e] * (2.0 * uniform(key, 8 + 3 * k) - 1.0)) * step
            theta = phase + direction * u
            f = (a2 * (1.0 + wp.cos(2.0 * u + p2)) + a3 * (1.0 + wp.cos(3.0 * u + p3)) + a4
                 * (1.0 + wp.cos(4.0 * u + p4))) / (2.0 * total)
            r = r_outer * (1.0 - depth * (0.8 * f + noise * uniform(key, 9 + 3 * k)))
            g = elevation[e]
            if not flat:
                g = b1 * wp.cos(u + q1) + b2 * wp.cos(2.0 * u + q2) + b3 * wp.cos(3.0 * u + q3)
                g_lo = wp.min(g_lo, g)
                g_hi = wp.max(g_hi, g)
            ctrl[e, k] = wp.vec3(r * wp.cos(theta), r * wp.sin(theta), g)
        if not flat:
            # the profile scaled to [0, elevation] over the control points
            span = wp.max(g_hi - g_lo, 1.0e-6)
            for k in range(num_ctrl):
                c = ctrl[e, k]
                ctrl[e, k] = wp.vec3(c[0], c[1], elevation[e] * wp.clamp((c[2] - g_lo) / span, 0.0, 1.0))
        ctrl_count[e] = num_ctrl


@wp.func
def _bends_tighter(d1: wp.vec3, d2: wp.vec3, limit: float) -> bool:
    """Whether a dense sample turns tighter than radius ``limit``: ``|kappa| * limit > 1``,
    squared, ``(cross * limit)^2 > |d1_xy|^6`` (no square root)."""
    speed2 = d1[0] * d1[0] + d1[1] * d1[1]
    bend = (d1[0] * d2[1] - d1[1] * d2[0]) * limit
    return bend * bend > speed2 * speed2 * speed2


@wp.func
def _bends_at_a_knot(ctrl: wp.array2d(dtype=wp.vec3), e: int, n: int, kind: int, samples: int,
                     weights: wp.array2d(dtype=wp.vec4), ctrl_hw: wp.array2d(dtype=float),
                     min_turn_radius_factor: float) -> bool:
    """Whether the first dense sample of a control segment (its knot, t = 0) turns tighter than
    the bound. The one pass tests these first: a loop bends tightest near its control points
    (at the defaults, 77 % of the rejected draws have a tight knot sample; their first tight
    sample lies ~40 % into the table in sample order), so most rejected draws stop after n
    samples. The knot samples are dense samples of the pass, so the verdict is the same."""
    if min_turn_radius_factor <= 0.0:
        return False  # no sample can fail the bound
    for k in range(n):
        pos, d1, d2 = dense_sample(wrapped_point(ctrl, e, k - 1, n), wrapped_point(ctrl, e, k, n),
                                    wrapped_point(ctrl, e, k + 1, n), wrapped_point(ctrl, e, k + 2, n), 0, samples,
                                    kind,
                                    weights)
        if _bends_tighter(d1, d2, min_turn_radius_factor * ctrl_hw[e, k]):
            return True
    return False


@wp.func
def _count_points(
    e: int,
    total: float,
    point_spacing: float,
    max_points: int,
    max_loop_length: float,
    num_points: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
):
    """Env ``e``'s centreline point count for a loop ``total`` [m] long: a loop over the capacity or
    the length bound is rejected (its count clipped to the capacity), and so is a loop whose
    length is not finite (a layout of non-finite points: no int conversion of it)."""
    count = max_points
    u = total / point_spacing
    if u < 1.0e9:  # False for a NaN and for inf: no undefined int conversion
        count = wp.max(8, int(wp.round(u)))
    if count > max_points or not (total <= max_loop_length):
        ok[e] = 0
        count = wp.min(count, max_points)
    num_points[e] = count


@wp.kernel
def _spline_table(
    envs_per_thread: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_count: wp.array(dtype=wp.int32),
    kind: int,
    samples: int,
    weights: wp.array2d(dtype=wp.vec4),
    point_spacing: float,
    max_loop_length: float,
    max_points: int,
    ctrl_hw: wp.array2d(dtype=float),
    min_turn_radius_factor: float,
    max_retries: int,
    attempt: wp.array(dtype=wp.int32),
    table: wp.array2d(dtype=float),
    loop_length: wp.array(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        n = ctrl_count[e]
        if n < 3:
            ok[e] = 0
            num_points[e] = 0
            loop_length[e] = 0.0
            continue
        if attempt[e] < max_retries and _bends_at_a_knot(ctrl, e, n, kind, samples, weights, ctrl_hw,
                                                         min_turn_radius_factor):
            ok[e] = 0
            continue  # another draw follows: this one needs no table
        total = float(0.0)
        table[e, 0] = 0.0
        prev = wp.vec3()
        redraw = int(0)  # 1: another draw follows, this one needs no table
        for k in range(n):
            p0 = wrapped_point(ctrl, e, k - 1, n)
            p1 = wrapped_point(ctrl, e, k, n)
            p2 = wrapped_point(ctrl, e, k + 1, n)
            p3 = wrapped_point(ctrl, e, k + 2, n)
            # turn radius >= factor * half width, checked here on the dense samples already
            # (0 turns the check off): most rejected draws stop before the resampling
            limit = min_turn_radius_factor * ctrl_hw[e, k]
            for i in range(samples):
                pos, d1, d2 = dense_sample(p0, p1, p2, p3, i, samples, kind, weights)
                d = k * samples + i
                if d > 0:
                    total = total + wp.length(pos - prev)
                    table[e, d] = total
                prev = pos
                if _bends_tighter(d1, d2, limit):
                    ok[e] = 0
                    if attempt[e] < max_retries:
                        redraw = 1
                        break
            if redraw != 0:
                break
        if redraw != 0:
            continue
        pos0, d10, d20 = dense_sample(wrapped_point(ctrl, e, -1, n), wrapped_point(ctrl, e, 0, n),
                                       wrapped_point(ctrl, e, 1, n),
                                       wrapped_point(ctrl, e, 2, n), 0, samples, kind, weights)
        total = total + wp.length(pos0 - prev)
        table[e, n * samples] = total
        loop_length[e] = total
        _count_points(e, total, point_spacing, max_points, max_loop_length, num_points, ok)


@wp.kernel
def _spline_bend(
    pending: wp.array(dtype=wp.int32),
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_count: wp.array(dtype=wp.int32),
    kind: int,
    samples: int,
    weights: wp.array2d(dtype=wp.vec4),
    lanes: int,
    ctrl_hw: wp.array2d(dtype=float),
    min_turn_radius_factor: float,
    ok: wp.array(dtype=wp.int32),
):
    e, lane = wp.tid()
    if pending[e] == 0:
        return
    n = ctrl_count[e]
    if n < 3:
        return
    # turn radius >= factor * half width, checked on the dense samples before the table is
    # built (a lane per control segment): most rejected draws stop here, at a tight sample
    for k in range(lane, n, lanes):
        p0 = wrapped_point(ctrl, e, k - 1, n)
        p1 = wrapped_point(ctrl, e, k, n)
        p2 = wrapped_point(ctrl, e, k + 1, n)
        p3 = wrapped_point(ctrl, e, k + 2, n)
        limit = min_turn_radius_factor * ctrl_hw[e, k]
        for i in range(samples):
            pos, d1, d2 = dense_sample(p0, p1, p2, p3, i, samples, kind, weights)
            if _bends_tighter(d1, d2, limit):
                ok[e] = 0
                return
        if lanes > 1 and ok[e] == 0:
            return


@wp.kernel
def _spline_chords(
    pending: wp.array(dtype=wp.int32),
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_count: wp.array(dtype=wp.int32),
    kind: int,
    samples: int,
    weights: wp.array2d(dtype=wp.vec4),
    lanes: int,
    max_retries: int,
    attempt: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
    table: wp.array2d(dtype=float),
):
    e, lane = wp.tid()
    # a draw already rejected needs no table, but for the last attempt (it keeps its last draw)
    if pending[e] == 0 or (ok[e] == 0 and attempt[e] < max_retries):
        return
    n = ctrl_count[e]
    if n < 3:
        return
    last = n * samples
    # table[e, d] = the chord from dense sample d - 1 to d, a lane per control segment (the
    # chord into sample 0 closes the loop: it is table[e, last]); _spline_length sums them in order
    for k in range(lane, n, lanes):
        p0 = wrapped_point(ctrl, e, k - 1, n)
        p1 = wrapped_point(ctrl, e, k, n)
        p2 = wrapped_point(ctrl, e, k + 1, n)
        p3 = wrapped_point(ctrl, e, k + 2, n)
        # the last sample of the segment before
        prev, d1, d2 = dense_sample(wrapped_point(ctrl, e, k - 2, n), p0, p1, p2, samples - 1, samples, kind, weights)
        for i in range(samples):
            pos, d1, d2 = dense_sample(p0, p1, p2, p3, i, samples, kind, weights)
            d = k * samples + i
            if d == 0:
                d = last
            table[e, d] = wp.length(pos - prev)
            prev = pos


@wp.kernel
def _spline_length(
    pending: wp.array(dtype=wp.int32),
    ctrl_count: wp.array(dtype=wp.int32),
    samples: int,
    point_spacing: float,
    max_loop_length: float,
    max_points: int,
    max_retries: int,
    attempt: wp.array(dtype=wp.int32),
    table: wp.array2d(dtype=float),
    loop_length: wp.array(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
):
    e = wp.tid()
    if pending[e] == 0:
        return
    n = ctrl_count[e]
    if n < 3:
        ok[e] = 0
        num_points[e] = 0
        loop_length[e] = 0.0
        return
    if ok[e] == 0 and attempt[e] < max_retries:
        return  # another draw follows
    # the cumulative chord length, summed in sample order (the chords of _spline_chords)
    total = float(0.0)
    table[e, 0] = 0.0
    for d in range(1, n * samples + 1):
        total = total + table[e, d]
        table[e, d] = total
    loop_length[e] = total
    _count_points(e, total, point_spacing, max_points, max_loop_length, num_points, ok)


@wp.kernel
def _resample(
    envs_per_thread: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_hw: wp.array2d(dtype=float),
    ctrl_count: wp.array(dtype=wp.int32),
    kind: int,
    samples: int,
    lanes: int,
    max_retries: int,
    attempt: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
    table: wp.array2d(dtype=float),
    loop_length: wp.array(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    centerline: wp.array2d(dtype=wp.vec3),
    tangent: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
):
    thread, lane = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        # a draw already rejected is not resampled, but for the last attempt: an env that ends
        # invalid still holds its own last draw, whatever its history
        if pending[e] == 0 or (ok[e] == 0 and attempt[e] < max_retries):
            continue
        n = ctrl_count[e]
        count = num_points[e]
        if n < 3 or count < 1:
            continue
        total = loop_length[e]
        last = n * samples
        # Each lane's samples come in increasing s, so its search of the cumulative chord-length
        # table (table[lo] <= s < table[lo + 1]) resumes where the previous one stopped: a walk
        # of a step or two with one lane (the CPU), a binary search over the rest with many.
        lo = int(0)
        padded = int(0)
        pos = wp.vec3()
        tan = wp.vec3()
        left = wp.vec3()
        kappa = float(0.0)
        hw = float(0.0)
        s = float(0.0)
        # the control segment of the last point, and its four control points: read again only
        # when a point lies in another segment (~200 points share n = 12 segments)
        k = int(0)
        first = int(0)
        end = int(0)
        p0 = wp.vec3()
        p1 = wp.vec3()
        p2 = wp.vec3()
        p3 = wp.vec3()
        for j in range(lane, centerline.shape[1], lanes):
            # padding (j >= count) repeats the last point: evaluated once per lane, then copied
            if j < count or padded == 0:
                s = float(wp.min(j, count - 1)) * total / float(count)
                if lanes == 1:
                    while lo + 1 < last and table[e, lo + 1] <= s:
                        lo = lo + 1
                else:
                    hi = last
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        if table[e, mid] <= s:
                            lo = mid
                        else:
                            hi = mid
                seg = table[e, lo + 1] - table[e, lo]
                frac = float(0.0)
                if seg > 0.0:
                    frac = (s - table[e, lo]) / seg
                if lo < first or lo >= end:
                    k = lo // samples
                    first = k * samples
                    end = first + samples
                    p0 = wrapped_point(ctrl, e, k - 1, n)
                    p1 = wrapped_point(ctrl, e, k, n)
                    p2 = wrapped_point(ctrl, e, k + 1, n)
                    p3 = wrapped_point(ctrl, e, k + 2, n)
                t = segment_t(float(lo - first) + frac, samples)
                d1 = wp.vec3()
                d2 = wp.vec3()
                pos, d1, d2 = curve(p0, p1, p2, p3, t, kind)
                speed_xy = wp.sqrt(d1[0] * d1[0] + d1[1] * d1[1])
                tan = wp.normalize(d1)
                left = wp.vec3(0.0, 0.0, 0.0)
                kappa = 0.0
                if speed_xy > 0.0:
                    left = wp.vec3(-d1[1], d1[0], 0.0) / speed_xy
                    kappa = (d1[0] * d2[1] - d1[1] * d2[0]) / (speed_xy * speed_xy * speed_xy)
                if kind == BSPLINE:
                    hw = ctrl_hw[e, 0]
                else:
                    hw = (1.0 - t) * ctrl_hw[e, k % n] + t * ctrl_hw[e, (k + 1) % n]
                if j >= count:
                    padded = 1
            centerline[e, j] = pos
            tangent[e, j] = tan
            normal[e, j] = left
            arc_length[e, j] = s
            curvature[e, j] = kappa
            half_width[e, j] = hw


@wp.kernel
def _start(
    envs_per_thread: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    max_retries: int,
    attempt: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
    num_points: wp.array(dtype=wp.int32),
    centerline: wp.array2d(dtype=wp.vec3),
    tangent: wp.array2d(dtype=wp.vec3),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        # a draw already rejected gets no pose (as in _resample), but for the last attempt
        if pending[e] == 0 or (ok[e] == 0 and attempt[e] < max_retries):
            continue
        if num_points[e] >= 1:
            # on the first point, facing along the loop
            start_position[e] = centerline[e, 0]
            start_orientation[e] = yaw_quat(tangent[e, 0])
        else:
            start_position[e] = wp.vec3()
            start_orientation[e] = wp.quat_identity()


@wp.kernel
def _band(
    envs_per_thread: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    width: wp.array(dtype=float),
    ctrl_hw: wp.array2d(dtype=float),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        hw = 0.5 * width[e]
        for k in range(ctrl_hw.shape[1]):
            ctrl_hw[e, k] = hw


# --- the stages ----------------------------------------------------------------------------
def _e(ctx) -> int:
    return ctx.num_envs


class Band(Stage):
    """The band's half width at every control point: ``band.width / 2``."""

    name, family = "band", "track"
    params = (Param("width", 0.8, 0.0, math.inf, "[m] full width of the band", lo_open=True, stream=0),)
    writes = ("ctrl_hw",)

    def allocate(self, ctx):
        ctx.field("ctrl_hw", (_e(ctx), ctx.settings["num_control_points"]), float)

    def enqueue(self, ctx, pending):
        threads, per = env_loop.shape(ctx.device, _e(ctx))
        self.launch(_band, threads, inputs=[per, pending, ctx.pending_envs, ctx.num_pending, ctx.params["band.width"]],
                    outputs=[ctx.fields["ctrl_hw"]], device=ctx.device)


class Layout(Stage):
    """Control points around the centre at jittered angles and radii (the env's own stream)."""

    name, family = "layout", "track"
    params = (
        Param("size", 10.0, 0.0, math.inf, "[m] side of the square the track is drawn in", lo_open=True, stream=4),
        Param("radius_jitter", 0.7, 0.0, 1.0, "depth of the radial profile (fraction of the radius)", stream=3),
        Param("angle_jitter", 0.25, 0.0, 1.0, "fraction of the angular step drawn away", stream=1),
        Param("elevation", 0.0, 0.0, math.inf, "[m] height amplitude (0: flat)", stream=2),
        Param("num_turns", 20.0, 4.0, 20.0, "active control points, floored (each bends the loop once): "
              "<= the capacity num_control_points, which presets.track sets it to", stream=5),
    )
    reads = ("ctrl_hw",)
    writes = ("ctrl", "ctrl_count")
    draws = True

    def allocate(self, ctx):
        c = ctx.settings["num_control_points"]
        ctx.params.add_validator("layout.num_turns", _turns_within(c))
        warn = _warn_over_capacity(ctx.params, ctx.settings)
        for name in _LOOP_LENGTH_PARAMS:
            if name in ctx.params:
                ctx.params.add_validator(name, warn)
        if "layout.size" in ctx.params and "band.width" in ctx.params:
            room = _loop_has_room(ctx.params, ctx.settings)
            what = "stage 'layout': the construction values (or randomize ranges) of layout.size and band.width leave"
            room("layout.size", ctx.params.least("layout.size"), what)
            room("band.width", ctx.params.most("band.width"), what)
            for name in ("layout.size", "band.width"):
                ctx.params.add_validator(name, room)
        ctx.field("ctrl", (_e(ctx), c), wp.vec3)
        ctx.field("ctrl_count", _e(ctx), wp.int32)

    def enqueue(self, ctx, pending):
        p, f, s = ctx.params, ctx.fields, ctx.settings
        threads, per = env_loop.shape(ctx.device, _e(ctx))
        self.launch(
            _layout, threads,
            inputs=[per, ctx.seeds.seeds, ctx.seeds.counters, ctx.attempt, pending, ctx.pending_envs, ctx.num_pending,
                    p["layout.size"],
                    p["layout.radius_jitter"], p["layout.angle_jitter"], p["layout.elevation"], p["layout.num_turns"],
                    f["ctrl_hw"],
                    s["num_control_points"], s["min_turn_radius_factor"]],
            outputs=[f["ctrl"], f["ctrl_count"]], device=ctx.device,
        )


def _turns_within(capacity: int):
    """A live-set check of ``"layout.num_turns"``: at most the ``capacity`` control points."""

    def check(name, values):
        over = np.asarray(values) >= capacity + 1
        if np.any(over):
            raise ValueError(f"params[{name!r}] must be < num_control_points + 1 = {capacity + 1} (the capacity of "
                             f"control points, floored), got {first_bad(values, over)}")

    return check


#: The live parameters whose values set how long a flat loop can be (:func:`flat_loop_bound`).
_LOOP_LENGTH_PARAMS = ("layout.size", "band.width", "layout.radius_jitter")
#: Warn when the flat bound exceeds the capacity by this factor. Measured at the defaults
#: (1024 envs): the drawn loops are 0.71-0.76 of the bound (0.86-0.88 with radius_jitter 0.3),
#: so up to ~1.3x retries keep every env valid (size 12 m: 1.20x, 13 m: 1.31x, all valid;
#: 14 m: 1.42x, 0.1 % valid; 15 m: none).
_OVER_CAPACITY = 1.25


def _warn_over_capacity(params, settings):
    """A live-set check of :data:`_LOOP_LENGTH_PARAMS` (its notice warns): warn when the new values let an env draw
    flat loops (:func:`flat_loop_bound`; hills only lengthen them) more than :data:`_OVER_CAPACITY` times the
    generator's capacity (its ``max_points`` at ``point_spacing``, and ``max_loop_length``), fixed at
    construction. The draws over it are rejected and drawn again, and an env whose every draw
    is rejected holds no course, which no step reports."""
    capacity = min(settings["max_loop_length"], (settings["max_points"] + 0.5) * settings["point_spacing"])

    def check(name, values):
        # the longest loop: the largest size, the narrowest band, the roundest profile an env can draw
        worst = {"layout.size": params.most("layout.size"), "band.width": params.least("band.width"),
                 "layout.radius_jitter": params.least("layout.radius_jitter")}
        worst[name] = np.broadcast_to(np.asarray(values, dtype=np.float64), (params.num_envs,))
        # hills lengthen a loop beyond the flat bound: for them the warning comes late, never wrongly;
        # the bound once per distinct (size, width, jitter), not per env (most envs share them)
        triples = np.unique(np.stack([worst["layout.size"], worst["band.width"], worst["layout.radius_jitter"]], 1),
                            axis=0)
        longest = np.array([
            flat_loop_bound(float(size), float(width), float(jitter), settings["min_turn_radius_factor"],
                            settings["num_control_points"])
            if size > width else 0.0
            for size, width, jitter in triples
        ])
        if np.any(longest > _OVER_CAPACITY * capacity):
            return (
                f"params[{name!r}]: with these values the longest flat loop is over {_OVER_CAPACITY:g}x this "
                f"generator's "
                f"capacity of {capacity:.4g} m (max_points={settings['max_points']} at point_spacing="
                f"{settings['point_spacing']:g} m, max_loop_length={settings['max_loop_length']:g} m, sized at "
                f"construction): the longer draws are rejected and drawn again (slower regenerations), and from about "
                f"1.4x every draw is: an env then holds no course (valid 0, every step ends); build with the final "
                f"values (layout.size, band.width, layout.radius_jitter), or pass max_points")
        return None

    return check


def _loop_has_room(params, settings):
    """A check of ``"layout.size"`` and ``"band.width"`` (live sets, range ends, and the
    construction values at build): refuse values with which no draw can pass the turn-radius
    bound, in any env. Every control point lies within ``size / 2 - width / 2`` of the centre,
    so the loop (in their convex hull) lies in that circle, and a closed curve inside a circle
    of radius R turns tighter than R somewhere (do Carmo, *Differential Geometry of Curves and
    Surfaces*, 1976, section 1-7): with ``size / 2 - width / 2 <= min_turn_radius_factor *
    width / 2`` every draw is rejected and the env holds no course. The other parameter is
    taken at its most favourable (the largest size, the narrowest band a generation can use)."""
    factor = settings["min_turn_radius_factor"]

    def check(name, values, what=None):
        given = np.asarray(values, dtype=np.float64)
        values = np.broadcast_to(given, (params.num_envs,))
        if name == "layout.size":
            size, width = values, params.least("band.width")
        else:
            size, width = params.most("layout.size"), values
        short = size <= (1.0 + factor) * width
        if np.any(short):
            e, where = refused_env(short)
            order = "" if what else (" (to move both, set band.width first when shrinking layout.size, layout.size "
                                     "first when widening band.width)")
            raise ValueError(
                f"{what or f'params[{name!r}] leaves'} no room for a loop{where}: layout.size must be > (1 + "
                f"min_turn_radius_factor) * band.width = {(1.0 + factor) * width[e]:.6g} m, got layout.size "
                f"{size[e]:g} m "
                f"and band.width {width[e]:g} m. The loop lies within size / 2 - width / 2 of the centre, and a closed "
                f"curve inside a circle turns tighter than its radius somewhere, so every draw would turn tighter than "
                f"min_turn_radius_factor * width / 2 = {factor * width[e] / 2.0:.6g} m and the env would hold no "
                f"course{order}")

    return check


def _procedural(ctx) -> bool:
    return ctx.settings["source"] == "procedural"


class Spline(Stage):
    """The closed spline's arc-length table, loop length and point count; rejects a loop that
    turns tighter than the turn-radius bound or is longer than ``max_loop_length``."""

    name, family = "spline", "track"
    reads = ("ctrl", "ctrl_hw", "ctrl_count")
    writes = ("table", "loop_length", "num_points")

    def allocate(self, ctx):
        self.samples = DENSE_SAMPLES[ctx.settings["source"]]
        dense = ctx.fields["ctrl"].shape[1] * self.samples
        # the B-spline basis weights of the dense samples (the same for every segment and env)
        self.weights = wp.empty((self.samples, 3), dtype=wp.vec4, device=ctx.device)
        wp.launch(dense_weights, self.samples, inputs=[self.samples], outputs=[self.weights], device=ctx.device)
        wp.synchronize_device(ctx.device)  # written before any stream of the program reads it
        ctx.field("table", (_e(ctx), dense + 1), float)
        ctx.field("loop_length", _e(ctx), float)
        ctx.field("num_points", _e(ctx), wp.int32)
        self.lanes = env_loop.lanes(ctx.device, ctx.fields["ctrl"].shape[1])  # a lane per control segment

    def enqueue(self, ctx, pending):
        f, s, proc = ctx.fields, ctx.settings, _procedural(ctx)
        kind = int(BSPLINE if proc else CATMULL_ROM)
        factor = s["min_turn_radius_factor"] if proc else 0.0
        E, L = _e(ctx), self.lanes
        if L == 1:
            # one lane per env (the CPU): the bound, the chords and their sum in one pass
            threads, per = env_loop.shape(ctx.device, E)
            self.launch(
                _spline_table, threads,
                inputs=[per, pending, ctx.pending_envs, ctx.num_pending, f["ctrl"], f["ctrl_count"], kind, self.samples,
                        self.weights, s["point_spacing"],
                        s["max_loop_length"], s["max_points"], f["ctrl_hw"], factor, ctx.max_retries, ctx.attempt],
                outputs=[f["table"], f["loop_length"], f["num_points"], ctx.ok], device=ctx.device,
            )
            return
        # a lane per control segment (CUDA): the bound, then the chords, then their sum in
        # sample order (one thread per env: the same sums as the one pass, so the same bytes)
        if factor > 0.0:  # with 0 no sample can fail the bound
            self.launch(_spline_bend, (E, L),
                        inputs=[pending, f["ctrl"], f["ctrl_count"], kind, self.samples, self.weights, L,
                                                    f["ctrl_hw"], factor], outputs=[ctx.ok], device=ctx.device)
        self.launch(_spline_chords, (E, L),
                    inputs=[pending, f["ctrl"], f["ctrl_count"], kind, self.samples, self.weights, L,
                                                  ctx.max_retries, ctx.attempt, ctx.ok], outputs=[f["table"]],
                  device=ctx.device)
        self.launch(
            _spline_length, E,
            inputs=[pending, f["ctrl_count"], self.samples, s["point_spacing"], s["max_loop_length"], s["max_points"],
                    ctx.max_retries, ctx.attempt],
            outputs=[f["table"], f["loop_length"], f["num_points"], ctx.ok], device=ctx.device,
        )


POINT_FIELDS = ("centerline", "tangent", "normal", "arc_length", "curvature", "half_width")


class Resample(Stage):
    """Centreline points evenly spaced in arc length, with tangent, normal, curvature, half width."""

    name, family = "resample", "track"
    reads = ("ctrl", "ctrl_hw", "ctrl_count", "table", "loop_length", "num_points")
    writes = POINT_FIELDS

    def allocate(self, ctx):
        shape = (_e(ctx), ctx.settings["max_points"])
        for name in POINT_FIELDS:
            ctx.field(name, shape, wp.vec3 if name in ("centerline", "tangent", "normal") else float)
        self.samples = DENSE_SAMPLES[ctx.settings["source"]]
        self.lanes = env_loop.lanes(ctx.device, shape[1])

    def enqueue(self, ctx, pending):
        f = ctx.fields
        kind = BSPLINE if _procedural(ctx) else CATMULL_ROM
        threads, per = env_loop.shape(ctx.device, _e(ctx))
        self.launch(
            _resample, (threads, self.lanes),
            inputs=[per, pending, ctx.pending_envs, ctx.num_pending, f["ctrl"], f["ctrl_hw"], f["ctrl_count"],
                    int(kind), self.samples, self.lanes,
                    ctx.max_retries, ctx.attempt, ctx.ok, f["table"], f["loop_length"], f["num_points"]],
            outputs=[f[name] for name in POINT_FIELDS], device=ctx.device,
        )


class Start(Stage):
    """The start pose: on the first centreline point, facing along the loop."""

    name, family = "start", "track"
    reads = ("num_points", "centerline", "tangent")
    writes = ("start_position", "start_orientation")

    def allocate(self, ctx):
        ctx.field("start_position", _e(ctx), wp.vec3)
        ctx.field("start_orientation", _e(ctx), wp.quat, fill="identity")

    def enqueue(self, ctx, pending):
        f = ctx.fields
        threads, per = env_loop.shape(ctx.device, _e(ctx))
        self.launch(_start, threads,
                    inputs=[per, pending, ctx.pending_envs, ctx.num_pending, ctx.max_retries, ctx.attempt, ctx.ok,
                            f["num_points"],
                                             f["centerline"], f["tangent"]],
                    outputs=[f["start_position"], f["start_orientation"]], device=ctx.device)
