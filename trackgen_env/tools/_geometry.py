"""Kernels of the track-family runtime components (one Warp module: one compile).

``Checkpoints``, ``Progress``, ``BandCollision`` (both backends) and ``Localizer`` launch
the kernels here; the ``wp.func`` helpers (closest point on a closed polyline by a
warm-started descent, opening crossings) serve any component that reads a course
line with the field names of :class:`~trackgen_env.types.TrackResult`, and the Python
helpers at the end (input binding, launches on the course's stream) any component.

Conventions: a course line of ``n = num_points[e]`` points is closed; segment ``j`` runs
from point ``j`` to point ``(j + 1) % n`` and covers arc lengths
``[arc_length[e, j], arc_length[e, j + 1])`` (the last one ends at ``loop_length[e]``).
Geometry: closest point on a segment and a segment crossing a plane follow C. Ericson,
*Real-Time Collision Detection* (Morgan Kaufmann, 2005), sections 5.1.2 and 5.3.1.

Every kernel takes ``e = wp.tid()`` (``e, lane = wp.tid()``) first, inputs before outputs
(state read and written in between), and the per-generation and reset kernels return
early for envs outside the mask. Per-generation kernels run ``lanes(device, count)``
threads per env, each looping over its share of the env's points or checkpoints: on the
CPU one, as each thread of a launch costs ~10-15 ns even when its env is masked out
(Warp copies every array argument per thread), so a masked regeneration of a few envs at
E = 4096 costs microseconds, not milliseconds. A kernel never reads past
``min(num_points[e], P)`` nor past a capacity, and writes safe values for invalid envs.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..seeding import random_key, uniform

wp.set_module_options({"enable_backward": False})

BIG = wp.constant(1.0e30)
_Z_UP = wp.constant(wp.vec3(0.0, 0.0, 1.0))
_X_AXIS = wp.constant(wp.vec3(1.0, 0.0, 0.0))
_PI = wp.constant(3.14159265358979)
_TWO_PI = wp.constant(6.28318530717959)

#: A course-line point's data the ``Localizer`` reads besides the position, normal and half
#: width: tangent x, y, z, arc length [m], curvature [1/m]; one record per point, so the
#: two points of a segment share a cache line or two instead of one per source array.
frame_record = wp.types.vector(length=5, dtype=wp.float32)

#: A checkpoint's opening as ``Progress`` reads it: centre x, y, z [m], direction x, y, z,
#: half width [m], half height [m]; 32 bytes, so an opening and its neighbour often share
#: one cache line (instead of a line in each of 4 arrays).
opening_record = wp.types.vector(length=8, dtype=wp.float32)


# -- closed polylines -----------------------------------------------------------------------
@wp.func
def wrap_index(i: int, n: int) -> int:
    """``i`` modulo ``n`` in ``[0, n)`` for any sign of ``i`` (``n >= 1``)."""
    r = i % n
    if r < 0:
        r = r + n
    return r


@wp.func
def line_count(num_points: wp.array(dtype=wp.int32), valid: wp.array(dtype=wp.int32), capacity: int, e: int) -> int:
    """Items (line points, gates) of env ``e`` that may be read: at most ``capacity``, and 0
    when the env is invalid or has fewer than 3."""
    n = wp.min(num_points[e], capacity)
    if valid[e] == 0 or n < 3:
        return 0
    return n


@wp.func
def segment_param(p: wp.vec3, a: wp.vec3, b: wp.vec3) -> float:
    """Parameter ``t`` in [0, 1] of the point of segment ``a -> b`` closest to ``p``."""
    ab = b - a
    l2 = wp.dot(ab, ab)
    if l2 <= 0.0:
        return 0.0
    return wp.clamp(wp.dot(p - a, ab) / l2, 0.0, 1.0)


@wp.func
def segment_dist2(p: wp.vec3, a: wp.vec3, b: wp.vec3) -> float:
    """Squared distance from ``p`` to segment ``a -> b``."""
    t = segment_param(p, a, b)
    d = p - (a + (b - a) * t)
    return wp.dot(d, d)


@wp.func
def lerp_unit(u0: wp.vec3, u1: wp.vec3, t: float) -> wp.vec3:
    """Normalised linear blend of two unit vectors (``u0`` when the blend vanishes)."""
    u = u0 * (1.0 - t) + u1 * t
    l = wp.length(u)
    if l > 1.0e-9:
        return u / l
    return u0


@wp.func
def next_point(j: int, n: int) -> int:
    """``(j + 1) % n`` for ``j`` in ``[0, n)``, without an integer division."""
    if j + 1 < n:
        return j + 1
    return 0


@wp.func
def prev_point(j: int, n: int) -> int:
    """``(j - 1) % n`` for ``j`` in ``[0, n)``, without an integer division."""
    if j > 0:
        return j - 1
    return n - 1


@wp.func
def segment_d2(line: wp.array2d(dtype=wp.vec3), e: int, n: int, j: int, p: wp.vec3) -> float:
    """Squared distance from ``p`` to segment ``j`` (``j`` in ``[0, n)``) of env ``e``'s closed line."""
    return segment_dist2(p, line[e, j], line[e, next_point(j, n)])


