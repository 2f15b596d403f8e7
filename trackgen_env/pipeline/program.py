"""``Program``: a built pipeline, the retry loop over a straight-line list of stages.

``enqueue`` runs, on the device and without host synchronisation::

    advance(mask) -> draw randomized params -> begin (pending = mask)
    -> while any env is pending (at most 1 + max_retries rounds):
         round_begin (run = 0; ok = 1 for the pending envs; on the CPU, list them)
         stage_1.enqueue(ctx, pending) ... stage_n.enqueue(ctx, pending)
         finalize (per env: accept, retry with fresh draws, or give up: valid = 0)
    -> family commit: copy the masked envs' staged rows into ``result``, generation += 1

When every stage is a built-in (each writes only its pending envs' rows), the family's
``in_place_fields`` of the working set are the result's own arrays: the stages write the
masked envs' rows in place, and the commit copies only what is left (validity, the
generation counter, a degenerate course where nothing was drawn). A program with a plugin
stage stages every field, so that unmasked rows stay bit-identical even when the plugin
writes rows it was not asked to.

An env's attempt number keys its random streams, so a retry draws afresh. The loop is a
``wp.capture_while`` on the device (a host loop when eager on the CPU); it is unrolled to
its fixed bound inside ``exec.unconditional()``, where the driver cannot record
conditional nodes, and eagerly on CUDA (no host wait per round). A round is an identity
for envs that are not pending, so that is only slower.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Mapping
from dataclasses import fields as dataclass_fields, is_dataclass
from types import MappingProxyType

import numpy as np
import warp as wp

from ..core import env_loop, exec as exec_modes, kernel_cache
from ..core.capture import NotCapturableError, is_capturing, user_stacklevel
from ..core.checks import check_bool, check_mask, dtype_name
from ..core.seeding import SeedState
from .launches import Launches
from .params import Params, check_as_stored
from .registry import Registry, is_builtin, registry_or_default
from .spec import PipelineSpec
from .stage import check_ordered

__all__ = ["Program", "StageContext", "LOW_VALID_RATE", "RESET_MIN_INVALID", "FewValidCoursesWarning"]

# Construction warns when fewer envs than this share hold a valid course after the first generation.
LOW_VALID_RATE = 0.9
# A reset warns so only when at least this many of its envs hold no course (one can be chance).
RESET_MIN_INVALID = 3


class FewValidCoursesWarning(UserWarning):
    """Under ``LOW_VALID_RATE`` of the envs hold a valid course after a generation: a spec or a
    live value whose draws the checks reject (``Program.warn_if_few_valid``)."""


wp.set_module_options({"enable_backward": False})


@wp.kernel
def _begin(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    use_mask: int,
    pending: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    run: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, pending.shape[0])):
        p = 1
        if use_mask != 0 and mask[e] == 0:
            p = 0
        pending[e] = p
        attempt[e] = 0
        if e == 0:
            run[0] = 1


@wp.kernel
def _round_begin(
    serial: int,
    pending: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
    run: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
):
    # serial (the CPU: one thread): also list the pending envs in increasing order, the envs
    # that this round's stage kernels visit (env_loop.listed_env); else a thread per env
    if serial != 0:
        n = int(0)
        for e in range(pending.shape[0]):
            if pending[e] != 0:
                ok[e] = 1  # a stage clears it to reject the draw
                pending_envs[n] = e
                n = n + 1
        num_pending[0] = n
        run[0] = 0  # finalize sets it again while an env is still pending
        return
    e = wp.tid()
    if e == 0:
        run[0] = 0
    if pending[e] != 0:
        ok[e] = 1


@wp.kernel
def _finalize(
    envs_per_thread: int,
    max_retries: int,
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    run: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        if ok[e] != 0:
            pending[e] = 0
            valid[e] = 1
        elif attempt[e] >= max_retries:
            pending[e] = 0
            valid[e] = 0
        else:
            attempt[e] = attempt[e] + 1
            run[0] = 1


def _filled(shape, dtype, fill, device) -> wp.array:
    if fill == "identity":
        quats = np.broadcast_to(np.array([0.0, 0.0, 0.0, 1.0], np.float32), (*np.atleast_1d(shape), 4)).copy()
        return wp.array(quats, dtype=dtype, device=device)
    if fill in (None, "zeros"):
        return wp.zeros(shape, dtype=dtype, device=device)
    return wp.full(shape, fill, dtype=dtype, device=device)


class StageContext:
    """What a stage sees (``ctx`` of ``Stage.allocate`` / ``Stage.enqueue``).

    Attributes:
        num_envs, device: ``E`` and the ``wp.Device``.
        spec, settings: the program's spec and its structural settings.
        params: the live :class:`~trackgen_env.pipeline.params.Params` (``[E]`` float32 each).
        seeds: the :class:`~trackgen_env.seeding.SeedState` (``seeds.seeds``, ``seeds.counters``).
        attempt: ``[E]`` int32, the env's retry attempt this round (key it into your draws).
        pending: ``[E]`` int32, nonzero while the env still draws (also passed to ``enqueue``).
        pending_envs, num_pending: ``[E]`` and ``[1]`` int32, on the CPU the envs pending this
            round in increasing order and their number (written by :meth:`begin_round`), so that an
            env loop visits only them (:func:`~trackgen_env.core.env_loop.listed_env`); unwritten on CUDA.
        ok: ``[E]`` int32, 1 at the start of each round; a stage writes 0 to reject the draw.
        valid: ``[E]`` int32 staged validity (written by the loop; the commit copies it).
        run: ``[1]`` int32, the retry loop's flag (the program's own).
        max_retries: the retry bound (0 when no stage draws).
        fields: the working set, ``name -> wp.array`` (env axis first).
        in_place: the fields that are the result's own arrays (``Family.in_place_fields``
            when every stage is a built-in; empty otherwise).
        all_builtin: every stage of the program is a built-in (a built-in stage may then rely
            on what the others do).
        plugin_writes: the fields that the program's plugin stages declare they write (a
            built-in stage may rely on the others for the fields outside it, e.g. where the
            built-in layout puts the gates).
        inputs: generator inputs by name (stable arrays the user writes).
    """

    def __init__(self, spec: PipelineSpec, params: Params, seeds: SeedState, max_retries: int):
        E, dev = spec.num_envs, wp.get_device(spec.device)
        self.num_envs, self.device, self.spec, self.settings = E, dev, spec, spec.settings
        self.params, self.seeds, self.max_retries = params, seeds, max_retries
        self.attempt = wp.zeros(E, dtype=wp.int32, device=dev)
        self.pending = wp.zeros(E, dtype=wp.int32, device=dev)
        self.ok = wp.zeros(E, dtype=wp.int32, device=dev)
        self.valid = wp.zeros(E, dtype=wp.int32, device=dev)
        self.run = wp.zeros(1, dtype=wp.int32, device=dev)
        self.pending_envs = wp.zeros(E, dtype=wp.int32, device=dev)
        self.num_pending = wp.zeros(1, dtype=wp.int32, device=dev)
        self._launches = Launches()
        self.fields: dict[str, wp.array] = {}
        self.in_place: frozenset[str] = frozenset()
        self.all_builtin = False
        self.plugin_writes: frozenset[str] = frozenset()
        self.inputs: dict[str, wp.array] = {}
        # scratch sharing (Program sets them around each stage's allocate): the fields read by
        # the stage being allocated, the later ones or the commit; bytes of a donor row in use
        self._live: frozenset[str] | None = None
        self._allocating: str | None = None  # the stage whose allocate runs (for messages)
        self._scratch_used: dict[str, int] = {}

    def begin_round(self) -> None:
        """Begin a round for the envs ``pending`` marks: ``ok = 1`` for each, ``run = 0``, and on
        the CPU their list (``pending_envs``, ``num_pending``) that the stages' env loops visit.
        The program calls it before its stages in every round; a stage enqueued by hand (a test)
        calls it after writing ``pending``."""
        serial = self.device.is_cpu  # one thread lists the pending envs, in increasing order
        self._launches.launch(_round_begin, 1 if serial else self.num_envs, inputs=[int(serial), self.pending],
                              outputs=[self.ok, self.run, self.pending_envs, self.num_pending], device=self.device)

    def field(self, name: str, shape, dtype, *, fill=None) -> wp.array:
        """The working-set field ``name``, allocated (zeros, ``"identity"`` quats, or ``fill``)
        by the first stage that asks for it.

        Raises:
            ValueError: ``shape`` does not start with ``num_envs``; ``name`` exists with another
                shape or dtype.
        """
        shape = tuple(np.atleast_1d(shape).tolist())
        if shape[0] != self.num_envs:
            raise ValueError(f"stage {self._allocating!r}: field {name!r} needs the env axis first: shape "
                             f"({self.num_envs}, ...), got {shape}")
        have = self.fields.get(name)
        if have is None:
            self.fields[name] = have = _filled(shape, dtype, fill, self.device)
        elif have.shape != shape or not wp.types.types_equal(have.dtype, dtype):
            raise ValueError(
                f"field {name!r} exists as {have.shape} {dtype_name(have.dtype)}; stage {self._allocating!r} asked for "
                f"{shape} {dtype_name(dtype)}"
            )
        return have

    def scratch(self, shape, dtype) -> wp.array:
        """Working memory of the stage being allocated, ``[E, ...]``, valid inside its own
        ``enqueue`` only (its content is undefined when ``enqueue`` starts: write before reading).

        When every stage is a built-in (each round, a field is written before it is read), the
        rows may lie in a field that neither this stage, a later one nor the commit reads:
        the spline's arc-length table, dead once ``resample`` has read it, holds the checks'
        block bounds (the scratch of different stages may share bytes; a result array is never
        lent). Without a field with room (or with a plugin stage) the array is its own, zeroed.

        Raises:
            ValueError: ``shape`` does not start with ``num_envs``.
        """
        shape = tuple(np.atleast_1d(shape).tolist())
        E = self.num_envs
        if shape[0] != E:
            raise ValueError(f"scratch needs the env axis first: shape ({E}, ...), got {shape}")
        item = wp.types.type_size_in_bytes(dtype)
        inner = (int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1) * item
        if self._live is not None:
            donors = [(name, a) for name, a in self.fields.items()
                      if name not in self._live and name not in self.in_place and a.ndim >= 1 and a.shape[0] == E
                      and a.is_contiguous]
            for name, donor in sorted(donors, key=lambda na: -na[1].strides[0]):
                row = donor.strides[0]
                start = -(-self._scratch_used.get(name, 0) // item) * item  # whole items into the row
                if start + inner <= row:
                    self._scratch_used[name] = start + inner
                    strides, step = [], item  # C order within the row
                    for n in reversed(shape[1:]):
                        strides.insert(0, step)
                        step *= n
                    view = wp.array(ptr=donor.ptr + start, dtype=dtype, shape=shape, strides=(row, *strides),
                                    capacity=donor.capacity - start, device=self.device)
                    view._ref = donor  # keeps the donor's memory alive
                    return view
        return wp.zeros(shape, dtype=dtype, device=self.device)


class Program:
    """A built pipeline: the generator surface over a spec's stages (``pipeline.build``).

    Args:
        spec: a :class:`PipelineSpec`.
        registry: where the stage names are looked up (the default registry when None).
        seeds: None (seed 0), an int (env ``i`` gets ``hash(seed, i)``), an ``[E] int32``
            ``wp.array`` bound by pointer (never written), a ``PerEnvSeededRNG``, or a ``SeedState``.
        stream: the ``wp.Stream`` to launch on when called alone (default: the current stream).
        prepare: run the first generation now (loads the Warp modules: do it before any
            capture) and read ``result.valid`` back once (a ``UserWarning`` names the valid
            rate if under 90 % of the envs hold a course when a stage draws). With False,
            ``result`` holds its initial values (``valid`` and ``generation`` 0).
        out: caller-provided arrays for the result, by field name (a mapping or an object
            with the result's attributes, e.g. views of a simulator's buffer); the fields
            not given are allocated. Each must have the field's shape, dtype and device.

    Attributes:
        result: the family's result dataclass (``TrackResult`` / ``GateResult``), stable arrays.
        layout: the capacities (``TrackLayout`` / ``GateLayout``).
        params: live dynamic parameters (``params["layout.size"] = v``).
        seeds: the :class:`~trackgen_env.seeding.SeedState`.
        inputs / input_info: generator inputs its stages read, written in place by the user.
        fields: read-only ``name -> wp.array`` of the fields the plugin stages add to the working
            set (those no built-in stage writes and the result does not hold; empty without
            any), as they allocated them (env axis first). An env's rows hold what its last
            regeneration's accepted draw wrote (an env left without a valid course: its last
            draw's), the unmasked envs' rows stay as they were; read them as ``result``, after
            a regeneration and before the next.
        spec, family, stages (names), num_envs, device, stream, max_retries.
        capturable: False when a stage is registered ``capturable=False`` (then ``enqueue``
            under a capture raises ``NotCapturableError``).

    Raises:
        TypeError: ``spec`` is not a PipelineSpec; a bad ``seeds`` or ``out`` entry type.
        KeyError: an unknown stage name (the message lists the stages of the family).
        ValueError: an unknown family; a bad setting; a parameter undeclared, missing or out
            of its declared bounds, or a randomize range out of them or of a static
            parameter; a stage's ``ordered`` pair that its values or randomize ranges could
            put out of order; a stage (or the commit) reading a field no earlier stage writes; a
            stage writing ``valid`` or ``generation``, or a field without the env axis first; two
            drawing plugin stages with the same ``random_stream()``; an
            ``out`` array of the wrong shape, dtype or device, or of an unknown field. Each
            names the stage or field; nothing is allocated or written before the checks pass.
    """

    def __init__(self, spec: PipelineSpec, *, registry: Registry | None = None, seeds=None, stream=None,
                 prepare: bool = True, out=None):
        if not isinstance(spec, PipelineSpec):
            raise TypeError(f"build() takes a PipelineSpec, got {type(spec).__name__}")
        reg = registry_or_default(registry)
        family = reg.family(spec.family)
        found = [(name, *reg.lookup(name, spec.family)) for name in spec.stages]
        declared = _check_params(spec, found)
        family.check(spec)
        _check_reads(spec, family, found)
        _check_stage_streams(found)
        E, dev = spec.num_envs, wp.get_device(spec.device)
        if dev.is_cpu:
            kernel_cache.seed()  # the install's compiled kernels, before the first launch compiles any
        result_fields = family.result_fields(spec)
        given = _check_out(out, result_fields, dev)
        self.spec, self.family, self._family = spec, spec.family, family
        self.stages = tuple(name for name, _, _ in found)
        self.num_envs, self.device, self.stream = E, dev, stream
        self._host_stages = [name for name, _, capturable in found if not capturable]
        self._valid_hints = [cls.valid_hint for _, cls, _ in found if cls.valid_hint]
        self.capturable = not self._host_stages
        self.seeds = seeds if isinstance(seeds, SeedState) else SeedState(E, dev, seeds)
        if self.seeds.num_envs != E or self.seeds.device != dev:
            raise ValueError(
                f"a SeedState for {E} envs on {dev} is needed, got {self.seeds.num_envs} on {self.seeds.device}"
            )
        self.params = Params(E, dev, declared, spec.params, spec.randomize)
        _add_order_validators(self.params, found)
        draws = any(cls.draws for _, cls, _ in found)
        self._max_retries = int(spec.settings["max_retries"]) if draws else 0
        self._draws = draws
        ctx = self._ctx = StageContext(spec, self.params, self.seeds, self._max_retries)
        self._launches = Launches()
        self._stages = [cls() for _, cls, _ in found]
        self.input_info = {}
        for stage in self._stages:
            self.input_info.update(stage.input_info(ctx))
        self.inputs = {name: wp.zeros(info.shape, dtype=info.dtype, device=dev)
                       for name, info in self.input_info.items()}
        ctx.inputs = self.inputs
        arrays = {}
        for name, (shape, dtype, fill) in result_fields.items():
            arrays[name] = _filled(shape, dtype, fill, dev)
            if name in given:  # the caller's array, holding the same initial values
                wp.copy(given[name], arrays[name])
                arrays[name] = given[name]
        builtin = ctx.all_builtin = all(is_builtin(cls) for _, cls, _ in found)
        ctx.plugin_writes = frozenset(f for _, cls, _ in found if not is_builtin(cls) for f in cls.writes)
        # a plugin's own fields: those no built-in stage writes and the result does not hold
        own = ctx.plugin_writes.difference(result_fields, *(cls.writes for _, cls, _ in found if is_builtin(cls)))
        if builtin:
            # no plugin writes rows it was not asked to: the stages may write the result in place
            ctx.in_place = frozenset(family.in_place_fields)
            ctx.fields.update({name: arrays[name] for name in ctx.in_place})
        for i, stage in enumerate(self._stages):
            if builtin:  # scratch may share a field nobody reads from stage i on (StageContext.scratch)
                ctx._live = frozenset(family.commit_reads).union(*(cls.reads for _, cls, _ in found[i:]))
                ctx._scratch_used = {}
            name, cls = found[i][0], found[i][1]
            ctx._allocating = name
            stage.allocate(ctx)
            missing = [f for f in cls.writes if f not in ctx.fields]
            if missing:  # else a raw KeyError at the first generation
                raise ValueError(f"stage {name!r} declares writes {missing}, which its allocate made no field of: "
                                 f"allocate them there (ctx.field(name, shape, dtype))")
        ctx._live = None
        ctx._allocating = None
        self._fields = MappingProxyType({name: ctx.fields[name] for name in sorted(own)})
        self.result = family.make_result(arrays)
        self.layout = family.layout(spec)
        if prepare:
            self.first_generation()

    # -- regeneration -------------------------------------------------------------------------
    def enqueue(self, ctx=None, *, advance: bool = False, mask: wp.array | None = None) -> None:
        """Launch one regeneration of the masked envs (all envs when ``mask`` is None).

        Capturable (unless a stage is registered ``capturable=False``); no host
        synchronisation. ``advance=True`` increments the masked envs' counters first, so
        they draw a new course; without it the same course is rebuilt (after a parameter
        change, say). Unmasked envs' rows of ``result`` stay bit-identical.

        Args:
            ctx: the course context. Called from a course (``ctx`` given), the program
                launches on the current stream, which the course chose; alone, on ``stream``.
            mask: ``[E] int32`` array, nonzero where the env is regenerated.

        Raises:
            TypeError: ``mask`` is neither None nor a ``wp.array``; ``advance`` is not a bool.
            ValueError: ``mask`` is not an ``[E] int32`` array on the program's device.
            NotCapturableError: under a capture, with a stage registered ``capturable=False``.
        """
        dev, E, w = self.device, self.num_envs, self._ctx
        check_mask(mask, E, dev)
        advance = check_bool("advance", advance)
        capturing = is_capturing(dev)
        if capturing and not self.capturable:
            raise NotCapturableError(
                f"the program's stages {self._host_stages} run on the host (registered capturable=False): regenerate "
                f"outside a capture"
            )
        own_stream = self.stream if ctx is None else None
        with wp.ScopedStream(own_stream) if own_stream is not None else contextlib.nullcontext():
            if advance:
                self.seeds.advance(mask)
            self.params.draw(self.seeds, mask)
            use_mask = 0 if mask is None else 1
            m = w.pending if mask is None else mask  # any int32 [E] array: unread when use_mask is 0
            threads, per = env_loop.shape(dev, E)
            wp.launch(_begin, threads, inputs=[per, m, use_mask], outputs=[w.pending, w.attempt, w.run], device=dev)
            if exec_modes.conditional_now(dev):
                wp.capture_while(w.run, while_body=self._round)
            else:
                # the fixed bound: where a recording cannot hold a conditional node, and eagerly
                # on CUDA, where capture_while would wait on the host after every round
                for _ in range(1 + self.max_retries):
                    self._round()
            self._family.commit(w, self.result, m, use_mask)

    @property
    def fields(self) -> Mapping:
        """The plugin stages' own fields, read-only (the class docstring's Attributes)."""
        return self._fields

    @property
    def max_retries(self) -> int:
        """The retry bound, from the spec's ``max_retries`` setting (0 when no stage draws)."""
        return self._max_retries

    @max_retries.setter
    def max_retries(self, value) -> None:
        # the stages' kernels and any recorded graph hold it: a write would change eager runs only
        raise AttributeError(f"max_retries is fixed when the program is built (it is {self._max_retries}; got "
                             f"{value!r}): pass max_retries= to the preset that makes its spec "
                             f"(presets.track(max_retries=...))")

    def _round(self) -> None:
        """One round of the stages for every pending env (the body of the retry loop)."""
        w = self._ctx
        # the same arguments every round: replayed from the first recording (pipeline.launches)
        w.begin_round()
        for stage in self._stages:
            stage.enqueue(w, w.pending)
        threads, per = env_loop.shape(self.device, self.num_envs)
        self._launches.launch(_finalize, threads, inputs=[per, self.max_retries, w.pending_envs, w.num_pending, w.ok],
                              outputs=[w.pending, w.attempt, w.valid, w.run], device=self.device)

    def first_generation(self, ctx=None) -> None:
        """Generate every env once and warn if most envs hold no course.

        ``prepare=True`` runs it at construction; a course runs it for a program built with
        ``prepare=False`` (an env's ``track=`` / ``gates=`` spec), on its own stream (``ctx``
        as :meth:`enqueue`). The one host read-back of ``result.valid`` of a program's life
        (construction may synchronise; ``enqueue`` never does).

        Warns:
            UserWarning: when a stage draws (a given course is written after construction)
                and under ``LOW_VALID_RATE`` (90 %) of the envs hold a valid course, naming the
                measured rate, so that a spec that rarely yields a course is not discovered as
                envs that terminate at every step.
        """
        self.enqueue(ctx)
        self.warn_if_few_valid("the first generation")

    def warn_if_few_valid(self, after: str, mask: np.ndarray | None = None, valid: np.ndarray | None = None, *,
                          min_invalid: int = 1) -> None:
        """Warn (:class:`FewValidCoursesWarning`) when under ``LOW_VALID_RATE`` (90 %) of the envs
        (of ``mask``'s, bool) hold a valid course and at least ``min_invalid`` hold none, naming the
        rate and ``after`` (what generated them). A reset passes ``RESET_MIN_INVALID`` (3): in a spec
        that yields 99.7 % of its courses, one invalid env of a one-env reset is chance, three at once
        are not. Reads ``result.valid`` back (a host synchronisation; ``valid``: those flags given
        instead, e.g. of several programs of one spec): construction and an env's ``reset()`` call
        it, never a step. Nothing for a program whose stages draw nothing (a given course)."""
        if not self._draws:
            return
        valid = (self.result.valid.numpy() if valid is None else np.asarray(valid)) != 0
        if mask is not None:
            valid = valid[mask]
        count, total = int(np.count_nonzero(valid)), int(valid.size)
        if total and count < LOW_VALID_RATE * total and total - count >= min_invalid:
            warnings.warn(
                f"only {count} of {total} envs ({100.0 * count / total:.1f}%) hold a valid "
                f"{self.family} course after {after} (expected >= {100 * LOW_VALID_RATE:.0f}%): "
                + _low_valid_hint(self.stages, self._family.config_name, self._valid_hints),
                FewValidCoursesWarning,
                stacklevel=user_stacklevel(),
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

    def __repr__(self) -> str:
        return f"Program(family={self.family!r}, num_envs={self.num_envs}, device={self.device}, stages={self.stages})"


def _low_valid_hint(stages, config_name: str, hints=()) -> str:
    """What to look at when most draws are rejected: the config's ranges, or, with a plugin
    stage (a namespaced name) in the spec, the stages themselves (the config knows nothing of them),
    or the ``valid_hint`` of a built-in stage that documents its own ranges."""
    plugins = [name for name in stages if "." in name]
    if hints and not plugins:
        return "; ".join(hints)
    if plugins:
        return (f"one of the stages {list(stages)} rejects most draws: check the parameters of the plugin stages "
                f"{plugins} and what they write")
    return (f"the config's checks reject most draws; see the {config_name} docstring for the ranges "
            "that yield valid courses")


# -- build-time checks (nothing is allocated before they pass) ---------------------------------
def _check_params(spec: PipelineSpec, found) -> dict:
    """``"stage.param" -> Param`` of the spec's stages; refuses undeclared, missing and
    out-of-bounds values and randomize ranges, naming the stage."""
    declared, owner = {}, {}
    for name, cls, _ in found:
        for full, p in cls.full_params().items():
            declared[full], owner[full] = p, name
    undeclared = sorted(set(spec.params) - set(declared))
    if undeclared:
        raise ValueError(f"the spec sets parameters {undeclared} that none of its stages {spec.stages} declares")
    missing = sorted(set(declared) - set(spec.params))
    if missing:
        raise ValueError(f"the spec gives no value for the parameters {missing} of its stages: use "
                         f"with_stage/with_params")
    for full, p in declared.items():
        what = f"stage {owner[full]!r}: parameter {full!r}"
        p.check(what, spec.params[full])
        if p.dynamic:  # it lives in a float32 array: the value it holds meets the bounds too
            check_as_stored(p, what, spec.params[full])
    for full, (lo, hi) in spec.randomize.items():
        if full not in declared:
            raise ValueError(f"randomize names {full!r}, which none of the stages {spec.stages} declares")
        if not declared[full].dynamic:
            raise ValueError(f"stage {owner[full]!r}: parameter {full!r} is static (dynamic=False) and cannot be "
                             f"randomized")
        if lo > hi:
            raise ValueError(f"randomize[{full!r}] needs lo <= hi, got ({lo}, {hi})")
        what = f"stage {owner[full]!r}: the randomize range of {full!r}"
        declared[full].check(what, [lo, hi])
        for end in (lo, hi):
            check_as_stored(declared[full], what, end)
    for name, cls, _ in found:
        for lo_name, hi_name in cls.ordered:
            lo_full, hi_full = f"{cls.name}.{lo_name}", f"{cls.name}.{hi_name}"
            _check_ordered_pair(spec, name, lo_full, hi_full)
    return declared


def _check_stage_streams(found) -> None:
    """Refuse two drawing plugin stages whose names hash to the same random streams
    (``Stage.random_stream``): their draws would be one."""
    seen: dict[int, str] = {}
    for name, cls, _ in found:
        if cls.draws and not is_builtin(cls):
            try:
                stream = cls.random_stream()
            except TypeError as exc:
                raise TypeError(f"stage {name!r}: random_stream() must be callable on the class (a classmethod) and "
                                f"return an int: {exc}") from None
            if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)):
                raise TypeError(f"stage {name!r}: random_stream() must return an int, got {type(stream).__name__} "
                                f"{stream!r}")
            stream = int(stream)
            if stream in seen:
                raise ValueError(f"stages {seen[stream]!r} and {name!r} draw from the same random streams "
                                 f"(Stage.random_stream() = {stream}, a hash of the name): rename one")
            seen[stream] = name


