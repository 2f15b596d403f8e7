"""``Lidar``: a planar range sensor (a 2-D LiDAR) against the edges of a track's band.

Per generation (``on_generate``), each masked env's band edges are baked into a uniform grid:
the ``2 n`` edge segments (left edge point ``j`` = centreline point + left normal * half width,
right edge the same with the normal negated; segment ``j`` joins points ``j`` and ``j + 1`` of
the closed loop) as ``(ax, ay, bx - ax, by - ay)`` relative to the grid's origin, and per cell
the segments whose bounding box (padded by a thousandth of a cell) overlaps it, copied into
compressed rows (``cell_start``: ``G * G + 1`` offsets into ``cell_items``: a cell's segments lie
together in memory). A grid whose lists do not fit the capacity sets the env's ``overflow`` flag,
and its rays then test every segment.

Per step, each env first bounds the distance from the sensor to every edge from below (the
segments listed in the 5 x 5 cells around it: no beam hits anything nearer), then each beam walks
the cells its ray crosses from there (Amanatides and Woo, *A Fast Voxel Traversal Algorithm for
Ray Tracing*, Eurographics 1987), testing the segments listed in each (ray against segment in
float32: the parameters from two cross products, Ericson, *Real-Time Collision Detection*, 2005,
section 5.1.9), and stops at the first cell whose exit lies beyond the nearest hit so far, or
past the maximum range.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import warp as wp

from ..core.checks import check_float, check_int
from ..core.polyline import BIG, line_count, next_point
from ..core.seeding import Stream, random_key, uniform
from .component import Component, ComponentContext
from .contract import InputSpec

__all__ = ["F1TENTH_FOV", "F1TENTH_NUM_BEAMS", "F1TENTH_RANGE", "Lidar", "LidarScan", "beam_angles"]

wp.set_module_options({"enable_backward": False})

#: f1tenth_gym's scan: 1080 beams over 4.71 rad (270 degrees), 30 m range.
F1TENTH_NUM_BEAMS = 1080
F1TENTH_FOV = 4.71
F1TENTH_RANGE = 30.0

# a segment's end tolerance along it (a fraction of its length): a ray through the joint of two
# segments hits one of them whatever float32 rounds their parameters to
_END_SLACK = wp.constant(1.0e-5)
# a segment is listed in every cell within this fraction of a cell of its bounding box: a hit at a
# cell's border is found in the cell the walk is in, whichever way the border rounds
_CELL_PAD = wp.constant(1.0e-3)
_U32_ONE = wp.constant(wp.uint32(1))
_GOLDEN_U32 = wp.constant(wp.uint32(0x9E3779B9))


def beam_angles(num_beams: int, fov: float) -> np.ndarray:
    """``[num_beams]`` float32 angles [rad] of the beams in the sensor frame (x forward, y left):
    evenly spaced from ``-fov / 2`` (right) to ``+fov / 2`` (left), both ends included, as
    f1tenth_gym's scan; a single beam looks straight ahead."""
    if num_beams == 1:
        return np.zeros(1, dtype=np.float32)
    return np.linspace(-0.5 * fov, 0.5 * fov, num_beams).astype(np.float32)


@dataclass
class LidarScan:
    """What a :class:`Lidar` writes every step."""

    ranges: wp.array  # [E, B] float32 [m] range of each beam, in [0, max_range]


# -- bake -----------------------------------------------------------------------------------
@wp.func
def _edge_point(line: wp.array2d(dtype=wp.vec3), normal: wp.array2d(dtype=wp.vec3),
                half_width: wp.array2d(dtype=float), e: int, j: int, side: float) -> wp.vec2:
    """Point ``j`` of env ``e``'s left (``side`` 1) or right (``side`` -1) band edge, x-y."""
    p = line[e, j] + normal[e, j] * (side * half_width[e, j])
    return wp.vec2(p[0], p[1])


@wp.func
def _cell_range(lo: float, hi: float, h: float, res: int):
    """The cells ``[c0, c1]`` along one axis that the span ``[lo, hi]`` (grid frame) overlaps, padded."""
    pad = _CELL_PAD * h
    c0 = wp.clamp(int(wp.floor((lo - pad) / h)), 0, res - 1)
    c1 = wp.clamp(int(wp.floor((hi + pad) / h)), 0, res - 1)
    return c0, c1


