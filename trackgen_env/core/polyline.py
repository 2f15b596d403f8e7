"""Closed-polyline math and the constants shared by every layer (``wp.func`` helpers only).

Generators, components, envs and the renderer read course lines through these helpers.
A course line of env ``e`` is the first ``n`` points of row ``e`` of an ``[E, P] vec3``
array, closed: segment ``j`` runs from point ``j`` to point ``(j + 1) % n``. Where a line
carries per-point ``normal`` (the horizontal left normal) and ``half_width`` arrays, as a
:class:`~trackgen_env.core.types.TrackResult` does, it is a band, and :func:`project` /
:func:`locate` give a point's signed distance across it.

Closest point on a segment: C. Ericson, *Real-Time Collision Detection* (Morgan
Kaufmann, 2005), section 5.1.2.
"""

from __future__ import annotations

import math

import warp as wp

BIG = wp.constant(1.0e30)  # stands for "unbounded" (a far distance, an open half height)
X_AXIS = wp.constant(wp.vec3(1.0, 0.0, 0.0))
Y_AXIS = wp.constant(wp.vec3(0.0, 1.0, 0.0))
Z_AXIS = wp.constant(wp.vec3(0.0, 0.0, 1.0))  # up
PI = wp.constant(math.pi)
TWO_PI = wp.constant(2.0 * math.pi)
GRAVITY = 9.81  # [m/s^2]


# -- indices on a closed line ---------------------------------------------------------------
@wp.func
def wrap_index(i: int, n: int) -> int:
    """``i`` modulo ``n`` in ``[0, n)`` for any sign of ``i`` (``n >= 1``)."""
    r = i % n
    if r < 0:
        r = r + n
    return r


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
def wrapped_point(line: wp.array2d(dtype=wp.vec3), e: int, i: int, n: int) -> wp.vec3:
    """Point ``i`` (any int, taken modulo ``n``) of env ``e``'s closed line of ``n`` points."""
    return line[e, wrap_index(i, n)]


@wp.func
def line_count(num_points: wp.array(dtype=wp.int32), valid: wp.array(dtype=wp.int32), capacity: int, e: int) -> int:
    """Items (line points, gates) of env ``e`` that may be read: at most ``capacity``, and 0
    when the env is invalid or has fewer than 3."""
    n = wp.min(num_points[e], capacity)
    if valid[e] == 0 or n < 3:
        return 0
    return n


# -- segments -------------------------------------------------------------------------------
@wp.func
def segment_param(p: wp.vec3, a: wp.vec3, b: wp.vec3) -> float:
    """Parameter ``t`` in [0, 1] of the point of segment ``a -> b`` closest to ``p``."""
    ab = b - a
    l2 = wp.dot(ab, ab)
    if l2 <= 0.0:
        return 0.0
    # the division only where it does not clamp, the same float: where along >= l2 > 0 the
    # correctly rounded quotient is >= 1. A closest-segment search evaluates a segment's
    # neighbours too, and their closest points are mostly their ends (benchmarks/NOTES.md)
    along = wp.dot(p - a, ab)
    if along <= 0.0:
        return 0.0
    if along >= l2:
        return 1.0
    return wp.clamp(along / l2, 0.0, 1.0)  # clamps only a NaN now, as before


@wp.func
def segment_dist2(p: wp.vec3, a: wp.vec3, b: wp.vec3) -> float:
    """Squared distance from ``p`` to segment ``a -> b``."""
    t = segment_param(p, a, b)
    d = p - (a + (b - a) * t)
    return wp.dot(d, d)


@wp.func
def line_segment_dist2(line: wp.array2d(dtype=wp.vec3), e: int, n: int, j: int, p: wp.vec3) -> float:
    """Squared distance from ``p`` to segment ``j`` (``j`` in ``[0, n)``) of env ``e``'s closed line."""
    return segment_dist2(p, line[e, j], line[e, next_point(j, n)])


@wp.func
def lerp_unit(u0: wp.vec3, u1: wp.vec3, t: float) -> wp.vec3:
    """Normalised linear blend of two unit vectors (``u0`` when the blend vanishes)."""
    u = u0 * (1.0 - t) + u1 * t
    l = wp.length(u)
    if l > 1.0e-9:
        return u / l
    return u0


