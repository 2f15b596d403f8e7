"""The component contract, checked in one place.

A course (``course/``) and a :class:`~trackgen_env.tools.ComponentContext` refuse the same
components with the same messages, because both call these checks:

* :func:`validate_structure`: names, the contract's methods, not attached elsewhere,
  ``after`` / ``source`` names (before anything attaches);
* :func:`validate_declarations`: one input name, one ``(dtype, slots)``;
* :func:`validate_inputs`: arrays against a component's :class:`InputSpec` s (dtype, shape,
  device) and the default routes;
* the rebind-after-capture probes (:func:`take_probes`, :func:`restore_probes`,
  :func:`mark_recorded`): a recorded ``step()`` sets a component's probe and the next bind
  warns once.

:class:`BoundInputs` holds what a component was bound to, and raises
``RuntimeError("call bind() before step()")`` when its step reads an input while a
required one is unbound.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import warp as wp

from ..core.capture import RebindAfterCaptureWarning
from ..core.checks import dtype_name

__all__ = [
    "InputSpec",
    "REQUIRED_METHODS",
    "POSITIONAL_INPUTS",
    "BoundInputs",
    "check_name",
    "missing_methods",
    "validate_structure",
    "validate_declarations",
    "validate_inputs",
    "take_probes",
    "warn_stale",
    "restore_probes",
    "mark_recorded",
]

REQUIRED_METHODS = ("attach", "bind", "on_generate", "step", "reset")

#: the pose inputs ``Course.bind`` accepts on every course (also positionally, in this order);
#: ignored when no component declares them
POSITIONAL_INPUTS = ("position", "orientation", "half_extents", "box_position")


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


class BoundInputs(dict):
    """A component's bound arrays, ``name -> wp.array``.

    Reading a name that is not bound raises ``RuntimeError("call bind() before step()")``
    while one of the component's required inputs is unbound (KeyError otherwise), so a
    ``step`` that reads its inputs refuses to run unbound without a check of its own.
    """

    def __init__(self, component_name: str, required: Iterable[str], arrays: Mapping | None = None):
        super().__init__(arrays or {})
        self._component_name = component_name
        self._required = tuple(required)

    def __missing__(self, key):
        missing = [name for name in self._required if name not in self]
        if missing:
            raise RuntimeError(f"call bind() before step(): {self._component_name!r} needs {', '.join(missing)} (read "
                               "in on_generate or reset? only step may read a bound input: a course's recorded "
                               "graphs never see a rebind)")
        raise KeyError(key)


# -- structure ------------------------------------------------------------------------------
def check_name(component) -> str:
    """``component.name`` when it is a non-empty str.

    Raises:
        TypeError: the name is missing, not a str, or empty.
    """
    name = getattr(component, "name", None)
    if name is None and len(missing_methods(component)) == len(REQUIRED_METHODS):
        raise TypeError(f"expected a component (a name and the methods {list(REQUIRED_METHODS)}), got a "
                        f"{type(component).__name__}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"a component name must be a non-empty str, got {name!r} on a {type(component).__name__}")
    return name


def missing_methods(component) -> list[str]:
    """The methods of the contract that ``component`` lacks (not callable attributes)."""
    return [m for m in REQUIRED_METHODS if not callable(getattr(component, m, None))]


def validate_structure(components, *, added: Iterable[str] = (), ordered: bool = False) -> None:
    """Check ``components`` (a list) before any of them attaches; nothing is changed.

    Args:
        components: the components to check.
        added: names of components already in the context (taken, and valid ``after`` /
            ``source`` targets).
        ordered: ``after`` / ``source`` must name a component added before (in ``added``
            or earlier in ``components``); else any component of ``added`` or
            ``components``.

    Raises:
        TypeError: a name that is not a non-empty str; a component lacking one of attach,
            bind, on_generate, step, reset; an ``after`` that is not a sequence of names.
        ValueError: two components with one name; a component attached to another course
            or context; an ``after`` / ``source`` naming no such component.
    """
    names = [check_name(c) for c in components]
    for c in components:
        missing = missing_methods(c)
        if missing:
            raise TypeError(
                f"component {c.name!r} ({type(c).__name__}) lacks {missing}: "
                "subclass trackgen_env.tools.Component for the defaults"
            )
    seen = set(added)
    for name in names:
        if name in seen:
            raise ValueError(f"two components are named {name!r}: names are unique within a course")
        seen.add(name)
    for c in components:
        if getattr(c, "context", None) is not None:
            raise ValueError(f"component {c.name!r} is already attached to another course or context: build a new "
                             f"instance")
    before = list(added)
    for c in components:
        after = getattr(c, "after", ())
        if isinstance(after, str) or not all(isinstance(a, str) for a in after):
            raise TypeError(f"component {c.name!r}: after must be a sequence of names, got {after!r}")
        source = getattr(c, "source", None)
        known = before if ordered else seen
        for dep in list(after) + ([source] if source is not None else []):
            if dep not in known:
                kind = "source" if dep == source else "after"
                where = "not added before it (add in execution order)" if ordered else "no component of this course"
                raise ValueError(f"component {c.name!r} names {dep!r} in its {kind}, which is {where}; "
                                 f"components: {before if ordered else names}")
        before.append(c.name)


def validate_declarations(inputs: dict, declarers: dict, name: str, specs) -> None:
    """Refuse an input of ``name``'s ``specs`` declared earlier with another ``(dtype, slots)``.

    Args:
        inputs: bind name -> the first :class:`InputSpec` declared for it so far.
        declarers: bind name -> names of the components declaring it so far.

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
                f"input {spec.name!r} is declared by {who} as ({dtype_name(first.dtype)}, slots={first.slots}) "
                f"and by {name!r} as ({dtype_name(spec.dtype)}, slots={spec.slots}): one name, one (dtype, slots)"
            )
        seen[spec.name] = spec


