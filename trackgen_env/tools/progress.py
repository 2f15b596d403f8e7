"""``Progress``: checkpoint passes in order, laps, lap fraction and wrong way, per env and step."""

from __future__ import annotations

import warp as wp

from ..types import ProgressEvents
from . import _geometry as geo
from .component import Component, ComponentContext, InputSpec

__all__ = ["Progress"]


class Progress(Component):
    """Counts each env's passes through the ``checkpoints`` component's openings, in order.

    Reads the :class:`~trackgen_env.types.CheckpointSet` of the component named
    ``"checkpoints"`` (a track's lines across the band, or a gate course's openings with
    a finite half height) and the bound ``position`` ``[E] vec3`` [m].

    Algorithm, per env and step (the step is the segment ``prev -> position``):

    * checkpoint ``k`` is crossed forward when the segment goes from behind its plane
      (normal ``direction[k]`` through ``position[k]``) to in front of it, and the
      crossing point lies in the opening: ``|lateral| <= half_width`` and
      ``|vertical| <= half_height`` with lateral axis ``normalize(z x direction)`` and
      vertical axis ``direction x lateral``;
    * only the next checkpoint counts: crossing it forward advances ``next_checkpoint``
      and clears ``wrong_way``; crossing the previous one backwards sets ``wrong_way``
      and steps ``next_checkpoint`` back, until it is passed forward again;
    * ``passed`` is 1 only for new ground: re-passing a checkpoint undone by a backward
      crossing earns nothing, so ``checkpoints_passed`` (the count of ``passed`` events
      since the reset) cannot be farmed by driving back and forth;
    * a lap is completed when the pass count reaches a multiple of ``n`` (crossing the
      start checkpoint after all the others); ``lap_fraction`` is the fraction of the
      current lap's checkpoints passed, in [0, 1).

    The crossing test is the segment-plane intersection of Ericson, *Real-Time Collision
    Detection* (2005), section 5.3.1, followed by a bounds check in the plane.

    ``on_generate(ctx, mask)`` packs the masked envs' openings (centre, direction, half
    width, half height: one 32-byte record each, so that a step reads one or two cache
    lines instead of one in each of 4 arrays); ``step`` reads those records, so after
    writing the checkpoints' arrays in place, call ``on_generate`` for the envs changed (a
    course does, in its regeneration body, after the ``checkpoints`` component's).

    ``reset(ctx, mask)`` starts the masked envs on checkpoint 0 (``next_checkpoint = 1``)
    with zero counters; ``reset_to(ctx, mask, start)`` starts them on checkpoint
    ``start[e]`` instead (with ``CheckpointSampler``). The first step after a reset only
    records the previous position. An env without checkpoints (invalid) passes nothing.

    Args:
        name, after: see :class:`~trackgen_env.tools.Component` (``after`` must keep
            ``"checkpoints"``).

    Attributes:
        result: :class:`~trackgen_env.types.ProgressEvents`, every array ``[E]``.
    """

    inputs = (InputSpec("position", wp.vec3),)
    requires = ("checkpoints",)

    def __init__(self, *, name: str = "progress", after=("checkpoints",)):
        super().__init__(name, after=after)
        self._events: ProgressEvents | None = None

    def attach(self, ctx: ComponentContext) -> None:
        num_envs, device = ctx.num_envs, ctx.device

        def zeros(dtype=wp.int32):
            return wp.zeros(num_envs, dtype=dtype, device=device)

        self._events = ProgressEvents(
            passed=zeros(), lap_completed=zeros(), wrong_way=zeros(), next_checkpoint=zeros(),
            checkpoints_passed=zeros(), laps=zeros(), lap_fraction=zeros(wp.float32),
        )
        self._start = zeros()  # checkpoint the episode started on
        self._net = zeros()  # forward minus backward crossings since the reset
        self._has_prev = zeros()  # 0 until the first step after a reset
        self._prev = zeros(wp.vec3)
        # the openings packed one record each (refreshed by on_generate)
        capacity = self._checkpoints(ctx).position.shape[1]
        self._openings = wp.zeros((num_envs, capacity), dtype=geo.opening_record, device=device)

    def on_bind(self, arrays: dict) -> None:
        self.bound = geo.bind_inputs(self, arrays)

    def _checkpoints(self, ctx: ComponentContext):
        return ctx.components["checkpoints"].result

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        cps = self._checkpoints(ctx)
        lanes = geo.lanes(ctx.device, self._openings.shape[1])
        geo.launch(geo._pack_openings, (ctx.num_envs, lanes), ctx,
                   [ctx.mask(mask), cps.position, cps.direction, cps.half_width, cps.half_height, lanes, self._openings])

    def _reset(self, ctx: ComponentContext, mask, start) -> None:
        cps, ev = self._checkpoints(ctx), self._events
        geo.launch(
            geo._progress_reset,
            ctx.num_envs,
            ctx,
            [
                ctx.mask(mask), cps.num_checkpoints, cps.position.shape[1],
                start if start is not None else self._start, 0 if start is None else 1,
                self._start, self._net, self._has_prev,
                ev.passed, ev.lap_completed, ev.wrong_way, ev.next_checkpoint, ev.checkpoints_passed, ev.laps,
                ev.lap_fraction,
            ],
        )

    def reset(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        """Start the masked envs on checkpoint 0 with zero counters."""
        self._reset(ctx, mask, None)

    def reset_to(self, ctx: ComponentContext, mask: wp.array | None, start: wp.array) -> None:
        """Start the masked envs on checkpoint ``start[e]`` (``[E] int32``, taken modulo the
        env's checkpoint count) with zero counters; a lap then ends back at that checkpoint.

        Raises:
            TypeError / ValueError: ``start`` is not an ``[E] int32`` wp.array.
        """
        if not isinstance(start, wp.array) or start.dtype != wp.int32:
            raise TypeError(f"start must be an [E] int32 wp.array, got {start!r}")
        if tuple(start.shape) != (ctx.num_envs,):
            raise ValueError(f"start must have shape ({ctx.num_envs},), got {tuple(start.shape)}")
        self._reset(ctx, mask, start)

    def step(self, ctx: ComponentContext) -> None:
        geo.require_bound(self)
        cps, ev = self._checkpoints(ctx), self._events
        geo.launch(
            geo._progress_step,
            ctx.num_envs,
            ctx,
            [
                self.bound["position"], self._openings, cps.num_checkpoints, self._start, self._net, self._has_prev, self._prev,
                ev.passed, ev.lap_completed, ev.wrong_way, ev.next_checkpoint, ev.checkpoints_passed, ev.laps,
                ev.lap_fraction,
            ],
        )

    @property
    def result(self) -> ProgressEvents | None:
        return self._events