@wp.func
def nearest_global(line: wp.array2d(dtype=wp.vec3), e: int, n: int, p: wp.vec3) -> int:
    """Index of the segment of env ``e``'s closed line (``n`` points) closest to ``p``: O(n)."""
    best = int(0)
    best_d = float(BIG)
    for j in range(n):
        d = segment_d2(line, e, n, j, p)
        if d < best_d:
            best_d = d
            best = j
    return best


@wp.func
def nearest_walk(
    line: wp.array2d(dtype=wp.vec3), e: int, n: int, center: int, start: int, window: int, p: wp.vec3
) -> int:
    """Closest segment to ``p`` among ``center +- window`` (cyclic; ``2 window + 1 < n``) by
    descent from segment ``center + start`` (``|start| < window``), or -1 when the descent
    reaches the window's edge (the closest segment may lie beyond it).

    Steps to the neighbour while it is closer and stops at a local minimum of the segment
    distance: 2 or 3 + (steps) distance evaluations instead of the window's ``2 window + 1``.
    Where the distance is unimodal over the window (a point on or near the band of a
    track whose band does not fold over itself) this is the window's minimum from any
    start, ties included: like a scan from ``center - window`` upwards, it keeps the
    lowest offset among equal distances (a descent downwards moves on ties, upwards not).
    """
    offset = start
    best = center + start  # |start| < n: one wrap at most
    if best < 0:
        best = best + n
    elif best >= n:
        best = best - n
    best_d = segment_d2(line, e, n, best, p)
    up = next_point(best, n)
    d_up = segment_d2(line, e, n, up, p)
    down = int(0)
    d_down = float(BIG)
    if not (d_up < best_d):
        # a descent upwards needs no look downwards (the distance is unimodal)
        down = prev_point(best, n)
        d_down = segment_d2(line, e, n, down, p)
    if d_up < best_d:
        best = up
        best_d = d_up
        offset = offset + 1
        while offset < window:
            j = next_point(best, n)
            d = segment_d2(line, e, n, j, p)
            if d < best_d:
                best = j
                best_d = d
                offset = offset + 1
            else:
                break
    elif d_down <= best_d:
        best = down
        best_d = d_down
        offset = offset - 1
        while offset > -window:
            j = prev_point(best, n)
            d = segment_d2(line, e, n, j, p)
            if d <= best_d:
                best = j
                best_d = d
                offset = offset - 1
            else:
                break
    if offset >= window or offset <= -window:
        return -1
    return best


@wp.func
def project(
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    e: int,
    n: int,
    j: int,
    p: wp.vec3,
):
    """Projection of ``p`` on segment ``j``: its parameter ``t`` in [0, 1], the signed offset
    along the interpolated left normal (left > 0) and the band half width interpolated there."""
    j1 = next_point(j, n)
    a = line[e, j]
    b = line[e, j1]
    t = segment_param(p, a, b)
    q = a + (b - a) * t
    lateral = wp.dot(p - q, lerp_unit(normal[e, j], normal[e, j1], t))
    hw = half_width[e, j] * (1.0 - t) + half_width[e, j1] * t
    return t, lateral, hw


