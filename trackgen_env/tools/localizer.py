"""``Localizer``: each env's pose in the frame of its course line (s, lateral offset, heading error)."""

from __future__ import annotations

import warp as wp

from ..core.checks import check_int
from ..core.env_loop import ahead, prefetch
from ..core.polyline import X_AXIS, lerp_unit, line_count, locate, next_point, wrap_angle
from ..core.types import TrackFrame
from .component import Component, ComponentContext
from .contract import InputSpec
from .warm_start import unset_warm

__all__ = ["Localizer"]

wp.set_module_options({"enable_backward": False})

DEFAULT_WARM_WINDOW = 8

@wp.func
def no_frame(
    e: int,
    s: wp.array(dtype=float),
    lateral_offset: wp.array(dtype=float),
    heading_error: wp.array(dtype=float),
    curvature_out: wp.array(dtype=float),
    segment: wp.array(dtype=wp.int32),
):
    """Write env ``e``'s frame when it has no course: all zero."""
    s[e] = 0.0
    lateral_offset[e] = 0.0
    heading_error[e] = 0.0
    curvature_out[e] = 0.0
    segment[e] = 0


@wp.func
def write_frame(
    e: int,
    n: int,
    j: int,
    t: float,
    lateral: float,
    tangent: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    loop_length: wp.array(dtype=float),
    orientation: wp.array(dtype=wp.quat),
    use_orientation: int,
    # outputs
    s: wp.array(dtype=float),
    lateral_offset: wp.array(dtype=float),
    heading_error: wp.array(dtype=float),
    curvature_out: wp.array(dtype=float),
    segment: wp.array(dtype=wp.int32),
):
    """Write env ``e``'s frame from its projection ``(j, t, lateral)`` on segment ``j`` of its
    ``n``-point line (:func:`~trackgen_env.core.polyline.locate`)."""
    segment[e] = j
    j1 = next_point(j, n)
    length = loop_length[e]
    s0 = arc_length[e, j]
    s1 = length
    if j + 1 < n:
        s1 = arc_length[e, j1]
    sp = s0 + (s1 - s0) * t
    if sp >= length:
        sp = sp - length
    s[e] = wp.max(sp, 0.0)
    lateral_offset[e] = lateral
    curvature_out[e] = curvature[e, j] * (1.0 - t) + curvature[e, j1] * t
    err = float(0.0)
    if use_orientation != 0:
        f = wp.quat_rotate(orientation[e], X_AXIS)
        d = lerp_unit(tangent[e, j], tangent[e, j1], t)
        err = wrap_angle(wp.atan2(f[1], f[0]) - wp.atan2(d[1], d[0]))
    heading_error[e] = err


@wp.func
def prefetch_segment_rows(
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    with_frame: int,
    tangent: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    e: int,
    j: int,
):
    """Ask for the rows that env ``e``'s step reads around its warm segment ``j`` (``env_loop``):
    the descents of the position (and of a box's corners) stay within about 2 segments of it,
    points ``j - 2 .. j + 3``; with ``with_frame``, the frame's rows at ``j``. Near the loop's
    seam the indices are clamped into the row, not wrapped: a hint only costs a miss."""
    # j - 2, j, j + 3: the 64-byte lines of the six 12-byte points (72 bytes), but for the tail
    # of point j + 3 where it crosses into another line (2 of 16 alignments)
    prefetch(line, e, j - 2)
    prefetch(line, e, j)
    prefetch(line, e, j + 3)
    prefetch(normal, e, j - 2)
    prefetch(normal, e, j)
    prefetch(normal, e, j + 3)
    prefetch(half_width, e, j - 2)
    prefetch(half_width, e, j + 3)
    if with_frame != 0:
        prefetch(tangent, e, j)
        prefetch(tangent, e, j + 1)
        prefetch(arc_length, e, j)
        prefetch(curvature, e, j)