@wp.func
def left_normal_xy(line: wp.array2d(dtype=wp.vec3), e: int, n: int, j: int) -> wp.vec2:
    """Horizontal left normal at point ``j`` (``j`` in ``[0, n)``) of env ``e``'s closed line,
    from the chord of its two neighbours."""
    a = line[e, prev_point(j, n)]
    b = line[e, next_point(j, n)]
    t = wp.normalize(wp.vec2(b[0] - a[0], b[1] - a[1]))
    return wp.vec2(-t[1], t[0])


# -- closest segment ------------------------------------------------------------------------
@wp.func
def nearest_global(line: wp.array2d(dtype=wp.vec3), e: int, n: int, p: wp.vec3) -> int:
    """Index of the segment of env ``e``'s closed line (``n`` points) closest to ``p``: O(n)."""
    best = int(0)
    best_d = float(BIG)
    for j in range(n):
        d = line_segment_dist2(line, e, n, j, p)
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
    best_d = line_segment_dist2(line, e, n, best, p)
    up = next_point(best, n)
    d_up = line_segment_dist2(line, e, n, up, p)
    down = int(0)
    d_down = float(BIG)
    if not (d_up < best_d):
        # a descent upwards needs no look downwards (the distance is unimodal)
        down = prev_point(best, n)
        d_down = line_segment_dist2(line, e, n, down, p)
    if d_up < best_d:
        best = up
        best_d = d_up
        offset = offset + 1
        while offset < window:
            j = next_point(best, n)
            d = line_segment_dist2(line, e, n, j, p)
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
            d = line_segment_dist2(line, e, n, j, p)
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
    """Projection of ``p`` on segment ``j``: its parameter ``t`` in [0, 1] (closest point
    ``q``), the signed lateral offset and the band half width interpolated at ``q``.

    The offset is the distance from ``q`` to ``p`` across the line, height excluded: the
    length of ``p - q`` less its component along the segment's up axis (``+z`` made
    perpendicular to the segment; on a flat line the horizontal distance; on a banked band,
    whose interpolated normal climbs, ``segment x normal``: the distance across the tilted
    road surface), signed by the
    side of the interpolated left normal (left > 0; 0 on the normal counts as left). Its
    magnitude is a distance, not the component along the normal: the two agree where
    ``p - q`` runs across the segment (a point beside it), but past a segment's end at a
    sharp turn (or an out-and-back line, whose normal there is undefined) the component
    along the normal can be 0 for a point hundreds of metres away, and a band test on it
    would pass a body far off the band."""
    j1 = next_point(j, n)
    a = line[e, j]
    ab = line[e, j1] - a
    l2 = wp.dot(ab, ab)
    t = float(0.0)  # segment_param, sharing ab and l2
    if l2 > 0.0:
        t = wp.clamp(wp.dot(p - a, ab) / l2, 0.0, 1.0)
    d = p - (a + ab * t)
    across = normal[e, j] * (1.0 - t) + normal[e, j1] * t  # the interpolated normal
    distance = float(0.0)
    if ab[2] == 0.0 and across[2] == 0.0:
        distance = wp.length(wp.vec2(d[0], d[1]))  # a flat, level segment: its up axis is +z
    else:
        up = wp.vec3()
        if across[2] != 0.0:
            up = wp.cross(ab, across)  # a banked band: the road's up axis tilts with its normal
        else:
            up = Z_AXIS - ab * (ab[2] / l2)  # +z less its component along the segment
        u2 = wp.dot(up, up)
        if u2 > 1.0e-12:
            distance = wp.length(d - up * (wp.dot(d, up) / u2))
        else:
            distance = wp.length(d)  # a vertical segment has no up axis: the whole distance counts
    # the side of the interpolated normal (normalising the blend would not change its sign)
    side = wp.dot(d, across)
    lateral = wp.where(side < 0.0, -distance, distance)
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


# -- headings -------------------------------------------------------------------------------
@wp.func
def quat_from_yaw(yaw: float) -> wp.quat:
    """Rotation by ``yaw`` [rad] about z (+z up)."""
    return wp.quat_from_axis_angle(Z_AXIS, yaw)


@wp.func
def yaw_quat(d: wp.vec3) -> wp.quat:
    """Rotation about z taking +x to the horizontal heading of ``d`` (identity when vertical)."""
    return quat_from_yaw(wp.atan2(d[1], d[0]))


@wp.func
def wrap_angle(a: float) -> float:
    """``a`` wrapped to [-pi, pi)."""
    r = a - TWO_PI * wp.floor((a + PI) / TWO_PI)
    if r >= PI:
        r = r - TWO_PI
    if r < -PI:
        r = r + TWO_PI
    return r
