"""``GateCheckpoints``: a gate course's checkpoints, one at each gate, refreshed every generation.

A gate's local frame: +x is its normal (the direction of travel through it), +y its
lateral axis (left), +z up; its opening spans ``|y| <= gate_width / 2`` and
``|z| <= gate_height / 2`` around its centre.
"""

from __future__ import annotations

import warp as wp

from ..core.polyline import X_AXIS, line_count
from ..core.types import GATE_FIELDS, CheckpointSet
from .checkpoints import CheckpointSampler, allocate_checkpoints, pad_checkpoint
from .component import Component, ComponentContext

__all__ = ["GateCheckpoints"]

wp.set_module_options({"enable_backward": False})


@wp.kernel
def _gate_checkpoints(
    envs_per_thread: int,
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
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        n = line_count(num_gates, valid, wp.min(gate_position.shape[1], cp_position.shape[1]), e)
        if lane == 0:
            num_checkpoints[e] = n
            draws[e] = 0  # the sampler's stream restarts with each generation
            length = float(0.0)
            for i in range(n):
                length = length + wp.length(gate_position[e, (i + 1) % n] - gate_position[e, i])
            cp_loop_length[e] = length
        for k in range(lane, cp_position.shape[1], lanes):
            if k >= n:
                pad_checkpoint(e, k, 0.0, cp_position, cp_direction, cp_half_width, cp_half_height, cp_arc_length)
            else:
                s = float(0.0)
                for i in range(k):
                    s = s + wp.length(gate_position[e, i + 1] - gate_position[e, i])
                cp_position[e, k] = gate_position[e, k]
                cp_direction[e, k] = wp.quat_rotate(gate_orientation[e, k], X_AXIS)
                cp_half_width[e, k] = 0.5 * gate_width[e]
                cp_half_height[e, k] = 0.5 * gate_height[e]
                cp_arc_length[e, k] = s


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
        result: the :class:`~trackgen_env.core.types.CheckpointSet`, arrays ``[E, G]`` / ``[E]``
            (``G = generator.layout.max_gates``).
        capacity: ``G``.
        utility: a :class:`~trackgen_env.tools.CheckpointSampler` (``course.checkpoint_sampler``):
            start poses at random gates, in the middle of the opening, facing through it.
    """

    requires = GATE_FIELDS

    def __init__(self, *, name: str = "checkpoints", after=()):
        super().__init__(name, after=after)
        self._set: CheckpointSet | None = None
        self._sampler: CheckpointSampler | None = None
        self.capacity = 0

    def attach(self, ctx: ComponentContext) -> None:
        E, G, dev = ctx.num_envs, int(ctx.generator.layout.max_gates), ctx.device
        self.capacity = G
        self._set = allocate_checkpoints(E, G, dev)
        self._sampler = CheckpointSampler(self, ctx)

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        src, cs = ctx.source(self), self._set
        lanes = ctx.lanes(self.capacity)
        ctx.launch_envs(
            _gate_checkpoints,
            [ctx.mask(mask), ctx.result.valid, src.gate_position, src.gate_orientation, src.gate_width,
             src.gate_height, src.num_gates, lanes, cs.position, cs.direction, cs.half_width, cs.half_height,
             cs.arc_length, cs.num_checkpoints, cs.loop_length, self._sampler.draws],
            lanes,
        )

    @property
    def result(self) -> CheckpointSet | None:
        return self._set

    @property
    def utility(self) -> CheckpointSampler | None:
        return self._sampler