@wp.kernel
def _localize(
    envs_per_thread: int,
    step_mask: wp.array(dtype=wp.int32),
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    use_orientation: int,
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    normal: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    tangent: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    window: int,
    # state: warm-start segment (-1: unset)
    warm: wp.array(dtype=wp.int32),
    # outputs
    s: wp.array(dtype=float),
    lateral_offset: wp.array(dtype=float),
    heading_error: wp.array(dtype=float),
    curvature_out: wp.array(dtype=float),
    segment: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    end = wp.min((thread + 1) * envs_per_thread, position.shape[0])
    for e in range(thread * envs_per_thread, end):
        f = ahead(envs_per_thread, e, end)
        if f >= 0 and step_mask[f] != 0 and warm[f] >= 0:
            prefetch_segment_rows(line, normal, half_width, 1, tangent, arc_length, curvature, f, warm[f])
        if step_mask[e] == 0:
            continue  # not one of this step's envs (Course.step(mask=))
        n = line_count(num_points, valid, line.shape[1], e)
        if n == 0:
            no_frame(e, s, lateral_offset, heading_error, curvature_out, segment)
            warm[e] = -1
            continue
        j, t, lateral, hw = locate(line, normal, half_width, e, n, warm[e], 0, window, 1, position[e])
        warm[e] = j
        write_frame(e, n, j, t, lateral, tangent, arc_length, curvature, loop_length, orientation, use_orientation,
                    s, lateral_offset, heading_error, curvature_out, segment)


class Localizer(Component):
    """Projects each env's position on its closed course line, every step.

    Reads the generator's ``TrackResult`` (``source=None``) or the result of the component
    named by ``source`` (e.g. ``"centerline"``: a ``CourseLine``, same field names), and
    the bound ``position`` ``[E] vec3`` [m] and, optionally, ``orientation`` ``[E] quat``.

    Algorithm (closest point on a segment: Ericson, *Real-Time Collision Detection*, 2005,
    section 5.1.2): the closest segment is found by a descent from the env's previous
    segment (to the closer neighbour while there is one, at most ``warm_window`` segments
    away: where the distance is unimodal over ``+- warm_window`` segments, the closest of
    them), with a global O(P) search when that index is unset (after a reset or a
    generation), when the descent reaches ``+- warm_window`` (the closest segment may lie
    beyond), or when the position is off the band there (a teleport). On segment ``j``
    with projection parameter ``t`` in [0, 1]:
    ``s = arc_length[j] + t * (segment arc length)`` wrapped to ``[0, loop_length)``;
    ``lateral_offset`` = distance to the closest point across the line, height excluded
    (:func:`~trackgen_env.core.polyline.project`), signed by the side of the interpolated left
    normal (left > 0), so ``|lateral_offset| > half width`` is
    exactly where ``BandCollision("segments")`` reports a point body off the band;
    ``curvature`` = linear interpolation of the points' curvature; ``heading_error`` =
    yaw of the body's +x axis minus yaw of the interpolated tangent, wrapped to
    ``[-pi, pi)`` (0 when ``orientation`` is unbound). An invalid env (``valid == 0`` or
    fewer than 3 points) reads ``s = lateral_offset = heading_error = curvature = 0``,
    ``segment = 0``.

    ``step`` reads the source's rows at the env's segment (no copy of them: a packed
    ``[E, P]`` copy of tangent, arc length and curvature cost ``20 E P`` bytes, 8 KiB per
    env at default capacities, for ~2 % of a step, ``benchmarks/NOTES.md``);
    ``on_generate(ctx, mask)`` unsets the masked envs' warm segment, so after writing a
    source's arrays in place, call it for the envs changed (a course does, in its
    regeneration body). Memory: ``24 E`` bytes. In a course, a ``BandCollision("segments")``
    just before it on the same line, window and position runs both steps in one kernel
    (:meth:`BandCollision.step_with`).

    Args:
        warm_window: half width of the warm-started search in segments, an int >= 1
            (None: 8).
        source: name of the component whose course line is read (None: the generator's).
        name, after: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result: :class:`~trackgen_env.core.types.TrackFrame`, every array ``[E]``.

    Raises:
        TypeError: ``warm_window`` is not an int; ``source`` is not a str or None.
        ValueError: ``warm_window < 1``.
    """

    inputs = (
        InputSpec("position", wp.vec3),
        InputSpec("orientation", wp.quat, required=False),
    )
    requires = ("centerline", "tangent", "normal", "arc_length", "curvature", "half_width", "num_points", "loop_length")

    def __init__(self, warm_window: int | None = DEFAULT_WARM_WINDOW, source: str | None = None, *,
                 name: str = "localizer", after=()):
        if source is not None and not isinstance(source, str):
            raise TypeError(f"source must be a component name (str) or None, got {type(source).__name__} {source!r}")
        self.warm_window = DEFAULT_WARM_WINDOW if warm_window is None else check_int("warm_window", warm_window, lo=1)
        super().__init__(name, after=after, source=source)
        self._frame: TrackFrame | None = None

    def attach(self, ctx: ComponentContext) -> None:
        num_envs, device = ctx.num_envs, ctx.device
        self._frame = TrackFrame(
            s=wp.zeros(num_envs, dtype=wp.float32, device=device),
            lateral_offset=wp.zeros(num_envs, dtype=wp.float32, device=device),
            heading_error=wp.zeros(num_envs, dtype=wp.float32, device=device),
            curvature=wp.zeros(num_envs, dtype=wp.float32, device=device),
            segment=wp.zeros(num_envs, dtype=wp.int32, device=device),
        )
        self._warm = wp.full(num_envs, -1, dtype=wp.int32, device=device)  # -1: search globally
        # stands for an unbound orientation (the kernel does not read it)
        self._no_orientation = wp.zeros(1, dtype=wp.quat, device=device)

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        # the masked envs' lines changed: their warm segment means nothing now
        unset_warm(ctx, mask, self._warm)

    def reset(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        unset_warm(ctx, mask, self._warm)

    def step(self, ctx: ComponentContext) -> None:
        src, (orientation, use_orientation, warm, *outputs) = ctx.source(self), self.frame_arguments()
        ctx.launch_step(
            _localize,
            [
                self.bound["position"], orientation, use_orientation,
                ctx.result.valid, src.centerline, src.normal, src.half_width, src.tangent, src.arc_length,
                src.curvature, src.num_points, src.loop_length, self.warm_window, warm, *outputs,
            ],
        )

    def frame_arguments(self) -> list:
        """``[orientation, use_orientation, warm segment, s, lateral_offset,
        heading_error, curvature, segment]``: what a kernel that writes this localizer's
        frame with :func:`write_frame` takes besides the line (``BandCollision`` fuses the
        two searches of one position in one kernel, :meth:`BandCollision.step_with`)."""
        orientation, fr = self.bound.get("orientation"), self._frame
        return [
            orientation if orientation is not None else self._no_orientation, 0 if orientation is None else 1,
            self._warm, fr.s, fr.lateral_offset, fr.heading_error, fr.curvature, fr.segment,
        ]

    @property
    def result(self) -> TrackFrame | None:
        return self._frame

    def __repr__(self) -> str:
        return f"Localizer(warm_window={self.warm_window}, source={self.source!r}, name={self.name!r})"