@wp.func
def locate(
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    e: int,
    n: int,
    warm: int,
    start: int,
    window: int,
    check_band: int,
    p: wp.vec3,
):
    """Segment ``j`` of env ``e``'s closed line closest to ``p``, warm-started at segment
    ``warm``, and the projection of ``p`` on it (see :func:`project`): ``(j, t, lateral, hw)``.

    A descent from segment ``warm + start`` (:func:`nearest_walk`, within ``warm +-
    window``; ``start`` is clamped to ``+-(window - 1)``); falls back to the global O(n)
    search when ``warm`` is unset (outside ``[0, n)``, e.g. -1 after a reset), when the
    window covers the whole line, when the descent reaches the window's edge (the closest
    segment may lie beyond it), or, with ``check_band``, when ``p`` is off the band there
    (a teleport can land next to another part of the course). Requires ``n >= 3``.
    """
    j = int(-1)
    if warm >= 0 and warm < n and 2 * window + 1 < n:
        j = nearest_walk(line, e, n, warm, wp.clamp(start, 1 - window, window - 1), window, p)
    if j >= 0:
        t, lateral, hw = project(line, normal, half_width, e, n, j, p)
        if check_band == 0 or not (wp.abs(lateral) > hw):
            return j, t, lateral, hw
    j = nearest_global(line, e, n, p)
    t, lateral, hw = project(line, normal, half_width, e, n, j, p)
    return j, t, lateral, hw


@wp.func
def yaw_quat(d: wp.vec3) -> wp.quat:
    """Rotation about z taking +x to the horizontal heading of ``d`` (identity when vertical)."""
    yaw = wp.atan2(d[1], d[0])
    return wp.quat_from_axis_angle(_Z_UP, yaw)


@wp.func
def wrap_angle(a: float) -> float:
    """``a`` wrapped to [-pi, pi)."""
    r = a - _TWO_PI * wp.floor((a + _PI) / _TWO_PI)
    if r >= _PI:
        r = r - _TWO_PI
    if r < -_PI:
        r = r + _TWO_PI
    return r


# -- checkpoints ----------------------------------------------------------------------------
@wp.kernel
def _place_checkpoints(
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    tangent: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    spacing: float,
    half_height: float,
    lanes: int,
    # outputs
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=float),
    cp_half_height: wp.array2d(dtype=float),
    cp_arc_length: wp.array2d(dtype=float),
    num_checkpoints: wp.array(dtype=wp.int32),
    cp_loop_length: wp.array(dtype=float),
    clipped: wp.array(dtype=wp.int32),
    draws: wp.array(dtype=wp.int32),
):
    e, lane = wp.tid()
    if mask[e] == 0:
        return
    capacity = cp_position.shape[1]
    n_pts = line_count(num_points, valid, line.shape[1], e)
    length = loop_length[e]
    wanted = int(0)
    if n_pts >= 3 and length > 0.0:
        # compared in float first: a tiny spacing must not overflow the int conversion
        wanted = wp.max(3, int(wp.min(wp.floor(length / spacing), float(capacity + 1))))
    else:
        length = 0.0
    n = wp.min(wanted, capacity)
    if lane == 0:
        num_checkpoints[e] = n
        cp_loop_length[e] = length
        clipped[e] = wp.where(wanted > capacity, 1, 0)
        draws[e] = 0
    for k in range(lane, capacity, lanes):
        if k >= n:
            # padding (never read: consumers stop at num_checkpoints)
            cp_position[e, k] = wp.vec3(0.0)
            cp_direction[e, k] = _X_AXIS
            cp_half_width[e, k] = 0.0
            cp_half_height[e, k] = half_height
            cp_arc_length[e, k] = 0.0
        else:
            s = float(k) * length / float(n)
            # last point j with arc_length[e, j] <= s (arc lengths increase from 0)
            lo = int(0)
            hi = n_pts - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if arc_length[e, mid] <= s:
                    lo = mid
                else:
                    hi = mid - 1
            j = lo
            j1 = next_point(j, n_pts)
            s0 = arc_length[e, j]
            s1 = length
            if j + 1 < n_pts:
                s1 = arc_length[e, j + 1]
            t = float(0.0)
            if s1 > s0:
                t = wp.clamp((s - s0) / (s1 - s0), 0.0, 1.0)
            cp_position[e, k] = line[e, j] * (1.0 - t) + line[e, j1] * t
            cp_direction[e, k] = lerp_unit(tangent[e, j], tangent[e, j1], t)
            cp_half_width[e, k] = half_width[e, j] * (1.0 - t) + half_width[e, j1] * t
            cp_half_height[e, k] = half_height
            cp_arc_length[e, k] = s


