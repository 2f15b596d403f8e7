"""``Component`` (the base class of the contract) and ``ComponentContext`` (what it sees of a course).

A component has a ``name`` (unique within a course), ``after`` (names it runs after),
``source`` (the name of the component whose result it reads instead of the generator
result, e.g. a course line), declared ``inputs`` (:class:`InputSpec`), ``requires`` /
``optional`` (generator result fields or component names), and five methods:

=================  =========================================================================
``attach(ctx)``    allocate every buffer (the only place a component allocates)
``on_bind(a)``     take the bound input arrays ``a`` (name -> ``wp.array``)
``on_generate``    ``(ctx, mask)``: refresh per-generation data from the source for the masked
                   envs (``mask`` is an ``[E] int32`` array, or None for all envs); leave
                   unmasked envs' rows and state unchanged; never read a bound input
``step(ctx)``      per-step work reading the bound inputs; fills ``result``
``reset(ctx, m)``  reset per-episode state of the masked envs only; never read a bound input
=================  =========================================================================

Nothing allocates or synchronises with the host after ``attach``: every method but
``attach`` and ``on_bind`` may be recorded into a graph. The checks of the contract live
in :mod:`.contract`; :func:`~trackgen_env.tools.check_component` runs a component
through its rules (docs/writing-a-component.md).
"""

from __future__ import annotations

import warp as wp

from ..core import env_loop
from .contract import (
    BoundInputs,
    InputSpec,
    restore_probes,
    take_probes,
    warn_stale,
    validate_declarations,
    validate_inputs,
    validate_structure,
)

__all__ = ["Component", "ComponentContext", "is_per_step", "step_components"]


class Component:
    """Base class of components: every method of the contract with a no-op default.

    Subclasses set ``inputs``/``requires``/``optional`` and override what they need.
    ``result`` is what ``StepResult[name]`` (per-step components) or
    ``course.components[name].result`` (per-generation components) return; ``utility``
    is what the course attribute of the built-in name returns (``course.progress``, ...).

    Args:
        name: unique within the course (non-empty str; namespace third-party names,
            e.g. ``"acme.lookahead"``).
        after: names of components this one runs after.
        source: name of the component whose result this one reads (default: the
            generator result).
    """

    inputs: tuple[InputSpec, ...] = ()
    requires: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def __init__(self, name: str, *, after: tuple[str, ...] | list[str] | str = (), source: str | None = None):
        self.name = name
        self.after = (after,) if isinstance(after, str) else tuple(after)
        self.source = source
        self.context: ComponentContext | None = None
        self.bound: BoundInputs = self._bound({})
        # Rebind-after-capture probe: set when a capture recorded this component's step();
        # the next bind warns once (that graph keeps the old arrays) and clears it.
        self._step_captured = False

    # -- the contract ------------------------------------------------------------------
    def attach(self, ctx: "ComponentContext") -> None:
        """Allocate buffers for ``ctx.num_envs`` envs on ``ctx.device``."""

    def bind(self, **arrays: wp.array) -> None:
        """Bind input arrays by name (a course binds through ``Course.bind``).

        The declared inputs among ``arrays`` are checked (dtype; shape and device once
        attached) and the default routes applied (``InputSpec.default``); names the
        component does not declare are ignored. ``on_bind`` then takes them, as a
        :class:`~trackgen_env.tools.contract.BoundInputs` (reading an input while a
        required one is unbound raises ``RuntimeError("call bind() before step()")``).

        Raises:
            TypeError / ValueError: a declared input of another type, dtype, shape or device.

        Warns:
            RebindAfterCaptureWarning: once per recorded capture, when the bind succeeded and a
                capture recorded this component's ``step()`` since the last bind.
        """
        stale = take_probes([self], stacklevel=None)
        try:
            ctx = self.context
            checked = validate_inputs(self, arrays, num_envs=None if ctx is None else ctx.num_envs,
                                      device=None if ctx is None else ctx.device)
            self.on_bind(self._bound(checked))
        except BaseException:
            restore_probes([self], stale)
            raise
        warn_stale(stale, stacklevel=2)

    def on_bind(self, arrays: BoundInputs) -> None:
        """Take the bound arrays; the default keeps them in ``self.bound``."""
        self.bound = arrays

    def on_generate(self, ctx: "ComponentContext", mask: wp.array | None) -> None:
        """Refresh per-generation data for the masked envs."""

    def step(self, ctx: "ComponentContext") -> None:
        """Per-step work; the base ``step`` marks a per-generation component."""

    def reset(self, ctx: "ComponentContext", mask: wp.array | None) -> None:
        """Reset per-episode state of the masked envs."""

    @property
    def result(self):
        """What this component produces (None when it produces nothing)."""
        return None

    @property
    def utility(self):
        """What the course attribute of this component's name returns (default: itself)."""
        return self

    @property
    def is_per_step(self) -> bool:
        """True when the component overrides ``step`` (it is then a ``StepResult`` entry)."""
        return type(self).step is not Component.step

    def _bound(self, arrays: dict) -> BoundInputs:
        return BoundInputs(self.name, (s.name for s in self.inputs if s.required), arrays)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def is_per_step(component) -> bool:
    """Whether a course steps ``component`` (and lists its result in ``StepResult``).

    Its ``is_per_step`` when it says (a bool), else whether its class overrides
    :meth:`Component.step` (an object of your own with a ``step`` is per-step).
    """
    flag = getattr(component, "is_per_step", None)
    if isinstance(flag, bool):
        return flag
    return getattr(type(component), "step", None) is not Component.step


