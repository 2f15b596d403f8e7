"""``FrameCollision``: a point or an oriented box against the frame bars of every gate of a gate course."""

from __future__ import annotations

import warp as wp

from ..core.checks import check_float
from ..core.polyline import BIG, line_count
from ..core.types import GATE_FIELDS, Contacts
from .component import Component, ComponentContext
from .contacts import BODY_INPUTS, BodyArguments, allocate_contacts, no_course

__all__ = ["FrameCollision"]

wp.set_module_options({"enable_backward": False})


@wp.func
def _bar(i: int, w: float, h: float, t: float):
    """Centre and half extents, in the gate frame, of bar ``i`` of a frame of bars ``t``
    thick around a ``w`` x ``h`` opening: 0 top, 1 bottom (both spanning the corners),
    2 left, 3 right."""
    if i == 0:
        return wp.vec3(0.0, 0.0, 0.5 * (h + t)), wp.vec3(0.5 * t, 0.5 * w + t, 0.5 * t)
    if i == 1:
        return wp.vec3(0.0, 0.0, -0.5 * (h + t)), wp.vec3(0.5 * t, 0.5 * w + t, 0.5 * t)
    if i == 2:
        return wp.vec3(0.0, 0.5 * (w + t), 0.0), wp.vec3(0.5 * t, 0.5 * t, 0.5 * h)
    return wp.vec3(0.0, -0.5 * (w + t), 0.0), wp.vec3(0.5 * t, 0.5 * t, 0.5 * h)


@wp.func
def _box_point_distance(p: wp.vec3, half: wp.vec3) -> float:
    """Signed distance from ``p`` (in the box frame) to the box of half extents ``half``."""
    d = wp.vec3(wp.abs(p[0]) - half[0], wp.abs(p[1]) - half[1], wp.abs(p[2]) - half[2])
    out = wp.vec3(wp.max(d[0], 0.0), wp.max(d[1], 0.0), wp.max(d[2], 0.0))
    return wp.length(out) + wp.min(wp.max(d[0], wp.max(d[1], d[2])), 0.0)


@wp.func
def _axis_gap(axis: wp.vec3, t: wp.vec3, a: wp.mat33, ha: wp.vec3, b: wp.mat33, hb: wp.vec3) -> float:
    """Gap between two boxes (columns of ``a``/``b`` their axes, ``t`` the centre offset)
    projected on ``axis`` (< 0: overlap); -BIG for a degenerate axis (it separates nothing)."""
    ln = wp.length(axis)
    if ln < 1.0e-6:
        return -BIG
    u = axis / ln
    ra = float(0.0)
    rb = float(0.0)
    for k in range(3):
        ra = ra + ha[k] * wp.abs(wp.dot(wp.vec3(a[0, k], a[1, k], a[2, k]), u))
        rb = rb + hb[k] * wp.abs(wp.dot(wp.vec3(b[0, k], b[1, k], b[2, k]), u))
    return wp.abs(wp.dot(t, u)) - ra - rb


@wp.func
def _box_box_gap(ca: wp.vec3, a: wp.mat33, ha: wp.vec3, cb: wp.vec3, b: wp.mat33, hb: wp.vec3) -> float:
    """Separating-axis gap of two oriented boxes: the largest gap over the 15 axes (the face
    normals of both and the cross products of their edges). > 0: separated, and a lower
    bound of their distance (exact when a face normal separates them); <= 0: they overlap,
    by at least its magnitude along every axis. Gottschalk et al., "OBBTree", SIGGRAPH 1996."""
    t = cb - ca
    gap = float(-BIG)
    for i in range(3):
        ai = wp.vec3(a[0, i], a[1, i], a[2, i])
        bi = wp.vec3(b[0, i], b[1, i], b[2, i])
        gap = wp.max(gap, _axis_gap(ai, t, a, ha, b, hb))
        gap = wp.max(gap, _axis_gap(bi, t, a, ha, b, hb))
        for j in range(3):
            bj = wp.vec3(b[0, j], b[1, j], b[2, j])
            gap = wp.max(gap, _axis_gap(wp.cross(ai, bj), t, a, ha, b, hb))
    return gap


