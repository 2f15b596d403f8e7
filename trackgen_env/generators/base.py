"""What every generator shares: the regeneration skeleton and its retry loop.

``enqueue`` runs, on the device and without host synchronisation::

    advance(mask) -> draw randomized params -> begin (pending = mask)
    -> while any env is pending (at most 1 + max_retries rounds): _attempt_round()
    -> _commit(mask): copy the masked envs' staged rows into ``result``, generation += 1

A round runs the family's stages for the pending envs, then ``finalize`` accepts each env
whose checks passed, retries it with fresh draws (its attempt number keys its random
stream), or gives up and marks it invalid. The loop is a ``wp.capture_while`` on the
device (a host loop when eager on the CPU); it is unrolled to its fixed bound instead
inside ``exec.unconditional()``, where the driver cannot record conditional nodes, and
eagerly on CUDA (no host wait per round). A round is an identity for envs that are not
pending, so that is only slower.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import warp as wp

from .. import exec as exec_modes
from ..capture import is_capturing
from ..checks import check_mask
from ..pipeline import PipelineSpec, Program
from ..pipeline.params import Params
from ..seeding import SeedState

__all__ = ["Generator", "identity_quats", "LOW_VALID_RATE"]

# Construction warns when fewer envs than this share hold a valid course after the first generation.
LOW_VALID_RATE = 0.9

wp.set_module_options({"enable_backward": False})


@wp.kernel
def _begin(
    mask: wp.array(dtype=wp.int32),
    use_mask: int,
    pending: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    run: wp.array(dtype=wp.int32),
):
    e = wp.tid()
    p = 1
    if use_mask != 0 and mask[e] == 0:
        p = 0
    pending[e] = p
    attempt[e] = 0
    if e == 0:
        run[0] = 1


@wp.kernel
def _finalize(
    max_retries: int,
    ok: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    run: wp.array(dtype=wp.int32),
):
    e = wp.tid()
    if pending[e] == 0:
        return
    if ok[e] != 0:
        pending[e] = 0
        valid[e] = 1
    elif attempt[e] >= max_retries:
        pending[e] = 0
        valid[e] = 0
    else:
        attempt[e] = attempt[e] + 1
        run[0] = 1  # the family's first stage clears it at the start of each round


def identity_quats(shape, device) -> wp.array:
    """A quat array of ``shape`` filled with the identity rotation."""
    return wp.array(np.broadcast_to(np.array([0.0, 0.0, 0.0, 1.0], np.float32), (*shape, 4)).copy(), dtype=wp.quat, device=device)


class Generator(Program):
    """Base of the built-in generators: spec, seeds, params, and the regeneration skeleton.

    Subclasses set ``family`` and ``config_type`` and implement ``_attempt_round()`` (the
    stages of one round, ending in ``self._finalize_round()``; the first stage must clear
    ``self._run[0]``) and ``_commit(mask, use_mask)``.
    """

    family: str = ""
    config_type: type = object
    capturable = True

    def __init__(self, source, *, seeds=None, stream=None, validators=None):
        if isinstance(source, self.config_type):
            spec = source.to_spec()
        elif isinstance(source, PipelineSpec) and source.family == self.family:
            spec = source
        else:
            got = f"a {source.family} PipelineSpec" if isinstance(source, PipelineSpec) else type(source).__name__
            raise TypeError(
                f"{type(self).__name__} takes a {self.config_type.__name__} or a {self.family} PipelineSpec, got {got}"
            )
        cfg = spec.config
        self.spec, self.config = spec, cfg
        self.num_envs = cfg.num_envs
        self.device = wp.get_device(cfg.device)
        self.stream = stream
        self.seeds = seeds if isinstance(seeds, SeedState) else SeedState(cfg.num_envs, self.device, seeds)
        if self.seeds.num_envs != cfg.num_envs or self.seeds.device != self.device:
            raise ValueError(
                f"a SeedState for {cfg.num_envs} envs on {self.device} is needed, got {self.seeds.num_envs} on {self.seeds.device}"
            )
        self.params = Params(spec, self.device, validators=validators)
        self.input_info: dict = {}
        self.inputs: dict[str, wp.array] = {}
        E, dev = cfg.num_envs, self.device
        self._valid = wp.zeros(E, dtype=wp.int32, device=dev)  # staged validity
        self._pending = wp.zeros(E, dtype=wp.int32, device=dev)
        self._attempt = wp.zeros(E, dtype=wp.int32, device=dev)
        self._ok = wp.zeros(E, dtype=wp.int32, device=dev)
        self._run = wp.zeros(1, dtype=wp.int32, device=dev)

    @property
    def max_retries(self) -> int:
        """Extra rounds an env whose draw is rejected gets."""
        return self.config.max_retries

    def enqueue(self, ctx=None, *, advance: bool = False, mask: wp.array | None = None) -> None:
        """Launch one regeneration of the masked envs (all envs when ``mask`` is None).

        Capturable; no host synchronisation. ``advance=True`` increments the masked envs'
        counters first, so they draw a new course; without it the same course is rebuilt
        (after a parameter change, say). Unmasked envs' rows of ``result`` stay bit-identical.

        Args:
            ctx: the course context. Called from a course (``ctx`` given), the generator
                launches on the current stream, which the course chose; alone, on ``stream``.
            mask: ``[E] int32`` array, nonzero where the env is regenerated.

        Raises:
            TypeError: ``mask`` is neither None nor a ``wp.array``.
            ValueError: ``mask`` is not an ``[E] int32`` array on the generator's device.
        """
        dev, E = self.device, self.num_envs
        check_mask(mask, E, dev)
        # a course launches everything of its call on the stream it chose: the current one
        own_stream = self.stream if ctx is None else None
        with wp.ScopedStream(own_stream) if own_stream is not None else contextlib.nullcontext():
            if advance:
                self.seeds.advance(mask)
            self.params.draw(self.seeds, mask)
            use_mask = 0 if mask is None else 1
            m = self._pending if mask is None else mask  # any int32 [E] array: unread when use_mask is 0
            wp.launch(_begin, E, inputs=[m, use_mask], outputs=[self._pending, self._attempt, self._run], device=dev)
            capturing = is_capturing(dev)
            if (capturing and exec_modes.conditional_allowed(dev)) or (not capturing and dev.is_cpu):
                wp.capture_while(self._run, while_body=self._attempt_round)
            else:
                # the fixed bound: where a recording cannot hold a conditional node, and eagerly
                # on CUDA, where capture_while would wait on the host after every round
                for _ in range(1 + self.max_retries):
                    self._attempt_round()
            self._commit(m, use_mask)

    def _finalize_round(self) -> None:
        """Accept, retry or give up on each pending env (the last launch of a round)."""
        wp.launch(_finalize, self.num_envs, inputs=[self.max_retries, self._ok],
                  outputs=[self._pending, self._attempt, self._valid, self._run], device=self.device)

    def _attempt_round(self) -> None:
        raise NotImplementedError

    def _commit(self, mask: wp.array, use_mask: int) -> None:
        raise NotImplementedError

    def _first_generation(self) -> None:
        """Generate every env once at construction and warn if most envs hold no course.

        The one host read-back of ``result.valid`` of a generator's life (construction may
        synchronise; ``enqueue`` never does): a ``UserWarning`` naming the measured valid
        rate when it is below ``LOW_VALID_RATE`` (procedural sources only), so that a config that rarely yields a
        course is not discovered as envs that terminate at every step.
        """
        self.generate()
        if self.config.source != "procedural":
            return  # a given course (centreline, race layout) is written after construction: nothing drawn yet
        valid = int(np.count_nonzero(self.result.valid.numpy()))
        if valid < LOW_VALID_RATE * self.num_envs:
            warnings.warn(
                f"only {valid} of {self.num_envs} envs ({100.0 * valid / self.num_envs:.1f}%) hold a valid "
                f"{self.family} course after the first generation (expected >= {100 * LOW_VALID_RATE:.0f}%): "
                f"the config's checks reject most draws; see the {self.config_type.__name__} docstring for the "
                f"ranges that yield valid courses",
                UserWarning,
                stacklevel=3,
            )

    def generate(self, seeds=None):
        """Regenerate every env now (``seeds=`` first reseeds through ``self.seeds.reseed``).

        Returns:
            ``self.result`` (the same object every call).
        """
        if seeds is not None:
            self.seeds.reseed(seeds)
        self.enqueue()
        return self.result
