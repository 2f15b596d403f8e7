"""Kernels of the track-family runtime components (one Warp module: one compile).

``Checkpoints``, ``Progress``, ``BandCollision`` (both backends) and ``Localizer`` launch
the kernels here; the ``wp.func`` helpers (closest point on a closed polyline with a
warm-started windowed search, opening crossings) serve any component that reads a course
line with the field names of :class:`~trackgen_env.types.TrackResult`, and the Python
helpers at the end (input binding, launches on the course's stream) any component.

Conventions: a course line of ``n = num_points[e]`` points is closed; segment ``j`` runs
from point ``j`` to point ``(j + 1) % n`` and covers arc lengths
``[arc_length[e, j], arc_length[e, j + 1])`` (the last one ends at ``loop_length[e]``).
Geometry: closest point on a segment and a segment crossing a plane follow C. Ericson,
*Real-Time Collision Detection* (Morgan Kaufmann, 2005), sections 5.1.2 and 5.3.1.

Every kernel takes ``e = wp.tid()`` first, inputs before outputs (state read and written
in between), and the per-generation and reset kernels return early for envs outside the
mask. A kernel never reads past ``min(num_points[e], P)`` nor past a
capacity, and writes safe values for invalid envs.
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
    """Points of env ``e``'s line that may be read: 0 when the env is invalid or has < 3 points."""
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
def nearest_global(line: wp.array2d(dtype=wp.vec3), e: int, n: int, p: wp.vec3) -> int:
    """Index of the segment of env ``e``'s closed line (``n`` points) closest to ``p``: O(n)."""
    best = int(0)
    best_d = float(BIG)
    for j in range(n):
        d = segment_dist2(p, line[e, j], line[e, wrap_index(j + 1, n)])
        if d < best_d:
            best_d = d
            best = j
    return best


@wp.func
def nearest_window(line: wp.array2d(dtype=wp.vec3), e: int, n: int, center: int, window: int, p: wp.vec3) -> int:
    """Closest segment among ``center - window .. center + window`` (cyclic), or -1 when it
    lies on the window's edge (then it need not be a local minimum of the distance)."""
    best = int(0)
    best_i = int(0)
    best_d = float(BIG)
    for i in range(-window, window + 1):
        j = wrap_index(center + i, n)
        d = segment_dist2(p, line[e, j], line[e, wrap_index(j + 1, n)])
        if d < best_d:
            best_d = d
            best = j
            best_i = i
    if best_i == -window or best_i == window:
        return -1
    return best


@wp.func
def lateral_at(
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    e: int,
    n: int,
    j: int,
    p: wp.vec3,
) -> float:
    """Signed offset of ``p`` from segment ``j`` along the interpolated left normal (left > 0)."""
    j1 = wrap_index(j + 1, n)
    a = line[e, j]
    b = line[e, j1]
    t = segment_param(p, a, b)
    q = a + (b - a) * t
    return wp.dot(p - q, lerp_unit(normal[e, j], normal[e, j1], t))


@wp.func
def half_width_at(
    line: wp.array2d(dtype=wp.vec3), half_width: wp.array2d(dtype=float), e: int, n: int, j: int, p: wp.vec3
) -> float:
    """Band half width interpolated at the point of segment ``j`` closest to ``p``."""
    j1 = wrap_index(j + 1, n)
    t = segment_param(p, line[e, j], line[e, j1])
    return half_width[e, j] * (1.0 - t) + half_width[e, j1] * t


@wp.func
def locate(
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    e: int,
    n: int,
    warm: int,
    window: int,
    check_band: int,
    p: wp.vec3,
) -> int:
    """Segment of env ``e``'s closed line closest to ``p``, warm-started at segment ``warm``.

    Searches ``warm +- window`` segments; falls back to the global O(n) search when
    ``warm`` is unset (outside ``[0, n)``, e.g. -1 after a reset), when the window covers
    the whole line, when the windowed minimum sits on the window's edge (not a local
    minimum), or, with ``check_band``, when ``p`` is off the band there (a teleport can
    land next to another part of the course). Requires ``n >= 3``.
    """
    if warm < 0 or warm >= n or 2 * window + 1 >= n:
        return nearest_global(line, e, n, p)
    j = nearest_window(line, e, n, warm, window, p)
    if j < 0:
        return nearest_global(line, e, n, p)
    if check_band != 0:
        if wp.abs(lateral_at(line, normal, e, n, j, p)) > half_width_at(line, half_width, e, n, j, p):
            return nearest_global(line, e, n, p)
    return j


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
    e, k = wp.tid()
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
    if k == 0:
        num_checkpoints[e] = n
        cp_loop_length[e] = length
        clipped[e] = wp.where(wanted > capacity, 1, 0)
        draws[e] = 0
    if k >= n:
        # padding (never read: consumers stop at num_checkpoints)
        cp_position[e, k] = wp.vec3(0.0)
        cp_direction[e, k] = _X_AXIS
        cp_half_width[e, k] = 0.0
        cp_half_height[e, k] = half_height
        cp_arc_length[e, k] = 0.0
        return
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
    j1 = wrap_index(j + 1, n_pts)
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
def crosses_opening(
    q: wp.vec3, p: wp.vec3, c: wp.vec3, d: wp.vec3, half_width: float, half_height: float, forward: int
) -> int:
    """1 when the step ``q -> p`` crosses the opening at ``c`` (plane normal ``d``) in the
    given sense (``forward`` 1: from behind to in front; 0: from in front to behind)
    inside ``|lateral| <= half_width`` and ``|vertical| <= half_height``, where
    lateral = normalize(z x d) and vertical = d x lateral."""
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
    if wp.abs(wp.dot(x, lat)) <= half_width and wp.abs(wp.dot(x, vert)) <= half_height:
        return 1
    return 0


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
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=float),
    cp_half_height: wp.array2d(dtype=float),
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
    n = wp.min(num_checkpoints[e], cp_position.shape[1])
    if n < 1:
        return
    s0 = start_checkpoint[e]
    k_net = net[e]
    best = checkpoints_passed[e]
    n_laps = laps[e]
    k_next = wrap_index(s0 + k_net + 1, n)
    k_prev = wrap_index(s0 + k_net, n)
    fwd = crosses_opening(q, p, cp_position[e, k_next], cp_direction[e, k_next], cp_half_width[e, k_next],
                          cp_half_height[e, k_next], 1)
    back = int(0)
    if fwd == 0:
        back = crosses_opening(q, p, cp_position[e, k_prev], cp_direction[e, k_prev], cp_half_width[e, k_prev],
                               cp_half_height[e, k_prev], 0)
    if fwd != 0:
        k_net = k_net + 1
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
        wrong_way[e] = 1
    net[e] = k_net
    checkpoints_passed[e] = best
    laps[e] = n_laps
    next_checkpoint[e] = wrap_index(s0 + k_net + 1, n)
    in_lap = wp.clamp(k_net - n_laps * n, 0, n - 1)
    lap_fraction[e] = float(in_lap) / float(n)


