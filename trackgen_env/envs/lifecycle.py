"""What a course env does around its step: read-only settings after construction, memory probes,
release on ``close()``, and the refusal to be pickled or copied.

* :class:`ReadOnlyAfterConstruction`: the one read-only-after-construction mechanism (a course
  env's settings, a single env's, a sharded env's, a car's state); an object calls
  :meth:`~ReadOnlyAfterConstruction._freeze` once built, and setting or deleting a frozen
  attribute then raises AttributeError with the object's own message.
* :class:`CourseEnvLifecycle`: a course env's construction and end: which attributes freeze
  (every public one but ``live_fields``), the memory estimate from two small probe
  constructions (:mod:`trackgen_env.course.memory`), ``close()`` releasing every buffer and graph,
  and ``pickle`` / ``copy`` refused.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
from typing import Any

import numpy as np
import warp as wp
from gymnasium import spaces
from gymnasium.vector import VectorEnv

from ..core.checks import check_num_envs, resolve_device
from ..course import memory

__all__ = ["ReadOnlyAfterConstruction", "CourseEnvLifecycle", "EVERY_ATTRIBUTE", "is_setting"]


class _Everything(frozenset):
    """The frozen names of an object whose every attribute, a new one too, is read-only."""

    def __contains__(self, name) -> bool:
        return True


#: ``_freeze(EVERY_ATTRIBUTE)``: no attribute can be set or deleted afterwards, a new one neither.
EVERY_ATTRIBUTE = _Everything()


class ReadOnlyAfterConstruction:
    """Attributes that are read-only once the object is built.

    Before :meth:`_freeze` every attribute is set as usual; afterwards setting or deleting a
    frozen name raises ``AttributeError(self._read_only_message(name))``. A subclass that decides
    per name (a sharded env: the names its shards hold) overrides :meth:`_is_read_only`.
    """

    def _freeze(self, names) -> None:
        """Make ``names`` (an iterable, or :data:`EVERY_ATTRIBUTE`) read-only from now on."""
        self.__dict__["_frozen"] = names if isinstance(names, _Everything) else frozenset(names)

    def _is_read_only(self, name: str) -> bool:
        return name in self.__dict__.get("_frozen", ())

    def _read_only_message(self, name: str) -> str:
        return f"{type(self).__name__}.{name} is read-only after construction"

    def __setattr__(self, name, value):
        if self._is_read_only(name):
            raise AttributeError(self._read_only_message(name))
        super().__setattr__(name, value)

    def __delattr__(self, name):
        if self._is_read_only(name):
            raise AttributeError(self._read_only_message(name))
        super().__delattr__(name)


def is_setting(value) -> bool:
    """Whether ``value`` is a plain setting (a number, a name, a config, a space), not a buffer holder."""
    if value is None or isinstance(value, (bool, int, float, str, enum.Enum, np.generic, np.random.Generator,
                                           wp.Device, spaces.Space)):
        return True
    if isinstance(value, (tuple, list, frozenset)):
        return all(is_setting(v) for v in value)
    if isinstance(value, dict):
        return all(is_setting(v) for v in value.values())
    # CarParams, TrackGenConfig, ...: a frozen dataclass is a config
    return dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen


# (class, probe arguments) -> the measured parts of its two probes: constructions repeat,
# and a probe construction costs about a third of a small env's
_PROBES: dict = {}


class CourseEnvLifecycle(ReadOnlyAfterConstruction):
    """A course env's life around its step (see the module docstring): the base of
    :class:`~trackgen_env.envs.base.CourseVectorEnv`.

    An env using it sets ``course`` and ``_io`` (:class:`~trackgen_env.envs.io.EnvIO`), has
    ``live_fields``, ``argument_attributes``, ``num_envs``, ``device``, ``output``, ``render_mode``
    and ``render_size``, and calls :meth:`_freeze_settings` at the end of its construction.
    """

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        # the constructor's arguments, for the memory estimate's small probe constructions
        self.__dict__["_arguments"] = (args, kwargs)
        return self

    def __getattr__(self, name):
        # only called when the normal lookup fails: a buffer that close() released
        if name in self.__dict__.get("_released", ()):
            raise AttributeError(f"{type(self).__name__}.{name} was released by close(): the env is closed")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- read-only settings ------------------------------------------------------------------
    @classmethod
    def constructor_arguments(cls) -> tuple[str, ...]:
        """The names of the constructor's arguments."""
        return tuple(p for p in inspect.signature(cls.__init__).parameters if p != "self")

    @classmethod
    def argument_of(cls, attribute: str) -> str | None:
        """The constructor argument(s) an attribute keeps (``"track_config"`` -> ``"track"``), or None."""
        mapping = {}
        for klass in reversed(cls.__mro__):
            mapping.update(vars(klass).get("argument_attributes", {}))
        args = [a for a in cls.constructor_arguments() if mapping.get(a, a) == attribute]
        return " / ".join(f"{a}=" for a in args) or None

    def _read_only_message(self, name: str, owner: str | None = None) -> str:
        """Why ``name`` cannot be set, and what to do instead; ``owner``: the class named (default this env's)."""
        cls = owner or type(self).__name__
        arg = self.argument_of(name)
        how = (f"build a new env with {arg}..." if arg
               else "it is derived from the constructor's arguments: build a new env")
        return (f"{cls}.{name} is read-only: it is fixed at construction (the step graph and the buffers were built "
                f"from it); {how}")

    def _freeze_settings(self) -> None:
        """Make every public attribute and every public class setting read-only, but the live ones."""
        names = {n for n in self.__dict__ if not n.startswith("_")}
        for klass in type(self).__mro__:
            if klass is VectorEnv:
                break
            names.update(n for n, v in vars(klass).items()
                         if not n.startswith("_") and not callable(v) and not isinstance(v, (property, classmethod,
                                                                                              staticmethod)))
        self._freeze(names - set(self.live_fields))

    # -- memory probes -------------------------------------------------------------------------
    def _bound_arguments(self) -> dict[str, Any]:
        """The constructor's arguments by name, defaults filled in."""
        args, kwargs = self.__dict__.get("_arguments", ((), {}))
        bound = inspect.signature(type(self).__init__).bind(self, *args, **kwargs)
        bound.apply_defaults()
        return {k: v for k, v in bound.arguments.items() if k != "self"}

    def _construction_size(self) -> int:
        """The constructor's ``num_envs`` (what the memory probes scale): ``num_envs``, unless a
        subclass's batch holds several bodies per constructed env."""
        return self.num_envs

    def _refuse_if_too_big(self, arguments: dict[str, Any], shared: dict[str, Any]) -> None:
        """Raise MemoryError where the construction's estimate exceeds the device's memory;
        ``arguments``: the bound constructor arguments, ``shared``: the checked shared ones."""
        size = self._construction_size()
        if size > memory.PROBE_ENVS[-1]:  # (the probes themselves are not checked)
            estimate = type(self)._estimate(size, {**arguments, **shared})
            memory.check_fits(estimate, f"{type(self).__name__}(num_envs={self.num_envs})")

    @classmethod
    def memory_estimate(cls, num_envs: int, **kwargs) -> memory.MemoryEstimate:
        """The memory ``cls(num_envs, **kwargs)`` would allocate on its device, without allocating it.

        Built from two small constructions (``num_envs`` 1 and 2, ``capture=False``) measured
        per part and extrapolated linearly (:func:`trackgen_env.course.memory.memory_estimate`):
        ``"generator"``, each course component by name, ``"course"`` (its masks), the body
        state (``"state"`` / ``"drone"``), ``"env buffers"`` (observations, rewards, info,
        masks), on the CPU with NumPy outputs ``"numpy outputs"`` (one step's host copies),
        and with a ``render_mode`` ``"render frames"`` (allocated at the first ``render()``).

        Raises:
            TypeError / ValueError: the constructor's, for bad arguments (``num_envs`` an int >= 1
                among them, checked first, as there).
        """
        num_envs = check_num_envs(num_envs)
        probe_cls, params, takes_any = cls._probe_class()
        unknown = [] if takes_any else sorted(set(kwargs) - set(params) - {"self"})
        if unknown:  # as the constructor would refuse them (a typo must not give another env's figure)
            raise TypeError(f"{cls.__name__}.memory_estimate() got arguments {probe_cls.__name__}() does not take: "
                            f"{unknown}")
        return cls._estimate(num_envs, kwargs)

    @classmethod
    def _probe_class(cls):
        """The class an estimate builds: this one, or (a subclass whose constructor takes no
        ``num_envs``) the nearest base whose constructor does; its parameters, and whether it
        takes any keyword."""
        probe_cls = next(k for k in cls.__mro__ if "num_envs" in inspect.signature(k.__init__).parameters)
        params = inspect.signature(probe_cls.__init__).parameters
        return probe_cls, params, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    @classmethod
    def _estimate(cls, num_envs: int, kwargs: dict) -> memory.MemoryEstimate:
        """:meth:`memory_estimate` of checked arguments; the constructor's own check calls it with
        its bound arguments (a subclass's constructor may take others: they are left out)."""
        probe_cls, params, takes_any = cls._probe_class()
        kwargs = {**kwargs, "seed": 0, "capture": False}
        device = wp.get_device(resolve_device(kwargs.get("device")))
        kwargs["device"] = str(device)
        if not takes_any:
            kwargs = {k: v for k, v in kwargs.items() if k in params}
        try:
            key = (probe_cls, frozenset(kwargs.items()))
            hash(key)
        except TypeError:  # an unhashable argument (a centerline array): no caching
            key = None
        probes = _PROBES.get(key) if key is not None else None
        if probes is None:
            probes = memory.probe(lambda e: probe_cls(**{**kwargs, "num_envs": e}), lambda env: env.memory_usage())
            if key is not None:
                if len(_PROBES) >= 64:
                    _PROBES.pop(next(iter(_PROBES)))
                _PROBES[key] = probes
        return memory.extrapolate(probes, num_envs, device)

    def memory_usage(self) -> dict[str, int]:
        """Bytes of ``wp.array`` memory on the env's device, per part (the parts of :meth:`memory_estimate`).

        Raises:
            RuntimeError: the env is closed.
        """
        self.check_open()
        seen: set[int] = set()
        parts = memory.course_parts(self.course, device=self.device, seen=seen)
        buffers = 0
        for name, value in self.__dict__.items():
            if name == "course" or is_setting(value):
                continue
            b = memory.array_bytes(value, device=self.device, seen=seen)
            if isinstance(value, (wp.array, dict)) or name.startswith("_"):
                buffers += b
            elif b:
                parts[name] = b
        parts["env buffers"] = buffers
        if self.device.is_cpu and self.output == "numpy":
            io = self._io
            outputs = [io.obs, io.reward, io.terminated, io.truncated, *io.info.values()]
            if io.final_obs is not None:
                outputs += [io.final_obs, *io.final_info.values()]
            parts["numpy outputs"] = sum(int(a.capacity) for a in outputs)
        if self.render_mode is not None:
            size = self.render_size
            parts["render frames"] = self.num_envs * (size * size * 3 + 2 * 16)  # [E, H, W, 3] uint8 + [E, 2] vec4
        return parts

    # -- closing -----------------------------------------------------------------------------
    def close_extras(self, **kwargs) -> None:
        """Release the env's device memory (Gymnasium's ``VectorEnv.close`` calls this once).

        Waits for the device, then drops every reference the env holds to a buffer, a graph,
        the course or the body state (what is left are the settings: ``num_envs``, the
        spaces, ``car``, ...). After it ``step()``, ``reset()`` and ``render()`` raise
        RuntimeError, and a released attribute AttributeError; ``close()`` again is a no-op.
        """
        if self.__dict__.get("_window") is not None:  # render_mode="human"'s window
            self.__dict__.pop("_window").close()
        if "_frozen" in self.__dict__:  # fully constructed: work may still run on the device
            wp.synchronize_device(self.device)
        params = getattr(getattr(self.__dict__.get("course"), "generator", None), "params", None)
        if hasattr(params, "release"):  # a reference the user kept would set values nothing reads
            params.release(f"the env is closed ({type(self).__name__}.close() released its buffers and its course's "
                           "parameters): build a new env")
        released = [name for name, value in self.__dict__.items()
                    if name not in ("_arguments", "_frozen") and not is_setting(value)]
        for name in released:
            del self.__dict__[name]
        self.__dict__["_arguments"] = ((), {})
        self.__dict__["_released"] = frozenset(released)

    def __getstate__(self):
        """Refuse ``pickle`` and ``copy.deepcopy``: the env holds device arrays and recorded graphs,
        which neither can copy (they failed inside ctypes). A copy of an env is a new env of its
        arguments and seed.

        Raises:
            TypeError: always.
        """
        raise TypeError(
            f"a {type(self).__name__} cannot be pickled or copied (it holds Warp device arrays and recorded "
            "graphs): build another env with the same arguments, e.g. gymnasium.make_vec(env_id, num_envs, seed=...)"
        )

    def check_open(self) -> None:
        """Raises RuntimeError when the env is closed."""
        if self.closed:
            raise RuntimeError(f"the env is closed ({type(self).__name__}.close() released its buffers): build a new "
                               f"env")
