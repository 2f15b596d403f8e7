"""The baked band clearance grid of ``BandCollision("sdf")``: bake per generation, sample per step.

Per masked env, a ``resolution x resolution`` grid over the x-y bounding box of the band
plus a margin of 4 cells (cell size ``h`` = box extent / (resolution - 9)): every segment
writes ``max(half width - distance)`` into the nodes within ``half width + 2 h`` of it (an
atomic max), other nodes hold ``-2 h``. A point's clearance is the bilinear
interpolation of the grid, ``-2 h`` beyond it. Grid rows are y, columns x; node
``(iy, ix)`` sits at ``origin[e] + (ix, iy) * cell[e]``.
"""

from __future__ import annotations

import warp as wp

from ..core.polyline import BIG, line_count, next_point, segment_param
from .contacts import footprint_corner, no_course

__all__ = ["bake", "contacts"]

wp.set_module_options({"enable_backward": False})


@wp.kernel
def _sdf_frame(
    envs_per_thread: int,
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
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        n = line_count(num_points, valid, line.shape[1], e)
        if n == 0:
            origin[e] = wp.vec2(0.0, 0.0)
            cell[e] = 0.0
            reach[e] = 0.0
            continue
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
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    cell: wp.array(dtype=float),
    lanes: int,
    # output
    grid: wp.array3d(dtype=float),
):
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        res = grid.shape[2]
        far = -2.0 * cell[e]
        for i in range(lane, grid.shape[1] * res, lanes):
            grid[e, i // res, i % res] = far


@wp.kernel
def _sdf_splat(
    envs_per_thread: int,
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
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
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
def _sample(grid: wp.array3d(dtype=float), e: int, o: wp.vec2, h: float, p: wp.vec3) -> float:
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
    envs_per_thread: int,
    step_mask: wp.array(dtype=wp.int32),
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
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, position.shape[0])):
        if step_mask[e] == 0:
            continue  # not one of this step's envs (Course.step(mask=))
        h = cell[e]
        if line_count(num_points, valid, capacity, e) == 0 or h <= 0.0:
            no_course(e, hit, distance)
            continue
        c = position[e]
        o = origin[e]
        clearance = float(0.0)
        if use_box != 0:
            rot = orientation[e]
            he = half_extents[e]
            clearance = float(BIG)
            for i in range(4):
                clearance = wp.min(clearance, _sample(grid, e, o, h, footprint_corner(c, rot, he, i)))
        else:
            clearance = _sample(grid, e, o, h, c)
        distance[e] = clearance
        hit[e] = wp.where(clearance >= 0.0, 0, 1)  # a NaN body (a diverged simulation) is a hit


def bake(ctx, mask: wp.array | None, src, origin: wp.array, cell: wp.array, reach: wp.array, grid: wp.array) -> None:
    """Bake the masked envs' grids (``grid`` ``[E, R, R]``, ``origin`` ``[E] vec2``, ``cell`` and
    ``reach`` ``[E] float32``) from the course line ``src`` (centerline, half_width, num_points)."""
    m = ctx.mask(mask)
    ctx.launch_envs(_sdf_frame,
                    [m, ctx.result.valid, src.centerline, src.half_width, src.num_points, grid.shape[1],
                     origin, cell, reach])
    lanes = ctx.lanes(grid.shape[1] * grid.shape[2])
    ctx.launch_envs(_sdf_clear, [m, cell, lanes, grid], lanes)
    lanes = ctx.lanes(src.centerline.shape[1])
    ctx.launch_envs(_sdf_splat,
                    [m, ctx.result.valid, src.centerline, src.half_width, src.num_points, origin, cell, reach, lanes,
                     grid],
                    lanes)


def contacts(ctx, body: list, src, origin: wp.array, cell: wp.array, grid: wp.array, out) -> None:
    """Write ``out`` (``Contacts``) of the body ``[position, orientation, half_extents, use_box]``
    from the baked grids."""
    ctx.launch_step(_sdf_collision,
                    body + [ctx.result.valid, src.num_points, src.centerline.shape[1], origin, cell, grid,
                            out.hit, out.distance])
