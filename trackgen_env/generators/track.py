"""``TrackGenerator``: batches of closed race tracks, generated in Warp kernels.

One regeneration (``enqueue``), all on the device, no host synchronisation::

    advance(mask) -> draw randomized params -> begin (pending = mask)
    -> while any env is pending (at most 1 + max_retries rounds):
         layout  (per env: control points from the env's stream, keyed by its attempt)
         spline  (per env: arc-length table of the closed spline, loop length, point count)
         resample(per env x point: points every ~point_spacing, tangent, normal, curvature)
         checks  (per env x point: turn radius, band self-intersection)
         finalize(per env: accept, or retry with fresh draws, or give up: valid = 0)
    -> masked commit into ``result`` (unmasked envs' rows stay bit-identical), generation += 1

Procedural tracks are periodic uniform cubic B-splines through jittered control points
around the centre (the curve lies in the control points' convex hull, so it stays inside
the course square); a given centreline (source ``"centerline"``) is interpolated by a
uniform Catmull-Rom spline, which passes through every given point. Curve formulas:
Catmull & Rom (1974); de Boor, *A Practical Guide to Splines* (1978). Arc-length
resampling inverts the cumulative chord length of a dense sampling of the spline.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from ..pipeline import TrackGenConfig
from ..polyline import TWO_PI, X_AXIS, Y_AXIS, next_point, prev_point, wrapped_point, yaw_quat
from ..seeding import ATTEMPT_STREAMS, Stream, random_key, uniform
from ..types import InputInfo, TrackLayout, TrackResult
from .base import Generator, identity_quats
from .centerline_io import check_centerline

__all__ = ["TrackGenConfig", "TrackGenerator"]

wp.set_module_options({"enable_backward": False})

_BSPLINE = wp.constant(0)
_CATMULL_ROM = wp.constant(1)
_STREAM_LAYOUT = wp.constant(int(Stream.LAYOUT) * ATTEMPT_STREAMS)  # + attempt: the layout stage's streams
_STRIDE = wp.constant(8)  # coarse step of the self-intersection scan
_MAX_POINTS = 1 << 16  # TrackGenConfig's largest max_points


# --- curve evaluation --------------------------------------------------------------------
@wp.func
def _curve(p0: wp.vec3, p1: wp.vec3, p2: wp.vec3, p3: wp.vec3, t: float, kind: int):
    """Position, first and second derivative (per unit t) of one spline segment."""
    t2 = t * t
    t3 = t2 * t
    if kind == _BSPLINE:
        s = 1.0 / 6.0
        pos = s * ((1.0 - t) * (1.0 - t) * (1.0 - t) * p0 + (3.0 * t3 - 6.0 * t2 + 4.0) * p1
                   + (-3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0) * p2 + t3 * p3)
        d1 = 0.5 * (-(1.0 - t) * (1.0 - t) * p0 + (3.0 * t2 - 4.0 * t) * p1 + (-3.0 * t2 + 2.0 * t + 1.0) * p2 + t2 * p3)
        d2 = (1.0 - t) * p0 + (3.0 * t - 2.0) * p1 + (-3.0 * t + 1.0) * p2 + t * p3
        return pos, d1, d2
    a = -p0 + p2
    b = 2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3
    c = -p0 + 3.0 * p1 - 3.0 * p2 + p3
    pos = 0.5 * (2.0 * p1 + a * t + b * t2 + c * t3)
    d1 = 0.5 * (a + 2.0 * b * t + 3.0 * c * t2)
    d2 = 0.5 * (2.0 * b + 6.0 * c * t)
    return pos, d1, d2


# --- stages ------------------------------------------------------------------------------
# The layout adapts to the band: the defaults (a 0.8 m band in a 10 m square, turn radius
# >= 2 half widths, 12 control points) draw their shapes unchanged; a wider band, a smaller
# square or a larger turn-radius factor (a tighter ratio q = min turn radius / loop radius)
# draws shallower lobes, and more control points draw less per-point noise, so that the
# same share of draws passes the checks whatever the documented values.
_REF_CONTROL_POINTS = wp.constant(12.0)
_REF_TURN_RATIO = wp.constant(0.8 / 4.6)  # q of the defaults: 2 * 0.4 m over (5 - 0.4) m
_DEPTH_EXP = wp.constant(1.5)  # measured: the lowest power of those tried (1, 1.5, 2) that keeps >= 99 % valid


@wp.func
def _layout_depth(radius_jitter: float, min_turn_radius: float, r_outer: float) -> float:
    """Depth of the radial profile: ``radius_jitter`` up to the defaults' ratio q, beyond it
    the depth whose innermost radius ``r_outer (1 - depth)`` grows as ``(q / q_ref)^1.5``
    (0 from q = 0.39 on with the default jitter: a round loop)."""
    q = min_turn_radius / wp.max(r_outer, 1.0e-9)
    if q <= _REF_TURN_RATIO:
        return radius_jitter
    return wp.clamp(1.0 - (1.0 - radius_jitter) * wp.pow(q / _REF_TURN_RATIO, _DEPTH_EXP), 0.0, radius_jitter)


@wp.kernel
def _layout(
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    size: wp.array(dtype=float),
    radius_jitter: wp.array(dtype=float),
    angle_jitter: wp.array(dtype=float),
    elevation: wp.array(dtype=float),
    width: wp.array(dtype=float),
    num_ctrl: int,
    min_turn_radius_factor: float,
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_hw: wp.array2d(dtype=float),
    ctrl_count: wp.array(dtype=wp.int32),
    run: wp.array(dtype=wp.int32),
):
    e = wp.tid()
    if e == 0:
        run[0] = 0  # finalize sets it again while an env is still pending
    if pending[e] == 0:
        return
    key = random_key(seeds[e], counters[e], _STREAM_LAYOUT + attempt[e])
    hw = 0.5 * width[e]
    r_outer = 0.5 * size[e] - hw
    depth = _layout_depth(radius_jitter[e], min_turn_radius_factor * hw, r_outer)
    # per-point noise of a fine loop: its wiggles bend as (noise / control spacing)^2
    noise = 0.2 * wp.min(1.0, (_REF_CONTROL_POINTS / float(num_ctrl)) * (_REF_CONTROL_POINTS / float(num_ctrl)))
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
    for k in range(num_ctrl):
        u = (float(k) + angle_jitter[e] * (2.0 * uniform(key, 8 + 3 * k) - 1.0)) * step
        theta = phase + direction * u
        f = (a2 * (1.0 + wp.cos(2.0 * u + p2)) + a3 * (1.0 + wp.cos(3.0 * u + p3)) + a4 * (1.0 + wp.cos(4.0 * u + p4))) / (2.0 * total)
        r = r_outer * (1.0 - depth * (0.8 * f + noise * uniform(key, 9 + 3 * k)))
        z = elevation[e] * uniform(key, 10 + 3 * k)
        ctrl[e, k] = wp.vec3(r * wp.cos(theta), r * wp.sin(theta), z)
        ctrl_hw[e, k] = hw
    ctrl_count[e] = num_ctrl


@wp.kernel
def _centerline_input(
    xy: wp.array2d(dtype=wp.vec4),
    count: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_hw: wp.array2d(dtype=float),
    ctrl_count: wp.array(dtype=wp.int32),
    run: wp.array(dtype=wp.int32),
):
    e = wp.tid()
    if e == 0:
        run[0] = 0
    if pending[e] == 0:
        return
    n = wp.clamp(count[e], 0, xy.shape[1])
    ctrl_count[e] = n
    if n < 3:
        return
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
def _spline_table(
    pending: wp.array(dtype=wp.int32),
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_count: wp.array(dtype=wp.int32),
    kind: int,
    samples: int,
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
    e = wp.tid()
    if pending[e] == 0:
        return
    n = ctrl_count[e]
    ok[e] = 1
    if n < 3:
        ok[e] = 0
        num_points[e] = 0
        loop_length[e] = 0.0
        return
    total = float(0.0)
    table[e, 0] = 0.0
    prev = wp.vec3()
    for k in range(n):
        p0 = wrapped_point(ctrl, e, k - 1, n)
        p1 = wrapped_point(ctrl, e, k, n)
        p2 = wrapped_point(ctrl, e, k + 1, n)
        p3 = wrapped_point(ctrl, e, k + 2, n)
        # turn radius >= factor * half width, checked here on the dense samples already
        # (0 turns the check off): most rejected draws stop before the resampling
        limit = min_turn_radius_factor * ctrl_hw[e, k]
        for i in range(samples):
            pos, d1, d2 = _curve(p0, p1, p2, p3, float(i) / float(samples), kind)
            d = k * samples + i
            if d > 0:
                total = total + wp.length(pos - prev)
                table[e, d] = total
            prev = pos
            # |kappa| * limit > 1, squared: (cross * limit)^2 > |d1_xy|^6
            speed2 = d1[0] * d1[0] + d1[1] * d1[1]
            bend = (d1[0] * d2[1] - d1[1] * d2[0]) * limit
            if bend * bend > speed2 * speed2 * speed2:
                ok[e] = 0
                if attempt[e] < max_retries:
                    return  # another draw follows: this one needs no table
    pos0, d10, d20 = _curve(wrapped_point(ctrl, e, -1, n), wrapped_point(ctrl, e, 0, n), wrapped_point(ctrl, e, 1, n), wrapped_point(ctrl, e, 2, n), 0.0, kind)
    total = total + wp.length(pos0 - prev)
    table[e, n * samples] = total
    loop_length[e] = total
    count = wp.max(8, int(wp.round(total / point_spacing)))
    if count > max_points or total > max_loop_length:
        ok[e] = 0
        count = wp.min(count, max_points)
    num_points[e] = count


@wp.kernel
def _resample(
    pending: wp.array(dtype=wp.int32),
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
    e, lane = wp.tid()
    # a draw already rejected is not resampled, but for the last attempt: an env that ends
    # invalid still holds its own last draw, whatever its history
    if pending[e] == 0 or (ok[e] == 0 and attempt[e] < max_retries):
        return
    n = ctrl_count[e]
    count = num_points[e]
    if n < 3 or count < 1:
        return
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
            k = lo // samples
            t = (float(lo - k * samples) + frac) / float(samples)
            d1 = wp.vec3()
            d2 = wp.vec3()
            pos, d1, d2 = _curve(wrapped_point(ctrl, e, k - 1, n), wrapped_point(ctrl, e, k, n), wrapped_point(ctrl, e, k + 1, n), wrapped_point(ctrl, e, k + 2, n), t, kind)
            speed_xy = wp.sqrt(d1[0] * d1[0] + d1[1] * d1[1])
            tan = wp.normalize(d1)
            left = wp.vec3(0.0, 0.0, 0.0)
            kappa = 0.0
            if speed_xy > 0.0:
                left = wp.vec3(-d1[1], d1[0], 0.0) / speed_xy
                kappa = (d1[0] * d2[1] - d1[1] * d2[0]) / (speed_xy * speed_xy * speed_xy)
            if kind == _BSPLINE:
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
def _checks(
    pending: wp.array(dtype=wp.int32),
    lanes: int,
    min_turn_radius_factor: float,
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    centerline: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    ok: wp.array(dtype=wp.int32),
):
    e, lane = wp.tid()
    if pending[e] == 0 or ok[e] == 0:
        return
    count = num_points[e]
    total = loop_length[e]
    for i in range(lane, count, lanes):
        hw = half_width[e, i]
        # turn radius >= factor * half width (the inner band edge must not fold over)
        if wp.abs(curvature[e, i]) * min_turn_radius_factor * hw > 1.0:
            ok[e] = 0
            return
        # band self-intersection: points far apart along the loop must be >= 2 half widths
        # apart. Scan every STRIDE-th point first: a point within STRIDE - 1 steps of a
        # coarse point p_j is at most (STRIDE - 1) * step from it, so only a coarse point
        # closer than 2 hw + that bound needs its run of fine points checked.
        skip = 3.0 * (2.0 * hw)
        pi = centerline[e, i]
        si = arc_length[e, i]
        step = total / float(count)
        reach = 2.0 * hw + float(_STRIDE - 1) * step
        for jc in range(i + 1, count, _STRIDE):
            d = centerline[e, jc] - pi
            if d[0] * d[0] + d[1] * d[1] < reach * reach:
                for j in range(jc, wp.min(jc + _STRIDE, count)):
                    ds = arc_length[e, j] - si
                    if ds > skip and total - ds > skip:
                        dj = centerline[e, j] - pi
                        if dj[0] * dj[0] + dj[1] * dj[1] < (hw + half_width[e, j]) * (hw + half_width[e, j]):
                            ok[e] = 0
                            return
        if ok[e] == 0:
            return


@wp.kernel
def _commit(
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
    e, lane = wp.tid()
    if use_mask != 0 and mask[e] == 0:
        return
    count = s_num_points[e]
    ok = s_valid[e]
    if count < 1:
        ok = 0
    for j in range(lane, centerline.shape[1], lanes):
        if count < 1:
            # nothing usable was drawn: a degenerate, invalid track at the origin
            centerline[e, j] = wp.vec3()
            tangent[e, j] = X_AXIS
            normal[e, j] = Y_AXIS
            arc_length[e, j] = 0.0
            curvature[e, j] = 0.0
            half_width[e, j] = 0.0
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
        if count >= 1:
            t = s_tangent[e, 0]
            start_position[e] = s_centerline[e, 0]
            start_orientation[e] = yaw_quat(t)
        else:
            start_position[e] = wp.vec3()
            start_orientation[e] = wp.quat_identity()


def _track_arrays(num_envs: int, num_points: int, device) -> dict:
    """Per-point and per-env arrays of a TrackResult (also the staging buffers)."""
    z2 = lambda dtype: wp.zeros((num_envs, num_points), dtype=dtype, device=device)  # noqa: E731
    return dict(
        centerline=z2(wp.vec3), tangent=z2(wp.vec3), normal=z2(wp.vec3), arc_length=z2(float),
        curvature=z2(float), half_width=z2(float),
        num_points=wp.zeros(num_envs, dtype=wp.int32, device=device),
        loop_length=wp.zeros(num_envs, dtype=float, device=device),
    )


class TrackGenerator(Generator):
    """A batch of closed race tracks, regenerated per env on the device.

    Args:
        source: a :class:`TrackGenConfig` or a ``PipelineSpec`` of the track family
            (``presets.track(...)``).
        seeds: None (seed 0), an int (env ``i`` gets ``hash(seed, i)``), an ``[E] int32``
            ``wp.array`` bound by pointer (never written), a ``PerEnvSeededRNG``, or a
            ``SeedState``.
        stream: the ``wp.Stream`` to launch on (default: the device's current stream).
        prepare: run the first generation now (loads the Warp module: do it before any
            capture) and read ``result.valid`` back once: a ``UserWarning`` names the valid
            rate if under 90 % of the envs hold a course. With False, ``result`` is all
            zeros until the first ``generate``.

    Attributes:
        result: :class:`~trackgen_env.types.TrackResult`, stable arrays ``[E, P]`` / ``[E]``.
        layout: :class:`~trackgen_env.types.TrackLayout` (capacities).
        params: live dynamic parameters (``"layout.size"``, ``"band.width"``, ...).
        seeds: the :class:`~trackgen_env.seeding.SeedState`.
        inputs / input_info: generator inputs (``"centerline.xy"``, ``"centerline.count"``
            for a config with ``source="centerline"``), written in place by the user.

    Raises:
        TypeError: ``source`` is not a TrackGenConfig or a track PipelineSpec, or a bad ``seeds``.
        ValueError: a seeds array of the wrong shape, dtype or device.
    """

    family = "track"
    config_type = TrackGenConfig
    _DENSE_SAMPLES = {"procedural": 32, "centerline": 4}

    def __init__(self, source, *, seeds=None, stream=None, prepare: bool = True):
        super().__init__(source, seeds=seeds, stream=stream)
        cfg = self.config
        E, P, dev = cfg.num_envs, cfg.max_points, self.device
        self.layout = TrackLayout(num_envs=E, max_points=P, max_loop_length=cfg.declared_max_loop_length)
        self.result = TrackResult(
            **_track_arrays(E, P, dev),
            start_position=wp.zeros(E, dtype=wp.vec3, device=dev),
            start_orientation=identity_quats((E,), dev),
            valid=wp.zeros(E, dtype=wp.int32, device=dev),
            generation=wp.zeros(E, dtype=wp.int32, device=dev),
        )
        # staging buffers: stages write here, the masked commit copies the masked envs' rows
        self._stage = _track_arrays(E, P, dev)
        self._procedural = cfg.source == "procedural"
        num_ctrl = cfg.num_control_points if self._procedural else cfg.max_input_points
        self._samples = self._DENSE_SAMPLES[cfg.source]
        self._ctrl = wp.zeros((E, num_ctrl), dtype=wp.vec3, device=dev)
        self._ctrl_hw = wp.zeros((E, num_ctrl), dtype=float, device=dev)
        self._ctrl_count = wp.zeros(E, dtype=wp.int32, device=dev)
        self._table = wp.zeros((E, num_ctrl * self._samples + 1), dtype=float, device=dev)
        # Threads per env for the per-point stages: one on the CPU (a serial loop is fastest
        # there), a warp's worth on CUDA so small batches still fill the device.
        self._lanes = 1 if self.device.is_cpu else min(64, P)
        if not self._procedural:
            n = cfg.max_input_points
            self.input_info = {
                "centerline.xy": InputInfo(wp.vec4, (E, n), "closed centreline per env: x [m], y [m], width right [m], width left [m]"),
                "centerline.count": InputInfo(wp.int32, (E,), "points in use per env (>= 3)"),
            }
            self.inputs = {
                "centerline.xy": wp.zeros((E, n), dtype=wp.vec4, device=dev),
                "centerline.count": wp.zeros(E, dtype=wp.int32, device=dev),
            }
        if prepare:
            self._first_generation()

    # --- construction from a given centreline ---------------------------------------------
    @classmethod
    def from_centerline(cls, points, *, num_envs: int = 1, device=None, point_spacing: float | None = None,
                        seeds=None, stream=None) -> "TrackGenerator":
        """A generator whose every env drives the closed centreline ``points``.

        Args:
            points: ``[N, 4]`` array-like: x [m], y [m], width right [m], width left [m]
                (the layout of public racetrack databases), a closed loop (a last point that
                repeats the first is dropped); ``N >= 3``.
            point_spacing: [m] resampling spacing (default: the median input spacing).

        Raises:
            ValueError: ``points`` is not ``[N >= 3, 4]`` finite numbers with widths > 0, or
                fails :func:`~trackgen_env.generators.centerline_io.check_centerline` (an
                out-and-back or otherwise degenerate loop, repeated consecutive points), or
                resampled every ``point_spacing`` it needs over 65536 points.
        """
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != 4 or pts.shape[0] < 3:
            raise ValueError(f"points must be [N >= 3, 4] (x, y, w_right, w_left), got shape {pts.shape}")
        if not np.all(np.isfinite(pts)) or np.any(pts[:, 2:] < 0):
            raise ValueError("points must be finite, with widths >= 0")
        pts = check_centerline(pts, name="points")  # the one check of a closed centreline
        seg = np.linalg.norm(np.diff(np.vstack([pts[:, :2], pts[:1, :2]]), axis=0), axis=1)
        spacing = float(np.median(seg)) if point_spacing is None else float(point_spacing)
        length = float(seg.sum() + 2.0 * np.abs(pts[:, 2:]).max() * math.pi)  # the mid-line shift can lengthen it
        needed = math.ceil(1.25 * length / spacing) + 2
        if needed > _MAX_POINTS:
            longest = (_MAX_POINTS - 2) * spacing / 1.25 - 2.0 * np.abs(pts[:, 2:]).max() * math.pi
            raise ValueError(
                f"a centreline {seg.sum():,.0f} m long, resampled every {spacing:g} m, needs up to {needed} points, "
                f"over the {_MAX_POINTS} a track holds: expected a circuit up to {longest:,.0f} m long at this "
                f"spacing (from_centerline takes a coarser point_spacing)"
            )
        cfg = TrackGenConfig(num_envs=num_envs, device=device, source="centerline", max_input_points=len(pts),
                             point_spacing=spacing, max_loop_length=1.25 * length, size=float(np.ptp(pts[:, :2]) + 1.0))
        gen = cls(cfg, seeds=seeds, stream=stream, prepare=False)
        gen.inputs["centerline.xy"].assign(np.broadcast_to(pts.astype(np.float32), (num_envs, len(pts), 4)).copy())
        gen.inputs["centerline.count"].fill_(len(pts))
        gen._first_generation()
        return gen

    # --- regeneration (the skeleton is Generator.enqueue) ---------------------------------
    @property
    def max_retries(self) -> int:
        # a given centreline draws nothing: a second round would rebuild the same track
        return self.config.max_retries if self._procedural else 0

    def _commit(self, mask: wp.array, use_mask: int) -> None:
        st, r = self._stage, self.result
        wp.launch(
            _commit, (self.num_envs, self._lanes),
            inputs=[mask, use_mask, self._lanes, st["centerline"], st["tangent"], st["normal"], st["arc_length"],
                    st["curvature"], st["half_width"], st["num_points"], st["loop_length"], self._valid],
            outputs=[r.centerline, r.tangent, r.normal, r.arc_length, r.curvature, r.half_width, r.num_points,
                     r.loop_length, r.start_position, r.start_orientation, r.valid, r.generation],
            device=self.device,
        )

    def _attempt_round(self) -> None:
        """One round of the stages for every pending env (the body of the retry loop)."""
        cfg, dev, E, st, p = self.config, self.device, self.num_envs, self._stage, self.params
        kind = _BSPLINE if self._procedural else _CATMULL_ROM
        if self._procedural:
            wp.launch(
                _layout, E,
                inputs=[self.seeds.seeds, self.seeds.counters, self._attempt, self._pending, p["layout.size"],
                        p["layout.radius_jitter"], p["layout.angle_jitter"], p["layout.elevation"], p["band.width"],
                        cfg.num_control_points, cfg.min_turn_radius_factor],
                outputs=[self._ctrl, self._ctrl_hw, self._ctrl_count, self._run], device=dev,
            )
        else:
            wp.launch(
                _centerline_input, E,
                inputs=[self.inputs["centerline.xy"], self.inputs["centerline.count"], self._pending],
                outputs=[self._ctrl, self._ctrl_hw, self._ctrl_count, self._run], device=dev,
            )
        wp.launch(
            _spline_table, E,
            inputs=[self._pending, self._ctrl, self._ctrl_count, int(kind), self._samples, cfg.point_spacing,
                    cfg.max_loop_length, cfg.max_points, self._ctrl_hw,
                    cfg.min_turn_radius_factor if self._procedural else 0.0, self.max_retries, self._attempt],
            outputs=[self._table, st["loop_length"], st["num_points"], self._ok], device=dev,
        )
        wp.launch(
            _resample, (E, self._lanes),
            inputs=[self._pending, self._ctrl, self._ctrl_hw, self._ctrl_count, int(kind), self._samples, self._lanes,
                    self.max_retries, self._attempt, self._ok, self._table, st["loop_length"], st["num_points"]],
            outputs=[st["centerline"], st["tangent"], st["normal"], st["arc_length"], st["curvature"], st["half_width"]],
            device=dev,
        )
        if self._procedural:
            wp.launch(
                _checks, (E, self._lanes),
                inputs=[self._pending, self._lanes, cfg.min_turn_radius_factor, st["num_points"], st["loop_length"],
                        st["centerline"], st["arc_length"], st["curvature"], st["half_width"]],
                outputs=[self._ok], device=dev,
            )
        self._finalize_round()

    def __repr__(self) -> str:
        return f"TrackGenerator(num_envs={self.num_envs}, device={self.device}, max_points={self.layout.max_points})"