def _check_ordered_pair(spec: PipelineSpec, stage: str, lo_full: str, hi_full: str) -> None:
    """Refuse an ``ordered`` pair whose values, or the randomize ranges that draw them, could put
    it out of order: the largest value the lower one can take against the least of the upper."""
    ranges = {n: spec.randomize[n] for n in (lo_full, hi_full) if n in spec.randomize}
    if not ranges:
        check_ordered(f"stage {stage!r}", lo_full, hi_full, spec.params[lo_full], spec.params[hi_full])
        return
    lo = ranges[lo_full][1] if lo_full in ranges else spec.params[lo_full]
    hi = ranges[hi_full][0] if hi_full in ranges else spec.params[hi_full]
    if lo > hi:
        given = " and ".join(f"randomize[{n!r}] = ({ranges[n][0]:g}, {ranges[n][1]:g})" if n in ranges
                             else f"the value {n}={spec.params[n]:g}" for n in (lo_full, hi_full))
        raise ValueError(
            f"stage {stage!r} needs {lo_full} <= {hi_full} in every draw, but {given} could draw "
            f"{lo_full}={lo:g} above {hi_full}={hi:g}: keep the largest {lo_full} <= the least {hi_full}"
        )


def _add_order_validators(params: Params, found) -> None:
    """Refuse a live set that would put a stage's ``ordered`` pair out of order in any env
    (against the other parameter's present values: to move a range past its other end, set
    that end first)."""
    for _, cls, _ in found:
        for lo_name, hi_name in cls.ordered:
            lo_full, hi_full = f"{cls.name}.{lo_name}", f"{cls.name}.{hi_name}"
            if lo_full not in params or hi_full not in params:
                continue  # a static one is fixed at build, where it was checked

            # against what the other one can take in a later generation (its range when randomized)
            def lo_check(name, values, hi_full=hi_full):
                check_ordered(_against(params, name, hi_full, "least"), name, hi_full, values, params.least(hi_full))

            def hi_check(name, values, lo_full=lo_full):
                check_ordered(_against(params, name, lo_full, "largest"), lo_full, name, params.most(lo_full), values)

            params.add_validator(lo_full, lo_check)
            params.add_validator(hi_full, hi_check)


