"""``Course``: a generator plus an ordered list of components, run as one.

The course owns what ties them together (spec, "Composing a course"): the order the
components run in, one ``bind`` for every input, the regeneration recorded as one graph,
the per-env resets, and the lifetime of every buffer a recorded graph reads.

Regeneration body (``regenerate``, ``enqueue_generate`` and ``generate`` all run it)::

    generator.enqueue(ctx, advance=a, mask=m)
    -> on_generate(ctx, m) for each component (execution order)
    -> reset(ctx, m) for each component (reverse order)

With a mask it is wrapped as ``any_set(m) -> flag; if flag: body`` (a conditional node
when recorded). With an all-zero mask the body is an exact identity, so recording it
unconditionally is correct too (``exec.unconditional()``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import warp as wp

from ..core import exec as exec_modes
from ..core.capture import CaptureError, NotCapturableError, caller, raised_in_a_library, retain
from ..core.checks import check_bool, check_mask
from ..generators import GateGenConfig, TrackGenConfig
from ..pipeline import PipelineSpec, Program
from ..tools.component import ComponentContext, is_per_step, step_components
from ..tools.contract import mark_recorded
from ..tools.ownership import driver_of, take_over
from .binding import POSITIONAL_INPUTS, apply_bindings, route_inputs
from .config import CourseConfig
from .graphs import VariantGraphs, load_kernel_modules
from .order import as_component_list, sort_components
from .presets import GatesPreset, TrackPreset, preset_for_family
from .result import StepResult
from .streams import OnStream, check_stream, resolve_stream

__all__ = ["Course", "POSITIONAL_INPUTS"]

_SURFACE = ("result", "layout", "enqueue", "device")

class Course:
    """A generator plus components: construction, binding, stepping and regeneration.

    Args:
        generator: a built generator (``TrackGenerator``, ``GateGenerator``, a ``Program``
            of ``pipeline.build``, or an object with the same surface: ``result``,
            ``layout``, ``enqueue``, ``device``; docs/producer-protocol.md), or a
            :class:`CourseConfig`. A ``Program`` built with ``prepare=False`` gets its first
            batch before any component attaches (``Program.first_generation``: it warns when
            under 90 % of the envs hold a valid course).
        components: a sequence of components (``trackgen_env.tools`` or your own); they run
            in a stable topological order of their ``after`` / ``source`` names.
        stream: the course's default ``wp.Stream`` (default: the generator's ``stream``).
        prepare: run the regeneration body once now, so every Warp module is loaded before
            anything is recorded (``prepare()``).
        config: a :class:`CourseConfig` (the same as passing it as ``generator``).

    Attributes:
        generator and components (read-only: name -> component in execution order), result
        (the generator result), num_envs, device, stream, seeds (the generator's
        ``SeedState``), rng (the ``PerEnvSeededRNG`` given as seeds, else None), graph
        (the recorded ``regenerate()``, None until the first), and the utilities of the
        built-in names: checkpoints (the ``checkpoints`` result), checkpoint_sampler,
        progress, collision, localizer, course_line (of ``centerline``), heightfield:
        each None when that component is absent.

    Raises:
        TypeError: a config or spec as ``generator`` (use the preset it names), an object
            without the generator surface, a non-sequence ``components``, a bad component
            name or a component lacking a method of the contract, a ``stream`` that is not a
            ``wp.Stream`` (here and in every call that takes one).
        ValueError: duplicate names, an unknown after / source, a cycle, a component
            attached elsewhere, a missing required read, conflicting input declarations.

    A construction that raises leaves every component free to be used again and takes
    nothing over; where a live course drives the generator, the generator's result and live
    parameters (and a program's plugin fields) are put back as its warm-up found them.
    """

    def __init__(self, generator=None, components=(), *, stream=None, prepare: bool = True, config=None):
        if isinstance(generator, CourseConfig):
            if config is not None:
                raise TypeError("pass the CourseConfig once (positionally or as config=)")
            generator, config = None, generator
        if config is not None:
            if not isinstance(config, CourseConfig):
                raise TypeError(f"config must be a CourseConfig, got {type(config).__name__}")
            if generator is not None or tuple(components) != ():
                raise TypeError("a CourseConfig course takes no generator or components: the config holds them")
            preset = _preset_of(config, stream)
            generator, components, stream = preset.generator(), preset.components, None
            _after_build(preset, generator)
        else:
            _check_generator(generator)
            components = sort_components(as_component_list(components))
        self._setup(generator, components, stream, prepare)

    # -- construction -------------------------------------------------------------------
    @classmethod
    def track(cls, source, *, checkpoint_spacing, collision=None, max_checkpoints=None, extra=(), seeds=None,
              stream=None, prepare: bool = True, heightfield=None, size_hi=None, registry=None) -> "Course":
        """A track course: ``checkpoints``, ``progress``, [``collision``], [``heightfield``], then ``extra``.

        Args:
            source: a ``TrackGenConfig`` or a track ``PipelineSpec`` (built here with
                ``seeds=`` and ``stream=``), or a built track generator (used as is).
            checkpoint_spacing: [m] spacing of the checkpoints, > 0.
            collision: None, ``"segments"`` / ``"sdf"`` (``tools.BandCollision``), or a
                component named ``"collision"``.
            max_checkpoints: the checkpoint capacity, an int >= 3; None / ``"auto"``: the
                longest track the generator can produce, ``max(3, ceil(max_loop_length /
                checkpoint_spacing))`` (else the construction batch's longest loop).
            heightfield: None / False, True (``tools.HeightFieldBake()``), an int (its
                resolution), or a component named ``"heightfield"`` (``course.heightfield``).
            size_hi: [m] the largest course size a curriculum will draw, > 0 (None: the
                generator's own bound). The resolution checks read the larger of the two,
                and the preset's own height field covers it.
            extra: a sequence of further components.
            seeds, stream: for the generator built from a config or a spec.
            registry: the ``pipeline.Registry`` of a spec's plugin stages (None: the default
                registry); a spec source only.
            prepare: see :class:`Course`.

        Raises (before any generator is built):
            TypeError: a non-number spacing, a bool / non-component collision, a non-int
                ``max_checkpoints``, a non-sequence ``extra``, a gates source (use
                ``Course.gates``), seeds= / stream= / registry= with a built generator, registry=
                with a config or that is not a ``pipeline.Registry``, a heightfield
                that is not a bool, an int or a component, a non-number ``size_hi``.
            ValueError: spacing <= 0, an unknown collision string, ``max_checkpoints < 3``,
                a collision component not named "collision", a heightfield resolution < 2, a
                heightfield component not named "heightfield", ``size_hi <= 0``, and the
                component refusals of :class:`Course`.

        Warns:
            UserWarning: (after building) a ``BandCollision("sdf")`` grid too coarse, or a
                ``HeightFieldBake`` square too small, for the largest course size the
                generator can draw (``size_hi``, else a size randomizer's construction hi,
                else the construction size): the message names the sizes and the fix.
        """
        preset = TrackPreset(source, checkpoint_spacing=checkpoint_spacing, collision=collision,
                             max_checkpoints=max_checkpoints, heightfield=heightfield, size_hi=size_hi, extra=extra,
                             seeds=seeds, stream=stream, registry=registry)
        generator = preset.generator()
        _after_build(preset, generator)
        return cls(generator, preset.components, prepare=prepare)

    @classmethod
    def gates(cls, source, *, collision=None, samples_per_gate: int = 8, localize_window: int | None = None,
              extra=(), seeds=None, stream=None, prepare: bool = True, registry=None) -> "Course":
        """A gate course: ``checkpoints`` (``tools.GateCheckpoints``), ``centerline``
        (``tools.CenterlineFromGates``), ``progress``, [``collision``], ``localizer``
        (``tools.Localizer(source="centerline")``), then ``extra``.

        Args:
            source: a ``GateGenConfig`` or a gates ``PipelineSpec`` (built here with
                ``seeds=`` and ``stream=``), or a built gate generator (used as is).
            collision: None, a post radius [m] > 0 (``tools.DiscCollision``), or a
                component named ``"collision"`` (``tools.FrameCollision(...)``).
            samples_per_gate: course-line points per gate, >= 2.
            localize_window: the localizer's warm window, >= 1 (None: its default).
            extra, seeds, stream, prepare, registry: as for :meth:`track`.

        Raises (before any generator is built):
            TypeError / ValueError: as for :meth:`track`, with ``samples_per_gate < 2``,
                ``localize_window < 1``, a post radius <= 0, and a construction gate width
                of 0 (ValueError; a randomized width: its lo must be > 0). After building,
                ``generator.params["gate_frames.gate_width"] = w`` refuses ``w <= 0``.
        """
        preset = GatesPreset(source, collision=collision, samples_per_gate=samples_per_gate,
                             localize_window=localize_window, extra=extra, seeds=seeds, stream=stream,
                             registry=registry)
        generator = preset.generator()
        _after_build(preset, generator)
        return cls(generator, preset.components, prepare=prepare)

    @classmethod
    def from_config(cls, config: CourseConfig, *, stream=None, prepare: bool = True) -> "Course":
        """The course of a :class:`CourseConfig` (the same as ``Course(config=config)``)."""
        if not isinstance(config, CourseConfig):
            raise TypeError(f"from_config takes a CourseConfig, got {type(config).__name__}")
        preset = _preset_of(config, stream)
        generator = preset.generator()
        _after_build(preset, generator)
        return cls(generator, preset.components, prepare=prepare)

    def _setup(self, generator, components: list, stream, prepare: bool) -> None:
        check_stream(stream)
        self._generator = generator
        self.stream = stream if stream is not None else getattr(generator, "stream", None)
        ctx = ComponentContext(generator, stream=self.stream)
        if isinstance(generator, Program) and not generator.result.generation.numpy().any():
            # a Program built with prepare=False: its first batch, which a component may read
            # back at attach (Checkpoints' "auto" capacity of an elevated config), with the
            # program's warning when most envs hold no course
            with contextlib.nullcontext() if self.stream is None else OnStream(ctx, self.stream):
                generator.first_generation(ctx)
        attached = []
        # the warm-up regenerates the generator: where another course drives it, a refused
        # construction puts back what that course reads (its courses, the drawn parameters)
        saved = _generator_state(generator) if prepare and driver_of(generator) is not None else ()
        try:
            for c in components:
                ctx.add(c)
                attached.append(c)
            self._attach(generator, ctx, components, prepare)
        except BaseException:
            # a refused construction leaves every component free to be used again
            for c in attached:
                c.context = None
            if saved:
                wp.synchronize_device(saved[0][0].device)  # the warm-up's launches, on any stream, done
                for array, copy in saved:
                    wp.copy(array, copy)
            raise
        take_over(self)

    def _attach(self, generator, ctx, components: list, prepare: bool) -> None:
        """The rest of the construction, once every component is attached."""
        self._ctx = ctx
        self.num_envs = ctx.num_envs
        self.device = ctx.device
        self._order = tuple(components)
        self._reversed = self._order[::-1]
        self._step_order = tuple(c for c in self._order if is_per_step(c))
        self._bind_order = tuple(c for c in self._order if tuple(getattr(c, "inputs", ())))
        self._components = MappingProxyType({c.name: c for c in self._order})
        self._needs_bind = any(spec.required for c in self._bind_order for spec in c.inputs)
        self._bindings: dict[str, dict] | None = None
        self._capturable = bool(getattr(generator, "capturable", True))
        self._flag = wp.zeros(1, dtype=wp.int32, device=self.device)
        self._zero_mask = wp.zeros(self.num_envs, dtype=wp.int32, device=self.device)
        self._graphs = VariantGraphs()
        self._prepared = False
        self._filled = False  # a regeneration of every env has run the components' on_generate
        self._taken_over = False
        self._running: tuple[str, str] | None = None
        # a component of the contract need not have a result (its entry is then None)
        self._result = StepResult._from_entries({c.name: getattr(c, "result", None) for c in self._step_order},
                                                generator.result.valid)
        if prepare:
            self._warm_up()
            self._check_capacity()

    # -- attributes ---------------------------------------------------------------------
    @property
    def generator(self):
        """The generator the course drives (fixed at construction: build a new course for another)."""
        return self._generator

    @property
    def components(self) -> MappingProxyType:
        """``name -> component`` in execution order, read-only (fixed at construction: its recorded
        graphs launch these components)."""
        return self._components

    @property
    def result(self):
        """The generator's result (``TrackResult`` / ``GateResult``)."""
        return self.generator.result

    @property
    def seeds(self):
        """The generator's ``SeedState`` (``course.seeds.seeds``: the per-env seeds)."""
        return getattr(self.generator, "seeds", None)

    @property
    def rng(self):
        """The ``PerEnvSeededRNG`` passed as seeds, else None."""
        return getattr(self.seeds, "rng", None)

    @property
    def graph(self):
        """The course's own recorded ``regenerate()`` (``wp.Graph``), None until the first call."""
        return self._graphs.main

    @property
    def prepared(self) -> bool:
        """True once every module of the body is loaded (``prepare()``)."""
        return self._prepared

    def _utility(self, name: str):
        c = self.components.get(name)
        return None if c is None else getattr(c, "utility", c)

    @property
    def checkpoints(self):
        """The ``checkpoints`` component's result (``CheckpointSet``), or None."""
        c = self.components.get("checkpoints")
        return None if c is None else c.result

    @property
    def checkpoint_sampler(self):
        return self._utility("checkpoints")

    @property
    def progress(self):
        return self._utility("progress")

    @property
    def collision(self):
        return self._utility("collision")

    @property
    def localizer(self):
        return self._utility("localizer")

    @property
    def course_line(self):
        return self._utility("centerline")

    @property
    def heightfield(self):
        return self._utility("heightfield")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(generator={self.generator!r}, components={list(self.components)}, "
                f"num_envs={self.num_envs}, device={self.device})")

    # -- binding ------------------------------------------------------------------------
    def bind(self, *args: wp.array, **arrays: wp.array) -> None:
        """Bind every component input at once, by name; replaces every previous binding.

        One array goes to every component that declares its name; an ``InputSpec.default``
        routes an input that is not given from another one (a name given explicitly wins).
        ``position``, ``orientation``, ``half_extents`` and ``box_position`` (also
        positionally, in that order) are accepted on every course and ignored when no
        component declares them. Every route is checked before anything is rebound; if a
        component's ``on_bind`` raises, every component rebound by this call gets its
        previous arrays back and the error propagates.

        Args:
            arrays: ``wp.array`` per input: shape ``[E]`` (or ``[E, slots]``), the declared
                dtype, on the course's device.

        Raises:
            TypeError: an unknown name (the message lists the inputs), a generator input
                name (write ``course.generator.inputs[name]`` in place), a missing required
                input, a non-``wp.array`` or a wrong dtype.
            ValueError: a wrong shape or device.

        Warns:
            RebindAfterCaptureWarning: once, when a capture recorded ``step()`` since the
                last bind (that graph keeps the old arrays: record it again).
        """
        routed = route_inputs(self, args, arrays)
        self._bindings = apply_bindings(self._order, self._bind_order, self._bindings, routed)

    # -- stepping -----------------------------------------------------------------------
    def step(self, *, stream: wp.Stream | None = None, mask: wp.array | None = None) -> StepResult:
        """Launch every per-step component's ``step`` (execution order); no host sync.

        Args:
            mask: None (every env), or an ``[E] int32`` array (nonzero: this env): a step of
                those envs only, for a restart (their bodies reset, the others where their last
                step left them). The built-in components skip the other envs, whose results and
                state keep their last step's; a component of yours sees the mask as
                ``ctx.step_mask`` and may step every env (its step of an env that did not move
                must then leave it as it was). Under a recording the mask is read at replay.

        Returns:
            The course's :class:`StepResult` (the same instance every call).

        Raises:
            RuntimeError: ``"call bind() before step()"`` while a required input is
                unbound; a newer course drives the generator; a course built with
                ``prepare=False`` before its first regeneration of every env (its components
                hold no course yet: ``prepare()`` only loads the modules).
            TypeError / ValueError: a mask that is not an ``[E] int32`` array on the device.
            CaptureError: the course has a default stream and another stream records.
        """
        if self._taken_over:
            self._check_driver()
        if self._needs_bind and self._bindings is None:
            raise RuntimeError("call bind() before step()")
        if not self._filled:
            raise RuntimeError(
                "this course was built with prepare=False and no regeneration of every env has run yet: its "
                "components hold no course (no checkpoints, no collision grid); call course.regenerate() (or "
                "generate()) before step(); prepare() only loads the modules")
        if mask is not None:
            mask = self._check_mask(mask)
        s, capturing = self._resolve(stream)
        ctx = self._ctx
        ctx.step_mask = mask
        try:
            if s is None:
                step_components(self._step_order, ctx)
            else:
                with OnStream(ctx, s):
                    step_components(self._step_order, ctx)
        finally:
            ctx.step_mask = None
        if capturing:
            self._note_recorded_step(s)
            if mask is not None:
                retain(self.device, self, mask, stream=s)
        return self._result

    def _note_recorded_step(self, stream) -> None:
        mark_recorded(self._step_order)
        retain(self.device, self, tuple(self._bindings.values()) if self._bindings else (), stream=stream)

    def reset(self, mask: wp.array | None = None, *, stream: wp.Stream | None = None) -> None:
        """Reset the per-episode state of the masked envs (all when None), reverse order.

        Raises:
            TypeError / ValueError: a mask that is not an ``[E] int32`` array on the device.
        """
        self._check_driver()
        mask = self._check_mask(mask)
        s, capturing = self._resolve(stream)
        with self._scope(s):
            for c in self._reversed:
                c.reset(self._ctx, mask)
        if capturing:
            retain(self.device, self, mask, stream=s)

    # -- regeneration -------------------------------------------------------------------
    def regenerate(self, mask: wp.array | None = None, advance: bool = False, *,
                   stream: wp.Stream | None = None) -> None:
        """Run the regeneration body: every env (``mask=None``) or the masked envs.

        Outside a capture it replays the course's own graph of the variant
        ``(advance, mask array)`` (recorded at its first call: ``course.graph`` for
        ``regenerate()``; at most 16 more, then eagerly with one RuntimeWarning). Inside
        a capture it records the body (with a mask: ``any_set(mask) -> flag`` and a
        conditional node on the flag, unless ``exec.unconditional()`` is open).

        Args:
            mask: ``[E] int32`` array, nonzero where the env is regenerated; keep using the
                same array (a graph holds its pointer).
            advance: increment the masked envs' counters first, so they draw a new course;
                without it the same courses are rebuilt (after a parameter change).

        Raises:
            TypeError / ValueError: a bad mask.
            CaptureError: under a capture on a course built with ``prepare=False`` (call
                ``prepare()`` first), or with a default stream while another stream records.
            NotCapturableError: under a capture, with a generator that steps on the host.
            RuntimeError: a newer course drives the generator.
        """
        self._check_driver()
        mask = self._check_mask(mask)
        advance = check_bool("advance", advance)
        s, capturing = self._resolve(stream)
        if capturing:
            self._record_here(advance, mask, s)
            return
        if not self._prepared:
            self.prepare(stream=stream)
        with self._scope(s):
            if not self._capturable:
                self._enqueue(advance, mask, capturing=False)
                return
            graph = self._graphs.lookup(advance, mask, lambda a, m: self._record_own(a, m, s))
            if graph is None:
                self._enqueue(advance, mask, capturing=False)
            else:
                wp.capture_launch(graph, stream=s)

    def enqueue_generate(self, mask: wp.array | None = None, advance: bool = False, *,
                         stream: wp.Stream | None = None) -> None:
        """Launch the regeneration body on the stream without building a graph.

        Inside a capture it records the body as :meth:`regenerate` does; outside, it runs
        it eagerly (on CUDA the masked body then runs in full: no host sync on the flag).

        Raises:
            As :meth:`regenerate`.
        """
        self._check_driver()
        mask = self._check_mask(mask)
        advance = check_bool("advance", advance)
        s, capturing = self._resolve(stream)
        if capturing:
            self._record_here(advance, mask, s)
            return
        if not self._prepared:
            self.prepare(stream=stream)
        with self._scope(s):
            self._enqueue(advance, mask, capturing=False)

    def generate(self, seeds=None, *, stream: wp.Stream | None = None):
        """Regenerate every env (``course.graph``), after reseeding when ``seeds`` is given.

        ``seeds`` (an int, or ``E`` ints) follows the owner of the seeds: the rng when
        there is one (it writes the rng's array), ``SeedState.set`` on seeds the generator
        owns. Reseeding zeroes the counters.

        Returns:
            ``course.result``.

        Raises:
            TypeError: ``seeds=`` with a generator that has no ``seeds`` (the producer
                protocol's optional member).
            RuntimeError: seeds bound to your array with no rng (the library never writes a
                bound seed array: write it, then ``regenerate()``).
            CaptureError: ``seeds=`` under a capture (it writes from the host).
        """
        self._check_driver()
        if seeds is not None:
            _, capturing = self._resolve(stream)
            if capturing:
                raise CaptureError("generate(seeds=...) writes the seeds from the host: call it outside a capture "
                                   f"(recorded at {caller()})")
            state = self.seeds
            if state is None:
                raise TypeError(f"generate(seeds=...) reseeds the generator's seeds, and "
                                f"{type(self.generator).__name__} "
                                "has none (no seeds attribute, docs/producer-protocol.md): reseed it yourself, then "
                                "call regenerate()")
            if getattr(state, "rng", None) is None and not getattr(state, "owned", True):
                raise RuntimeError(
                    "the seeds are bound to your array and there is no rng: the library never writes a bound "
                    "seed array; write it, then call regenerate()"
                )
            state.reseed(seeds)
        self.regenerate(stream=stream)
        return self.result

    # -- preparing ----------------------------------------------------------------------
    def prepare(self, *, stream: wp.Stream | None = None) -> None:
        """Load every Warp module the course runs, by an identity run of the body.

        A no-op on a prepared course. On an unprepared one it runs the masked body (with
        ``advance=True``) unconditionally on a private all-zero mask: the exact identity,
        so it changes no env's course or state, even after steps.

        Raises:
            CaptureError: called while a capture records.
        """
        check_stream(stream)
        if self._prepared:
            return
        self._check_driver()
        s, capturing = self._resolve(stream)
        if capturing:
            raise CaptureError(
                "this course was built with prepare=False and is not prepared: call course.prepare() "
                f"before recording (loading a module inside a capture fails; recorded at {caller()})"
            )
        with self._scope(s):
            load_kernel_modules(self._order, self.device)
            exec_modes.any_set(self._zero_mask, self._flag)
            self._body(True, self._zero_mask)
        self._prepared = True

    def _warm_up(self) -> None:
        """Construction's prepare: one full regeneration, then the identity run."""
        with self._scope(self.stream):
            self._body(False, None)
        self.prepare()

    def _check_capacity(self) -> None:
        """Warn once when the course-chosen checkpoint capacity clips a valid env of the first batch."""
        c = self.components.get("checkpoints")
        clipped = getattr(c, "clipped", None)
        if c is None or getattr(c, "max_checkpoints", 0) is not None or not isinstance(clipped, wp.array):
            return
        hit = (clipped.numpy() != 0) & (self.result.valid.numpy() != 0)
        if hit.any():
            warnings.warn(
                f"the checkpoint capacity {getattr(c, 'capacity', '?')} chosen for max_checkpoints='auto' clips "
                f"{int(hit.sum())} valid env(s) of the first batch (envs {np.flatnonzero(hit)[:8].tolist()}); "
                "pass a larger max_checkpoints",
                stacklevel=4,
            )

    # -- the body -----------------------------------------------------------------------
    def _body(self, advance: bool, mask: wp.array | None) -> None:
        ctx = self._ctx
        if mask is None:
            self._filled = True
        self._running = ("generator", "enqueue")
        self.generator.enqueue(ctx, advance=advance, mask=mask)
        for c in self._order:
            self._running = (c.name, "on_generate")
            c.on_generate(ctx, mask)
        for c in self._reversed:
            self._running = (c.name, "reset")
            c.reset(ctx, mask)
        self._running = None

    def _enqueue(self, advance: bool, mask: wp.array | None, *, capturing: bool) -> None:
        if mask is None:
            self._body(advance, None)
        elif not exec_modes.conditional_now(self.device, capturing):
            self._body(advance, mask)
        else:
            exec_modes.any_set(mask, self._flag)
            self._running = None
            try:
                wp.capture_if(self._flag, on_true=lambda: self._body(advance, mask))
            except CaptureError:
                raise
            except RuntimeError as exc:
                # what Warp (and torch) raise for an operation a capture cannot hold; any other
                # exception, and one the component's own code raised, is raised as it would be eagerly
                running, self._running = self._running, None
                if running is None or not self.device.is_capturing or not raised_in_a_library(exc):
                    raise
                who, phase = running
                raise CaptureError(
                    f"{who}.{phase} could not be recorded in the conditional body of the masked regeneration: {exc}. "
                    "tools.check_component finds which operation a conditional body cannot hold; "
                    "exec.unconditional() records the body without the node"
                ) from exc

    def _record_here(self, advance: bool, mask: wp.array | None, s) -> None:
        """Record the body into the capture the caller is recording."""
        if not self._prepared:
            raise CaptureError(
                "this course was built with prepare=False and is not prepared: call course.prepare() before recording "
                f"(recorded at {caller()})"
            )
        if not self._capturable:
            raise NotCapturableError(
                f"the generator {self.generator!r} has a step that runs on the host (capturable=False): "
                f"regenerate outside a capture (recorded at {caller()})"
            )
        with self._scope(s):
            self._enqueue(advance, mask, capturing=True)
        retain(self.device, self, mask, stream=s)

    def _record_own(self, advance: bool, mask: wp.array | None, s) -> wp.Graph:
        """Record the variant ``(advance, mask)`` into a graph of the course's own."""
        with wp.ScopedCapture(device=self.device, stream=s, force_module_load=False) as capture:
            self._enqueue(advance, mask, capturing=True)
        return capture.graph

    # -- checks -------------------------------------------------------------------------
    def _check_driver(self) -> None:
        if self._taken_over:
            newer = "use that one" if driver_of(self.generator) is not None else (
                "that course is gone now, so build a new Course over the generator")
            raise RuntimeError(
                "this Course's generator is driven by another Course (one built later over the same generator, "
                f"which took it over): {newer}"
            )

    def _check_mask(self, mask):
        return check_mask(mask, self.num_envs, self.device)

    def _resolve(self, stream):
        return resolve_stream(self.device, self.stream, stream)

    def _scope(self, s):
        """Launch on ``s`` (None: the current stream); components read it as ``ctx.stream``."""
        return contextlib.nullcontext() if s is None else OnStream(self._ctx, s)


def _check_generator(generator) -> None:
    if isinstance(generator, (TrackGenConfig, GateGenConfig, PipelineSpec)):
        family = generator.family if isinstance(generator, PipelineSpec) else (
            "gates" if isinstance(generator, GateGenConfig) else "track")
        raise TypeError(
            f"Course() takes a built generator, got a {type(generator).__name__}: use {preset_for_family(family)}"
            f"(source, ...) (it builds the generator), or build one first"
        )
    missing = [name for name in _SURFACE if not hasattr(generator, name)]
    if generator is None or missing:
        raise TypeError(
            f"Course() takes a generator with the producer surface {list(_SURFACE)} (docs/producer-protocol.md); "
            f"{type(generator).__name__} lacks {missing or list(_SURFACE)}"
        )


def _preset_of(config: CourseConfig, stream):
    if config.mode == "track":
        return TrackPreset(config.gen if config.gen is not None else TrackGenConfig(),
                           checkpoint_spacing=config.checkpoint_spacing,
                           collision=config.collision, max_checkpoints=config.max_checkpoints, seeds=config.seeds,
                           stream=stream)
    return GatesPreset(config.gen if config.gen is not None else GateGenConfig(), collision=config.post_radius,
                       samples_per_gate=config.samples_per_gate, localize_window=config.localize_window,
                       seeds=config.seeds, stream=stream)


def _after_build(preset, generator) -> None:
    if isinstance(preset, GatesPreset):
        GatesPreset.guard_width(generator)
    else:
        preset.check_resolution(generator)


def _generator_state(generator) -> list[tuple[wp.array, wp.array]]:
    """``(array, copy)`` of what a regeneration writes that a course reads: the result's arrays,
    the live parameters (a randomized one is drawn again) and a program's plugin fields."""
    result = generator.result
    arrays = [getattr(result, f.name) for f in dataclasses.fields(result)] if dataclasses.is_dataclass(result) else []
    for mapping in (getattr(generator, "params", None), getattr(generator, "fields", None)):  # a Program's
        if isinstance(mapping, Mapping):
            arrays += [mapping[name] for name in mapping]
    saved = [(a, wp.clone(a)) for a in arrays if isinstance(a, wp.array)]
    if saved:
        wp.synchronize_device(saved[0][0].device)  # copied before the warm-up, which may launch on another stream
    return saved
