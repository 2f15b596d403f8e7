"""The component contract: what a course runs beside the user's simulation.

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
``attach`` and ``on_bind`` may be recorded into a graph. :func:`check_component` runs a
component through these rules (docs/writing-a-component.md).
"""

from __future__ import annotations

import dataclasses
import os
import traceback
import warnings
from dataclasses import dataclass

import numpy as np
import warp as wp

from ..capture import CaptureError, RebindAfterCaptureWarning

__all__ = [
    "InputSpec",
    "Component",
    "ComponentContext",
    "REQUIRED_METHODS",
    "check_name",
    "missing_methods",
    "check_component",
]

REQUIRED_METHODS = ("attach", "bind", "on_generate", "step", "reset")


def check_name(component) -> str:
    """``component.name`` when it is a non-empty str.

    Raises:
        TypeError: the name is missing, not a str, or empty.
    """
    name = getattr(component, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"a component name must be a non-empty str, got {name!r} on a {type(component).__name__}")
    return name


def missing_methods(component) -> list[str]:
    """The methods of the contract that ``component`` lacks (not callable attributes)."""
    return [m for m in REQUIRED_METHODS if not callable(getattr(component, m, None))]


@dataclass(frozen=True)
class InputSpec:
    """A per-env input array a component reads at ``step``.

    Attributes:
        name: the bind name (``position``, ``orientation``, ``half_extents``, ...).
        dtype: Warp dtype of the elements (``wp.vec3``, ``wp.quat``, ``wp.float32``, ...).
        slots: elements per env: the array is ``[E]`` when 1, else ``[E, slots]``.
        required: ``step()`` refuses to run while a required input is unbound.
        default: when this input is not given, route the array bound to this other name.
    """

    name: str
    dtype: object
    slots: int = 1
    required: bool = True
    default: str | None = None

    def shape(self, num_envs: int) -> tuple[int, ...]:
        return (num_envs,) if self.slots == 1 else (num_envs, self.slots)


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
        self.bound: dict[str, wp.array] = {}
        # Rebind-after-capture probe: set when a capture recorded this component's step();
        # the next bind warns once (that graph keeps the old arrays) and clears it.
        self._step_captured = False

    # -- the contract ------------------------------------------------------------------
    def attach(self, ctx: "ComponentContext") -> None:
        """Allocate buffers for ``ctx.num_envs`` envs on ``ctx.device``."""

    def bind(self, **arrays: wp.array) -> None:
        """Bind input arrays by name (a course binds through ``Course.bind``).

        Warns :class:`~trackgen_env.capture.RebindAfterCaptureWarning` (once per recorded
        capture) when a capture recorded this component's ``step()`` since the last bind.
        """
        probe = getattr(self, "_step_captured", False)
        if probe:
            warnings.warn(
                RebindAfterCaptureWarning(
                    f"component {self.name!r} was rebound after a capture recorded its step(): "
                    "that graph keeps reading the old arrays; record it again"
                ),
                stacklevel=2,
            )
        self._step_captured = False
        try:
            self.on_bind(dict(arrays))
        except BaseException:
            self._step_captured = probe
            raise

    def on_bind(self, arrays: dict[str, wp.array]) -> None:
        """Take the bound arrays; the default keeps them in ``self.bound``."""
        self.bound = dict(arrays)

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

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


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

    @property
    def result(self):
        """The generator's result."""
        return self.generator.result

    def mask(self, mask: wp.array | None) -> wp.array:
        """``mask``, or the all-envs mask when None: what kernels take."""
        return self.all_envs if mask is None else mask

    def source(self, component: Component):
        """The result ``component`` reads: its ``source`` component's, else the generator's."""
        if component.source is None:
            return self.generator.result
        return self.components[component.source].result

    def add(self, component: Component) -> None:
        """Check ``component``'s declared reads against what is here, then attach it.

        The checks, in order: the name (a non-empty str, not taken), the contract's methods,
        not attached elsewhere, the topology (every ``after`` / ``source`` name already
        added: add in execution order), ``requires`` (each a component here or a field of
        the source result; ``optional`` names need not exist), then the input declarations
        (a name declared again must have the same ``(dtype, slots)``). Only then
        ``component.attach(self)``.

        Raises:
            TypeError: a bad name, or a missing method of the contract.
            ValueError: the name is taken, the component is attached elsewhere, an ``after``
                / ``source`` / required name is missing, or an input conflicts.
        """
        name = check_name(component)
        if name in self.components:
            raise ValueError(f"component name {name!r} is taken: names are unique within a course")
        missing = missing_methods(component)
        if missing:
            raise TypeError(
                f"component {name!r} ({type(component).__name__}) lacks {missing}: "
                "subclass trackgen_env.tools.Component for the defaults"
            )
        if getattr(component, "context", None) is not None:
            raise ValueError(f"component {name!r} is already attached to another course or context: build a new instance")
        for dep in tuple(getattr(component, "after", ())):
            if dep not in self.components:
                raise ValueError(f"component {name!r} runs after {dep!r}, which is not added before it")
        source = getattr(component, "source", None)
        if source is not None and source not in self.components:
            raise ValueError(f"component {name!r} reads source {source!r}, which is not added before it")
        src = self.source(component)
        for req in tuple(getattr(component, "requires", ())):
            if req not in self.components and not hasattr(src, req):
                raise ValueError(
                    f"component {name!r} requires {req!r}: neither a component of this course "
                    f"nor a field of {type(src).__name__}"
                )
        specs = tuple(getattr(component, "inputs", ()))
        check_input_conflicts(self.inputs, self.declarers, name, specs)
        component.attach(self)
        component.context = self
        self.components[name] = component
        for spec in specs:
            self.inputs.setdefault(spec.name, spec)
            self.declarers.setdefault(spec.name, []).append(name)


