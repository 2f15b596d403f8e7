"""``check_component``: runs a component through the rules a course relies on (docs/writing-a-component.md)."""

from __future__ import annotations

import dataclasses

import numpy as np
import warp as wp

from ..core.capture import CaptureError, raise_site
from .component import ComponentContext
from .contract import POSITIONAL_INPUTS
from .ownership import driver_of

__all__ = ["check_component"]


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


def check_component(component, generator, *, inputs: dict | None = None, sources=()) -> None:
    """Run ``component`` through the contract of a course, on ``generator``'s device.

    Checks, in order (each failure raises, naming the method and where it failed):

    1. ``ComponentContext.add`` (name, methods, topology, requires, inputs), after adding
       ``sources`` (the components it names in ``after`` / ``source``), then one eager
       ``on_generate(ctx, None)`` and ``reset(ctx, None)`` (loads the Warp modules);
    2. after the generator regenerated every env (``enqueue(advance=True)``: this advances
       its counters), and with ``inputs`` after a ``step``, ``on_generate`` and ``reset`` with
       an all-zero mask change none of the component's arrays (unmasked envs' rows and state
       stay unchanged);
    3. ``on_generate`` and ``reset`` can be recorded inside a conditional body
       (``wp.capture_if`` under a capture), as the masked regeneration records them;
    4. with ``inputs`` (name -> array, as ``Course.bind`` takes them): ``on_generate`` and
       ``reset`` do not read a bound input (the same arrays result after a rebind to other
       values), and ``step`` runs eagerly and can be recorded.

    It regenerates ``generator`` (2): pass one of its own, not one a course drives.

    Raises:
        TypeError / ValueError: from ``ComponentContext.add``; ValueError for a contract
            violation of 1 (``on_generate`` / ``reset`` reading a bound input), 2 or 4, and for
            a generator that a live course drives. TypeError: an ``inputs`` name the
            component does not declare (other than the pose inputs every course takes,
            ``position``, ``orientation``, ``half_extents``, ``box_position``).
        CaptureError: a method cannot be recorded (3, 4).
    """
    if driver_of(generator) is not None:
        raise ValueError("check_component regenerates its generator (enqueue(advance=True)), and a Course drives this "
                         "one: its components would keep the old courses. Check on a generator of its own, e.g. "
                         "TrackGenerator(course.generator.spec, seeds=1)")
    ctx = ComponentContext(generator)
    for c in sources:
        ctx.add(c)
    declared = [spec.name for spec in getattr(component, "inputs", ())]
    unknown = sorted(set(inputs or {}) - set(declared) - set(POSITIONAL_INPUTS))  # as Course.bind takes them
    if unknown:
        raise TypeError(f"check_component: inputs {unknown} are not inputs of "
                        f"{getattr(component, 'name', component)!r}, "
                        f"which declares {declared}")
    ctx.add(component)
    name = component.name
    zero = wp.zeros(ctx.num_envs, dtype=wp.int32, device=ctx.device)

    def regenerate(mask):
        for phase in ("on_generate", "reset"):
            try:
                getattr(component, phase)(ctx, mask)
            except RuntimeError as exc:
                if not str(exc).startswith("call bind() before step()"):
                    raise
                raise ValueError(f"component {name!r}: {phase} reads a bound input ({exc})") from exc

    def unchanged_by_a_zero_mask(when: str) -> None:
        before = _snapshot(component)
        regenerate(zero)
        changed = [k for k, v in _snapshot(component).items() if before.get(k) != v]
        if changed:
            raise ValueError(f"component {name!r}: on_generate / reset with an all-zero mask {when} changed {changed}: "
                             "they must leave unmasked envs' rows and state unchanged")

    regenerate(None)
    # new courses for every env: a component that ignores the mask would pick them up
    generator.enqueue(ctx, advance=True)
    unchanged_by_a_zero_mask("after new courses")
    flag = wp.ones(1, dtype=wp.int32, device=ctx.device)
    for phase in ("on_generate", "reset"):
        method = getattr(component, phase)
        try:
            with wp.ScopedCapture(device=ctx.device, force_module_load=False) as capture:
                wp.capture_if(flag, on_true=lambda method=method: method(ctx, zero))
        except Exception as exc:
            raise CaptureError(f"component {name!r}: {phase} cannot be recorded in a conditional body "
                               f"(at {raise_site(exc)}): {exc}") from exc
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
    # after a step the state is the step's (a reset that ignores the mask would clear it)
    unchanged_by_a_zero_mask("after a step")
    try:
        with wp.ScopedCapture(device=ctx.device, force_module_load=False) as capture:
            component.step(ctx)
    except Exception as exc:
        raise CaptureError(f"component {name!r}: step cannot be recorded (at {raise_site(exc)}): {exc}") from exc
    component._step_captured = False
    wp.capture_launch(capture.graph)