@wp.kernel
def _sample_checkpoints(
    mask: wp.array(dtype=wp.int32),
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    num_checkpoints: wp.array(dtype=wp.int32),
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    stream: int,
    write_index: int,
    # in/out: draws made since the env's last generation
    draws: wp.array(dtype=wp.int32),
    # outputs
    out_position: wp.array(dtype=wp.vec3),
    out_orientation: wp.array(dtype=wp.quat),
    out_index: wp.array(dtype=wp.int32),
):
    e = wp.tid()
    if mask[e] == 0:
        return
    n = wp.min(num_checkpoints[e], cp_position.shape[1])
    k = int(0)
    if n > 0:
        u = uniform(random_key(seeds[e], counters[e], stream), draws[e])
        k = wp.min(int(u * float(n)), n - 1)
    draws[e] = draws[e] + 1
    out_position[e] = cp_position[e, k]
    out_orientation[e] = yaw_quat(cp_direction[e, k])
    if write_index != 0:
        out_index[e] = k


# -- progress -------------------------------------------------------------------------------
@wp.func
def crosses_opening(opening: opening_record, q: wp.vec3, p: wp.vec3, forward: int) -> int:
    """1 when the step ``q -> p`` crosses the opening at ``c`` (plane normal ``d``) in the
    given sense (``forward`` 1: from behind to in front; 0: from in front to behind)
    inside ``|lateral| <= half_width`` and ``|vertical| <= half_height``, where
    lateral = normalize(z x d) and vertical = d x lateral."""
    c = wp.vec3(opening[0], opening[1], opening[2])
    d = wp.vec3(opening[3], opening[4], opening[5])
    dq = wp.dot(q - c, d)
    dp = wp.dot(p - c, d)
    if forward != 0:
        if not (dq < 0.0 and dp >= 0.0):
            return 0
    else:
        if not (dq >= 0.0 and dp < 0.0):
            return 0
    x = q + (p - q) * (dq / (dq - dp)) - c
    lat = wp.cross(_Z_UP, d)
    l = wp.length(lat)
    if l > 1.0e-9:
        lat = lat / l
    else:
        lat = wp.vec3(0.0, 1.0, 0.0)
    vert = wp.cross(d, lat)
    if wp.abs(wp.dot(x, lat)) <= opening[6] and wp.abs(wp.dot(x, vert)) <= opening[7]:
        return 1
    return 0


@wp.kernel
def _pack_openings(
    mask: wp.array(dtype=wp.int32),
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=float),
    cp_half_height: wp.array2d(dtype=float),
    lanes: int,
    # output
    openings: wp.array2d(dtype=opening_record),
):
    e, lane = wp.tid()
    if mask[e] == 0:
        return
    for k in range(lane, openings.shape[1], lanes):
        c = cp_position[e, k]
        d = cp_direction[e, k]
        openings[e, k] = opening_record(c[0], c[1], c[2], d[0], d[1], d[2], cp_half_width[e, k], cp_half_height[e, k])


@wp.kernel
def _progress_reset(
    mask: wp.array(dtype=wp.int32),
    num_checkpoints: wp.array(dtype=wp.int32),
    capacity: int,
    start: wp.array(dtype=wp.int32),
    use_start: int,
    # state
    start_checkpoint: wp.array(dtype=wp.int32),
    net: wp.array(dtype=wp.int32),
    has_prev: wp.array(dtype=wp.int32),
    # outputs
    passed: wp.array(dtype=wp.int32),
    lap_completed: wp.array(dtype=wp.int32),
    wrong_way: wp.array(dtype=wp.int32),
    next_checkpoint: wp.array(dtype=wp.int32),
    checkpoints_passed: wp.array(dtype=wp.int32),
    laps: wp.array(dtype=wp.int32),
    lap_fraction: wp.array(dtype=float),
):
    e = wp.tid()
    if mask[e] == 0:
        return
    n = wp.min(num_checkpoints[e], capacity)
    s0 = int(0)
    nxt = int(0)
    if n > 0:
        if use_start != 0:
            s0 = wrap_index(start[e], n)
        nxt = wrap_index(s0 + 1, n)
    start_checkpoint[e] = s0
    net[e] = 0
    has_prev[e] = 0
    passed[e] = 0
    lap_completed[e] = 0
    wrong_way[e] = 0
    next_checkpoint[e] = nxt
    checkpoints_passed[e] = 0
    laps[e] = 0
    lap_fraction[e] = 0.0