@wp.kernel
def _bake(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    res: int,
    # outputs
    origin: wp.array(dtype=wp.vec2),
    cell: wp.array(dtype=float),
    num_segments: wp.array(dtype=wp.int32),
    segments: wp.array2d(dtype=wp.vec4),
    cell_start: wp.array2d(dtype=wp.int32),
    cell_items: wp.array2d(dtype=wp.vec4),
    overflow: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        n = line_count(num_points, valid, line.shape[1], e)
        num_segments[e] = 2 * n
        overflow[e] = 0
        if n == 0:
            origin[e] = wp.vec2(0.0, 0.0)
            cell[e] = 0.0  # no course: every beam reads the maximum range
            continue
        # the edges' bounding box; the grid is square, its side the box's larger extent
        lo = wp.vec2(BIG, BIG)
        hi = wp.vec2(-BIG, -BIG)
        for j in range(n):
            for k in range(2):
                q = _edge_point(line, normal, half_width, e, j, 1.0 - 2.0 * float(k))
                lo = wp.vec2(wp.min(lo[0], q[0]), wp.min(lo[1], q[1]))
                hi = wp.vec2(wp.max(hi[0], q[0]), wp.max(hi[1], q[1]))
        extent = wp.max(wp.max(hi[0] - lo[0], hi[1] - lo[1]), 1.0e-3)
        h = extent * 1.001 / float(res)  # a margin: the farthest edge point lies inside the last cell
        o = lo - wp.vec2(0.0005 * extent, 0.0005 * extent)
        origin[e] = o
        cell[e] = h
        # the segments, relative to the origin: left edge 0 .. n - 1, right edge n .. 2n - 1
        for k in range(2):
            side = 1.0 - 2.0 * float(k)
            a = _edge_point(line, normal, half_width, e, 0, side) - o
            for j in range(n):
                b = _edge_point(line, normal, half_width, e, next_point(j, n), side) - o
                segments[e, k * n + j] = wp.vec4(a[0], a[1], b[0] - a[0], b[1] - a[1])
                a = b
        # count the segments of each cell into cell_start[c] ...
        cells = res * res
        for c in range(cells):
            cell_start[e, c] = 0
        for s in range(2 * n):
            g = segments[e, s]
            x0, x1 = _cell_range(wp.min(g[0], g[0] + g[2]), wp.max(g[0], g[0] + g[2]), h, res)
            y0, y1 = _cell_range(wp.min(g[1], g[1] + g[3]), wp.max(g[1], g[1] + g[3]), h, res)
            for iy in range(y0, y1 + 1):
                for ix in range(x0, x1 + 1):
                    cell_start[e, iy * res + ix] += 1
        # ... their running sum: cell_start[c] is where cell c's list ends
        for c in range(1, cells):
            cell_start[e, c] += cell_start[e, c - 1]
        total = cell_start[e, cells - 1]
        cell_start[e, cells] = total
        if total > cell_items.shape[1]:
            overflow[e] = 1  # the lists do not fit: this env's rays test every segment
            continue
        # fill each list from its end down, which leaves cell_start[c] where cell c's list begins
        for s in range(2 * n):
            g = segments[e, s]
            x0, x1 = _cell_range(wp.min(g[0], g[0] + g[2]), wp.max(g[0], g[0] + g[2]), h, res)
            y0, y1 = _cell_range(wp.min(g[1], g[1] + g[3]), wp.max(g[1], g[1] + g[3]), h, res)
            for iy in range(y0, y1 + 1):
                for ix in range(x0, x1 + 1):
                    c = iy * res + ix
                    slot = cell_start[e, c] - 1
                    cell_start[e, c] = slot
                    cell_items[e, slot] = g


# -- cast -----------------------------------------------------------------------------------
@wp.func
def _hit(g: wp.vec4, ox: float, oy: float, dx: float, dy: float, best_num: float, best_den: float):
    """The nearest hit so far, ``t = best_num / best_den`` (``best_den > 0``), updated with the ray
    ``o + t d`` against the segment ``g`` (``a``, ``b - a``). Division-free (the one division is
    made once the nearest hit is known), with its tests in one branch."""
    ex = g[2]
    ey = g[3]
    wx = g[0] - ox
    wy = g[1] - oy
    den = dx * ey - dy * ex  # cross(d, e): 0 for a ray along the segment, which never hits it
    sign = wp.where(den < 0.0, -1.0, 1.0)
    den = den * sign
    t_num = (wx * ey - wy * ex) * sign  # cross(w, e) = t den
    u_num = (wx * dy - wy * dx) * sign  # cross(w, d) = u den
    slack = _END_SLACK * den
    # t >= 0, u in [-slack, 1 + slack] and t <= best, as one comparison
    margin = wp.min(wp.min(t_num, u_num + slack), wp.min(den + slack - u_num, best_num * den - t_num * best_den))
    if margin >= 0.0 and den > 0.0:  # one branch, mostly not taken
        return t_num, den
    return best_num, best_den


@wp.func
def _cast(
    segments: wp.array2d(dtype=wp.vec4),
    cell_start: wp.array2d(dtype=wp.int32),
    cell_items: wp.array2d(dtype=wp.vec4),
    e: int,
    count: int,
    brute: int,
    h: float,
    res: int,
    ox: float,
    oy: float,
    dx: float,
    dy: float,
    max_range: float,
    clear: float,
) -> float:
    """Range [m] along the unit direction ``(dx, dy)`` from ``(ox, oy)`` (grid frame) to the
    nearest edge, at most ``max_range``; no edge lies within ``clear`` [m] of the origin."""
    best_num = float(max_range)
    best_den = float(1.0)
    if brute != 0:
        for s in range(count):
            best_num, best_den = _hit(segments[e, s], ox, oy, dx, dy, best_num, best_den)
        return best_num / best_den
    side = float(res) * h
    t0 = float(0.0)
    t1 = float(max_range)
    if ox >= 0.0 and ox < side and oy >= 0.0 and oy < side:
        # the walk starts where the ray leaves the clear disc: nothing is hit before
        t0 = clear
        if t0 >= t1:
            return max_range
        sx = ox + dx * t0
        sy = oy + dy * t0
        if not (sx >= 0.0 and sx < side and sy >= 0.0 and sy < side):
            return max_range  # it leaves the grid (which holds every edge) inside the disc
    else:
        # an origin outside the grid's square [0, res h]^2: the part of the ray inside it (slabs)
        if dx != 0.0:
            ta = (0.0 - ox) / dx
            tb = (side - ox) / dx
            t0 = wp.max(t0, wp.min(ta, tb))
            t1 = wp.min(t1, wp.max(ta, tb))
        elif ox < 0.0 or ox > side:
            return max_range
        if dy != 0.0:
            ta = (0.0 - oy) / dy
            tb = (side - oy) / dy
            t0 = wp.max(t0, wp.min(ta, tb))
            t1 = wp.min(t1, wp.max(ta, tb))
        elif oy < 0.0 or oy > side:
            return max_range
        if t0 > t1:
            return max_range
    ix = wp.clamp(int(wp.floor((ox + dx * t0) / h)), 0, res - 1)
    iy = wp.clamp(int(wp.floor((oy + dy * t0) / h)), 0, res - 1)
    step_x = int(1)
    step_y = int(1)
    next_x = float(BIG)
    next_y = float(BIG)
    delta_x = float(BIG)
    delta_y = float(BIG)
    if dx != 0.0:
        inv = 1.0 / dx
        if dx > 0.0:
            next_x = (float(ix + 1) * h - ox) * inv
        else:
            step_x = -1
            next_x = (float(ix) * h - ox) * inv
        delta_x = h * wp.abs(inv)
    if dy != 0.0:
        inv = 1.0 / dy
        if dy > 0.0:
            next_y = (float(iy + 1) * h - oy) * inv
        else:
            step_y = -1
            next_y = (float(iy) * h - oy) * inv
        delta_y = h * wp.abs(inv)
    while True:
        c = iy * res + ix
        k = cell_start[e, c]
        last = cell_start[e, c + 1]
        while k < last:
            best_num, best_den = _hit(cell_items[e, k], ox, oy, dx, dy, best_num, best_den)
            k += 1
        exit_t = wp.min(next_x, next_y)
        if best_num <= exit_t * best_den or exit_t >= t1:
            break
        if next_x < next_y:
            ix += step_x
            if ix < 0 or ix >= res:
                break
            next_x += delta_x
        else:
            iy += step_y
            if iy < 0 or iy >= res:
                break
            next_y += delta_y
    return best_num / best_den


@wp.func
def _clearance(cell_start: wp.array2d(dtype=wp.int32), cell_items: wp.array2d(dtype=wp.vec4), e: int, res: int,
               h: float, ox: float, oy: float) -> float:
    """A lower bound [m] on the distance from ``(ox, oy)`` (grid frame, inside the grid) to every
    edge: the distance to the segments listed in the 5 x 5 cells around it, at most 2 cells (a
    segment listed in none of them lies farther), less a thousandth for float32's rounding."""
    ix = int(ox / h)
    iy = int(oy / h)
    d2 = 4.0 * h * h
    for cy in range(wp.max(iy - 2, 0), wp.min(iy + 2, res - 1) + 1):
        for cx in range(wp.max(ix - 2, 0), wp.min(ix + 2, res - 1) + 1):
            c = cy * res + cx
            for k in range(cell_start[e, c], cell_start[e, c + 1]):
                g = cell_items[e, k]
                wx = ox - g[0]
                wy = oy - g[1]
                l2 = g[2] * g[2] + g[3] * g[3]
                t = float(0.0)
                if l2 > 0.0:
                    t = wp.clamp((wx * g[2] + wy * g[3]) / l2, 0.0, 1.0)
                qx = wx - g[2] * t
                qy = wy - g[3] * t
                d2 = wp.min(d2, qx * qx + qy * qy)
    return 0.999 * wp.sqrt(d2)


@wp.func
def _gaussian(key: wp.uint32, index: int) -> float:
    """A standard normal draw (Box-Muller) from draws ``2 index`` and ``2 index + 1`` of ``key``."""
    u1 = 1.0 - uniform(key, 2 * index)  # in (0, 1]: a finite log
    u2 = uniform(key, 2 * index + 1)
    return wp.sqrt(-2.0 * wp.log(u1)) * wp.cos(6.283185307179586 * u2)


@wp.kernel
def _scan(
    envs_per_thread: int,
    step_mask: wp.array(dtype=wp.int32),
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    directions: wp.array(dtype=wp.vec2),
    max_range: float,
    noise_std: float,
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    lanes: int,
    origin: wp.array(dtype=wp.vec2),
    cell: wp.array(dtype=float),
    num_segments: wp.array(dtype=wp.int32),
    segments: wp.array2d(dtype=wp.vec4),
    cell_start: wp.array2d(dtype=wp.int32),
    cell_items: wp.array2d(dtype=wp.vec4),
    overflow: wp.array(dtype=wp.int32),
    res: int,
    # scans since the env's reset (the noise's draws)
    scans: wp.array(dtype=wp.uint32),
    # output
    ranges: wp.array2d(dtype=float),
):
    thread, lane = wp.tid()
    end = wp.min((thread + 1) * envs_per_thread, step_mask.shape[0])
    for e in range(thread * envs_per_thread, end):
        if step_mask[e] == 0:
            continue  # not one of this step's envs (Course.step(mask=))
        h = cell[e]
        p = position[e]
        forward = wp.quat_rotate(orientation[e], wp.vec3(1.0, 0.0, 0.0))
        fl = wp.length(wp.vec2(forward[0], forward[1]))
        o = origin[e]
        ox = p[0] - o[0]
        oy = p[1] - o[1]
        # no course, or a pose that is not finite (a diverged simulation; NaN fails every test):
        # nothing is seen
        usable = h > 0.0 and wp.abs(ox) < BIG and wp.abs(oy) < BIG and fl > 1.0e-6 and fl < BIG
        fx = float(1.0)
        fy = float(0.0)
        if usable:
            fx = forward[0] / fl
            fy = forward[1] / fl
        brute = overflow[e]
        count = num_segments[e]
        clear = float(0.0)
        if usable and brute == 0 and ox >= 0.0 and ox < float(res) * h and oy >= 0.0 and oy < float(res) * h:
            clear = _clearance(cell_start, cell_items, e, res, h, ox, oy)
        key = wp.uint32(0)
        if noise_std > 0.0:
            key = random_key(seeds[e], counters[e], Stream.LIDAR) ^ (scans[e] * _GOLDEN_U32)
        for b in range(lane, ranges.shape[1], lanes):
            r = float(max_range)
            if usable:
                u = directions[b]
                dx = fx * u[0] - fy * u[1]
                dy = fy * u[0] + fx * u[1]
                r = _cast(segments, cell_start, cell_items, e, count, brute, h, res, ox, oy, dx, dy, max_range, clear)
            if noise_std > 0.0:
                r = wp.clamp(r + noise_std * _gaussian(key, b), 0.0, max_range)
            ranges[e, b] = r


@wp.kernel
def _count_scans(envs_per_thread: int, step_mask: wp.array(dtype=wp.int32), scans: wp.array(dtype=wp.uint32)):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, step_mask.shape[0])):
        if step_mask[e] != 0:
            scans[e] = scans[e] + _U32_ONE


