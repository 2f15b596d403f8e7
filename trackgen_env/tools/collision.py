"""``BandCollision``: a point or an oriented box against the edges of a track's band."""

from __future__ import annotations

import numpy as np
import warp as wp

from ..types import Contacts
from . import _geometry as geo
from .component import Component, ComponentContext, InputSpec

__all__ = ["BandCollision"]

BACKENDS = ("segments", "sdf")


class BandCollision(Component):
    """Clearance of each env's body to the edges of its track's band, every step.

    Inputs: ``position`` ``[E] vec3`` [m] (required); ``box_position`` ``[E] vec3`` [m]
    (the box centre; routed from ``position`` when not given); ``orientation`` ``[E] quat``
    and ``half_extents`` ``[E] vec3`` [m] (optional). With both ``orientation`` and
    ``half_extents`` bound, the tested points are the box's 4 bottom corners (the x-y
    footprint), else the point ``position``. A point's clearance is the band's half width
    minus its distance from the centreline (its ``|lateral offset|``); ``distance`` is the
    minimum over the tested points and ``hit = distance < 0``. An invalid env (``valid ==
    0`` or fewer than 3 points) reads ``hit = 1``, ``distance = 0``.

    Backends (closest point on a segment: Ericson, *Real-Time Collision Detection*, 2005,
    section 5.1.2):

    * ``"segments"``: each tested point is projected on the closest centreline segment,
      found by a descent from the env's last segment (to the closer neighbour while there
      is one, at most ``window`` segments away: where the distance is unimodal over
      ``+- window`` segments, the closest of them), with a global search when that index
      is unset (after a reset or a generation), when the descent reaches ``+- window``
      (the closest segment may lie beyond), or when the box centre is off the band there
      (a teleport); corners search within ``+- window`` of the centre's segment, their
      descent starting at the segment their offset along it points to. Clearance along
      the interpolated left normal, exact for the polyline.
    * ``"sdf"``: ``on_generate`` bakes, per masked env, a ``resolution x resolution`` grid
      of clearance values over the x-y bounding box of the band (plus a 4-cell margin;
      cell size ``h`` = box extent / (resolution - 9)): every segment writes
      ``max(half width - distance)`` into the nodes within ``half width + 2 h`` of it (an
      atomic max), other nodes hold ``-2 h``. ``step`` reads the bilinear interpolation
      of the grid: O(1) per point, exact where the band edge is straight across a cell,
      and clamped to ``-2 h`` farther than ``2 h`` outside the band (and beyond the grid).
      Pick ``resolution`` so that ``h`` is well below the narrowest gap between band edges.

    Args:
        backend: ``"segments"`` or ``"sdf"``.
        window: (``"segments"``) half width of the warm-started search in segments, an int >= 1.
        resolution: (``"sdf"``) grid nodes per side, an int >= 16; memory ``E * resolution**2``
            float32.
        name, after: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result: :class:`~trackgen_env.types.Contacts`, ``hit`` ``[E] int32``,
            ``distance`` ``[E] float32`` [m].
        segment: (``"segments"``) ``[E] int32`` warm-start segment of each env (-1: unset).
        grid: (``"sdf"``) ``[E, resolution, resolution] float32`` [m] baked clearance, rows y,
            columns x; node ``(iy, ix)`` at ``origin[e] + (ix, iy) * cell[e]``; with
            ``origin`` ``[E] vec2`` [m] and ``cell`` ``[E] float32`` [m].

    Raises:
        TypeError: ``backend`` is not a str; ``window`` / ``resolution`` is not an int.
        ValueError: ``backend`` is another string; ``window < 1``; ``resolution < 16``.
    """

    inputs = (
        InputSpec("position", wp.vec3),
        InputSpec("box_position", wp.vec3, required=False, default="position"),
        InputSpec("orientation", wp.quat, required=False),
        InputSpec("half_extents", wp.vec3, required=False),
    )
    requires = ("centerline", "normal", "half_width", "num_points")

    def __init__(self, backend: str = "segments", *, window: int = 8, resolution: int = 128, name: str = "collision",
                 after=()):
        if not isinstance(backend, str):
            raise TypeError(f'backend must be a str ("segments" or "sdf"), got {type(backend).__name__} {backend!r}')
        if backend not in BACKENDS:
            raise ValueError(f'backend must be "segments" or "sdf", got {backend!r}')
        self.window = geo.check_window(window, "window", 8)
        if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)):
            raise TypeError(f"resolution must be an int >= 16, got {type(resolution).__name__} {resolution!r}")
        if resolution < 16:
            raise ValueError(f"resolution must be an int >= 16, got {resolution}")
        super().__init__(name, after=after)
        self.backend = backend
        self.resolution = int(resolution)
        self._contacts: Contacts | None = None

    def attach(self, ctx: ComponentContext) -> None:
        E, device = ctx.num_envs, ctx.device
        self._contacts = Contacts(
            hit=wp.zeros(E, dtype=wp.int32, device=device),
            distance=wp.zeros(E, dtype=wp.float32, device=device),
        )
        # stands for the unbound orientation of a point test (the kernel does not read it)
        self._no_orientation = wp.zeros(1, dtype=wp.quat, device=device)
        if self.backend == "segments":
            self.segment = wp.full(E, -1, dtype=wp.int32, device=device)
        else:
            res = self.resolution
            self.grid = wp.zeros((E, res, res), dtype=wp.float32, device=device)
            self.origin = wp.zeros(E, dtype=wp.vec2, device=device)
            self.cell = wp.zeros(E, dtype=wp.float32, device=device)
            self._reach = wp.zeros(E, dtype=wp.float32, device=device)

    def on_bind(self, arrays: dict) -> None:
        self.bound = geo.bind_inputs(self, arrays)

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        m, src = ctx.mask(mask), ctx.source(self)
        if self.backend == "segments":
            # the masked envs' courses changed: their warm segment means nothing now
            geo.launch(geo._unset_warm, ctx.num_envs, ctx, [m, self.segment])
            return
        res = self.resolution
        geo.launch(geo._sdf_frame, ctx.num_envs, ctx,
                   [m, ctx.result.valid, src.centerline, src.half_width, src.num_points, res,
                    self.origin, self.cell, self._reach])
        lanes = geo.lanes(ctx.device, res * res)
        geo.launch(geo._sdf_clear, (ctx.num_envs, lanes), ctx, [m, self.cell, lanes, self.grid])
        lanes = geo.lanes(ctx.device, src.centerline.shape[1])
        geo.launch(geo._sdf_splat, (ctx.num_envs, lanes), ctx,
                   [m, ctx.result.valid, src.centerline, src.half_width, src.num_points, self.origin, self.cell,
                    self._reach, lanes, self.grid])

    def reset(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        if self.backend == "segments":
            geo.launch(geo._unset_warm, ctx.num_envs, ctx, [ctx.mask(mask), self.segment])

    def step(self, ctx: ComponentContext) -> None:
        geo.require_bound(self)
        src, out, bound = ctx.source(self), self._contacts, self.bound
        use_box = "orientation" in bound and "half_extents" in bound
        body = [
            bound["box_position"] if use_box else bound["position"],
            bound["orientation"] if use_box else self._no_orientation,
            bound["half_extents"] if use_box else bound["position"],
            1 if use_box else 0,
        ]
        if self.backend == "segments":
            geo.launch(geo._band_collision, ctx.num_envs, ctx,
                       body + [ctx.result.valid, src.centerline, src.normal, src.half_width, src.num_points,
                               self.window, self.segment, out.hit, out.distance])
        else:
            geo.launch(geo._sdf_collision, ctx.num_envs, ctx,
                       body + [ctx.result.valid, src.num_points, src.centerline.shape[1], self.origin, self.cell,
                               self.grid, out.hit, out.distance])

    @property
    def result(self) -> Contacts | None:
        return self._contacts

    def __repr__(self) -> str:
        return f"BandCollision({self.backend!r}, name={self.name!r})"

