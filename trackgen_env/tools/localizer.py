"""``Localizer``: each env's pose in the frame of its course line (s, lateral offset, heading error)."""

from __future__ import annotations

import warp as wp

from ..types import TrackFrame
from . import _geometry as geo
from .component import Component, ComponentContext, InputSpec

__all__ = ["Localizer"]

DEFAULT_WARM_WINDOW = 8


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
    ``lateral_offset`` = offset along the interpolated left normal (left > 0);
    ``curvature`` = linear interpolation of the points' curvature; ``heading_error`` =
    yaw of the body's +x axis minus yaw of the interpolated tangent, wrapped to
    ``[-pi, pi)`` (0 when ``orientation`` is unbound). An invalid env (``valid == 0`` or
    fewer than 3 points) reads ``s = lateral_offset = heading_error = curvature = 0``,
    ``segment = 0``.

    ``on_generate(ctx, mask)`` copies the masked envs' per-point tangent, arc length and
    curvature into one ``[E, P]`` record array (one or two cache lines per step instead of
    one per source array); ``step`` reads those records, so after writing a source's
    arrays in place, call ``on_generate`` for the envs changed (a course does, in its
    regeneration body). Memory: ``20 E P`` bytes.

    Args:
        warm_window: half width of the warm-started search in segments, an int >= 1
            (None: 8).
        source: name of the component whose course line is read (None: the generator's).
        name, after: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result: :class:`~trackgen_env.types.TrackFrame`, every array ``[E]``.

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
        self.warm_window = geo.check_window(warm_window, "warm_window", DEFAULT_WARM_WINDOW)
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
        # per point: tangent, arc length, curvature in one record (refreshed by on_generate)
        points = ctx.source(self).centerline.shape[1]
        self._points = wp.zeros((num_envs, points), dtype=geo.frame_record, device=device)
        # stands for an unbound orientation (the kernel does not read it)
        self._no_orientation = wp.zeros(1, dtype=wp.quat, device=device)

    def on_bind(self, arrays: dict) -> None:
        self.bound = geo.bind_inputs(self, arrays)

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        m, src = ctx.mask(mask), ctx.source(self)
        lanes = geo.lanes(ctx.device, self._points.shape[1])
        geo.launch(geo._pack_frame, (ctx.num_envs, lanes), ctx,
                   [m, src.tangent, src.arc_length, src.curvature, lanes, self._points])
        # the masked envs' lines changed: their warm segment means nothing now
        geo.launch(geo._unset_warm, ctx.num_envs, ctx, [m, self._warm])

    def reset(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        geo.launch(geo._unset_warm, ctx.num_envs, ctx, [ctx.mask(mask), self._warm])

    def step(self, ctx: ComponentContext) -> None:
        geo.require_bound(self)
        src, fr = ctx.source(self), self._frame
        orientation = self.bound.get("orientation")
        geo.launch(
            geo._localize,
            ctx.num_envs,
            ctx,
            [
                self.bound["position"], orientation if orientation is not None else self._no_orientation,
                0 if orientation is None else 1,
                ctx.result.valid, src.centerline, src.normal, src.half_width, self._points, src.num_points,
                src.loop_length, self.warm_window, self._warm,
                fr.s, fr.lateral_offset, fr.heading_error, fr.curvature, fr.segment,
            ],
        )

    @property
    def result(self) -> TrackFrame | None:
        return self._frame

    def __repr__(self) -> str:
        return f"Localizer(warm_window={self.warm_window}, source={self.source!r}, name={self.name!r})"