def _against(params: Params, name: str, other: str, end: str) -> str:
    """What an ordered pair's live check names: the parameter set, and where the other's value comes from."""
    if other in params.randomize:
        return (f"params[{name!r}] (against the {end} {other} its live range draws; to move both ranges past each "
                f"other, move that one first)")
    return f"params[{name!r}]"


def _check_reads(spec: PipelineSpec, family, found) -> None:
    """Refuse a stage that reads a field (or input) no earlier stage writes (or declares), or
    writes a result field the program writes itself, and a commit that copies a field no stage writes."""
    written: set[str] = set()
    kept = set(family.result_fields(spec)).difference(family.commit_reads)  # the program's own: valid, generation
    for name, cls, _ in found:
        own = sorted(kept.intersection(cls.writes))
        if own:
            raise ValueError(
                f"stage {name!r} writes {own}, which the program writes itself (valid: from the retry loop, so reject "
                f"a draw with ctx.ok[e] = 0; generation: the count of commits): name the stage's field otherwise")
        missing = [r for r in cls.reads if r not in written and "." not in r]
        if missing:
            raise ValueError(
                f"stage {name!r} reads {missing}, which no earlier stage of {spec.stages} writes "
                f"(written before it: {sorted(written)})"
            )
        written |= set(cls.writes)
    missing = [r for r in family.commit_reads if r not in written]
    if missing:
        raise ValueError(f"the {spec.family} commit copies {missing}, which no stage of {spec.stages} writes")


