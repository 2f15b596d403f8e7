"""Top-down RGB frames of the envs, drawn on the device in Warp kernels (no matplotlib).

Each env's frame is ``[H, W, 3]`` uint8 (``H = W``), world x to the right and y up,
fitted to the env's course (its bounding box plus a margin, computed on the device at
each draw). Drawing is a few launches into one ``[N, H, W, 3]`` array: clear, then
shapes rasterised per primitive (a thread per segment, gate or body scans the pixels of
its bounding box): capsules (a segment thickened by a radius, which draws a track band
exactly as the union of its segments' capsules) and filled oriented rectangles. Later
launches draw over earlier ones; within a launch threads write one colour, so overlaps
are deterministic.

:func:`draw_track` draws a track env (band, edges, checkpoints, start line, the car's
body box); :func:`draw_ego` a track env's egocentric view (the observation of
``obs_type="pixels"``: band, edges and grass around the car, which sits at a fixed pixel,
heading up; a thread per env and pixel row); :func:`draw_gates` a gate env (course line and gates from above, the drone
with its heading, and a side view strip, x against altitude, along the bottom).
"""

from __future__ import annotations

import warp as wp

from ..core import env_loop
from ..core.polyline import BIG, X_AXIS
from ..core.polyline import left_normal_xy as _left_normal

wp.set_module_options({"enable_backward": False})

__all__ = ["draw_track", "draw_ego", "draw_gates", "EGO_SIZE", "EGO_CAR_ROW", "EGO_CAR_COL"]

#: The egocentric view (CarRacing-v3's layout): ``EGO_SIZE`` pixels square, the car's centre at
#: the centre of pixel (``EGO_CAR_ROW``, ``EGO_CAR_COL``): bottom-centre, ``EGO_CAR_ROW`` rows
#: of road ahead of it, heading up.
EGO_SIZE = wp.constant(96)
EGO_CAR_ROW = wp.constant(72)
EGO_CAR_COL = wp.constant(48)
_GROUP = wp.constant(8)  # segments per row range of the egocentric view (a row skips a group off its rows)

_MARGIN = 0.04  # fraction of the frame left around the course on each side
_SIDE = 0.25  # fraction of a gates frame's height given to the side view strip

_GRASS = wp.constant(wp.vec3(70.0, 125.0, 60.0))
_BAND = wp.constant(wp.vec3(120.0, 120.0, 120.0))
_EDGE = wp.constant(wp.vec3(235.0, 235.0, 235.0))
_CHECKPOINT = wp.constant(wp.vec3(200.0, 190.0, 110.0))
_START = wp.constant(wp.vec3(20.0, 20.0, 20.0))
_CAR = wp.constant(wp.vec3(215.0, 40.0, 40.0))
_SKY = wp.constant(wp.vec3(28.0, 30.0, 40.0))
_STRIP = wp.constant(wp.vec3(45.0, 48.0, 60.0))
_LINE = wp.constant(wp.vec3(100.0, 105.0, 130.0))
_GATE = wp.constant(wp.vec3(255.0, 140.0, 0.0))
_NEXT_GATE = wp.constant(wp.vec3(60.0, 220.0, 80.0))
_DRONE = wp.constant(wp.vec3(235.0, 50.0, 50.0))


@wp.func
def _put(frames: wp.array4d(dtype=wp.uint8), e: int, row: int, col: int, color: wp.vec3):
    frames[e, row, col, 0] = wp.uint8(int(color[0]))
    frames[e, row, col, 1] = wp.uint8(int(color[1]))
    frames[e, row, col, 2] = wp.uint8(int(color[2]))


@wp.func
def _to_pixel(view: wp.vec4, x: float, y: float, height: float) -> wp.vec2:
    # view: (x0, y0, pixels per metre, unused); rows grow downwards from the top of a region of `height` rows
    return wp.vec2((x - view[0]) * view[2], height - (y - view[1]) * view[2])


