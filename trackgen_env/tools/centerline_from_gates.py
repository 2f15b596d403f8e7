"""``CenterlineFromGates``: a smooth closed course line through a gate course, refreshed every generation."""

from __future__ import annotations

import warp as wp

from ..core.checks import check_int
from ..core.polyline import X_AXIS, Y_AXIS, line_count
from ..core.types import GATE_FIELDS, CourseLine
from .component import Component, ComponentContext

__all__ = ["CenterlineFromGates"]

wp.set_module_options({"enable_backward": False})


#: A segment folds (the single cubic turns back on itself in a knot of a few centimetres' radius) when its
#: chord points against either gate's normal by more than this cosine (the next gate lies ahead but faces
#: back, or the last lies behind the next's opening): it is then flown as two cubics through a turning point.
FOLD_CHORD_COS = -0.05


@wp.func
def _hermite(p0: wp.vec3, m0: wp.vec3, p1: wp.vec3, m1: wp.vec3, t: float):
    """Point, first and second derivative of the cubic Hermite curve at ``t``."""
    t2 = t * t
    t3 = t2 * t
    pos = (2.0 * t3 - 3.0 * t2 + 1.0) * p0 + (t3 - 2.0 * t2 + t) * m0 + (-2.0 * t3 + 3.0 * t2) * p1 + (t3 - t2) * m1
    d1 = ((6.0 * t2 - 6.0 * t) * p0 + (3.0 * t2 - 4.0 * t + 1.0) * m0 + (-6.0 * t2 + 6.0 * t) * p1
          + (3.0 * t2 - 2.0 * t) * m1)
    d2 = (12.0 * t - 6.0) * p0 + (6.0 * t - 4.0) * m0 + (-12.0 * t + 6.0) * p1 + (6.0 * t - 2.0) * m1
    return pos, d1, d2


@wp.func
def _segment(p0: wp.vec3, n0: wp.vec3, p1: wp.vec3, n1: wp.vec3, width: float, t: float):
    """The course line from gate ``p0`` (normal ``n0``) to gate ``p1`` (``n1``) at ``t`` in [0, 1)."""
    chord = p1 - p0
    length = wp.length(chord)
    c = chord / wp.max(length, 1.0e-9)
    if wp.min(wp.dot(c, n0), wp.dot(c, n1)) >= FOLD_CHORD_COS:
        return _hermite(p0, length * n0, p1, length * n1, t)
    # the turning point: beyond both gates along the way the line turns back (u), half the sideways
    # offset (at least half an opening) further, crossed sideways (tv)
    u = n0 - n1
    if wp.length(u) < 1.0e-3:
        u = n0
    u = wp.normalize(u)
    side = chord - wp.dot(chord, u) * u
    tv = wp.vec3(0.0)
    if wp.length(side) > 1.0e-6:
        tv = wp.normalize(side)
    else:
        tv = wp.normalize(wp.cross(wp.vec3(0.0, 0.0, 1.0), u) + wp.vec3(1.0e-6, 0.0, 0.0))
    radius = wp.max(0.5 * wp.length(side), 0.5 * width)
    mid = 0.5 * (p0 + p1)
    v = mid + (wp.max(wp.dot(p0, u), wp.dot(p1, u)) + radius - wp.dot(mid, u)) * u
    if t < 0.5:
        a = wp.length(v - p0)
        return _hermite(p0, a * n0, v, a * tv, 2.0 * t)
    b = wp.length(p1 - v)
    return _hermite(v, b * tv, p1, b * n1, 2.0 * t - 1.0)


@wp.kernel
def _course_line_points(
    envs_per_thread: int,
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
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        n = line_count(num_gates, valid, gate_position.shape[1], e)
        count = n * samples_per_gate
        for k in range(lane, centerline.shape[1], lanes):
            if count == 0:
                centerline[e, k] = wp.vec3(0.0)
                tangent[e, k] = X_AXIS
                normal[e, k] = Y_AXIS
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
                # normal, tangent magnitudes = the chord (Catmull-Rom-like speed); two where it folds
                n0 = wp.quat_rotate(gate_orientation[e, i], X_AXIS)
                n1 = wp.quat_rotate(gate_orientation[e, i1], X_AXIS)
                pos, d1, d2 = _segment(p0, n0, p1, n1, gate_width[e], t)
                speed = wp.length(d1)
                tan = X_AXIS
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
                    left = Y_AXIS
                centerline[e, k] = pos
                tangent[e, k] = tan
                normal[e, k] = left
                curvature[e, k] = kappa
                half_width[e, k] = 0.5 * gate_width[e]


@wp.kernel
def _course_line_arc_length(
    envs_per_thread: int,
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
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        count = line_count(num_gates, valid, capacity, e) * samples_per_gate
        num_points[e] = count
        s = float(0.0)
        for k in range(centerline.shape[1]):
            if k > 0 and k < count:
                s = s + wp.length(centerline[e, k] - centerline[e, k - 1])
            arc_length[e, k] = s
        if count > 0:
            s = s + wp.length(centerline[e, 0] - centerline[e, count - 1])
        loop_length[e] = s


class CenterlineFromGates(Component):
    """A smooth closed course line through the gate centres, refreshed every generation.

    Segment ``i`` (gate ``i`` to gate ``i + 1``) is the cubic Hermite curve that leaves gate
    ``i`` along its normal and enters gate ``i + 1`` along its normal, with tangent
    magnitudes equal to the chord ``|p_{i+1} - p_i|`` (a Catmull-Rom-like parametrisation;
    the line crosses every gate square to its opening). Where that cubic would fold (the chord
    points against a gate's normal, ``FOLD_CHORD_COS``: a hairpin to a gate further on that faces
    back), the segment is two
    cubics, each with tangent magnitudes equal to its own chord, through a turning point: beyond
    both gates along ``u = normalize(n_i - n_{i+1})`` by the turn's radius (half the chord's part
    across ``u``, at least half an opening), at the chord's midpoint across ``u``, crossed along
    that part; the first half of the samples on the first cubic. Each segment is sampled at
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
        result / utility: the :class:`~trackgen_env.core.types.CourseLine` (``course.course_line``),
            arrays ``[E, L]`` / ``[E]`` with ``L = max_gates * samples_per_gate``.

    Raises:
        TypeError: ``samples_per_gate`` is not an int (a bool is refused).
        ValueError: ``samples_per_gate < 2``.
    """

    requires = GATE_FIELDS

    def __init__(self, samples_per_gate: int = 8, *, name: str = "centerline", after=()):
        self.samples_per_gate = check_int("samples_per_gate", samples_per_gate, lo=2)
        super().__init__(name, after=after)
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
        lanes = ctx.lanes(line.centerline.shape[1])
        ctx.launch_envs(
            _course_line_points,
            [m, ctx.result.valid, src.gate_position, src.gate_orientation, src.gate_width, src.num_gates,
             self.samples_per_gate, lanes, line.centerline, line.tangent, line.normal, line.curvature, line.half_width],
            lanes,
        )
        ctx.launch_envs(
            _course_line_arc_length,
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