@wp.kernel
def _progress_step(
    position: wp.array(dtype=wp.vec3),
    openings: wp.array2d(dtype=opening_record),
    num_checkpoints: wp.array(dtype=wp.int32),
    # state
    start_checkpoint: wp.array(dtype=wp.int32),
    net: wp.array(dtype=wp.int32),
    has_prev: wp.array(dtype=wp.int32),
    prev_position: wp.array(dtype=wp.vec3),
    # outputs (counters are read and written)
    passed: wp.array(dtype=wp.int32),
    lap_completed: wp.array(dtype=wp.int32),
    wrong_way: wp.array(dtype=wp.int32),
    next_checkpoint: wp.array(dtype=wp.int32),
    checkpoints_passed: wp.array(dtype=wp.int32),
    laps: wp.array(dtype=wp.int32),
    lap_fraction: wp.array(dtype=float),
):
    e = wp.tid()
    p = position[e]
    passed[e] = 0
    lap_completed[e] = 0
    if has_prev[e] == 0:
        prev_position[e] = p
        has_prev[e] = 1
        return
    q = prev_position[e]
    prev_position[e] = p
    n = wp.min(num_checkpoints[e], openings.shape[1])
    if n < 1:
        return
    s0 = start_checkpoint[e]
    k_net = net[e]
    best = checkpoints_passed[e]
    n_laps = laps[e]
    k_next = wrap_index(s0 + k_net + 1, n)
    k_prev = prev_point(k_next, n)
    fwd = crosses_opening(openings[e, k_next], q, p, 1)
    back = int(0)
    if fwd == 0:
        back = crosses_opening(openings[e, k_prev], q, p, 0)
    k_new = k_next
    if fwd != 0:
        k_net = k_net + 1
        k_new = next_point(k_next, n)
        wrong_way[e] = 0
        # only new ground counts: re-passing a checkpoint undone by a wrong-way crossing
        # restores the order but earns no pass (no farming by driving back and forth)
        if k_net > best:
            best = k_net
            passed[e] = 1
            if best % n == 0:
                n_laps = n_laps + 1
                lap_completed[e] = 1
    elif back != 0:
        k_net = k_net - 1
        k_new = k_prev
        wrong_way[e] = 1
    net[e] = k_net
    checkpoints_passed[e] = best
    laps[e] = n_laps
    next_checkpoint[e] = k_new  # (s0 + k_net + 1) mod n
    in_lap = wp.clamp(k_net - n_laps * n, 0, n - 1)
    lap_fraction[e] = float(in_lap) / float(n)


# -- collision and localisation -------------------------------------------------------------
@wp.kernel
def _unset_warm(mask: wp.array(dtype=wp.int32), warm: wp.array(dtype=wp.int32)):
    e = wp.tid()
    if mask[e] == 0:
        return
    warm[e] = -1