@wp.func
def _capsule(frames: wp.array4d(dtype=wp.uint8), e: int, a: wp.vec2, b: wp.vec2, radius: float,
             row0: int, row1: int, color: wp.vec3):
    """Fill the pixels (rows row0 .. row1 - 1) within ``radius`` of the segment a-b (pixel units, rows from row0)."""
    width = frames.shape[2]
    lo = wp.min(a, b) - wp.vec2(radius, radius)
    hi = wp.max(a, b) + wp.vec2(radius, radius)
    c0 = wp.max(int(wp.floor(lo[0])), 0)
    c1 = wp.min(int(wp.ceil(hi[0])), width)
    r0 = wp.max(int(wp.floor(lo[1])) + row0, row0)
    r1 = wp.min(int(wp.ceil(hi[1])) + row0, row1)
    ab = b - a
    inv = 1.0 / wp.max(wp.dot(ab, ab), 1.0e-12)
    r2 = radius * radius
    for row in range(r0, r1):
        for col in range(c0, c1):
            p = wp.vec2(float(col) + 0.5, float(row - row0) + 0.5)
            t = wp.clamp(wp.dot(p - a, ab) * inv, 0.0, 1.0)
            d = p - (a + t * ab)
            if wp.dot(d, d) <= r2:
                _put(frames, e, row, col, color)


@wp.func
def _box(frames: wp.array4d(dtype=wp.uint8), e: int, centre: wp.vec2, axis: wp.vec2, half_length: float,
         half_width: float, row0: int, row1: int, color: wp.vec3):
    """Fill an oriented rectangle (pixel units; ``axis`` its unit length direction, in pixel axes)."""
    width = frames.shape[2]
    reach = half_length + half_width + 1.0
    c0 = wp.max(int(wp.floor(centre[0] - reach)), 0)
    c1 = wp.min(int(wp.ceil(centre[0] + reach)), width)
    r0 = wp.max(int(wp.floor(centre[1] - reach)) + row0, row0)
    r1 = wp.min(int(wp.ceil(centre[1] + reach)) + row0, row1)
    side = wp.vec2(-axis[1], axis[0])
    for row in range(r0, r1):
        for col in range(c0, c1):
            d = wp.vec2(float(col) + 0.5, float(row - row0) + 0.5) - centre
            if wp.abs(wp.dot(d, axis)) <= half_length and wp.abs(wp.dot(d, side)) <= half_width:
                _put(frames, e, row, col, color)


@wp.func
def _fit(lo: wp.vec2, hi: wp.vec2, width: float, height: float) -> wp.vec4:
    """The view (x0, y0, pixels per metre, 0) that fits the box lo-hi in a width x height region, centred."""
    span = wp.max(hi - lo, wp.vec2(1.0e-3, 1.0e-3))
    scale = wp.min(width * (1.0 - 2.0 * _MARGIN) / span[0], height * (1.0 - 2.0 * _MARGIN) / span[1])
    centre = 0.5 * (lo + hi)
    return wp.vec4(centre[0] - 0.5 * width / scale, centre[1] - 0.5 * height / scale, scale, 0.0)


@wp.kernel
def _clear(color: wp.vec3, frames: wp.array4d(dtype=wp.uint8)):
    e, row, col = wp.tid()
    _put(frames, e, row, col, color)


# -- track -------------------------------------------------------------------------------------
@wp.kernel
def _track_view(
    centerline: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    size: float,
    view: wp.array2d(dtype=wp.vec4),
):
    e = wp.tid()
    lo = wp.vec2(BIG, BIG)
    hi = wp.vec2(-BIG, -BIG)
    for j in range(num_points[e]):
        c = centerline[e, j]
        r = half_width[e, j]
        lo = wp.min(lo, wp.vec2(c[0] - r, c[1] - r))
        hi = wp.max(hi, wp.vec2(c[0] + r, c[1] + r))
    if num_points[e] < 2:
        lo = wp.vec2(-1.0, -1.0)
        hi = wp.vec2(1.0, 1.0)
    view[e, 0] = _fit(lo, hi, size, size)


