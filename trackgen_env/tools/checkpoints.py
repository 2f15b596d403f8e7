"""``Checkpoints``: evenly spaced lines across a track's band, refreshed every generation.

Checkpoint ``k`` of env ``e`` sits at arc length ``s_k = k * loop_length / n`` on the
centreline, with ``n = max(3, floor(loop_length / spacing))`` clipped to the capacity
``C``; checkpoint 0 (``s = 0``) is the start/finish line. ``Progress`` counts passes
through them in order; :class:`CheckpointSampler` (``course.checkpoint_sampler``) draws
start poses at them (a start-anywhere curriculum).
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from ..core.checks import check_env_array, check_float, check_int
from ..core.polyline import BIG, X_AXIS, lerp_unit, line_count, next_point, yaw_quat
from ..core.seeding import Stream, random_key, uniform
from ..core.types import CheckpointSet
from .component import Component, ComponentContext

__all__ = ["Checkpoints", "CheckpointSampler", "allocate_checkpoints", "pad_checkpoint"]

wp.set_module_options({"enable_backward": False})

# half height of a track checkpoint: the line across the band is unbounded in height
TRACK_HALF_HEIGHT = BIG


# -- what every checkpoint component writes -------------------------------------------------
def allocate_checkpoints(num_envs: int, capacity: int, device, half_height: float = 0.0) -> CheckpointSet:
    """A :class:`~trackgen_env.core.types.CheckpointSet` of ``capacity`` checkpoints per env,
    zeroed but for ``half_height``."""
    shape = (num_envs, capacity)
    return CheckpointSet(
        position=wp.zeros(shape, dtype=wp.vec3, device=device),
        direction=wp.zeros(shape, dtype=wp.vec3, device=device),
        half_width=wp.zeros(shape, dtype=wp.float32, device=device),
        half_height=wp.full(shape, half_height, dtype=wp.float32, device=device),
        arc_length=wp.zeros(shape, dtype=wp.float32, device=device),
        num_checkpoints=wp.zeros(num_envs, dtype=wp.int32, device=device),
        loop_length=wp.zeros(num_envs, dtype=wp.float32, device=device),
    )


@wp.func
def pad_checkpoint(
    e: int,
    k: int,
    half_height: float,
    # outputs
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=float),
    cp_half_height: wp.array2d(dtype=float),
    cp_arc_length: wp.array2d(dtype=float),
):
    """Write slot ``k >= num_checkpoints[e]`` of a checkpoint set: padding, never read
    (consumers stop at ``num_checkpoints``), but defined."""
    cp_position[e, k] = wp.vec3(0.0)
    cp_direction[e, k] = X_AXIS
    cp_half_width[e, k] = 0.0
    cp_half_height[e, k] = half_height
    cp_arc_length[e, k] = 0.0


# -- kernels --------------------------------------------------------------------------------
@wp.kernel
def _place_checkpoints(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    tangent: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    spacing: float,
    half_height: float,
    lanes: int,
    # outputs
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=float),
    cp_half_height: wp.array2d(dtype=float),
    cp_arc_length: wp.array2d(dtype=float),
    num_checkpoints: wp.array(dtype=wp.int32),
    cp_loop_length: wp.array(dtype=float),
    clipped: wp.array(dtype=wp.int32),
    draws: wp.array(dtype=wp.int32),
):
    thread, lane = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        capacity = cp_position.shape[1]
        n_pts = line_count(num_points, valid, line.shape[1], e)
        length = loop_length[e]
        wanted = int(0)
        if n_pts >= 3 and length > 0.0:
            # compared in float first: a tiny spacing must not overflow the int conversion
            wanted = wp.max(3, int(wp.min(wp.floor(length / spacing), float(capacity + 1))))
        else:
            length = 0.0
        n = wp.min(wanted, capacity)
        if lane == 0:
            num_checkpoints[e] = n
            cp_loop_length[e] = length
            clipped[e] = wp.where(wanted > capacity, 1, 0)
            draws[e] = 0
        for k in range(lane, capacity, lanes):
            if k >= n:
                pad_checkpoint(e, k, half_height, cp_position, cp_direction, cp_half_width, cp_half_height,
                               cp_arc_length)
            else:
                s = float(k) * length / float(n)
                # last point j with arc_length[e, j] <= s (arc lengths increase from 0)
                lo = int(0)
                hi = n_pts - 1
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    if arc_length[e, mid] <= s:
                        lo = mid
                    else:
                        hi = mid - 1
                j = lo
                j1 = next_point(j, n_pts)
                s0 = arc_length[e, j]
                s1 = length
                if j + 1 < n_pts:
                    s1 = arc_length[e, j + 1]
                t = float(0.0)
                if s1 > s0:
                    t = wp.clamp((s - s0) / (s1 - s0), 0.0, 1.0)
                cp_position[e, k] = line[e, j] * (1.0 - t) + line[e, j1] * t
                cp_direction[e, k] = lerp_unit(tangent[e, j], tangent[e, j1], t)
                cp_half_width[e, k] = half_width[e, j] * (1.0 - t) + half_width[e, j1] * t
                cp_half_height[e, k] = half_height
                cp_arc_length[e, k] = s


@wp.kernel
def _sample_checkpoints(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    num_checkpoints: wp.array(dtype=wp.int32),
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    stream: int,
    write_index: int,
    # in/out: draws made since the env's last generation
    draws: wp.array(dtype=wp.int32),
    # outputs
    out_position: wp.array(dtype=wp.vec3),
    out_orientation: wp.array(dtype=wp.quat),
    out_index: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        n = wp.min(num_checkpoints[e], cp_position.shape[1])
        k = int(0)
        if n > 0:
            u = uniform(random_key(seeds[e], counters[e], stream), draws[e])
            k = wp.min(int(u * float(n)), n - 1)
        draws[e] = draws[e] + 1
        out_position[e] = cp_position[e, k]
        out_orientation[e] = yaw_quat(cp_direction[e, k])
        if write_index != 0:
            out_index[e] = k


# -- the component -------------------------------------------------------------------------
class Checkpoints(Component):
    """Checkpoints along the centreline of the source, placed at every generation.

    Per-generation (the base ``step``): ``on_generate(ctx, mask)`` refreshes the masked
    envs' rows of ``result`` from the source (the generator's ``TrackResult``, or a
    ``CourseLine`` named by ``source=``); unmasked rows stay bit-identical.

    Placement: ``n = max(3, floor(loop_length / spacing))`` checkpoints, clipped to the
    capacity ``C``, at ``s_k = k * loop_length / n``; position and half width are linearly
    interpolated between the centreline points around ``s_k``, direction is the
    normalised interpolated tangent, ``half_height = 1e30`` (a line across the band).
    An invalid env (``valid == 0`` or fewer than 3 points) gets ``num_checkpoints = 0``.

    Args:
        spacing: target distance between checkpoints [m], a number > 0.
        max_checkpoints: the capacity ``C`` (an int >= 3), or ``"auto"`` / None:
            ``max(3, ceil(max_loop_length / spacing))`` from ``generator.layout`` when it
            declares ``max_loop_length``, else from the longest valid loop of the batch
            present at ``attach`` (read back once, at attach).
        name, after, source: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result: the :class:`~trackgen_env.core.types.CheckpointSet`, arrays ``[E, C]`` / ``[E]``.
        capacity: ``C``.
        clipped: ``[E] int32``, 1 where the env's loop wanted more than ``C`` checkpoints at
            its last generation (a course warns once at construction when a capacity it
            chose clips a valid env of the first batch; a ``max_checkpoints`` you pass is
            used as given).
        utility: a :class:`CheckpointSampler` (``course.checkpoint_sampler``).

    Raises:
        TypeError: ``spacing`` is not a number, ``max_checkpoints`` not an int / "auto" / None.
        ValueError: ``spacing <= 0`` (or not finite), ``max_checkpoints < 3``.
    """

    requires = ("centerline", "tangent", "arc_length", "half_width", "num_points", "loop_length")

    def __init__(self, spacing: float, max_checkpoints: int | str | None = "auto", *, name: str = "checkpoints",
                 after=(), source: str | None = None):
        super().__init__(name, after=after, source=source)
        self.spacing = check_float("spacing", spacing, lo=0.0, lo_open=True)
        if isinstance(max_checkpoints, str) and max_checkpoints == "auto":
            max_checkpoints = None
        self.max_checkpoints = None if max_checkpoints is None else check_int("max_checkpoints", max_checkpoints, lo=3)
        self.capacity: int | None = None
        self.clipped: wp.array | None = None
        self._set: CheckpointSet | None = None
        self._sampler: CheckpointSampler | None = None

    def _auto_capacity(self, ctx: ComponentContext) -> int:
        max_length = getattr(ctx.generator.layout, "max_loop_length", None)
        if max_length is None:
            # no declared bound: the construction batch, read back once (attach may sync)
            lengths = ctx.source(self).loop_length.numpy()
            valid = ctx.result.valid.numpy() != 0
            lengths = lengths[valid & np.isfinite(lengths)]
            max_length = float(lengths.max()) if lengths.size else 0.0
        return max(3, math.ceil(float(max_length) / self.spacing))

    def attach(self, ctx: ComponentContext) -> None:
        num_envs, device = ctx.num_envs, ctx.device
        cap = self.max_checkpoints if self.max_checkpoints is not None else self._auto_capacity(ctx)
        self.capacity = cap
        self._set = allocate_checkpoints(num_envs, cap, device, TRACK_HALF_HEIGHT)
        self.clipped = wp.zeros(num_envs, dtype=wp.int32, device=device)
        self._sampler = CheckpointSampler(self, ctx)

    def on_generate(self, ctx: ComponentContext, mask: wp.array | None) -> None:
        src, cps = ctx.source(self), self._set
        lanes = ctx.lanes(self.capacity)
        ctx.launch_envs(
            _place_checkpoints,
            [
                ctx.mask(mask), ctx.result.valid, src.centerline, src.tangent, src.arc_length, src.half_width,
                src.num_points, src.loop_length, self.spacing, TRACK_HALF_HEIGHT, lanes,
                cps.position, cps.direction, cps.half_width, cps.half_height, cps.arc_length,
                cps.num_checkpoints, cps.loop_length, self.clipped, self._sampler.draws,
            ],
            lanes,
        )

    @property
    def result(self) -> CheckpointSet | None:
        return self._set

    @property
    def utility(self) -> "CheckpointSampler | None":
        return self._sampler

    def __repr__(self) -> str:
        return (f"Checkpoints(spacing={self.spacing}, max_checkpoints={self.max_checkpoints or 'auto'}, "
                f"name={self.name!r})")


class CheckpointSampler:
    """Start poses at random checkpoints: a start-anywhere curriculum (``course.checkpoint_sampler``).

    Each env draws from its own counter-based stream
    ``random_key(seed[e], counter[e], Stream.CHECKPOINT_SAMPLER)`` of the generator's ``seeds``,
    at draw index = number of draws since the env's last generation, so a sequence of
    samples is a pure function of the env's seed, counter and call count. Capturable.

    Attributes:
        draws: ``[E] int32`` draws made since each env's last generation.
    """

    def __init__(self, checkpoints: Checkpoints, ctx: ComponentContext):
        self._checkpoints = checkpoints
        self._ctx = ctx
        self.draws = wp.zeros(ctx.num_envs, dtype=wp.int32, device=ctx.device)

    def sample(self, mask: wp.array | None, out_position: wp.array, out_orientation: wp.array,
               out_index: wp.array | None = None) -> None:
        """Write, for masked envs, the pose at a uniformly drawn checkpoint.

        Args:
            mask: ``[E] int32`` (nonzero = sample) or None (all envs).
            out_position: ``[E] vec3`` [m] the checkpoint's centre.
            out_orientation: ``[E] quat`` yaw along the checkpoint's direction.
            out_index: optional ``[E] int32`` the checkpoint drawn (give it to
                ``Progress.reset_to`` so progress starts there).

        An env without checkpoints (invalid) gets index 0 and that row's padding pose.
        Unmasked envs' outputs are left untouched.

        Raises:
            TypeError: an output that is not a ``wp.array``.
            ValueError: an output of another dtype, shape or device.
        """
        ctx, cps = self._ctx, self._checkpoints.result
        for arr, dtype, label in ((out_position, wp.vec3, "out_position"),
                                  (out_orientation, wp.quat, "out_orientation"),
                                  (out_index, wp.int32, "out_index")):
            if arr is not None:
                check_env_array(label, arr, ctx.num_envs, ctx.device, dtype)
        seeds = ctx.generator.seeds
        ctx.launch_envs(
            _sample_checkpoints,
            [
                ctx.mask(mask), seeds.seeds, seeds.counters, cps.num_checkpoints, cps.position, cps.direction,
                int(Stream.CHECKPOINT_SAMPLER), 0 if out_index is None else 1, self.draws, out_position,
             out_orientation,
                out_index if out_index is not None else self.draws,
            ],
        )