@wp.kernel
def _band_collision(
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    half_extents: wp.array(dtype=wp.vec3),
    use_box: int,
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    window: int,
    # state: warm-start segment (-1: unset)
    warm: wp.array(dtype=wp.int32),
    # outputs
    hit: wp.array(dtype=wp.int32),
    distance: wp.array(dtype=float),
):
    e = wp.tid()
    n = line_count(num_points, valid, line.shape[1], e)
    if n == 0:
        hit[e] = 1
        distance[e] = 0.0
        warm[e] = -1
        return
    c = position[e]
    j, t, lateral, hw = locate(line, normal, half_width, e, n, warm[e], 0, window, 1, c)
    warm[e] = j
    clearance = hw - wp.abs(lateral)
    if use_box != 0:
        # each corner searches around the centre's segment (being off the band is what is
        # measured there, not a sign of a teleport), its descent starting at the segment
        # its offset along segment j points to (the centreline is resampled evenly)
        rot = orientation[e]
        h = half_extents[e]
        a = line[e, j]
        ab = line[e, next_point(j, n)] - a
        l2 = wp.dot(ab, ab)
        along = wp.vec3(0.0)
        if l2 > 0.0:
            along = ab / l2
        clearance = float(BIG)
        for i in range(4):
            sx = wp.where(i % 2 == 0, 1.0, -1.0)
            sy = wp.where(i < 2, 1.0, -1.0)
            corner = c + wp.quat_rotate(rot, wp.vec3(sx * h[0], sy * h[1], -h[2]))
            u = wp.dot(corner - a, along)
            if not (wp.abs(u) < float(window)):  # also a NaN position: no undefined int conversion
                u = wp.where(u > 0.0, float(window), -float(window))
            jc, tc, lateral_c, hw_c = locate(line, normal, half_width, e, n, j, int(wp.floor(u)), window, 0, corner)
            corner_clearance = hw_c - wp.abs(lateral_c)
            if wp.isnan(corner_clearance):
                clearance = corner_clearance  # wp.min would drop a NaN: keep it, it is a hit
                break
            clearance = wp.min(clearance, corner_clearance)
    distance[e] = clearance
    hit[e] = wp.where(clearance >= 0.0, 0, 1)  # a NaN body (a diverged simulation) is a hit


@wp.kernel
def _pack_frame(
    mask: wp.array(dtype=wp.int32),
    tangent: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    lanes: int,
    # output
    frame: wp.array2d(dtype=frame_record),
):
    e, lane = wp.tid()
    if mask[e] == 0:
        return
    for j in range(lane, frame.shape[1], lanes):
        d = tangent[e, j]
        frame[e, j] = frame_record(d[0], d[1], d[2], arc_length[e, j], curvature[e, j])


@wp.kernel
def _localize(
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    use_orientation: int,
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    frame: wp.array2d(dtype=frame_record),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    window: int,
    # state: warm-start segment (-1: unset)
    warm: wp.array(dtype=wp.int32),
    # outputs
    s: wp.array(dtype=float),
    lateral_offset: wp.array(dtype=float),
    heading_error: wp.array(dtype=float),
    curvature_out: wp.array(dtype=float),
    segment: wp.array(dtype=wp.int32),
):
    e = wp.tid()
    n = line_count(num_points, valid, line.shape[1], e)
    if n == 0:
        s[e] = 0.0
        lateral_offset[e] = 0.0
        heading_error[e] = 0.0
        curvature_out[e] = 0.0
        segment[e] = 0
        warm[e] = -1
        return
    p = position[e]
    j, t, lateral, hw = locate(line, normal, half_width, e, n, warm[e], 0, window, 1, p)
    warm[e] = j
    segment[e] = j
    j1 = next_point(j, n)
    r0 = frame[e, j]
    r1 = frame[e, j1]
    length = loop_length[e]
    s0 = r0[3]
    s1 = length
    if j + 1 < n:
        s1 = r1[3]
    sp = s0 + (s1 - s0) * t
    if sp >= length:
        sp = sp - length
    s[e] = wp.max(sp, 0.0)
    lateral_offset[e] = lateral
    curvature_out[e] = r0[4] * (1.0 - t) + r1[4] * t
    err = float(0.0)
    if use_orientation != 0:
        f = wp.quat_rotate(orientation[e], _X_AXIS)
        d = lerp_unit(wp.vec3(r0[0], r0[1], r0[2]), wp.vec3(r1[0], r1[1], r1[2]), t)
        err = wrap_angle(wp.atan2(f[1], f[0]) - wp.atan2(d[1], d[0]))
    heading_error[e] = err


