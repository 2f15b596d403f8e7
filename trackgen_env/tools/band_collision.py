"""``BandCollision``: a point or an oriented box against the edges of a track's band."""

from __future__ import annotations

import warp as wp

from ..core.checks import check_int
from ..core.env_loop import ahead
from ..core.polyline import BIG, line_count, locate, next_point
from ..core.types import Contacts
from . import band_sdf
from .component import Component, ComponentContext
from .contacts import BODY_INPUTS, BodyArguments, allocate_contacts, footprint_corner, no_course
from .localizer import Localizer, no_frame, prefetch_segment_rows, write_frame
from .warm_start import unset_warm

__all__ = ["BandCollision"]

# the corner loop stays a loop (Warp unrolls up to 16 iterations): one inlined copy of the
# closest-segment search instead of four, so the module compiles faster
wp.set_module_options({"enable_backward": False, "max_unroll": 1})

BACKENDS = ("segments", "sdf")


@wp.func
def _clearance(
    orientation: wp.array(dtype=wp.quat),
    half_extents: wp.array(dtype=wp.vec3),
    use_box: int,
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    e: int,
    n: int,
    window: int,
    c: wp.vec3,
    j: int,
    lateral: float,
    hw: float,
) -> float:
    """Env ``e``'s clearance: of the point ``c`` (projected on segment ``j`` at ``lateral``,
    half width ``hw``), or of its box's 4 footprint corners."""
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
            corner = footprint_corner(c, rot, h, i)
            u = wp.dot(corner - a, along)
            if not (wp.abs(u) < float(window)):  # also a NaN position: no undefined int conversion
                u = wp.where(u > 0.0, float(window), -float(window))
            jc, tc, lateral_c, hw_c = locate(line, normal, half_width, e, n, j, int(wp.floor(u)), window, 0, corner)
            corner_clearance = hw_c - wp.abs(lateral_c)
            if wp.isnan(corner_clearance):
                clearance = corner_clearance  # wp.min would drop a NaN: keep it, it is a hit
                break
            clearance = wp.min(clearance, corner_clearance)
    return clearance


@wp.kernel
def _band_collision(
    envs_per_thread: int,
    step_mask: wp.array(dtype=wp.int32),
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
    # with_frame 1: also a Localizer's step of the same position (BandCollision.step_with);
    # 0: the frame arguments are not read
    with_frame: int,
    tangent: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    loop_length: wp.array(dtype=float),
    frame_orientation: wp.array(dtype=wp.quat),
    use_orientation: int,
    frame_warm: wp.array(dtype=wp.int32),
    # outputs: the localizer's frame (with_frame 1), then the contacts
    s: wp.array(dtype=float),
    lateral_offset: wp.array(dtype=float),
    heading_error: wp.array(dtype=float),
    curvature_out: wp.array(dtype=float),
    segment: wp.array(dtype=wp.int32),
    hit: wp.array(dtype=wp.int32),
    distance: wp.array(dtype=float),
):
    thread = wp.tid()
    end = wp.min((thread + 1) * envs_per_thread, position.shape[0])
    for e in range(thread * envs_per_thread, end):
        f = ahead(envs_per_thread, e, end)
        if f >= 0 and step_mask[f] != 0 and warm[f] >= 0:
            prefetch_segment_rows(line, normal, half_width, with_frame, tangent, arc_length, curvature, f, warm[f])
        if step_mask[e] == 0:
            continue  # not one of this step's envs (Course.step(mask=))
        n = line_count(num_points, valid, line.shape[1], e)
        if n == 0:
            no_course(e, hit, distance)
            warm[e] = -1
            if with_frame != 0:
                no_frame(e, s, lateral_offset, heading_error, curvature_out, segment)
                frame_warm[e] = -1
            continue
        c = position[e]
        start = warm[e]
        # one search where both warm starts agree (they do while both components are stepped and
        # reset together), then the localizer's own where they do not; a loop, so that the
        # search is inlined once (the module compiles faster)
        searches = 1
        if with_frame != 0 and frame_warm[e] != start:
            searches = 2
        j = int(0)
        lateral = float(0.0)
        hw = float(0.0)
        jf = int(0)
        tf = float(0.0)
        lateral_f = float(0.0)
        for i in range(searches):
            from_segment = start
            if i == 1:
                from_segment = frame_warm[e]
            js, ts, lateral_s, hw_s = locate(line, normal, half_width, e, n, from_segment, 0, window, 1, c)
            if i == 0:
                j, lateral, hw = js, lateral_s, hw_s
            jf, tf, lateral_f = js, ts, lateral_s
        warm[e] = j
        if with_frame != 0:
            frame_warm[e] = jf
            write_frame(e, n, jf, tf, lateral_f, tangent, arc_length, curvature, loop_length, frame_orientation,
                        use_orientation, s, lateral_offset, heading_error, curvature_out, segment)
        clearance = _clearance(orientation, half_extents, use_box, line, normal, half_width, e, n, window, c, j,
                               lateral, hw)
        distance[e] = clearance
        hit[e] = wp.where(clearance >= 0.0, 0, 1)  # a NaN body (a diverged simulation) is a hit