@wp.kernel
def _frame_collision(
    envs_per_thread: int,
    step_mask: wp.array(dtype=wp.int32),
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    half_extents: wp.array(dtype=wp.vec3),
    use_box: int,
    valid: wp.array(dtype=wp.int32),
    gate_position: wp.array2d(dtype=wp.vec3),
    gate_orientation: wp.array2d(dtype=wp.quat),
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    num_gates: wp.array(dtype=wp.int32),
    thickness: float,
    # outputs
    hit: wp.array(dtype=wp.int32),
    distance: wp.array(dtype=float),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, position.shape[0])):
        if step_mask[e] == 0:
            continue  # not one of this step's envs (Course.step(mask=))
        n = line_count(num_gates, valid, gate_position.shape[1], e)
        if n == 0:
            no_course(e, hit, distance)
            continue
        p = position[e]
        w = gate_width[e]
        h = gate_height[e]
        body = wp.identity(n=3, dtype=float)
        he = wp.vec3(0.0)
        if use_box != 0:
            body = wp.quat_to_matrix(orientation[e])
            he = half_extents[e]
        best = float(BIG)
        body_radius = wp.length(he)
        # the frame lies in a sphere of this radius around its centre: a gate whose sphere is
        # farther than the best distance so far cannot lower it (nor can a bar whose point
        # distance, less the body's radius, is): skip their box tests
        frame_radius = wp.length(wp.vec3(0.5 * thickness, 0.5 * w + thickness, 0.5 * h + thickness))
        # the gate whose centre is nearest first: the best distance falls at once, and the bound
        # skips more of the other gates' box tests. The result is the least distance over every
        # gate's bars whatever the order: a skipped test could not have lowered the best, whenever
        # it came. For that the sphere bound is made safe against float32 rounding (a few ulps
        # below the computed bar distances, not above) and NaN where the gate's orientation is
        # (such a gate's bars read 0, a hit, and must be tested). A NaN position keeps the order 0, 1, ...
        first = int(0)
        nearest = float(BIG)
        for g in range(n):
            d_centre = wp.length(p - gate_position[e, g])
            if d_centre < nearest:
                nearest = d_centre
                first = g
        for k in range(n):
            g = first + k
            if g >= n:
                g = g - n
            c = gate_position[e, g]
            q = gate_orientation[e, g]
            to_centre = wp.length(p - c)
            slack = 1.0e-5 * (to_centre + frame_radius + body_radius) + 0.0 * wp.dot(q, q)
            if to_centre - frame_radius - body_radius - slack >= best:
                continue
            r = wp.quat_to_matrix(q)
            # the bars' point distances first, then the box tests from the nearest bar on (the
            # same argument: the order does not change the best)
            local = wp.quat_rotate_inv(q, p - c)
            d_bar = wp.vec4()
            nearest_bar = int(0)
            for i in range(4):
                bc, bh = _bar(i, w, h, thickness)
                d_bar[i] = _box_point_distance(local - bc, bh)
                if d_bar[i] < d_bar[nearest_bar]:
                    nearest_bar = i
            for j in range(4):
                bar = (nearest_bar + j) % 4
                d = d_bar[bar]
                if use_box != 0:
                    d = d - body_radius
                    if d < best:
                        # two lower bounds of the box's distance: keep the tighter
                        bc, bh = _bar(bar, w, h, thickness)
                        d = wp.max(_box_box_gap(p, body, he, c + r * bc, r, bh), d)
                best = wp.min(best, d)
        distance[e] = best
        hit[e] = wp.where(best <= 0.0, 1, 0)


class FrameCollision(Component):
    """Contact of each env's body with the gates' frame bars, every step.

    Each gate's opening (``gate_width`` x ``gate_height``) is framed by four bars of square
    section ``bar_thickness`` x ``bar_thickness`` (their depth along the gate normal is
    ``bar_thickness`` too): a top and a bottom bar spanning the full outer width
    ``gate_width + 2 bar_thickness``, and two side bars between them. The bars are oriented
    boxes in the gate's frame.

    Inputs: ``position`` ``[E] vec3`` [m] (required); ``box_position`` ``[E] vec3`` [m]
    (routed from ``position`` when not given), ``orientation`` ``[E] quat`` and
    ``half_extents`` ``[E] vec3`` [m] (optional). With both ``orientation`` and
    ``half_extents`` bound, the body is the oriented box at ``box_position``, else the point
    ``position``.

    ``distance``: for a point, its exact signed distance to the nearest bar (< 0 inside).
    For a box, per bar, the larger of two lower bounds of the distance: the separating-axis
    gap over the 15 axes of two oriented boxes (Gottschalk et al., "OBBTree", SIGGRAPH
    1996; exact when a face normal separates them) and the box centre's distance minus its
    half diagonal; > 0 separated, <= 0 overlapping (the axis test is exact for that).
    ``hit = distance <= 0``. An invalid env (``valid == 0``)
    reads ``hit = 1``, ``distance = 0``.

    Args:
        bar_thickness: [m] a number > 0 (default 0.02, the spec's post radius scale).
        name, after: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result: :class:`~trackgen_env.core.types.Contacts`, ``hit`` ``[E] int32``,
            ``distance`` ``[E] float32`` [m].

    Raises:
        TypeError: ``bar_thickness`` is not a number. ValueError: ``bar_thickness <= 0``.
    """

    inputs = BODY_INPUTS
    requires = GATE_FIELDS

    def __init__(self, bar_thickness: float = 0.02, *, name: str = "collision", after=()):
        self.bar_thickness = check_float("bar_thickness", bar_thickness, lo=0.0, lo_open=True)
        super().__init__(name, after=after)
        self._contacts: Contacts | None = None

    def attach(self, ctx: ComponentContext) -> None:
        self._contacts = allocate_contacts(ctx.num_envs, ctx.device)
        self._body = BodyArguments(ctx.device)

    def step(self, ctx: ComponentContext) -> None:
        src, out = ctx.source(self), self._contacts
        ctx.launch_step(
            _frame_collision,
            self._body(self.bound) + [ctx.result.valid, src.gate_position, src.gate_orientation, src.gate_width,
                                      src.gate_height, src.num_gates, self.bar_thickness, out.hit, out.distance],
        )

    @property
    def result(self) -> Contacts | None:
        return self._contacts

    def __repr__(self) -> str:
        return f"FrameCollision({self.bar_thickness}, name={self.name!r})"