@wp.kernel
def _track_band(
    centerline: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    view: wp.array2d(dtype=wp.vec4),
    edges: int,
    frames: wp.array4d(dtype=wp.uint8),
):
    e, j = wp.tid()
    n = num_points[e]
    if j >= n or n < 3:
        return
    v = view[e, 0]
    size = float(frames.shape[1])
    j1 = (j + 1) % n
    c0 = centerline[e, j]
    c1 = centerline[e, j1]
    if edges == 0:
        a = _to_pixel(v, c0[0], c0[1], size)
        b = _to_pixel(v, c1[0], c1[1], size)
        _capsule(frames, e, a, b, wp.max(half_width[e, j], half_width[e, j1]) * v[2], 0, frames.shape[1], _BAND)
        return
    n0 = _left_normal(centerline, e, n, j)
    n1 = _left_normal(centerline, e, n, j1)
    for side in range(2):
        sgn = wp.where(side == 0, 1.0, -1.0)
        p0 = wp.vec2(c0[0], c0[1]) + sgn * half_width[e, j] * n0
        p1 = wp.vec2(c1[0], c1[1]) + sgn * half_width[e, j1] * n1
        _capsule(frames, e, _to_pixel(v, p0[0], p0[1], size), _to_pixel(v, p1[0], p1[1], size), 0.75, 0,
                 frames.shape[1], _EDGE)


@wp.kernel
def _track_checkpoints(
    position: wp.array2d(dtype=wp.vec3),
    direction: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_checkpoints: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    view: wp.array2d(dtype=wp.vec4),
    frames: wp.array4d(dtype=wp.uint8),
):
    e, k = wp.tid()
    if k >= num_checkpoints[e] or valid[e] == 0:
        return
    v = view[e, 0]
    size = float(frames.shape[1])
    p = position[e, k]
    d = direction[e, k]
    lateral = wp.normalize(wp.vec2(-d[1], d[0]))
    hw = half_width[e, k]
    a = _to_pixel(v, p[0] + hw * lateral[0], p[1] + hw * lateral[1], size)
    b = _to_pixel(v, p[0] - hw * lateral[0], p[1] - hw * lateral[1], size)
    if k == 0:
        _capsule(frames, e, a, b, 1.5, 0, frames.shape[1], _START)
    else:
        _capsule(frames, e, a, b, 0.5, 0, frames.shape[1], _CHECKPOINT)


@wp.kernel
def _track_car(
    position: wp.array(dtype=wp.vec3),
    yaw: wp.array(dtype=float),
    half_length: float,
    half_width: float,
    view: wp.array2d(dtype=wp.vec4),
    frames: wp.array4d(dtype=wp.uint8),
):
    e = wp.tid()
    v = view[e, 0]
    p = position[e]
    centre = _to_pixel(v, p[0], p[1], float(frames.shape[1]))
    axis = wp.vec2(wp.cos(yaw[e]), -wp.sin(yaw[e]))  # rows grow downwards
    # at least a few pixels, so that the car stays visible on a large circuit
    _box(frames, e, centre, axis, wp.max(half_length * v[2], 3.0), wp.max(half_width * v[2], 1.5), 0,
         frames.shape[1], _CAR)


def draw_track(frames, view, num, centerline, half_width, num_points, valid, cp_position, cp_direction, cp_half_width,
               num_checkpoints, position, yaw, car_half_extents) -> None:
    """Draw the first ``num`` track envs into ``frames`` ``[num, S, S, 3]`` uint8 (on its device; no sync).

    Args:
        frames, view: the output and a scratch ``[>= num, 2]`` vec4 array (each env's fit).
        centerline, half_width, num_points, valid: the track result (``[E, P]`` vec3 [m],
            ``[E, P]`` float32 [m], ``[E]`` int32, ``[E]`` int32).
        cp_position, cp_direction, cp_half_width, num_checkpoints: the course's checkpoints
            (``[E, C]`` vec3 / vec3 / float32, ``[E]`` int32).
        position, yaw: the cars (``[E]`` vec3 [m], ``[E]`` float32 [rad]).
        car_half_extents: (half length, half width) [m] of the car's body.
    """
    dev = frames.device
    size = frames.shape[1]
    wp.launch(_track_view, num, inputs=[centerline, half_width, num_points, float(size)], outputs=[view], device=dev)
    wp.launch(_clear, (num, size, size), inputs=[_GRASS], outputs=[frames], device=dev)
    points = centerline.shape[1]
    for edges in (0, 1):
        wp.launch(_track_band, (num, points), inputs=[centerline, half_width, num_points, view, edges],
                  outputs=[frames], device=dev)
    wp.launch(_track_checkpoints, (num, cp_position.shape[1]),
              inputs=[cp_position, cp_direction, cp_half_width, num_checkpoints, valid, view], outputs=[frames],
              device=dev)
    wp.launch(_track_car, num, inputs=[position, yaw, float(car_half_extents[0]), float(car_half_extents[1]), view],
              outputs=[frames], device=dev)