# -- baked band clearance grid (BandCollision "sdf") ----------------------------------------
@wp.kernel
def _sdf_frame(
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    resolution: int,
    # outputs
    origin: wp.array(dtype=wp.vec2),
    cell: wp.array(dtype=float),
    reach: wp.array(dtype=float),
):
    e = wp.tid()
    if mask[e] == 0:
        return
    n = line_count(num_points, valid, line.shape[1], e)
    if n == 0:
        origin[e] = wp.vec2(0.0, 0.0)
        cell[e] = 0.0
        reach[e] = 0.0
        return
    lo = wp.vec2(BIG, BIG)
    hi = wp.vec2(-BIG, -BIG)
    hw = float(0.0)
    for j in range(n):
        p = line[e, j]
        lo = wp.vec2(wp.min(lo[0], p[0]), wp.min(lo[1], p[1]))
        hi = wp.vec2(wp.max(hi[0], p[0]), wp.max(hi[1], p[1]))
        hw = wp.max(hw, half_width[e, j])
    # the grid covers the band and a margin of 4 cells around it
    extent = wp.max(hi[0] - lo[0], hi[1] - lo[1]) + 2.0 * hw
    h = extent / float(resolution - 9)
    margin = hw + 4.0 * h
    origin[e] = wp.vec2(lo[0] - margin, lo[1] - margin)
    cell[e] = h
    reach[e] = hw + 2.0 * h


