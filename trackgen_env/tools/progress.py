"""``Progress``: checkpoint passes in order, laps, lap fraction and wrong way, per env and step."""

from __future__ import annotations

import warp as wp

from ..core.checks import check_env_array
from ..core.env_loop import ahead, prefetch
from ..core.polyline import Y_AXIS, Z_AXIS, next_point, prev_point, wrap_index
from ..core.types import ProgressEvents
from .component import Component, ComponentContext
from .contract import InputSpec

__all__ = ["Progress"]

wp.set_module_options({"enable_backward": False})

@wp.func
def _crosses_opening(
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=float),
    cp_half_height: wp.array2d(dtype=float),
    e: int,
    k: int,
    q: wp.vec3,
    p: wp.vec3,
    forward: int,
) -> int:
    """1 when the step ``q -> p`` crosses env ``e``'s opening ``k`` at ``c`` (plane normal ``d``) in the
    given sense (``forward`` 1: from behind to in front; 0: from in front to behind)
    inside ``|lateral| <= half_width`` and ``|vertical| <= half_height``, where
    lateral = normalize(z x d) and vertical = d x lateral."""
    c = cp_position[e, k]
    d = cp_direction[e, k]
    dq = wp.dot(q - c, d)
    dp = wp.dot(p - c, d)
    if forward != 0:
        if not (dq < 0.0 and dp >= 0.0):
            return 0
    else:
        if not (dq >= 0.0 and dp < 0.0):
            return 0
    x = q + (p - q) * (dq / (dq - dp)) - c
    lat = wp.cross(Z_AXIS, d)
    l = wp.length(lat)
    if l > 1.0e-9:
        lat = lat / l
    else:
        lat = Y_AXIS
    vert = wp.cross(d, lat)
    if wp.abs(wp.dot(x, lat)) <= cp_half_width[e, k] and wp.abs(wp.dot(x, vert)) <= cp_half_height[e, k]:
        return 1
    return 0


@wp.kernel
def _progress_reset(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    num_checkpoints: wp.array(dtype=wp.int32),
    capacity: int,
    start: wp.array(dtype=wp.int32),
    use_start: int,
    # state
    start_checkpoint: wp.array(dtype=wp.int32),
    net: wp.array(dtype=wp.int32),
    has_prev: wp.array(dtype=wp.int32),
    # outputs
    passed: wp.array(dtype=wp.int32),
    lap_completed: wp.array(dtype=wp.int32),
    wrong_way: wp.array(dtype=wp.int32),
    next_checkpoint: wp.array(dtype=wp.int32),
    checkpoints_passed: wp.array(dtype=wp.int32),
    laps: wp.array(dtype=wp.int32),
    lap_fraction: wp.array(dtype=float),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        n = wp.min(num_checkpoints[e], capacity)
        s0 = int(0)
        nxt = int(0)
        if n > 0:
            if use_start != 0:
                s0 = wrap_index(start[e], n)
            nxt = wrap_index(s0 + 1, n)
        start_checkpoint[e] = s0
        net[e] = 0
        has_prev[e] = 0
        passed[e] = 0
        lap_completed[e] = 0
        wrong_way[e] = 0
        next_checkpoint[e] = nxt
        checkpoints_passed[e] = 0
        laps[e] = 0
        lap_fraction[e] = 0.0


@wp.func
def _prefetch_opening(
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=float),
    cp_half_height: wp.array2d(dtype=float),
    e: int,
    k: int,
):
    """Ask for the rows of env ``e``'s opening ``k`` that :func:`_crosses_opening` reads."""
    prefetch(cp_position, e, k)
    prefetch(cp_direction, e, k)
    prefetch(cp_half_width, e, k)
    prefetch(cp_half_height, e, k)


