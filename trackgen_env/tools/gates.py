"""Components of gate courses: checkpoints at the gates, a course line through them, and
collisions with the gates' posts or frame bars.

All read the generator's :class:`~trackgen_env.types.GateResult` (``gate_position``,
``gate_orientation``, ``gate_width``, ``gate_height``, ``num_gates``, ``valid``). A gate's
local frame: +x is its normal (the direction of travel through it), +y its lateral axis
(left), +z up; its opening spans ``|y| <= gate_width / 2`` and ``|z| <= gate_height / 2``
around its centre. Every kernel launches once per call, parallel over envs (the
per-generation kernels also over ``geo.lanes`` lanes per env looping over gates or
course-line points: one on the CPU, so that a masked regeneration costs ~nothing for the
envs outside the mask), never reads past ``num_gates`` nor a capacity, and returns early
for envs outside the mask.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from ..types import CheckpointSet, Contacts, CourseLine
from . import _geometry as geo
from .checkpoints import CheckpointSampler
from .component import Component, ComponentContext, InputSpec

__all__ = ["GateCheckpoints", "CenterlineFromGates", "DiscCollision", "FrameCollision"]

wp.set_module_options({"enable_backward": False})

_BIG = wp.constant(1.0e30)
_X_AXIS = wp.constant(wp.vec3(1.0, 0.0, 0.0))
_Y_AXIS = wp.constant(wp.vec3(0.0, 1.0, 0.0))
_Z_AXIS = wp.constant(wp.vec3(0.0, 0.0, 1.0))

_GATE_FIELDS = ("gate_position", "gate_orientation", "gate_width", "gate_height", "num_gates")


# -- checkpoints ----------------------------------------------------------------------------
@wp.kernel
def _gate_checkpoints(
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    gate_position: wp.array2d(dtype=wp.vec3),
    gate_orientation: wp.array2d(dtype=wp.quat),
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    num_gates: wp.array(dtype=wp.int32),
    lanes: int,
    # outputs
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=float),
    cp_half_height: wp.array2d(dtype=float),
    cp_arc_length: wp.array2d(dtype=float),
    num_checkpoints: wp.array(dtype=wp.int32),
    cp_loop_length: wp.array(dtype=float),
    draws: wp.array(dtype=wp.int32),
):
    e, lane = wp.tid()
    if mask[e] == 0:
        return
    n = geo.line_count(num_gates, valid, wp.min(gate_position.shape[1], cp_position.shape[1]), e)
    if lane == 0:
        num_checkpoints[e] = n
        draws[e] = 0  # the sampler's stream restarts with each generation
        length = float(0.0)
        for i in range(n):
            length = length + wp.length(gate_position[e, (i + 1) % n] - gate_position[e, i])
        cp_loop_length[e] = length
    for k in range(lane, cp_position.shape[1], lanes):
        if k >= n:
            # padding (never read: consumers stop at num_checkpoints)
            cp_position[e, k] = wp.vec3(0.0)
            cp_direction[e, k] = _X_AXIS
            cp_half_width[e, k] = 0.0
            cp_half_height[e, k] = 0.0
            cp_arc_length[e, k] = 0.0
        else:
            s = float(0.0)
            for i in range(k):
                s = s + wp.length(gate_position[e, i + 1] - gate_position[e, i])
            cp_position[e, k] = gate_position[e, k]
            cp_direction[e, k] = wp.quat_rotate(gate_orientation[e, k], _X_AXIS)
            cp_half_width[e, k] = 0.5 * gate_width[e]
            cp_half_height[e, k] = 0.5 * gate_height[e]
            cp_arc_length[e, k] = s


# -- course line ----------------------------------------------------------------------------
@wp.kernel
def _course_line_points(
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    gate_position: wp.array2d(dtype=wp.vec3),
    gate_orientation: wp.array2d(dtype=wp.quat),
    gate_width: wp.array(dtype=float),
    num_gates: wp.array(dtype=wp.int32),
    samples_per_gate: int,
    lanes: int,
    # outputs
    centerline: wp.array2d(dtype=wp.vec3),
    tangent: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
):
    e, lane = wp.tid()
    if mask[e] == 0:
        return
    n = geo.line_count(num_gates, valid, gate_position.shape[1], e)
    count = n * samples_per_gate
    for k in range(lane, centerline.shape[1], lanes):
        if count == 0:
            centerline[e, k] = wp.vec3(0.0)
            tangent[e, k] = _X_AXIS
            normal[e, k] = _Y_AXIS
            curvature[e, k] = 0.0
            half_width[e, k] = 0.0
        else:
            # padding repeats the last point (never read: consumers stop at num_points)
            kk = wp.min(k, count - 1)
            i = kk // samples_per_gate
            t = float(kk - i * samples_per_gate) / float(samples_per_gate)
            i1 = (i + 1) % n
            p0 = gate_position[e, i]
            p1 = gate_position[e, i1]
            # cubic Hermite segment leaving gate i along its normal and entering gate i+1 along its
            # normal, tangent magnitudes = the chord (Catmull-Rom-like speed)
            chord = wp.length(p1 - p0)
            m0 = chord * wp.quat_rotate(gate_orientation[e, i], _X_AXIS)
            m1 = chord * wp.quat_rotate(gate_orientation[e, i1], _X_AXIS)
            t2 = t * t
            t3 = t2 * t
            pos = (2.0 * t3 - 3.0 * t2 + 1.0) * p0 + (t3 - 2.0 * t2 + t) * m0 + (-2.0 * t3 + 3.0 * t2) * p1 + (t3 - t2) * m1
            d1 = (6.0 * t2 - 6.0 * t) * p0 + (3.0 * t2 - 4.0 * t + 1.0) * m0 + (-6.0 * t2 + 6.0 * t) * p1 + (3.0 * t2 - 2.0 * t) * m1
            d2 = (12.0 * t - 6.0) * p0 + (6.0 * t - 4.0) * m0 + (-12.0 * t + 6.0) * p1 + (6.0 * t - 2.0) * m1
            speed = wp.length(d1)
            tan = _X_AXIS
            if speed > 1.0e-9:
                tan = d1 / speed
            # signed curvature of the horizontal projection (the turn the normal measures)
            speed_h2 = d1[0] * d1[0] + d1[1] * d1[1]
            kappa = float(0.0)
            if speed_h2 > 1.0e-12:
                kappa = (d1[0] * d2[1] - d1[1] * d2[0]) / (speed_h2 * wp.sqrt(speed_h2))
            left = wp.vec3(-tan[1], tan[0], 0.0)
            ln = wp.length(left)
            if ln > 1.0e-9:
                left = left / ln
            else:
                left = _Y_AXIS
            centerline[e, k] = pos
            tangent[e, k] = tan
            normal[e, k] = left
            curvature[e, k] = kappa
            half_width[e, k] = 0.5 * gate_width[e]


@wp.kernel
def _course_line_arc_length(
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    num_gates: wp.array(dtype=wp.int32),
    capacity: int,
    samples_per_gate: int,
    centerline: wp.array2d(dtype=wp.vec3),
    # outputs
    arc_length: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
):
    e = wp.tid()
    if mask[e] == 0:
        return
    count = geo.line_count(num_gates, valid, capacity, e) * samples_per_gate
    num_points[e] = count
    s = float(0.0)
    for k in range(centerline.shape[1]):
        if k > 0 and k < count:
            s = s + wp.length(centerline[e, k] - centerline[e, k - 1])
        arc_length[e, k] = s
    if count > 0:
        s = s + wp.length(centerline[e, 0] - centerline[e, count - 1])
    loop_length[e] = s


# -- collisions -----------------------------------------------------------------------------
@wp.func
def _post_distance(p: wp.vec3, axis: wp.vec3, radius: float, top: float) -> float:
    """Signed distance from ``p`` to the vertical capped cylinder of ``radius`` whose axis
    passes through ``axis`` (x, y), from z = 0 to z = ``top`` (< 0 inside)."""
    dx = p[0] - axis[0]
    dy = p[1] - axis[1]
    a = wp.sqrt(dx * dx + dy * dy) - radius
    b = wp.max(-p[2], p[2] - top)
    return wp.min(wp.max(a, b), 0.0) + wp.sqrt(wp.max(a, 0.0) * wp.max(a, 0.0) + wp.max(b, 0.0) * wp.max(b, 0.0))


@wp.kernel
def _disc_collision(
    position: wp.array(dtype=wp.vec3),
    valid: wp.array(dtype=wp.int32),
    gate_position: wp.array2d(dtype=wp.vec3),
    gate_orientation: wp.array2d(dtype=wp.quat),
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    num_gates: wp.array(dtype=wp.int32),
    radius: float,
    # outputs
    hit: wp.array(dtype=wp.int32),
    distance: wp.array(dtype=float),
):
    e = wp.tid()
    n = geo.line_count(num_gates, valid, gate_position.shape[1], e)
    if n == 0:
        hit[e] = 1
        distance[e] = 0.0
        return
    p = position[e]
    offset = 0.5 * gate_width[e] + radius
    half_h = 0.5 * gate_height[e]
    best = float(_BIG)
    for i in range(n):
        c = gate_position[e, i]
        lateral = wp.quat_rotate(gate_orientation[e, i], _Y_AXIS)
        top = c[2] + half_h
        best = wp.min(best, _post_distance(p, c + offset * lateral, radius, top))
        best = wp.min(best, _post_distance(p, c - offset * lateral, radius, top))
    distance[e] = best
    hit[e] = wp.where(best <= 0.0, 1, 0)


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
        return -_BIG
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
    gap = float(-_BIG)
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
    e = wp.tid()
    n = geo.line_count(num_gates, valid, gate_position.shape[1], e)
    if n == 0:
        hit[e] = 1
        distance[e] = 0.0
        return
    p = position[e]
    w = gate_width[e]
    h = gate_height[e]
    body = wp.identity(n=3, dtype=float)
    he = wp.vec3(0.0)
    if use_box != 0:
        body = wp.quat_to_matrix(orientation[e])
        he = half_extents[e]
    best = float(_BIG)
    body_radius = wp.length(he)
    # the frame lies in a sphere of this radius around its centre: a gate whose sphere is
    # farther than the best distance so far cannot lower it (nor can a bar whose point
    # distance, less the body's radius, is): skip their box tests
    frame_radius = wp.length(wp.vec3(0.5 * thickness, 0.5 * w + thickness, 0.5 * h + thickness))
    for g in range(n):
        c = gate_position[e, g]
        if wp.length(p - c) - frame_radius - body_radius >= best:
            continue
        q = gate_orientation[e, g]
        r = wp.quat_to_matrix(q)
        for i in range(4):
            bc, bh = _bar(i, w, h, thickness)
            d = _box_point_distance(wp.quat_rotate_inv(q, p - c) - bc, bh)
            if use_box != 0:
                d = d - body_radius
                if d < best:
                    # two lower bounds of the box's distance: keep the tighter
                    d = wp.max(_box_box_gap(p, body, he, c + r * bc, r, bh), d)
            best = wp.min(best, d)
    distance[e] = best
    hit[e] = wp.where(best <= 0.0, 1, 0)


# -- components -----------------------------------------------------------------------------
def _positive(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number > 0 [m], got {type(value).__name__} {value!r}")
    if not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0 [m], got {value!r}")
    return float(value)


class GateCheckpoints(Component):
    """Checkpoints at the gates of a gate course, refreshed every generation.

    Per-generation (the base ``step``): ``on_generate(ctx, mask)`` fills the masked envs'
    rows of ``result`` from the generator's ``GateResult``; unmasked rows stay
    bit-identical. Checkpoint ``k`` is gate ``k`` (checkpoint 0 is gate 0): ``position`` the
    gate centre, ``direction`` the gate normal (its local +x), ``half_width`` /
    ``half_height`` half the opening's width / height, ``arc_length`` the length of the
    polyline through the gate centres from gate 0 to gate ``k``; ``loop_length`` is that
    closed polyline's length and ``num_checkpoints`` the env's ``num_gates``. With
    :class:`~trackgen_env.tools.Progress`, a gate counts only when the path crosses its
    plane inside the opening, front to back, in order: flying around it earns no pass.
    Gate 0 is the start/finish gate: from the generator's start pose (in front of gate 0)
    a ``Progress`` reset expects gate 1 next, so crossing gate 0 at the start is the
    start of the race, and crossing it again after every other gate completes the lap
    (``Progress.reset_to(ctx, mask, start)`` with ``start = num_gates - 1`` counts gate 0
    first instead). An invalid env (``valid == 0``) gets ``num_checkpoints = 0``.

    Args:
        name, after: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result: the :class:`~trackgen_env.types.CheckpointSet`, arrays ``[E, G]`` / ``[E]``
            (``G = generator.layout.max_gates``).
        capacity: ``G``.
        utility: a :class:`~trackgen_env.tools.CheckpointSampler` (``course.checkpoint_sampler``):
            start poses at random gates, in the middle of the opening, facing through it.
    """

    requires = _GATE_FIELDS

    def __init__(self, *, name: str = "checkpoints", after=()):
        super().__init__(name, after=after)
        self._set: CheckpointSet | None = None
        self._sampler: CheckpointSampler | None = None
        self.capacity = 0

    def attach(self, ctx: ComponentContext) -> None:
        E, G, dev = ctx.num_envs, int(ctx.generator.layout.max_gates), ctx.device
        self.capacity = G
        self._set = CheckpointSet(
            position=wp.zeros((E, G), dtype=wp.vec3, device=dev),
            direction=wp.zeros((E, G), dtype=wp.vec3, device=dev),
            half_width=wp.zeros((E, G), dtype=float, device=dev),
            half_height=wp.zeros((E, G), dtype=float, device=dev),
            arc_length=wp.zeros((E, G), dtype=float, device=dev),
            num_checkpoints=wp.zeros(E, dtype=wp.int32, device=dev),
            loop_length=wp.zeros(E, dtype=float, device=dev),
        )
        self._sampler = CheckpointSampler(self, ctx)

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        src, cs = ctx.source(self), self._set
        lanes = geo.lanes(ctx.device, self.capacity)
        geo.launch(
            _gate_checkpoints, (ctx.num_envs, lanes), ctx,
            [ctx.mask(mask), ctx.result.valid, src.gate_position, src.gate_orientation, src.gate_width,
             src.gate_height, src.num_gates, lanes, cs.position, cs.direction, cs.half_width, cs.half_height,
             cs.arc_length, cs.num_checkpoints, cs.loop_length, self._sampler.draws],
        )

    @property
    def result(self) -> CheckpointSet | None:
        return self._set

    @property
    def utility(self) -> CheckpointSampler | None:
        return self._sampler


class CenterlineFromGates(Component):
    """A smooth closed course line through the gate centres, refreshed every generation.

    Segment ``i`` (gate ``i`` to gate ``i + 1``) is the cubic Hermite curve that leaves gate
    ``i`` along its normal and enters gate ``i + 1`` along its normal, with tangent
    magnitudes equal to the chord ``|p_{i+1} - p_i|`` (a Catmull-Rom-like parametrisation;
    the line crosses every gate square to its opening). Each segment is sampled at
    ``samples_per_gate`` uniform parameters, point ``k = i * samples_per_gate + j`` at
    ``t = j / samples_per_gate`` (point 0 is gate 0's centre). Per point: ``tangent`` the
    unit derivative, ``normal`` the horizontal left normal ``normalize(z x tangent)``,
    ``curvature`` the signed curvature of the horizontal projection
    ``(x'y'' - y'x'') / (x'^2 + y'^2)^(3/2)`` (left turn > 0),
    ``half_width`` half the gate width; ``arc_length`` the cumulative chord length of the
    samples, ``loop_length`` the closed polyline's length. Field names are a
    ``TrackResult``'s, so ``Localizer(source="centerline")`` and ``Checkpoints(...,
    source="centerline")`` read it. An invalid env (``valid == 0``) gets ``num_points = 0``.
    Hermite curves: Farin, *Curves and Surfaces for CAGD* (2002), ch. 7.

    Per-generation (the base ``step``): ``on_generate(ctx, mask)`` refreshes the masked
    envs' rows only.

    Args:
        samples_per_gate: points per gate-to-gate segment, an int >= 2.
        name, after: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result / utility: the :class:`~trackgen_env.types.CourseLine` (``course.course_line``),
            arrays ``[E, L]`` / ``[E]`` with ``L = max_gates * samples_per_gate``.

    Raises:
        TypeError: ``samples_per_gate`` is not an int (a bool is refused).
        ValueError: ``samples_per_gate < 2``.
    """

    requires = _GATE_FIELDS

    def __init__(self, samples_per_gate: int = 8, *, name: str = "centerline", after=()):
        if isinstance(samples_per_gate, (bool, np.bool_)) or not isinstance(samples_per_gate, (int, np.integer)):
            raise TypeError(f"samples_per_gate must be an int >= 2, got {type(samples_per_gate).__name__} {samples_per_gate!r}")
        if samples_per_gate < 2:
            raise ValueError(f"samples_per_gate must be an int >= 2, got {samples_per_gate}")
        super().__init__(name, after=after)
        self.samples_per_gate = int(samples_per_gate)
        self._line: CourseLine | None = None

    def attach(self, ctx: ComponentContext) -> None:
        E, dev = ctx.num_envs, ctx.device
        L = int(ctx.generator.layout.max_gates) * self.samples_per_gate
        self._line = CourseLine(
            centerline=wp.zeros((E, L), dtype=wp.vec3, device=dev),
            tangent=wp.zeros((E, L), dtype=wp.vec3, device=dev),
            normal=wp.zeros((E, L), dtype=wp.vec3, device=dev),
            arc_length=wp.zeros((E, L), dtype=float, device=dev),
            curvature=wp.zeros((E, L), dtype=float, device=dev),
            half_width=wp.zeros((E, L), dtype=float, device=dev),
            num_points=wp.zeros(E, dtype=wp.int32, device=dev),
            loop_length=wp.zeros(E, dtype=float, device=dev),
        )

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        src, line, m = ctx.source(self), self._line, ctx.mask(mask)
        lanes = geo.lanes(ctx.device, line.centerline.shape[1])
        geo.launch(
            _course_line_points, (ctx.num_envs, lanes), ctx,
            [m, ctx.result.valid, src.gate_position, src.gate_orientation, src.gate_width, src.num_gates,
             self.samples_per_gate, lanes, line.centerline, line.tangent, line.normal, line.curvature, line.half_width],
        )
        geo.launch(
            _course_line_arc_length, ctx.num_envs, ctx,
            [m, ctx.result.valid, src.num_gates, src.gate_position.shape[1], self.samples_per_gate, line.centerline,
             line.arc_length, line.num_points, line.loop_length],
        )

    @property
    def result(self) -> CourseLine | None:
        return self._line

    @property
    def utility(self) -> CourseLine | None:
        return self._line

    def __repr__(self) -> str:
        return f"CenterlineFromGates({self.samples_per_gate}, name={self.name!r})"


class DiscCollision(Component):
    """Contact of each env's point body with the gates' posts, every step.

    Each gate stands on two posts: vertical cylinders of radius ``r`` beside its opening,
    axes at ``centre +- (gate_width / 2 + r) * lateral`` (lateral = the gate's local +y),
    from the ground (z = 0) to the top of the opening (``centre z + gate_height / 2``).
    ``distance`` is the least signed distance from ``position`` to a post (capped-cylinder
    distance; < 0 inside) and ``hit = distance <= 0``. Only posts count: the ground
    (z <= 0) and the course bounds are the env's business. An invalid env (``valid == 0``)
    reads ``hit = 1``, ``distance = 0`` (as ``BandCollision``: an env without a course
    ends its episode). For a body of radius ``b``, test ``distance < b``.

    Input: ``position`` ``[E] vec3`` [m] (required).

    Args:
        r: post radius [m], a number > 0.
        name, after: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result: :class:`~trackgen_env.types.Contacts`, ``hit`` ``[E] int32``,
            ``distance`` ``[E] float32`` [m].

    Raises:
        TypeError: ``r`` is not a number (a bool is refused). ValueError: ``r <= 0`` or not finite.
    """

    inputs = (InputSpec("position", wp.vec3),)
    requires = _GATE_FIELDS

    def __init__(self, r: float, *, name: str = "collision", after=()):
        self.radius = _positive(r, "r (the post radius)")
        super().__init__(name, after=after)
        self._contacts: Contacts | None = None

    def attach(self, ctx: ComponentContext) -> None:
        self._contacts = Contacts(
            hit=wp.zeros(ctx.num_envs, dtype=wp.int32, device=ctx.device),
            distance=wp.zeros(ctx.num_envs, dtype=wp.float32, device=ctx.device),
        )

    def on_bind(self, arrays: dict) -> None:
        self.bound = geo.bind_inputs(self, arrays)

    def step(self, ctx: ComponentContext) -> None:
        geo.require_bound(self)
        src, out = ctx.source(self), self._contacts
        geo.launch(
            _disc_collision, ctx.num_envs, ctx,
            [self.bound["position"], ctx.result.valid, src.gate_position, src.gate_orientation, src.gate_width,
             src.gate_height, src.num_gates, self.radius, out.hit, out.distance],
        )

    @property
    def result(self) -> Contacts | None:
        return self._contacts

    def __repr__(self) -> str:
        return f"DiscCollision({self.radius}, name={self.name!r})"


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
        result: :class:`~trackgen_env.types.Contacts`, ``hit`` ``[E] int32``,
            ``distance`` ``[E] float32`` [m].

    Raises:
        TypeError: ``bar_thickness`` is not a number. ValueError: ``bar_thickness <= 0``.
    """

    inputs = (
        InputSpec("position", wp.vec3),
        InputSpec("box_position", wp.vec3, required=False, default="position"),
        InputSpec("orientation", wp.quat, required=False),
        InputSpec("half_extents", wp.vec3, required=False),
    )
    requires = _GATE_FIELDS

    def __init__(self, bar_thickness: float = 0.02, *, name: str = "collision", after=()):
        self.bar_thickness = _positive(bar_thickness, "bar_thickness")
        super().__init__(name, after=after)
        self._contacts: Contacts | None = None

    def attach(self, ctx: ComponentContext) -> None:
        self._contacts = Contacts(
            hit=wp.zeros(ctx.num_envs, dtype=wp.int32, device=ctx.device),
            distance=wp.zeros(ctx.num_envs, dtype=wp.float32, device=ctx.device),
        )
        # stand for the unbound box inputs of a point test (the kernel does not read them)
        self._no_orientation = wp.zeros(1, dtype=wp.quat, device=ctx.device)
        self._no_half_extents = wp.zeros(1, dtype=wp.vec3, device=ctx.device)

    def on_bind(self, arrays: dict) -> None:
        self.bound = geo.bind_inputs(self, arrays)

    def step(self, ctx: ComponentContext) -> None:
        geo.require_bound(self)
        src, out, bound = ctx.source(self), self._contacts, self.bound
        use_box = "orientation" in bound and "half_extents" in bound
        geo.launch(
            _frame_collision, ctx.num_envs, ctx,
            [bound["box_position"] if use_box else bound["position"],
             bound["orientation"] if use_box else self._no_orientation,
             bound["half_extents"] if use_box else self._no_half_extents,
             1 if use_box else 0,
             ctx.result.valid, src.gate_position, src.gate_orientation, src.gate_width, src.gate_height,
             src.num_gates, self.bar_thickness, out.hit, out.distance],
        )

    @property
    def result(self) -> Contacts | None:
        return self._contacts

    def __repr__(self) -> str:
        return f"FrameCollision({self.bar_thickness}, name={self.name!r})"