@wp.kernel
def _sdf_clear(
    mask: wp.array(dtype=wp.int32),
    cell: wp.array(dtype=float),
    lanes: int,
    # output
    grid: wp.array3d(dtype=float),
):
    e, lane = wp.tid()
    if mask[e] == 0:
        return
    res = grid.shape[2]
    far = -2.0 * cell[e]
    for i in range(lane, grid.shape[1] * res, lanes):
        grid[e, i // res, i % res] = far


@wp.kernel
def _sdf_splat(
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    origin: wp.array(dtype=wp.vec2),
    cell: wp.array(dtype=float),
    reach: wp.array(dtype=float),
    lanes: int,
    # output: max over segments of (half width - distance) at each node
    grid: wp.array3d(dtype=float),
):
    e, lane = wp.tid()
    if mask[e] == 0:
        return
    n = line_count(num_points, valid, line.shape[1], e)
    h = cell[e]
    o = origin[e]
    r = reach[e]
    res = grid.shape[1]
    for j in range(lane, n, lanes):
        j1 = next_point(j, n)
        a = line[e, j]
        b = line[e, j1]
        a2 = wp.vec3(a[0], a[1], 0.0)
        b2 = wp.vec3(b[0], b[1], 0.0)
        x0 = wp.max(int(wp.floor((wp.min(a[0], b[0]) - r - o[0]) / h)), 0)
        x1 = wp.min(int(wp.ceil((wp.max(a[0], b[0]) + r - o[0]) / h)), res - 1)
        y0 = wp.max(int(wp.floor((wp.min(a[1], b[1]) - r - o[1]) / h)), 0)
        y1 = wp.min(int(wp.ceil((wp.max(a[1], b[1]) + r - o[1]) / h)), res - 1)
        for iy in range(y0, y1 + 1):
            for ix in range(x0, x1 + 1):
                q = wp.vec3(o[0] + float(ix) * h, o[1] + float(iy) * h, 0.0)
                t = segment_param(q, a2, b2)
                d = wp.length(q - (a2 + (b2 - a2) * t))
                wp.atomic_max(grid, e, iy, ix, half_width[e, j] * (1.0 - t) + half_width[e, j1] * t - d)


@wp.func
def sdf_sample(grid: wp.array3d(dtype=float), e: int, o: wp.vec2, h: float, p: wp.vec3) -> float:
    """Bilinear clearance at ``p`` (x-y); beyond the grid, the far value of 2 cells outside."""
    res = grid.shape[1]
    u = (p[0] - o[0]) / h
    v = (p[1] - o[1]) / h
    # written so that a NaN position lands here too: no undefined int conversion
    if not (u >= 0.0 and v >= 0.0 and u <= float(res - 1) and v <= float(res - 1)):
        return -2.0 * h
    ix = wp.min(int(u), res - 2)
    iy = wp.min(int(v), res - 2)
    fu = u - float(ix)
    fv = v - float(iy)
    c0 = grid[e, iy, ix] * (1.0 - fu) + grid[e, iy, ix + 1] * fu
    c1 = grid[e, iy + 1, ix] * (1.0 - fu) + grid[e, iy + 1, ix + 1] * fu
    return c0 * (1.0 - fv) + c1 * fv


@wp.kernel
def _sdf_collision(
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    half_extents: wp.array(dtype=wp.vec3),
    use_box: int,
    valid: wp.array(dtype=wp.int32),
    num_points: wp.array(dtype=wp.int32),
    capacity: int,
    origin: wp.array(dtype=wp.vec2),
    cell: wp.array(dtype=float),
    grid: wp.array3d(dtype=float),
    # outputs
    hit: wp.array(dtype=wp.int32),
    distance: wp.array(dtype=float),
):
    e = wp.tid()
    h = cell[e]
    if line_count(num_points, valid, capacity, e) == 0 or h <= 0.0:
        hit[e] = 1
        distance[e] = 0.0
        return
    c = position[e]
    o = origin[e]
    clearance = float(0.0)
    if use_box != 0:
        rot = orientation[e]
        he = half_extents[e]
        clearance = float(BIG)
        for i in range(4):
            sx = wp.where(i % 2 == 0, 1.0, -1.0)
            sy = wp.where(i < 2, 1.0, -1.0)
            corner = c + wp.quat_rotate(rot, wp.vec3(sx * he[0], sy * he[1], -he[2]))
            clearance = wp.min(clearance, sdf_sample(grid, e, o, h, corner))
    else:
        clearance = sdf_sample(grid, e, o, h, c)
    distance[e] = clearance
    hit[e] = wp.where(clearance >= 0.0, 0, 1)  # a NaN body (a diverged simulation) is a hit


# -- Python helpers shared by the components ------------------------------------------------
def bind_inputs(component, arrays: dict) -> dict:
    """Validate ``arrays`` against ``component.inputs`` and apply the default routes.

    Names a component does not declare are ignored (a course hands every component the
    same arrays). Returns the new ``name -> array`` binding.

    Raises:
        TypeError: a declared input is not a ``wp.array`` or has another dtype.
        ValueError: a declared input has another shape or lives on another device.
    """
    ctx = component.context
    bound = {}
    for spec in component.inputs:
        arr = arrays.get(spec.name)
        if arr is None:
            continue
        if not isinstance(arr, wp.array):
            raise TypeError(f"{component.name}: input {spec.name!r} must be a wp.array, got {type(arr).__name__}")
        if arr.dtype != spec.dtype:
            raise TypeError(
                f"{component.name}: input {spec.name!r} must have dtype {wp.types.type_repr(spec.dtype)}, "
                f"got {wp.types.type_repr(arr.dtype)}"
            )
        if ctx is not None:
            shape = spec.shape(ctx.num_envs)
            if tuple(arr.shape) != shape:
                raise ValueError(f"{component.name}: input {spec.name!r} must have shape {shape}, got {tuple(arr.shape)}")
            if arr.device != ctx.device:
                raise ValueError(f"{component.name}: input {spec.name!r} must be on {ctx.device}, got {arr.device}")
        bound[spec.name] = arr
    for spec in component.inputs:
        if spec.name not in bound and spec.default is not None and spec.default in bound:
            bound[spec.name] = bound[spec.default]
    return bound


def require_bound(component) -> None:
    """Raise ``RuntimeError("call bind() before step()")`` while a required input is unbound."""
    missing = [s.name for s in component.inputs if s.required and s.name not in component.bound]
    if missing:
        raise RuntimeError(f"call bind() before step(): {component.name!r} needs {', '.join(missing)}")


def check_window(value, name: str, default: int) -> int:
    """An int >= 1 search half-window (None: ``default``).

    Raises:
        TypeError: not an int (a bool is refused).
        ValueError: < 1.
    """
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= 1 or None, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value}")
    return int(value)


def lanes(device: wp.Device, count: int) -> int:
    """Threads per env of a per-generation kernel looping over ``count`` items (points,
    checkpoints, gates): 1 on the CPU, where a launch runs on one thread and each thread
    costs ~10-15 ns even when its env is masked out (Warp copies every array argument per
    thread), so a masked regeneration of one env costs ~nothing; ``min(64, count)`` on
    CUDA, where the lanes run in parallel."""
    return 1 if device.is_cpu else max(1, min(64, int(count)))


def launch(kernel, dim, ctx, inputs) -> None:
    """Launch on the course's device and stream (the current stream when it has none)."""
    wp.launch(kernel, dim=dim, inputs=inputs, device=ctx.device, stream=ctx.stream)