@wp.kernel
def _progress_step(
    envs_per_thread: int,
    step_mask: wp.array(dtype=wp.int32),
    position: wp.array(dtype=wp.vec3),
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=float),
    cp_half_height: wp.array2d(dtype=float),
    num_checkpoints: wp.array(dtype=wp.int32),
    # state
    start_checkpoint: wp.array(dtype=wp.int32),
    net: wp.array(dtype=wp.int32),
    has_prev: wp.array(dtype=wp.int32),
    prev_position: wp.array(dtype=wp.vec3),
    # outputs (counters are read and written)
    passed: wp.array(dtype=wp.int32),
    lap_completed: wp.array(dtype=wp.int32),
    wrong_way: wp.array(dtype=wp.int32),
    next_checkpoint: wp.array(dtype=wp.int32),
    checkpoints_passed: wp.array(dtype=wp.int32),
    laps: wp.array(dtype=wp.int32),
    lap_fraction: wp.array(dtype=float),
):
    thread = wp.tid()
    end = wp.min((thread + 1) * envs_per_thread, position.shape[0])
    for e in range(thread * envs_per_thread, end):
        f = ahead(envs_per_thread, e, end)
        if f >= 0 and step_mask[f] != 0:
            # ask for the openings env f will test first (env_loop): its next and previous ones
            n_f = wp.min(num_checkpoints[f], cp_position.shape[1])
            if n_f >= 1:
                k_f = wrap_index(start_checkpoint[f] + net[f] + 1, n_f)
                _prefetch_opening(cp_position, cp_direction, cp_half_width, cp_half_height, f, k_f)
                _prefetch_opening(cp_position, cp_direction, cp_half_width, cp_half_height, f, prev_point(k_f, n_f))
        if step_mask[e] == 0:
            continue  # not one of this step's envs (Course.step(mask=))
        p = position[e]
        passed[e] = 0
        lap_completed[e] = 0
        if has_prev[e] == 0:
            prev_position[e] = p
            has_prev[e] = 1
            continue
        q = prev_position[e]
        prev_position[e] = p
        n = wp.min(num_checkpoints[e], cp_position.shape[1])
        if n < 1:
            continue
        s0 = start_checkpoint[e]
        k_net = net[e]
        best = checkpoints_passed[e]
        n_laps = laps[e]
        k_next = wrap_index(s0 + k_net + 1, n)
        # a fast body (or dense checkpoints) crosses several openings in one step: follow the
        # chain in order, each crossing moving the next one up (at most n per step: one lap)
        n_passed = int(0)
        n_forward = int(0)
        while n_forward < n:
            if _crosses_opening(cp_position, cp_direction, cp_half_width, cp_half_height, e, k_next, q, p, 1) == 0:
                break
            n_forward = n_forward + 1
            k_net = k_net + 1
            k_next = next_point(k_next, n)
            # only new ground counts: re-passing a checkpoint undone by a wrong-way crossing
            # restores the order but earns no pass (no farming by driving back and forth)
            if k_net > best:
                best = k_net
                n_passed = n_passed + 1
                if best % n == 0:
                    n_laps = n_laps + 1
                    lap_completed[e] = 1
        if n_forward > 0:
            wrong_way[e] = 0
        else:
            # backwards through the previous checkpoints, the same chain the other way
            n_back = int(0)
            while n_back < n:
                k_prev = prev_point(k_next, n)
                if _crosses_opening(cp_position, cp_direction, cp_half_width, cp_half_height, e, k_prev, q, p, 0) == 0:
                    break
                n_back = n_back + 1
                k_net = k_net - 1
                k_next = k_prev
            if n_back > 0:
                wrong_way[e] = 1
        passed[e] = n_passed
        net[e] = k_net
        checkpoints_passed[e] = best
        laps[e] = n_laps
        next_checkpoint[e] = k_next  # (s0 + k_net + 1) mod n
        in_lap = wp.clamp(k_net - n_laps * n, 0, n - 1)
        lap_fraction[e] = float(in_lap) / float(n)