# -- inputs ---------------------------------------------------------------------------------
def validate_inputs(component, arrays: Mapping, *, num_envs: int | None = None, device=None,
                    missing: list | None = None) -> dict:
    """The arrays of ``arrays`` that ``component`` declares, checked, with the default routes.

    An input that is not given takes the array of its ``InputSpec.default`` name (a name
    given explicitly wins); names the component does not declare are ignored. Shape and
    device are checked when ``num_envs`` / ``device`` are given (an attached component).

    Args:
        missing: when given, each required input that stays unbound is appended to it
            (``"'name' (component 'c')"``).

    Raises:
        TypeError: a declared input that is not a ``wp.array`` or has another dtype.
        ValueError: another shape, or another device.
    """
    bound = {}
    for spec in component.inputs:
        via, arr = spec.name, arrays.get(spec.name)
        if arr is None and spec.default is not None:
            via, arr = spec.default, arrays.get(spec.default)
        if arr is None:
            if spec.required and missing is not None:
                missing.append(f"{spec.name!r} (component {component.name!r})")
            continue
        _check_input(component.name, spec, arr, via, num_envs, device)
        bound[spec.name] = arr
    return bound


def _check_input(component_name: str, spec: InputSpec, arr, via: str, num_envs, device) -> None:
    shape = None if num_envs is None else spec.shape(num_envs)
    want = (f"a wp.array of dtype {dtype_name(spec.dtype)}" if shape is None else
            f"a wp.array of shape {shape}, dtype {dtype_name(spec.dtype)} on {device}")
    where = f"input {spec.name!r} of component {component_name!r}" + (
        f" (routed from {via!r})" if via != spec.name else "")
    if not isinstance(arr, wp.array):
        raise TypeError(f"{where} must be {want}, got {type(arr).__name__} (wrap a tensor with wp.from_torch)")
    if not wp.types.types_equal(arr.dtype, spec.dtype):
        raise TypeError(f"{where} must be {want}, got dtype {dtype_name(arr.dtype)}")
    if shape is not None and tuple(arr.shape) != shape:
        raise ValueError(f"{where} must be {want}, got shape {tuple(arr.shape)}")
    if device is not None and arr.device != device:
        raise ValueError(f"{where} must be {want}, got an array on {arr.device}")


# -- rebind after a capture -----------------------------------------------------------------
def take_probes(components, *, stacklevel: int | None) -> list[str]:
    """Clear the rebind-after-capture probes of ``components``; warn once if any was set
    (``stacklevel=None``: not yet, :func:`warn_stale` once the bind succeeded).

    Returns the names of the components whose probe was set (give them to
    :func:`restore_probes` if the bind fails).
    """
    stale = [c.name for c in components if getattr(c, "_step_captured", False)]
    if stacklevel is not None:
        warn_stale(stale, stacklevel=stacklevel + 1)
    for c in components:
        if c.name in stale:
            c._step_captured = False
    return stale


def warn_stale(stale: list[str], *, stacklevel: int) -> None:
    """Warn :class:`RebindAfterCaptureWarning` once when ``stale`` (from :func:`take_probes`) names a component."""
    if stale:
        warnings.warn(
            RebindAfterCaptureWarning(
                f"bind() after a capture recorded step() of {stale}: that graph keeps reading the old arrays; "
                "record it again"
            ),
            stacklevel=stacklevel + 1,
        )


def restore_probes(components, stale: list[str]) -> None:
    """Set the probes :func:`take_probes` cleared again (a refused bind changes nothing)."""
    for c in components:
        if c.name in stale:
            c._step_captured = True


def mark_recorded(components) -> None:
    """Set the probe of each component whose ``step()`` a capture just recorded."""
    for c in components:
        try:
            c._step_captured = True
        except AttributeError:  # an object of your own that refuses new attributes
            pass