def step_components(components, ctx) -> None:
    """Step ``components`` in order: ``c.step(ctx)`` each, except that a component with a
    ``step_with(ctx, next)`` that returns True has run its own step and the next one's (a
    fused kernel with the same results), and the next one is skipped."""
    i, count = 0, len(components)
    while i < count:
        c = components[i]
        fuse = getattr(c, "step_with", None)
        if i + 1 < count and fuse is not None and fuse(ctx, components[i + 1]):
            i += 2
            continue
        c.step(ctx)
        i += 1


class ComponentContext:
    """What a component sees of its course: the generator, the device, the other components.

    Attributes:
        generator: the course's generator (``result``, ``layout``, ``params``, ...).
        num_envs: ``E``.
        device: the ``wp.Device``.
        stream: the stream to launch on: the course's default stream, or a call's
            ``stream=`` while that call runs (None: the device's current stream).
        components: name -> component added so far, in execution order.
        inputs: bind name -> the first :class:`InputSpec` declared for it.
        declarers: bind name -> names of the components declaring it.
        all_envs: an ``[E] int32`` array of ones (the mask of every env).
        step_mask: the envs of the step being launched (``[E] int32``, nonzero: this env): None
            (every env) but inside ``Course.step(mask=m)``, where it is ``m``. A per-step kernel
            may skip the other envs (the built-ins do: :meth:`launch_step`); one that steps every
            env is correct too (the course steps with a mask only where the other envs are as
            they were after their last step: a restart).
    """

    def __init__(self, generator, *, stream=None):
        self.generator = generator
        self.num_envs = int(generator.layout.num_envs)
        self.device = wp.get_device(generator.device)
        self.stream = stream
        self.components: dict[str, Component] = {}
        # bind name -> (dtype, slots) of its first declaration, and the components declaring it
        self.inputs: dict[str, InputSpec] = {}
        self.declarers: dict[str, list[str]] = {}
        self.all_envs = wp.ones(self.num_envs, dtype=wp.int32, device=self.device)
        self.step_mask = None

    @property
    def result(self):
        """The generator's result."""
        return self.generator.result

    def mask(self, mask: wp.array | None) -> wp.array:
        """``mask``, or the all-envs mask when None: what kernels take."""
        return self.all_envs if mask is None else mask

    def source(self, component: Component):
        """The result ``component`` reads: its ``source`` component's, else the generator's."""
        source = getattr(component, "source", None)  # a component of the contract need not have one
        if source is None:
            return self.generator.result
        return self.components[source].result

    def lanes(self, count: int) -> int:
        """Threads per env of a per-generation kernel looping over ``count`` items (points,
        checkpoints, gates): 1 on the CPU, where a launch runs on one thread (and the envs
        themselves share one thread: :mod:`trackgen_env.core.env_loop`); ``min(64, count)`` on
        CUDA, where the lanes run in parallel."""
        return env_loop.lanes(self.device, count)

    def launch(self, kernel, dim, inputs) -> None:
        """Launch ``kernel`` on the course's device and stream (the current stream when it has none)."""
        wp.launch(kernel, dim=dim, inputs=inputs, device=self.device, stream=self.stream)

    def launch_envs(self, kernel, inputs, lanes: int = 0) -> None:
        """Launch a per-env kernel written for :mod:`trackgen_env.core.env_loop` (its first argument
        ``envs_per_thread``, then ``inputs``): one thread over every env on the CPU, a thread
        per env on CUDA; ``lanes`` > 0 adds that many threads per env (a second dimension)."""
        threads, per = env_loop.shape(self.device, self.num_envs)
        self.launch(kernel, (threads, lanes) if lanes else threads, [per, *inputs])

    def launch_step(self, kernel, inputs) -> None:
        """:meth:`launch_envs` of a per-step kernel whose first input is the step's mask
        (``step_mask``, or every env): it skips the envs outside it."""
        self.launch_envs(kernel, [self.mask(self.step_mask), *inputs])

    def add(self, component: Component) -> None:
        """Check ``component``'s declared reads against what is here, then attach it.

        The checks (:mod:`.contract`): the name (a non-empty str, not taken), the
        contract's methods, not attached elsewhere, the topology (every ``after`` /
        ``source`` name already added: add in execution order), ``requires`` (each a
        component here or a field of the source result; ``optional`` names need not
        exist), then the input declarations (a name declared again must have the same
        ``(dtype, slots)``). Only then ``component.attach(self)``.

        Raises:
            TypeError: a bad name, or a missing method of the contract.
            ValueError: the name is taken, the component is attached elsewhere, an ``after``
                / ``source`` / required name is missing, or an input conflicts.
        """
        validate_structure([component], added=self.components, ordered=True)
        name = component.name
        src = self.source(component)
        for req in tuple(getattr(component, "requires", ())):
            if req not in self.components and not hasattr(src, req):
                raise ValueError(
                    f"component {name!r} requires {req!r}: neither a component of this course "
                    f"nor a field of {type(src).__name__}"
                )
        specs = tuple(getattr(component, "inputs", ()))
        validate_declarations(self.inputs, self.declarers, name, specs)
        component.attach(self)
        component.context = self
        self.components[name] = component
        for spec in specs:
            self.inputs.setdefault(spec.name, spec)
            self.declarers.setdefault(spec.name, []).append(name)