class Progress(Component):
    """Counts each env's passes through the ``checkpoints`` component's openings, in order.

    Reads the :class:`~trackgen_env.core.types.CheckpointSet` of the component named
    ``"checkpoints"`` (a track's lines across the band, or a gate course's openings with
    a finite half height) and the bound ``position`` ``[E] vec3`` [m].

    Algorithm, per env and step (the step is the segment ``prev -> position``):

    * checkpoint ``k`` is crossed forward when the segment goes from behind its plane
      (normal ``direction[k]`` through ``position[k]``) to in front of it, and the
      crossing point lies in the opening: ``|lateral| <= half_width`` and
      ``|vertical| <= half_height`` with lateral axis ``normalize(z x direction)`` and
      vertical axis ``direction x lateral``;
    * checkpoints count in order: crossing the next one forward advances
      ``next_checkpoint`` and clears ``wrong_way``, and the step is then tested against
      the new next one, and so on, so a step that crosses several openings (a fast body,
      dense checkpoints) counts every one of them, in order, at most ``n`` (one lap) per
      step; a checkpoint out of order (not the next) never counts. With no forward
      crossing, crossing the previous one backwards sets ``wrong_way`` and steps
      ``next_checkpoint`` back (again along the chain: several per step), until it is
      passed forward again;
    * ``passed`` counts new ground only: the checkpoints passed this step beyond the
      farthest reached since the reset (0, 1, or more for a fast body). Re-passing a
      checkpoint undone by a backward crossing earns nothing, so ``checkpoints_passed``
      (the sum of ``passed`` since the reset) cannot be farmed by driving back and forth;
    * a lap is completed when the pass count reaches a multiple of ``n`` (crossing the
      start checkpoint after all the others): at most once per step, since a step counts
      at most ``n`` checkpoints, so ``lap_completed`` is a flag; ``lap_fraction`` is the
      fraction of the current lap's checkpoints passed, in [0, 1).

    The crossing test is the segment-plane intersection of Ericson, *Real-Time Collision
    Detection* (2005), section 5.3.1, followed by a bounds check in the plane.

    ``step`` reads the ``checkpoints`` component's arrays at the openings it tests (no copy
    of them: a packed 32-byte record per opening cost 2.2 KiB per env at default capacities
    for ~1 % of a step, ``benchmarks/NOTES.md``). Memory: per env only (the events, the
    counters and the previous position, ~52 bytes).

    ``reset(ctx, mask)`` starts the masked envs on checkpoint 0 (``next_checkpoint = 1``)
    with zero counters; ``reset_to(ctx, mask, start)`` starts them on checkpoint
    ``start[e]`` instead (with ``CheckpointSampler``). The first step after a reset only
    records the previous position. An env without checkpoints (invalid) passes nothing.

    Args:
        name, after: see :class:`~trackgen_env.tools.Component` (``after`` must keep
            ``"checkpoints"``).

    Attributes:
        result: :class:`~trackgen_env.core.types.ProgressEvents`, every array ``[E]``.
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

    def _checkpoints(self, ctx: ComponentContext):
        return ctx.components["checkpoints"].result

    def _reset(self, ctx: ComponentContext, mask, start) -> None:
        cps, ev = self._checkpoints(ctx), self._events
        ctx.launch_envs(
            _progress_reset,
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
            TypeError: ``start`` is not a ``wp.array``.
            ValueError: ``start`` is not ``[E] int32`` on the course's device.
        """
        self._reset(ctx, mask, check_env_array("start", start, ctx.num_envs, ctx.device))

    def step(self, ctx: ComponentContext) -> None:
        cps, ev = self._checkpoints(ctx), self._events
        ctx.launch_step(
            _progress_step,
            [
                self.bound["position"], cps.position, cps.direction, cps.half_width, cps.half_height,
                cps.num_checkpoints, self._start, self._net, self._has_prev, self._prev,
                ev.passed, ev.lap_completed, ev.wrong_way, ev.next_checkpoint, ev.checkpoints_passed, ev.laps,
                ev.lap_fraction,
            ],
        )

    @property
    def result(self) -> ProgressEvents | None:
        return self._events
