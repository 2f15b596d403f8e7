"""``HeightFieldBake``: a per-env ground-height grid under a track, baked every generation.

A simulation that drives on an elevated track (``TrackGenConfig(elevation=h)``) needs the
ground height under each body; the bake gives it as a regular grid per env that a kernel
samples in O(1) (:func:`sample_height`, bilinear), where a search of the centreline would
cost O(P) per body and step.

Grid: ``resolution x resolution`` nodes over one fixed world square, the same for every
env and every generation (so a graph that samples it never goes stale), rows y, columns
x: node ``(iy, ix)`` sits at ``origin + (ix, iy) * cell_size``.

Heights: each node takes the height of the road's cross-section through the point of its
env's centreline closest to it in x-y (linear along that segment): ``z + l * n_z`` for
the interpolated unit normal ``n`` and the distance ``l = d . n_xy / |n_xy|^2`` across the
road to the node's x-y offset ``d``, ``l`` held within +-half width. On a level band
(horizontal normals: ``n_z = 0``) that is the centreline's height, flat across; on a
banked one (``pipeline.stages.banking``) it follows the bank, ``z + l * sin(bank) *
cos(slope)``. Off the band the ground continues at the height of the nearest band edge,
so the ground is continuous wherever the closest point is unique (it jumps on the medial
line between two parts of the track at different heights, where the two nearest points
are equally far). An invalid env reads flat ground at z = 0.

Closest segment per node, exactly, with a one-level bounding-box hierarchy: the line is
cut into blocks of 16 segments, each with its x-y bounding box; a node takes an upper
bound ``D`` of its distance to the line (the previous node's distance plus the step
between them, by the triangle inequality, or for a run's first node the distance to the
nearest block's first point) and tests the segments of the blocks whose box lies within
``D`` only. Closest point on a segment, distance to a box: Ericson, *Real-Time
Collision Detection*, 2005, sections 5.1.2 and 5.1.3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import warp as wp

from ..core import env_loop
from ..core.checks import check_env_array, check_float, check_int
from ..core.polyline import BIG, line_count, next_point, segment_param
from .component import Component, ComponentContext
from .course_size import construction_bound

__all__ = ["HeightFieldBake", "HeightField", "sample_height"]

wp.set_module_options({"enable_backward": False})

_BLOCK = wp.constant(16)  # segments per bounding circle
_NODE_LANES = 1024  # most threads per env of the bake on CUDA


@wp.func
def sample_height(heights: wp.array3d(dtype=float), e: int, origin: wp.vec2, cell_size: float, x: float,
                  y: float) -> float:
    """Ground height [m] of env ``e`` at ``(x, y)`` [m]: bilinear interpolation of its grid
    (``heights`` ``[E, H, W]``, node ``(iy, ix)`` at ``origin + (ix, iy) * cell_size``).

    Beyond the grid the ground continues at the height of its edge (the position is
    clamped onto the grid); a NaN coordinate (a diverged simulation) reads NaN.
    """
    if wp.isnan(x) or wp.isnan(y):
        return wp.nan
    rows = heights.shape[1]
    cols = heights.shape[2]
    u = wp.clamp((x - origin[0]) / cell_size, 0.0, float(cols - 1))
    v = wp.clamp((y - origin[1]) / cell_size, 0.0, float(rows - 1))
    ix = wp.min(int(u), cols - 2)
    iy = wp.min(int(v), rows - 2)
    fu = u - float(ix)
    fv = v - float(iy)
    h0 = heights[e, iy, ix] * (1.0 - fu) + heights[e, iy, ix + 1] * fu
    h1 = heights[e, iy + 1, ix] * (1.0 - fu) + heights[e, iy + 1, ix + 1] * fu
    return h0 * (1.0 - fv) + h1 * fv


@wp.kernel
def _hf_blocks(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    num_points: wp.array(dtype=wp.int32),
    lanes: int,
    # outputs: x-y bounding box of each block of segments (lo > hi: no segment)
    block_lo: wp.array2d(dtype=wp.vec2),
    block_hi: wp.array2d(dtype=wp.vec2),
):
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        n = line_count(num_points, valid, line.shape[1], e)
        for b in range(lane, block_lo.shape[1], lanes):
            lo = wp.vec2(BIG, BIG)
            hi = wp.vec2(-BIG, -BIG)
            j0 = b * _BLOCK
            # the box of a block's segments is the box of their ends
            for j in range(j0, wp.min(j0 + _BLOCK, n) + wp.where(j0 < n, 1, 0)):
                p = line[e, wp.where(j < n, j, 0)]
                lo = wp.vec2(wp.min(lo[0], p[0]), wp.min(lo[1], p[1]))
                hi = wp.vec2(wp.max(hi[0], p[0]), wp.max(hi[1], p[1]))
            block_lo[e, b] = lo
            block_hi[e, b] = hi


@wp.func
def _box_distance2(q: wp.vec2, lo: wp.vec2, hi: wp.vec2) -> float:
    """Squared x-y distance from ``q`` to the box ``[lo, hi]``: a lower bound for every point in it."""
    dx = wp.max(wp.max(lo[0] - q[0], q[0] - hi[0]), 0.0)
    dy = wp.max(wp.max(lo[1] - q[1], q[1] - hi[1]), 0.0)
    return dx * dx + dy * dy


@wp.kernel
def _hf_bake(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    block_lo: wp.array2d(dtype=wp.vec2),
    block_hi: wp.array2d(dtype=wp.vec2),
    origin: wp.vec2,
    cell_size: float,
    lanes: int,
    # output
    heights: wp.array3d(dtype=float),
):
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        n = line_count(num_points, valid, line.shape[1], e)
        cols = heights.shape[2]
        total = heights.shape[1] * cols
        blocks = (n + _BLOCK - 1) // _BLOCK  # the blocks holding a segment
        # each lane bakes a run of consecutive nodes: the previous node's distance bounds the next's
        chunk = (total + lanes - 1) // lanes
        start = lane * chunk
        prev_q = wp.vec2(0.0, 0.0)
        prev_d = float(-1.0)  # -1: no previous node yet
        for i in range(start, wp.min(start + chunk, total)):
            iy = i // cols
            ix = i - iy * cols
            z = float(0.0)
            if n > 0:
                q2 = wp.vec2(origin[0] + float(ix) * cell_size, origin[1] + float(iy) * cell_size)
                q = wp.vec3(q2[0], q2[1], 0.0)
                # D >= the distance to the line: the previous node's plus the step (triangle
                # inequality), else the distance to the nearest block's first point
                bound = float(BIG)
                if prev_d >= 0.0:
                    bound = prev_d + wp.length(q2 - prev_q)
                else:
                    for b in range(blocks):
                        p = line[e, b * _BLOCK]
                        bound = wp.min(bound, wp.length(q2 - wp.vec2(p[0], p[1])))
                bound = bound * (1.0 + 1.0e-5) + 1.0e-6  # rounding must not drop the closest block
                bound2 = bound * bound
                best = float(BIG)
                best_j = int(0)
                best_t = float(0.0)
                for b in range(blocks):
                    if _box_distance2(q2, block_lo[e, b], block_hi[e, b]) <= bound2:
                        for j in range(b * _BLOCK, wp.min(b * _BLOCK + _BLOCK, n)):
                            a = line[e, j]
                            c = line[e, next_point(j, n)]
                            a2 = wp.vec3(a[0], a[1], 0.0)
                            c2 = wp.vec3(c[0], c[1], 0.0)
                            t = segment_param(q, a2, c2)
                            d = q - (a2 + (c2 - a2) * t)
                            d2 = wp.dot(d, d)
                            if d2 < best:
                                best = d2
                                best_j = j
                                best_t = t
                                z = a[2] + (c[2] - a[2]) * t
                # a banked road: the cross-section's height at the node's offset across it
                j1 = next_point(best_j, n)
                across = normal[e, best_j] * (1.0 - best_t) + normal[e, j1] * best_t
                if across[2] != 0.0:
                    across = wp.normalize(across)
                    a = line[e, best_j]
                    c = line[e, j1]
                    off = q2 - wp.vec2(a[0] + (c[0] - a[0]) * best_t, a[1] + (c[1] - a[1]) * best_t)
                    flat = wp.vec2(across[0], across[1])
                    hw = half_width[e, best_j] * (1.0 - best_t) + half_width[e, j1] * best_t
                    l = wp.clamp(wp.dot(off, flat) / wp.max(wp.dot(flat, flat), 1.0e-12), -hw, hw)
                    z = z + l * across[2]
                prev_q = q2
                prev_d = wp.sqrt(best)
            heights[e, iy, ix] = z


@wp.kernel
def _hf_sample(
    envs_per_thread: int,
    heights: wp.array3d(dtype=float),
    origin: wp.vec2,
    cell_size: float,
    position: wp.array(dtype=wp.vec3),
    # output
    out: wp.array(dtype=float),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, position.shape[0])):
        p = position[e]
        out[e] = sample_height(heights, e, origin, cell_size, p[0], p[1])


#: the finest grid a bake takes: 4096**2 float32 nodes are 64 MiB per env
MAX_RESOLUTION = 4096


def _mib(resolution: int, envs: int = 1) -> str:
    return f"{envs * resolution * resolution * 4 / 2**20:,.0f} MiB"


def node_lanes(device, resolution: int) -> int:
    """Threads per env of the bake: on CUDA a thread per node up to 1024 (``E * lanes`` stays
    far below 2^31 threads at any E); on the CPU one (a launch there runs on one thread)."""
    return 1 if wp.get_device(device).is_cpu else min(resolution * resolution, _NODE_LANES)


@dataclass(eq=False)
class HeightField:
    """The baked ground heights of a course (``course.heightfield``; the bake's ``result``).

    Attributes:
        heights: ``[E, H, W] float32`` [m] ground height, rows y, columns x (``H = W =
            resolution``); stable (written in place every generation).
        origin: ``wp.vec2`` [m], x-y of node ``(0, 0)``; node ``(iy, ix)`` sits at
            ``origin + (ix, iy) * cell_size``.
        cell_size: [m] node spacing (float).
        resolution: nodes per side.
        size: [m] side of the course square the grid covers (centred on ``center``).
        margin: [m] extra ground the grid covers beyond that square on each side.
        center: ``(x, y)`` [m] centre of the grid.

    From a kernel of your own, call ``sample_height(heights, e, origin, cell_size, x, y)``
    (``trackgen_env.tools.heightfield.sample_height``, a ``wp.func``), passing
    ``heights``, ``origin`` and ``cell_size`` as kernel arguments (they never change after
    attach, so a recorded graph stays valid).
    """

    heights: wp.array
    origin: wp.vec2
    cell_size: float
    resolution: int
    size: float
    margin: float
    center: tuple
    _ctx: ComponentContext = field(repr=False, compare=False)

    @classmethod
    def allocate(cls, ctx: ComponentContext, resolution: int, *, size: float, margin: float, center) -> "HeightField":
        """A zeroed field of ``resolution`` nodes per side over the square of side ``size +
        2 margin`` centred on ``center``."""
        extent = size + 2.0 * margin
        heights = wp.zeros((ctx.num_envs, resolution, resolution), dtype=wp.float32, device=ctx.device)
        origin = wp.vec2(center[0] - 0.5 * extent, center[1] - 0.5 * extent)
        return cls(heights, origin, extent / (resolution - 1), resolution, size, margin, tuple(center), ctx)

    def sample(self, position: wp.array, out: wp.array, *, stream: wp.Stream | None = None) -> None:
        """Write ``out[e]``, the ground height [m] under ``position[e]`` (its x-y), for every env.

        A launch on the course's device (capturable; no host sync): call it from your
        simulation step, e.g. to set a body's height.

        Args:
            position: ``[E] vec3`` [m].
            out: ``[E] float32`` [m].
            stream: the stream to launch on (default: the course's stream, else the current one).

        Raises:
            TypeError: an argument that is not a ``wp.array``.
            ValueError: another shape, dtype or device.
        """
        ctx = self._ctx
        check_env_array("position", position, ctx.num_envs, ctx.device, wp.vec3)
        check_env_array("out", out, ctx.num_envs, ctx.device, wp.float32)
        threads, per = env_loop.shape(ctx.device, ctx.num_envs)
        wp.launch(_hf_sample, dim=threads, inputs=[per, self.heights, self.origin, self.cell_size, position, out],
                  device=ctx.device, stream=stream if stream is not None else ctx.stream)

    def heights_numpy(self) -> np.ndarray:
        """A host copy of ``heights`` (``[E, H, W] float32`` [m]); syncs with the device.

        A copy on the CPU too (where ``wp.array.numpy()`` is a view that the next
        generation overwrites)."""
        return self.heights.numpy().copy()

    def node_xy(self) -> tuple[np.ndarray, np.ndarray]:
        """The x and y [m] of every node (``[H, W]`` float64 each, ``np.meshgrid`` order)."""
        idx = np.arange(self.resolution, dtype=np.float64)
        ox, oy = float(self.origin[0]), float(self.origin[1])
        return np.meshgrid(ox + idx * self.cell_size, oy + idx * self.cell_size)


class HeightFieldBake(Component):
    """Bakes each env's ground heights on a fixed world grid at every generation.

    Per-generation (the base ``step``): ``on_generate(ctx, mask)`` bakes the masked envs'
    grids from the source's centreline (the generator's ``TrackResult``, or the component
    named by ``source=``); unmasked envs' grids stay bit-identical. Heights: see the module
    (the road's cross-section through the x-y closest centreline point, linear along its
    segment, following the bank of a banked band; off the band the nearest band edge's
    height; 0 on an invalid env). Cost per baked env: ``resolution**2 * (P /
    16 + 16 k)`` box and segment tests for ``P`` centreline points and ``k`` blocks near a
    node (about 2 on the defaults: 4-5 times fewer tests than a scan of every segment);
    on CUDA up to 1024 threads per env (one per node up to 32 x 32), one per env on the
    CPU (about 10 ms per env at 128 nodes per side on one core).

    The square: side ``size + 2 margin`` centred on ``center``, fixed at attach. ``size``
    None reads the largest course the generator can draw (a ``"layout.size"``
    randomizer's construction hi, else the construction ``"layout.size"``): the procedural
    generator draws each track, band included, inside the square of that side centred on
    the origin. A curriculum that widens the size later needs ``size=`` its final value
    (``Course.track(..., size_hi=)`` does it for the preset's bake).

    Args:
        resolution: nodes per side, an int in ``[2, MAX_RESOLUTION]`` (4096); memory
            ``E * resolution**2 * 4`` bytes (64 MiB for 1024 envs at 128, 64 MiB per env at
            4096: a finer grid than that per env is no ground a car needs).
        size: [m] side of the course square covered, > 0; None: as above.
        margin: [m] ground covered beyond the square on each side, >= 0; None: the widest
            band the generator can draw (``"band.width"``'s hi; 0 where it declares none).
        center: ``(x, y)`` [m] centre of the square (a given circuit elsewhere than the origin).
        name, after, source: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result / utility: the :class:`HeightField` (``course.heightfield``), after attach.
        resolution, size, margin, center: the arguments as given (``size`` / ``margin`` None:
            read at attach; the :class:`HeightField` holds the values used).

    Raises:
        TypeError: ``resolution`` is not an int; ``size`` / ``margin`` / ``center`` not numbers.
        ValueError: ``resolution`` outside ``[2, 4096]`` (the message gives the memory it
            would take), ``size <= 0``, ``margin < 0``, a non-finite number;
            at attach, ``size=None`` on a generator that declares no ``"layout.size"`` (a
            given centreline: pass ``size=`` and ``center=``).
    """

    requires = ("centerline", "normal", "half_width", "num_points")

    def __init__(self, resolution: int = 128, *, size: float | None = None, margin: float | None = None,
                 center=(0.0, 0.0), name: str = "heightfield", after=(), source: str | None = None):
        self.resolution = check_int("resolution", resolution, lo=2)
        if self.resolution > MAX_RESOLUTION:
            raise ValueError(
                f"resolution must be in [2, {MAX_RESOLUTION}] nodes per side ({_mib(MAX_RESOLUTION)} per env at "
                f"{MAX_RESOLUTION}), got {self.resolution}: {_mib(self.resolution)} per env, "
                f"{_mib(self.resolution, 1024)} for 1024 envs"
            )
        self.size = None if size is None else check_float("size", size, lo=0.0, lo_open=True)
        self.margin = None if margin is None else check_float("margin", margin, lo=0.0)
        if isinstance(center, (str, bytes)) or not hasattr(center, "__len__") or len(center) != 2:
            raise TypeError(f"center must be 2 numbers (x, y) [m], got {center!r}")
        self.center = (check_float("center[0]", center[0]), check_float("center[1]", center[1]))
        super().__init__(name, after=after, source=source)
        self._field: HeightField | None = None

    def covered_size(self, generator) -> float | None:
        """[m] the side of the course square this bake covers on ``generator``: ``size``, else
        the largest course size the generator can draw (None when it declares none)."""
        return self.size if self.size is not None else construction_bound(generator, "layout.size", "hi")

    def attach(self, ctx: ComponentContext) -> None:
        size = self.covered_size(ctx.generator)
        if size is None:
            raise ValueError(
                f"HeightFieldBake {self.name!r}: the generator declares no course size (\"layout.size\": a given "
                "centreline has none): pass size= (and center=) for the square the grid covers"
            )
        margin = self.margin
        if margin is None:
            margin = construction_bound(ctx.generator, "band.width", "hi") or 0.0
        E, device, res = ctx.num_envs, ctx.device, self.resolution
        blocks = math.ceil(ctx.source(self).centerline.shape[1] / int(_BLOCK))
        self._block_lo = wp.zeros((E, blocks), dtype=wp.vec2, device=device)
        self._block_hi = wp.zeros((E, blocks), dtype=wp.vec2, device=device)
        self._field = HeightField.allocate(ctx, res, size=size, margin=margin, center=self.center)

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        m, src, hf = ctx.mask(mask), ctx.source(self), self._field
        valid = ctx.result.valid
        lanes = ctx.lanes(self._block_lo.shape[1])
        ctx.launch_envs(_hf_blocks, [m, valid, src.centerline, src.num_points, lanes, self._block_lo, self._block_hi],
                        lanes)
        lanes = node_lanes(ctx.device, self.resolution)
        ctx.launch_envs(_hf_bake,
                        [m, valid, src.centerline, src.normal, src.half_width, src.num_points, self._block_lo,
                         self._block_hi, hf.origin, hf.cell_size, lanes, hf.heights],
                        lanes)

    @property
    def result(self) -> HeightField | None:
        return self._field

    @property
    def utility(self) -> HeightField | None:
        return self._field

    def __repr__(self) -> str:
        return f"HeightFieldBake(resolution={self.resolution}, size={self.size}, name={self.name!r})"