def _check_out(out, result_fields: dict, device) -> dict:
    """The caller's result arrays by field, each checked for shape, dtype and device, and
    no two sharing memory (one array for two fields, or overlapping views of one buffer,
    would let one field's commit overwrite another's)."""
    if out is None:
        return {}
    expected = ("expected a mapping of field -> wp.array or a result-like object with the result's attributes "
                f"{list(result_fields)}")
    if isinstance(out, Mapping):
        given = dict(out)
    elif is_dataclass(out) and not isinstance(out, type):
        given = {f.name: getattr(out, f.name) for f in dataclass_fields(out) if getattr(out, f.name) is not None}
    else:
        given = {n: getattr(out, n) for n in result_fields if getattr(out, n, None) is not None}
        if not given:
            raise TypeError(f"out=: {expected}; got {type(out).__name__} {out!r}, which has none of them")
    unknown = sorted(set(given) - set(result_fields), key=str)
    if unknown:
        raise ValueError(f"out= names fields {unknown} that the result does not have; its fields are "
                         f"{list(result_fields)}")
    for name, arr in given.items():
        shape, dtype, _ = result_fields[name]
        want = f"a wp.array of shape {shape}, dtype {dtype_name(dtype)} on {device}"
        if not isinstance(arr, wp.array):
            raise TypeError(f"out[{name!r}] must be {want}, got {type(arr).__name__}")
        if arr.shape != tuple(shape) or not wp.types.types_equal(arr.dtype, dtype) or arr.device != device:
            raise ValueError(
                f"out[{name!r}] must be {want}, got shape {arr.shape}, dtype {dtype_name(arr.dtype)} on {arr.device}"
            )
    spans = sorted((_byte_span(arr), name) for name, arr in given.items())
    for ((lo_a, hi_a), a), ((lo_b, hi_b), b) in zip(spans, spans[1:]):
        if lo_b < hi_a:
            raise ValueError(
                f"out[{a!r}] and out[{b!r}] share memory (bytes [{lo_a:#x}, {hi_a:#x}) and [{lo_b:#x}, {hi_b:#x})): "
                "expected a separate, non-overlapping array per field"
            )
    return MappingProxyType(given)


def _byte_span(arr: wp.array) -> tuple[int, int]:
    """``[first, last + 1)`` byte addresses an array (a strided view too) touches."""
    lo = hi = int(arr.ptr)
    for n, stride in zip(arr.shape, arr.strides):
        step = (n - 1) * int(stride)
        lo, hi = (lo + step, hi) if step < 0 else (lo, hi + step)
    return lo, hi + wp.types.type_size_in_bytes(arr.dtype)