@wp.kernel
def _reset_scans(envs_per_thread: int, mask: wp.array(dtype=wp.int32), scans: wp.array(dtype=wp.uint32)):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] != 0:
            scans[e] = wp.uint32(0)


class Lidar(Component):
    """A planar LiDAR on each env's body: the range to the band's edges along ``num_beams`` beams.

    Inputs: ``position`` ``[E] vec3`` [m] (the sensor's origin) and ``orientation`` ``[E] quat``
    (the beams turn with the body's heading: its +x axis projected on the x-y plane), both required.

    The beams lie in the x-y plane, at :attr:`beam_angles` [rad] from the body's heading (left >
    0): ``num_beams`` evenly spaced over ``fov``, from ``-fov / 2`` to ``+fov / 2`` inclusive, as
    f1tenth_gym's scan (one beam: straight ahead). Each reads the distance [m] to the nearest
    point where it crosses either edge of the band (the left edge: each centreline point plus
    its left normal times the half width; the right edge: minus), anywhere on the closed loop:
    a part of the course that crosses the band (a bridge, drawn flat) or touches it blocks the
    beam as a wall does. A beam that crosses no edge within ``max_range`` reads ``max_range``.
    Heights are ignored (the edges' x-y).

    With ``noise_std > 0`` each range gets Gaussian noise of that standard deviation [m] and is
    clipped to ``[0, max_range]``: beam ``b`` of scan ``k`` (the scans since the env's last reset)
    draws from the env's stream ``random_key(seed, counter, Stream.LIDAR)``, so the noise depends
    only on the env's seed, its course counter and ``k``, never on ``num_envs``.

    An env without a course (``valid == 0`` or fewer than 3 points), and a body whose position
    or heading is not finite (NaN, inf: a diverged simulation), reads ``max_range`` on every
    beam (plus the noise), never NaN.

    ``on_generate`` bakes, per masked env, a ``resolution x resolution`` grid over the edges'
    bounding box, each cell listing the edge segments near it (at most ``cell_capacity`` entries
    per env; an env whose lists do not fit tests every segment per beam, slower, the same
    ranges). ``step`` walks each beam through the cells it crosses (a grid walk, Amanatides and
    Woo 1987) and intersects it with their segments in float32. Pick ``resolution`` so that a
    cell holds a few segments: the walk costs a few ns per cell crossed and per segment tested.

    Args:
        num_beams: beams per scan, an int in [1, 16384] (default 1080).
        fov: [rad] field of view, in (0, 2 pi] (default 4.71, 270 degrees).
        max_range: [m] range of the beams, > 0 (default 30).
        noise_std: [m] standard deviation of the range noise, >= 0 (default 0: none).
        resolution: grid cells per side, an int in [1, 1024] (default 64); memory ``4 E
            resolution**2`` bytes.
        cell_capacity: entries of the cell lists per env, an int >= 0; None: 3 per edge segment
            the course can hold.
        name, after: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result: :class:`LidarScan`, ``ranges`` ``[E, num_beams] float32`` [m].
        beam_angles: ``[num_beams] float32`` [rad] each beam's angle in the body frame.
        overflow: ``[E] int32``, 1 where the env's cell lists did not fit ``cell_capacity``.

    Raises:
        TypeError: a non-int count, a non-number range.
        ValueError: a value out of its range.
    """

    inputs = (InputSpec("position", wp.vec3), InputSpec("orientation", wp.quat))
    requires = ("centerline", "normal", "half_width", "num_points")

    def __init__(self, num_beams: int = F1TENTH_NUM_BEAMS, *, fov: float = F1TENTH_FOV,
                 max_range: float = F1TENTH_RANGE, noise_std: float = 0.0, resolution: int = 64,
                 cell_capacity: int | None = None, name: str = "lidar", after=()):
        self.num_beams = check_int("num_beams", num_beams, lo=1, hi=16384)
        self.fov = check_float("fov", fov, lo=0.0, lo_open=True, hi=2.0 * math.pi)
        self.max_range = check_float("max_range", max_range, lo=0.0, lo_open=True, hi=1.0e6)
        self.noise_std = check_float("noise_std", noise_std, lo=0.0, hi=1.0e6)
        self.resolution = check_int("resolution", resolution, lo=1, hi=1024)
        self.cell_capacity = None if cell_capacity is None else check_int("cell_capacity", cell_capacity, lo=0,
                                                                           hi=2**31 - 1)
        super().__init__(name, after=after)
        self.beam_angles = beam_angles(self.num_beams, self.fov)
        self._scan: LidarScan | None = None

    def attach(self, ctx: ComponentContext) -> None:
        E, device, res = ctx.num_envs, ctx.device, self.resolution
        capacity = ctx.source(self).centerline.shape[1]
        segments = 2 * capacity
        items = 3 * segments if self.cell_capacity is None else self.cell_capacity
        self._scan = LidarScan(wp.full((E, self.num_beams), self.max_range, dtype=wp.float32, device=device))
        angles = self.beam_angles.astype(np.float64)
        self.directions = wp.array(np.stack([np.cos(angles), np.sin(angles)], 1).astype(np.float32), dtype=wp.vec2,
                                   device=device)
        self.origin = wp.zeros(E, dtype=wp.vec2, device=device)
        self.cell = wp.zeros(E, dtype=wp.float32, device=device)
        self.num_segments = wp.zeros(E, dtype=wp.int32, device=device)
        self.segments = wp.zeros((E, segments), dtype=wp.vec4, device=device)
        self.cell_start = wp.zeros((E, res * res + 1), dtype=wp.int32, device=device)
        self.cell_items = wp.zeros((E, items), dtype=wp.vec4, device=device)
        self.overflow = wp.zeros(E, dtype=wp.int32, device=device)
        self._scans = wp.zeros(E, dtype=wp.uint32, device=device)

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        src = ctx.source(self)
        ctx.launch_envs(_bake, [ctx.mask(mask), ctx.result.valid, src.centerline, src.normal, src.half_width,
                                src.num_points, self.resolution, self.origin, self.cell, self.num_segments,
                                self.segments, self.cell_start, self.cell_items, self.overflow])

    def reset(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        ctx.launch_envs(_reset_scans, [ctx.mask(mask), self._scans])

    def step(self, ctx: ComponentContext) -> None:
        seeds = ctx.generator.seeds
        lanes = ctx.lanes(self.num_beams)
        ctx.launch_envs(_scan, [ctx.mask(ctx.step_mask), self.bound["position"], self.bound["orientation"],
                                self.directions, self.max_range, self.noise_std, seeds.seeds, seeds.counters, lanes,
                                self.origin, self.cell, self.num_segments, self.segments, self.cell_start,
                                self.cell_items, self.overflow, self.resolution, self._scans, self._scan.ranges],
                        lanes)
        if self.noise_std > 0.0:
            ctx.launch_envs(_count_scans, [ctx.mask(ctx.step_mask), self._scans])

    @property
    def result(self) -> LidarScan | None:
        return self._scan

    def __repr__(self) -> str:
        return f"Lidar({self.num_beams}, fov={self.fov:g}, max_range={self.max_range:g}, name={self.name!r})"