# -- the egocentric view ----------------------------------------------------------------------
@wp.func
def _ego_pixel(p: wp.vec3, car: wp.vec3, forward: wp.vec2, pixels_per_metre: float) -> wp.vec2:
    """A world point -> (col, row) in the egocentric view (the car's centre at its fixed pixel, heading up)."""
    dx = p[0] - car[0]
    dy = p[1] - car[1]
    ahead = forward[0] * dx + forward[1] * dy
    left = -forward[1] * dx + forward[0] * dy
    return wp.vec2(float(EGO_CAR_COL) + 0.5 - left * pixels_per_metre,
                   float(EGO_CAR_ROW) + 0.5 - ahead * pixels_per_metre)


@wp.func
def _in_view(a: wp.vec2, b: wp.vec2, reach: float) -> bool:
    lo = wp.min(a, b) - wp.vec2(reach, reach)
    hi = wp.max(a, b) + wp.vec2(reach, reach)
    size = float(EGO_SIZE)
    return hi[0] >= 0.0 and hi[1] >= 0.0 and lo[0] <= size and lo[1] <= size


@wp.kernel
def _ego_segments(
    envs_per_thread: int,
    reset_mask: wp.array(dtype=wp.int32),
    restart: int,
    position: wp.array(dtype=wp.vec3),
    yaw: wp.array(dtype=float),
    centerline: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    pixels_per_metre: float,
    stride: int,
    # outputs: per env the segments in view, in pixels: (centre 0, centre 1, left 0, left 1, right 0, right 1),
    # and the rows [lo, hi) each group of _GROUP of them may draw on
    ends: wp.array3d(dtype=wp.vec2),
    radius: wp.array2d(dtype=float),
    count: wp.array(dtype=wp.int32),
    group_rows: wp.array2d(dtype=wp.vec2i),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        if restart != 0 and reset_mask[e] == 0:
            continue
        n = num_points[e]
        k = int(0)
        if valid[e] != 0 and n >= 3:
            car = position[e]
            forward = wp.vec2(wp.cos(yaw[e]), wp.sin(yaw[e]))
            for j in range(0, n, stride):
                j1 = wp.where(j + stride < n, j + stride, 0)
                a = _ego_pixel(centerline[e, j], car, forward, pixels_per_metre)
                b = _ego_pixel(centerline[e, j1], car, forward, pixels_per_metre)
                r = wp.max(half_width[e, j], half_width[e, j1]) * pixels_per_metre
                if _in_view(a, b, r + 1.0):
                    n0 = _left_normal(centerline, e, n, j)
                    n1 = _left_normal(centerline, e, n, j1)
                    c0 = centerline[e, j]
                    c1 = centerline[e, j1]
                    h0 = half_width[e, j]
                    h1 = half_width[e, j1]
                    ends[e, k, 0] = a
                    ends[e, k, 1] = b
                    ends[e, k, 2] = _ego_pixel(c0 + h0 * wp.vec3(n0[0], n0[1], 0.0), car, forward, pixels_per_metre)
                    ends[e, k, 3] = _ego_pixel(c1 + h1 * wp.vec3(n1[0], n1[1], 0.0), car, forward, pixels_per_metre)
                    ends[e, k, 4] = _ego_pixel(c0 - h0 * wp.vec3(n0[0], n0[1], 0.0), car, forward, pixels_per_metre)
                    ends[e, k, 5] = _ego_pixel(c1 - h1 * wp.vec3(n1[0], n1[1], 0.0), car, forward, pixels_per_metre)
                    radius[e, k] = r
                    # the band's capsule, and the edges within it (their radius below a pixel)
                    rows = wp.vec2i(int(wp.floor(wp.min(a[1], b[1]) - r - 1.0)),
                                    int(wp.ceil(wp.max(a[1], b[1]) + r + 1.0)))
                    g = k // _GROUP
                    if k % _GROUP != 0:
                        rows = wp.vec2i(wp.min(rows[0], group_rows[e, g][0]), wp.max(rows[1], group_rows[e, g][1]))
                    group_rows[e, g] = rows
                    k += 1
        count[e] = k


@wp.func
def _row_span(a: wp.vec2, b: wp.vec2, radius: float, y: float) -> wp.vec2:
    """The x-interval where the horizontal line at ``y`` meets the capsule a-b of ``radius`` (empty: lo > hi).

    The capsule is convex, so the interval runs from the least to the greatest x of its boundary
    on the line: on the end discs or on the two straight sides (offset by the radius)."""
    lo = float(BIG)
    hi = float(-BIG)
    for end in range(2):
        c = wp.where(end == 0, a, b)
        dy = y - c[1]
        if wp.abs(dy) <= radius:
            w = wp.sqrt(radius * radius - dy * dy)
            lo = wp.min(lo, c[0] - w)
            hi = wp.max(hi, c[0] + w)
    d = b - a
    length = wp.length(d)
    if wp.abs(d[1]) > 1.0e-6 * length:
        side = wp.vec2(-d[1], d[0]) * (radius / length)
        for k in range(2):
            p = a + wp.where(k == 0, side, -side)
            t = (y - p[1]) / d[1]
            if t >= 0.0 and t <= 1.0:
                x = p[0] + t * d[0]
                lo = wp.min(lo, x)
                hi = wp.max(hi, x)
    return wp.vec2(lo, hi)


@wp.func
def _columns(span: wp.vec2) -> wp.vec2i:
    """The columns [c0, c1) whose pixel centres (col + 0.5) lie in ``span``, clipped to the view."""
    c0 = wp.max(int(wp.ceil(span[0] - 0.5)), 0)
    c1 = wp.min(int(wp.floor(span[1] - 0.5)) + 1, EGO_SIZE)
    return wp.vec2i(c0, c1)


@wp.func
def _fill(frames: wp.array4d(dtype=wp.uint8), e: int, row: int, cols: wp.vec2i, color: wp.vec3):
    red = wp.uint8(int(color[0]))
    green = wp.uint8(int(color[1]))
    blue = wp.uint8(int(color[2]))
    for col in range(cols[0], cols[1]):
        frames[e, row, col, 0] = red
        frames[e, row, col, 1] = green
        frames[e, row, col, 2] = blue


@wp.func
def _ego_row(frames: wp.array4d(dtype=wp.uint8), e: int, row: int, ends: wp.array3d(dtype=wp.vec2),
             radius: wp.array2d(dtype=float), count: wp.array(dtype=wp.int32), group_rows: wp.array2d(dtype=wp.vec2i),
             car_half_length: float, car_half_width: float):
    """One row of env e's egocentric view: grass, the band, its edges, the car."""
    y = float(row) + 0.5
    _fill(frames, e, row, wp.vec2i(0, EGO_SIZE), _GRASS)
    # the band: consecutive segments' spans on a row overlap, so they are merged into runs
    # and each run is filled once
    run = wp.vec2i(0, 0)
    n = count[e]
    for g in range((n + _GROUP - 1) // _GROUP):
        rows = group_rows[e, g]
        if row < rows[0] or row >= rows[1]:
            continue
        for k in range(g * _GROUP, wp.min(g * _GROUP + _GROUP, n)):
            a = ends[e, k, 0]
            b = ends[e, k, 1]
            r = radius[e, k]
            if y < wp.min(a[1], b[1]) - r or y > wp.max(a[1], b[1]) + r:
                continue
            cols = _columns(_row_span(a, b, r, y))
            if cols[0] >= cols[1]:
                continue
            if cols[0] <= run[1] and cols[1] >= run[0] and run[0] < run[1]:
                run = wp.vec2i(wp.min(run[0], cols[0]), wp.max(run[1], cols[1]))
            else:
                _fill(frames, e, row, run, _BAND)
                run = cols
    _fill(frames, e, row, run, _BAND)
    for g in range((n + _GROUP - 1) // _GROUP):
        rows = group_rows[e, g]
        if row < rows[0] or row >= rows[1]:
            continue
        for k in range(g * _GROUP, wp.min(g * _GROUP + _GROUP, n)):
            for side in range(2):
                a = ends[e, k, 2 + 2 * side]
                b = ends[e, k, 3 + 2 * side]
                if y >= wp.min(a[1], b[1]) - 0.75 and y <= wp.max(a[1], b[1]) + 0.75:
                    _fill(frames, e, row, _columns(_row_span(a, b, 0.75, y)), _EDGE)
    # the car's body box, heading up (rows grow downwards)
    if wp.abs(y - (float(EGO_CAR_ROW) + 0.5)) <= car_half_length:
        centre = float(EGO_CAR_COL) + 0.5
        _fill(frames, e, row, _columns(wp.vec2(centre - car_half_width, centre + car_half_width)), _CAR)


@wp.kernel
def _ego_rows(
    envs_per_thread: int,
    rows_per_thread: int,
    reset_mask: wp.array(dtype=wp.int32),
    restart: int,
    ends: wp.array3d(dtype=wp.vec2),
    radius: wp.array2d(dtype=float),
    count: wp.array(dtype=wp.int32),
    group_rows: wp.array2d(dtype=wp.vec2i),
    car_half_length: float,
    car_half_width: float,
    frames: wp.array4d(dtype=wp.uint8),
):
    thread, block = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        if restart != 0 and reset_mask[e] == 0:
            continue
        for row in range(block * rows_per_thread, (block + 1) * rows_per_thread):
            _ego_row(frames, e, row, ends, radius, count, group_rows, car_half_length, car_half_width)


def ego_scratch(num_envs: int, points: int, device) -> tuple:
    """The scratch arrays of :func:`draw_ego` for ``num_envs`` tracks of ``points`` points."""
    return (wp.zeros((num_envs, points, 6), dtype=wp.vec2, device=device),
            wp.zeros((num_envs, points), dtype=float, device=device),
            wp.zeros(num_envs, dtype=wp.int32, device=device),
            wp.zeros((num_envs, (points + _GROUP - 1) // _GROUP), dtype=wp.vec2i, device=device))


def draw_ego(frames, scratch, reset_mask, restart, position, yaw, centerline, half_width, num_points,
             valid, pixels_per_metre, stride, car_half_extents) -> None:
    """Draw every env's egocentric view into ``frames`` ``[E, EGO_SIZE, EGO_SIZE, 3]`` uint8 (no sync).

    The car's centre sits at the centre of pixel (``EGO_CAR_ROW``, ``EGO_CAR_COL``), its heading
    up, ``pixels_per_metre`` pixels to a metre; grass, then the band (the union of its segments'
    capsules, as :func:`draw_track`), its edges, and the car's body box (at least 6 x 3 pixels).
    An env without a usable track shows grass and the car.

    Args:
        frames: the output; ``scratch``: :func:`ego_scratch`'s arrays (each env's segments in view).
        reset_mask, restart: with ``restart``, draw the masked envs only (the others keep their frame).
        position, yaw: the cars (``[E]`` vec3 [m], ``[E]`` float32 [rad]).
        centerline, half_width, num_points, valid: the track result.
        pixels_per_metre: the view's scale; ``stride``: the centreline points a drawn segment spans
            (1: every segment; more where the points lie closer than a few pixels apart);
            ``car_half_extents``: (half length, half width) [m].
    """
    dev = frames.device
    threads, per = env_loop.shape(dev, frames.shape[0])
    # a thread per env and row on CUDA; on the CPU one thread draws each env's rows in turn (its
    # segments stay in the caches)
    rows_per_thread = EGO_SIZE if per > 1 else 1
    ends, radius, count, group_rows = scratch
    wp.launch(_ego_segments, threads,
              inputs=[per, reset_mask, int(restart), position, yaw, centerline, half_width, num_points, valid,
                      float(pixels_per_metre), int(stride)],
              outputs=[ends, radius, count, group_rows], device=dev)
    half_length = max(car_half_extents[0] * pixels_per_metre, 3.0)
    half_width_px = max(car_half_extents[1] * pixels_per_metre, 1.5)
    wp.launch(_ego_rows, (threads, EGO_SIZE // rows_per_thread),
              inputs=[per, rows_per_thread, reset_mask, int(restart), ends, radius, count, group_rows,
                      float(half_length), float(half_width_px)],
              outputs=[frames], device=dev)


# -- gates -------------------------------------------------------------------------------------
@wp.kernel
def _gates_view(
    gate_position: wp.array2d(dtype=wp.vec3),
    gate_half_width: wp.array2d(dtype=float),
    num_gates: wp.array(dtype=wp.int32),
    size: float,
    top_rows: float,
    view: wp.array2d(dtype=wp.vec4),
):
    e = wp.tid()
    lo = wp.vec3(BIG)
    hi = wp.vec3(-BIG)
    for g in range(num_gates[e]):
        c = gate_position[e, g]
        r = gate_half_width[e, g]
        lo = wp.min(lo, c - wp.vec3(r, r, 0.0))
        hi = wp.max(hi, c + wp.vec3(r, r, r))
    if num_gates[e] < 1:
        lo = wp.vec3(-1.0, -1.0, 0.0)
        hi = wp.vec3(1.0, 1.0, 1.0)
    view[e, 0] = _fit(wp.vec2(lo[0], lo[1]), wp.vec2(hi[0], hi[1]), size, top_rows)
    # the side strip: x as in the top view, altitude from the ground to above the highest gate
    top = view[e, 0]
    strip = size - top_rows
    zscale = strip * (1.0 - 2.0 * _MARGIN) / wp.max(hi[2], 0.1)
    view[e, 1] = wp.vec4(top[0], -_MARGIN * strip / zscale, top[2], zscale)


@wp.kernel
def _gates_line(
    line: wp.array2d(dtype=wp.vec3),
    num_points: wp.array(dtype=wp.int32),
    view: wp.array2d(dtype=wp.vec4),
    top_rows: int,
    frames: wp.array4d(dtype=wp.uint8),
):
    e, j = wp.tid()
    n = num_points[e]
    if j >= n or n < 2:
        return
    v = view[e, 0]
    a = line[e, j]
    b = line[e, (j + 1) % n]
    h = float(top_rows)
    _capsule(frames, e, _to_pixel(v, a[0], a[1], h), _to_pixel(v, b[0], b[1], h), 0.6, 0, top_rows, _LINE)
    s = view[e, 1]
    hs = float(frames.shape[1] - top_rows)
    pa = wp.vec2((a[0] - s[0]) * s[2], hs - (a[2] - s[1]) * s[3])
    pb = wp.vec2((b[0] - s[0]) * s[2], hs - (b[2] - s[1]) * s[3])
    _capsule(frames, e, pa, pb, 0.5, top_rows, frames.shape[1], _LINE)


@wp.kernel
def _gates_gates(
    gate_position: wp.array2d(dtype=wp.vec3),
    direction: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    half_height: wp.array2d(dtype=float),
    num_gates: wp.array(dtype=wp.int32),
    next_gate: wp.array(dtype=wp.int32),
    view: wp.array2d(dtype=wp.vec4),
    top_rows: int,
    frames: wp.array4d(dtype=wp.uint8),
):
    e, g = wp.tid()
    n = num_gates[e]
    if g >= n:
        return
    color = wp.where(g == next_gate[e] % n, _NEXT_GATE, _GATE)
    v = view[e, 0]
    p = gate_position[e, g]
    d = direction[e, g]
    lateral = wp.normalize(wp.vec2(-d[1], d[0]))
    hw = half_width[e, g]
    h = float(top_rows)
    a = _to_pixel(v, p[0] + hw * lateral[0], p[1] + hw * lateral[1], h)
    b = _to_pixel(v, p[0] - hw * lateral[0], p[1] - hw * lateral[1], h)
    _capsule(frames, e, a, b, 1.5, 0, top_rows, color)
    # side view: the opening's vertical extent at the gate's x (its width projected on x)
    s = view[e, 1]
    hs = float(frames.shape[1] - top_rows)
    x0 = (p[0] - s[0]) * s[2]
    half_x = wp.max(wp.abs(lateral[0]) * hw * s[2], 0.75)
    zc = hs - (p[2] - s[1]) * s[3]
    hh = half_height[e, g] * s[3]
    _capsule(frames, e, wp.vec2(x0 - half_x, zc - hh), wp.vec2(x0 + half_x, zc - hh), 0.75, top_rows,
             frames.shape[1], color)
    _capsule(frames, e, wp.vec2(x0 - half_x, zc + hh), wp.vec2(x0 + half_x, zc + hh), 0.75, top_rows,
             frames.shape[1], color)


@wp.kernel
def _gates_drone(
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    radius: float,
    view: wp.array2d(dtype=wp.vec4),
    top_rows: int,
    frames: wp.array4d(dtype=wp.uint8),
):
    e = wp.tid()
    v = view[e, 0]
    p = position[e]
    h = float(top_rows)
    c = _to_pixel(v, p[0], p[1], h)
    r = wp.max(radius * v[2], 2.5)
    _capsule(frames, e, c, c, r, 0, top_rows, _DRONE)
    forward = wp.quat_rotate(orientation[e], X_AXIS)
    heading = wp.normalize(wp.vec2(forward[0], -forward[1]) + wp.vec2(1.0e-9, 0.0))
    _capsule(frames, e, c, c + 2.5 * r * heading, 0.9, 0, top_rows, _DRONE)
    s = view[e, 1]
    hs = float(frames.shape[1] - top_rows)
    q = wp.vec2((p[0] - s[0]) * s[2], hs - (p[2] - s[1]) * s[3])
    _capsule(frames, e, q, q, 2.0, top_rows, frames.shape[1], _DRONE)


@wp.kernel
def _gates_clear(top_rows: int, frames: wp.array4d(dtype=wp.uint8)):
    e, row, col = wp.tid()
    _put(frames, e, row, col, wp.where(row < top_rows, _SKY, _STRIP))


def draw_gates(frames, view, num, gate_position, direction, half_width, half_height, num_gates, next_gate, line,
               line_points, position, orientation, drone_radius) -> None:
    """Draw the first ``num`` gate envs into ``frames`` ``[num, S, S, 3]`` uint8 (on its device; no sync).

    The top ``S - S/4`` rows are the view from above (course line, gates as bars across
    their opening, the next gate in green, the drone with its heading), the bottom rows
    the side view (x against altitude z: gates as their top and bottom bars, the drone).

    Args:
        frames, view: the output and a scratch ``[>= num, 2]`` vec4 array (each env's fits).
        gate_position, direction, half_width, half_height, num_gates: the gates
            (the course's gate checkpoints: ``[E, G]`` vec3 [m] / vec3 / float32 [m] / float32 [m], ``[E]`` int32).
        next_gate: ``[E]`` int32 the gate to pass next.
        line, line_points: the course line (``[E, L]`` vec3 [m], ``[E]`` int32).
        position, orientation: the drones (``[E]`` vec3 [m], quat).
        drone_radius: [m] radius of the drone's disc.
    """
    dev = frames.device
    size = frames.shape[1]
    top_rows = size - int(_SIDE * size)
    wp.launch(_gates_view, num, inputs=[gate_position, half_width, num_gates, float(size), float(top_rows)],
              outputs=[view], device=dev)
    wp.launch(_gates_clear, (num, size, size), inputs=[top_rows], outputs=[frames], device=dev)
    wp.launch(_gates_line, (num, line.shape[1]), inputs=[line, line_points, view, top_rows], outputs=[frames],
              device=dev)
    wp.launch(_gates_gates, (num, gate_position.shape[1]),
              inputs=[gate_position, direction, half_width, half_height, num_gates, next_gate, view, top_rows],
              outputs=[frames], device=dev)
    wp.launch(_gates_drone, num, inputs=[position, orientation, float(drone_radius), view, top_rows], outputs=[frames],
              device=dev)