def check_input_conflicts(inputs: dict, declarers: dict, name: str, specs) -> None:
    """Refuse an input of ``name``'s ``specs`` declared earlier with another ``(dtype, slots)``.

    Raises:
        TypeError: a declaration that is not an :class:`InputSpec`.
        ValueError: a conflicting declaration (the message names both declarers).
    """
    seen = {}
    for spec in specs:
        if not isinstance(spec, InputSpec):
            raise TypeError(f"component {name!r} declares an input that is not an InputSpec: {spec!r}")
        first = inputs.get(spec.name, seen.get(spec.name))
        if first is not None and (first.dtype, first.slots) != (spec.dtype, spec.slots):
            who = declarers.get(spec.name, [name])
            raise ValueError(
                f"input {spec.name!r} is declared by {who} as ({wp.types.type_repr(first.dtype)}, slots={first.slots}) "
                f"and by {name!r} as ({wp.types.type_repr(spec.dtype)}, slots={spec.slots}): one name, one (dtype, slots)"
            )
        seen[spec.name] = spec


def _arrays_of(component) -> dict[str, wp.array]:
    """Every ``wp.array`` a component holds: its attributes and the fields of its result."""
    found = {}
    for key, value in list(vars(component).items()) + [("result", getattr(component, "result", None))]:
        if key == "bound" or key == "context":
            continue
        if isinstance(value, wp.array):
            found[key] = value
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                v = getattr(value, f.name)
                if isinstance(v, wp.array):
                    found[f"{key}.{f.name}"] = v
    return found


def _snapshot(component) -> dict[str, bytes]:
    return {k: v.numpy().tobytes() for k, v in _arrays_of(component).items()}


def _where(exc: BaseException) -> str:
    """``file:line in function`` of the innermost frame of ``exc`` outside Warp."""
    warp_dir = os.path.dirname(os.path.abspath(wp.__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not os.path.abspath(f.filename).startswith(warp_dir)]
    f = frames[-1] if frames else None
    return "<unknown>" if f is None else f"{f.filename}:{f.lineno} in {f.name}"


def check_component(component, generator, *, inputs: dict | None = None, sources=()) -> None:
    """Run ``component`` through the contract of a course, on ``generator``'s device.

    Checks, in order (each failure raises, naming the method and where it failed):

    1. ``ComponentContext.add`` (name, methods, topology, requires, inputs), after adding
       ``sources`` (the components it names in ``after`` / ``source``), then one eager
       ``on_generate(ctx, None)`` and ``reset(ctx, None)`` (loads the Warp modules);
    2. after the generator regenerated every env (``enqueue(advance=True)``: this advances
       its counters), ``on_generate`` and ``reset`` with an all-zero mask change none of
       the component's arrays (unmasked envs' rows and state stay unchanged);
    3. ``on_generate`` and ``reset`` can be recorded inside a conditional body
       (``wp.capture_if`` under a capture), as the masked regeneration records them;
    4. with ``inputs`` (name -> array, as ``Course.bind`` takes them): ``on_generate`` and
       ``reset`` do not read a bound input (the same arrays result after a rebind to other
       values), and ``step`` runs eagerly and can be recorded.

    Raises:
        TypeError / ValueError: from ``ComponentContext.add``; ValueError for a contract
            violation of 2 or 4.
        CaptureError: a method cannot be recorded (3, 4).
    """
    ctx = ComponentContext(generator)
    for c in sources:
        ctx.add(c)
    ctx.add(component)
    name = component.name
    zero = wp.zeros(ctx.num_envs, dtype=wp.int32, device=ctx.device)

    def regenerate(mask):
        component.on_generate(ctx, mask)
        component.reset(ctx, mask)

    regenerate(None)
    before = _snapshot(component)
    # new courses for every env: a component that ignores the mask would pick them up
    generator.enqueue(ctx, advance=True)
    regenerate(zero)
    changed = [k for k, v in _snapshot(component).items() if before.get(k) != v]
    if changed:
        raise ValueError(f"component {name!r}: on_generate / reset with an all-zero mask changed {changed}: "
                         "they must leave unmasked envs' rows and state unchanged")
    flag = wp.ones(1, dtype=wp.int32, device=ctx.device)
    for phase in ("on_generate", "reset"):
        method = getattr(component, phase)
        try:
            with wp.ScopedCapture(device=ctx.device, force_module_load=False) as capture:
                wp.capture_if(flag, on_true=lambda method=method: method(ctx, zero))
        except Exception as exc:
            raise CaptureError(f"component {name!r}: {phase} cannot be recorded in a conditional body "
                               f"(at {_where(exc)}): {exc}") from exc
        wp.capture_launch(capture.graph)
    if inputs is None:
        return
    component.bind(**inputs)
    regenerate(None)
    first = _snapshot(component)
    other = {}
    for key, arr in inputs.items():
        other[key] = wp.empty_like(arr)
        values = arr.numpy()
        other[key].assign(np.full_like(values, 1e3) if np.issubdtype(values.dtype, np.floating) else values + 7)
    component.bind(**other)
    regenerate(None)
    read = [k for k, v in _snapshot(component).items() if first.get(k) != v and k in _arrays_of(component)]
    component.bind(**inputs)
    if read:
        raise ValueError(f"component {name!r}: on_generate / reset read a bound input (changed {read} after a rebind): "
                         "a course's own graphs never see a rebind, so they must not")
    component.step(ctx)
    try:
        with wp.ScopedCapture(device=ctx.device, force_module_load=False) as capture:
            component.step(ctx)
    except Exception as exc:
        raise CaptureError(f"component {name!r}: step cannot be recorded (at {_where(exc)}): {exc}") from exc
    component._step_captured = False
    wp.capture_launch(capture.graph)