class BandCollision(Component):
    """Clearance of each env's body to the edges of its track's band, every step.

    Inputs: ``position`` ``[E] vec3`` [m] (required); ``box_position`` ``[E] vec3`` [m]
    (the box centre; routed from ``position`` when not given); ``orientation`` ``[E] quat``
    and ``half_extents`` ``[E] vec3`` [m] (optional). With both ``orientation`` and
    ``half_extents`` bound, the tested points are the box's 4 bottom corners (the x-y
    footprint), else the point ``position``. A point's clearance is the band's half width
    minus its distance from the centreline across it, height excluded (the ``|lateral
    offset|`` a ``Localizer`` reports for it); ``distance`` is the
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
      descent starting at the segment their offset along it points to. The clearance is
      the half width interpolated at the closest point minus the distance to it across
      the line (:func:`~trackgen_env.core.polyline.project`), exact for the polyline. Whatever
      segment the descent stops on, a point it finds within the half width of that segment
      is on the band, and one beyond it is searched
      again globally: a body far from the band is a hit from any warm start, whatever the
      shape of the line (the distance, unlike the component along the normal, does not
      vanish past the end of a segment at a sharp turn or an out-and-back tip).
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
        result: :class:`~trackgen_env.core.types.Contacts`, ``hit`` ``[E] int32``,
            ``distance`` ``[E] float32`` [m].
        segment: (``"segments"``) ``[E] int32`` warm-start segment of each env (-1: unset).
        grid: (``"sdf"``) ``[E, resolution, resolution] float32`` [m] baked clearance, rows y,
            columns x; node ``(iy, ix)`` at ``origin[e] + (ix, iy) * cell[e]``; with
            ``origin`` ``[E] vec2`` [m] and ``cell`` ``[E] float32`` [m].

    Raises:
        TypeError: ``backend`` is not a str; ``window`` / ``resolution`` is not an int.
        ValueError: ``backend`` is another string; ``window < 1``; ``resolution < 16``.
    """

    inputs = BODY_INPUTS
    requires = ("centerline", "normal", "half_width", "num_points")

    def __init__(self, backend: str = "segments", *, window: int = 8, resolution: int = 128, name: str = "collision",
                 after=()):
        if not isinstance(backend, str):
            raise TypeError(f'backend must be a str ("segments" or "sdf"), got {type(backend).__name__} {backend!r}')
        if backend not in BACKENDS:
            raise ValueError(f'backend must be "segments" or "sdf", got {backend!r}')
        self.window = check_int("window", window, lo=1)
        self.resolution = check_int("resolution", resolution, lo=16)
        super().__init__(name, after=after)
        self.backend = backend
        self._contacts: Contacts | None = None

    def attach(self, ctx: ComponentContext) -> None:
        E, device = ctx.num_envs, ctx.device
        self._contacts = allocate_contacts(E, device)
        self._body = BodyArguments(device)
        if self.backend == "segments":
            self.segment = wp.full(E, -1, dtype=wp.int32, device=device)
            # stand for a Localizer's arguments when stepped alone (with_frame 0: not read)
            f1, i1 = (wp.zeros(1, dtype=d, device=device) for d in (wp.float32, wp.int32))
            f2 = wp.zeros((1, 1), dtype=wp.float32, device=device)
            self._no_frame = [0, wp.zeros((1, 1), dtype=wp.vec3, device=device), f2, f2, f1,
                              wp.zeros(1, dtype=wp.quat, device=device), 0, i1, f1, f1, f1, f1, i1]
        else:
            res = self.resolution
            self.grid = wp.zeros((E, res, res), dtype=wp.float32, device=device)
            self.origin = wp.zeros(E, dtype=wp.vec2, device=device)
            self.cell = wp.zeros(E, dtype=wp.float32, device=device)
            self._reach = wp.zeros(E, dtype=wp.float32, device=device)

    @property
    def unused_kernel_modules(self) -> tuple[str, ...]:
        """The kernel modules this backend never launches (a course does not load them)."""
        return (band_sdf.__name__,) if self.backend == "segments" else ()

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        if self.backend == "segments":
            # the masked envs' courses changed: their warm segment means nothing now
            unset_warm(ctx, mask, self.segment)
        else:
            band_sdf.bake(ctx, mask, ctx.source(self), self.origin, self.cell, self._reach, self.grid)

    def reset(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        if self.backend == "segments":
            unset_warm(ctx, mask, self.segment)

    def step(self, ctx: ComponentContext) -> None:
        src, out, body = ctx.source(self), self._contacts, self._body(self.bound)
        if self.backend == "segments":
            ctx.launch_step(_band_collision,
                            body + [ctx.result.valid, src.centerline, src.normal, src.half_width, src.num_points,
                               self.window, self.segment, *self._no_frame, out.hit, out.distance])
        else:
            band_sdf.contacts(ctx, body, src, self.origin, self.cell, self.grid, out)

    def step_with(self, ctx: ComponentContext, follower) -> bool:
        """Run this step and ``follower``'s in one kernel when ``follower`` is a ``Localizer``
        of the same line, window and position (the point this component tests, or its
        box's centre): the two searches of that position become one, and each env's line
        rows are read once. Returns False, launching nothing, otherwise (the course then
        steps both). The results are those of ``step`` then ``follower.step``, bit for bit.
        """
        if not (self.backend == "segments" and isinstance(follower, Localizer)
                and follower.warm_window == self.window and ctx.source(follower) is ctx.source(self)):
            return False
        body = self._body(self.bound)
        if follower.bound.get("position") is not body[0]:
            return False
        src, out, fa = ctx.source(self), self._contacts, follower.frame_arguments()
        ctx.launch_step(_band_collision,
                        body + [ctx.result.valid, src.centerline, src.normal, src.half_width, src.num_points,
                           self.window, self.segment, 1, src.tangent, src.arc_length, src.curvature, src.loop_length,
                           *fa, out.hit, out.distance])
        return True

    @property
    def result(self) -> Contacts | None:
        return self._contacts

    def __repr__(self) -> str:
        return f"BandCollision({self.backend!r}, name={self.name!r})"