# -- collision and localisation -------------------------------------------------------------
@wp.kernel
def _unset_warm(mask: wp.array(dtype=wp.int32), warm: wp.array(dtype=wp.int32)):
    e = wp.tid()
    if mask[e] == 0:
        return
    warm[e] = -1


@wp.func
def band_clearance(
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    e: int,
    n: int,
    warm: int,
    window: int,
    p: wp.vec3,
) -> float:
    """Half width minus |lateral offset| of ``p`` at its closest segment near ``warm`` (< 0: off
    the band). A box corner searches around its box centre's segment: being off the band is
    what is measured there, not a sign of a teleport."""
    j = locate(line, normal, half_width, e, n, warm, window, 0, p)
    return half_width_at(line, half_width, e, n, j, p) - wp.abs(lateral_at(line, normal, e, n, j, p))


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
    j = locate(line, normal, half_width, e, n, warm[e], window, 1, c)
    warm[e] = j
    clearance = float(0.0)
    if use_box != 0:
        rot = orientation[e]
        h = half_extents[e]
        clearance = float(BIG)
        for i in range(4):
            sx = wp.where(i % 2 == 0, 1.0, -1.0)
            sy = wp.where(i < 2, 1.0, -1.0)
            corner = c + wp.quat_rotate(rot, wp.vec3(sx * h[0], sy * h[1], -h[2]))
            clearance = wp.min(clearance, band_clearance(line, normal, half_width, e, n, j, window, corner))
    else:
        clearance = half_width_at(line, half_width, e, n, j, c) - wp.abs(lateral_at(line, normal, e, n, j, c))
    distance[e] = clearance
    hit[e] = wp.where(clearance < 0.0, 1, 0)


@wp.kernel
def _localize(
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    use_orientation: int,
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    tangent: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
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
    j = locate(line, normal, half_width, e, n, warm[e], window, 1, p)
    warm[e] = j
    segment[e] = j
    j1 = wrap_index(j + 1, n)
    a = line[e, j]
    b = line[e, j1]
    t = segment_param(p, a, b)
    length = loop_length[e]
    s0 = arc_length[e, j]
    s1 = length
    if j + 1 < n:
        s1 = arc_length[e, j + 1]
    sp = s0 + (s1 - s0) * t
    if sp >= length:
        sp = sp - length
    s[e] = wp.max(sp, 0.0)
    lateral_offset[e] = wp.dot(p - (a + (b - a) * t), lerp_unit(normal[e, j], normal[e, j1], t))
    curvature_out[e] = curvature[e, j] * (1.0 - t) + curvature[e, j1] * t
    err = float(0.0)
    if use_orientation != 0:
        f = wp.quat_rotate(orientation[e], _X_AXIS)
        d = lerp_unit(tangent[e, j], tangent[e, j1], t)
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
    # output
    grid: wp.array3d(dtype=float),
):
    e, iy, ix = wp.tid()
    if mask[e] == 0:
        return
    grid[e, iy, ix] = -2.0 * cell[e]


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
    # output: max over segments of (half width - distance) at each node
    grid: wp.array3d(dtype=float),
):
    e, j = wp.tid()
    if mask[e] == 0:
        return
    n = line_count(num_points, valid, line.shape[1], e)
    if j >= n:
        return
    j1 = wrap_index(j + 1, n)
    a = line[e, j]
    b = line[e, j1]
    a2 = wp.vec3(a[0], a[1], 0.0)
    b2 = wp.vec3(b[0], b[1], 0.0)
    h = cell[e]
    o = origin[e]
    r = reach[e]
    res = grid.shape[1]
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
    if u < 0.0 or v < 0.0 or u > float(res - 1) or v > float(res - 1):
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
    hit[e] = wp.where(clearance < 0.0, 1, 0)


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


def launch(kernel, dim, ctx, inputs) -> None:
    """Launch on the course's device and stream (the current stream when it has none)."""
    wp.launch(kernel, dim=dim, inputs=inputs, device=ctx.device, stream=ctx.stream)
