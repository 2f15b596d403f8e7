"""The machinery the course envs share: spaces, one recorded step, the autoreset modes, rendering.

:class:`CourseVectorEnv` is a ``gymnasium.vector.VectorEnv`` over a
:class:`~trackgen_env.course.Course` and a batch of bodies (a car, a quadrotor). A
subclass builds its course, its state and its spaces, then calls :meth:`_finish_init`;
it supplies only what differs between envs:

* ``body`` (the attribute ``_body_attribute`` names): a :class:`~trackgen_env.envs.body.Body`
  (the cars, the quadrotors) whose ``pose()`` the course binds, and whose ``step`` the dynamics
  call;
* ``_start(reset_mask)``: the launches drawing the masked envs' start poses (and velocities) on
  their course; the dynamics then put the masked envs there and, unless ``reset_only``,
  advance the others one ``dt`` under ``self._action`` (``body.step``);
* ``_observe(res, reset_mask, restart)``: one launch (after ``course.step()``, whose
  :class:`~trackgen_env.course.StepResult` is ``res``) writing the observations only; masked
  envs get their first observation; with ``restart`` True the unmasked envs are left untouched;
* ``_reward_termination(res, reset_mask, restart)``: one launch (after ``_observe``) writing
  reward, termination, the info arrays and ``self._autoreset`` (1 where the env ended); masked
  envs get reset info, and (``restart`` False) reward 0 and not done; with ``restart`` True the
  unmasked envs are left untouched and the masked envs' reward and termination are kept (they
  are the ended episode's);
* ``_draw(frames, views, num)``: the launches drawing the first ``num`` envs into ``frames``
  (``[num, H, W, 3]`` uint8; ``views`` is their scratch, :mod:`trackgen_env.envs.render`).

The step is recorded once as a graph (Warp's CPU graph capture on the CPU, a CUDA graph on
CUDA) and replayed by :meth:`step`; the bodies per autoreset mode:

============  ===============================================================================
NEXT_STEP     ``regenerate(mask=autoreset, advance=True)`` -> dynamics (masked envs reset,
              the action ignored) -> ``course.step()`` -> observe -> reward and termination
SAME_STEP     dynamics -> ``course.step()`` -> observe -> reward and termination -> copy obs
              and info to the final buffers -> ``regenerate(mask=autoreset, advance=True)`` ->
              if any env ended: dynamics (masked envs only) -> ``course.step(mask=)`` ->
              observe -> reward and termination (masked envs only)
DISABLED      dynamics -> ``course.step()`` -> observe -> reward and termination;
              ``reset(options={"reset_mask": m})`` replays ``regenerate(mask=m, advance=True)``
              -> the SAME_STEP restart
============  ===============================================================================

The masked regeneration holds the course's ``any(mask)`` conditional, so a step where no
env ends skips it on device. The host side (the action in, NumPy or torch outputs out) is
:mod:`trackgen_env.envs.io`.

Around the step (:mod:`trackgen_env.envs.lifecycle`): a construction first refuses what cannot
fit in the device's memory (an estimate from two small probe constructions); after it every
attribute is read-only but the live ones (a recorded graph would ignore a new value);
``close()`` releases every buffer and graph, and the env refuses use after it.
"""

from __future__ import annotations

import math
import warnings
from types import MappingProxyType
from typing import Any

import gymnasium
import numpy as np
import warp as wp
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ..core import exec as exec_modes
from ..core.checks import check_bool, check_int, check_num_envs, check_seed, resolve_device
from ..pipeline.program import RESET_MIN_INVALID
from .viewer import HUMAN_ENVS, Window, require_pygame, tile
from .io import EnvIO, HostOutputs, check_output, host_bool_mask
from .body import Body
from .lifecycle import CourseEnvLifecycle

__all__ = ["CourseVectorEnv", "EnvMetadata", "SharedEnvCalls", "autoreset_mode", "auto_episode_steps", "check_limit",
           "obs_layout", "INT32_MAX"]

#: The largest value of the device's int32 counters (episode steps, laps).
INT32_MAX = 2**31 - 1


def obs_layout(*fields: tuple[str, int]) -> tuple[tuple[str, int, int], ...]:
    """``(name, size)`` observation fields, in order -> their index ranges ``(name, start, stop)``."""
    out, start = [], 0
    for name, size in fields:
        out.append((name, start, start + size))
        start += size
    return tuple(out)


def autoreset_mode(value) -> AutoresetMode:
    """An :class:`~gymnasium.vector.AutoresetMode`, its value (``"NextStep"``) or its name (``"next_step"``).

    Raises:
        ValueError: anything else.
    """
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        for mode in AutoresetMode:
            if value == mode.value or value.upper() == mode.name:
                return mode
    raise ValueError(
        f"autoreset_mode must be a gymnasium.vector.AutoresetMode or one of "
        f"{[m.value for m in AutoresetMode]}, got {value!r}"
    )


def auto_episode_steps(default: int, laps, lap_length: float, min_speed: float, dt: float) -> int:
    """What ``max_episode_steps="auto"`` stands for on a given course (a real circuit, a race layout):
    the env's ``default``, or the steps of ``laps`` laps (1 for None or a bad value, refused later)
    of ``lap_length`` [m] at an average of ``min_speed`` [m/s] when more; at most ``2**31 - 1``."""
    lap_count = laps if isinstance(laps, int) and not isinstance(laps, bool) and laps >= 1 else 1
    return min(INT32_MAX, max(default, math.ceil(lap_count * lap_length / (min_speed * dt))))


def check_limit(name: str, value, auto: int | None = None) -> int | None:
    """An episode limit: None (no limit), an int in ``[1, 2**31 - 1]`` (the device counts in int32),
    or, where the env has a default (``auto`` not None), ``"auto"``: that default.

    The one check of ``max_episode_steps`` and ``laps`` for every course env, so that the same bad
    value raises the same exception in each.

    Args:
        name: the argument's name, for the messages.
        value: the value to check.
        auto: the env's own default limit, which ``"auto"`` stands for; None: ``"auto"`` is refused.

    Returns:
        None or the limit as a Python int.

    Raises:
        TypeError: neither None, an int, nor (with ``auto``) ``"auto"``; another string among them.
        ValueError: an int outside ``[1, 2**31 - 1]``.
    """
    expected = ('None (no limit), an int or "auto" (the env\'s default)' if auto is not None
                else "None (no limit) or an int")
    if value is None:
        return None
    if auto is not None and isinstance(value, str) and value == "auto":
        value = auto
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__} {value!r}")
    if not 1 <= value <= INT32_MAX:
        raise ValueError(f"{name} must be None (no limit) or an int in [1, 2**31 - 1] (the device counts it in "
                         f"int32), got {value}")
    return int(value)


class EnvMetadata(dict):
    """A vector env's ``metadata``: a dict whose ``"autoreset_mode"`` is fixed once set.

    The step graph was recorded for the construction's autoreset mode, and Gymnasium's wrappers
    (``RecordEpisodeStatistics``, ``NormalizeObservation``) read the key to know it: a write of
    another mode, or removing the key, raises instead of leaving the key saying one mode while
    the env steps another. Writing the mode it holds (the same value or its name) changes
    nothing; the other keys (``render_fps``, which video wrappers read) are plain dict entries.
    A copy (``copy.deepcopy``, a wrapper's) is an ``EnvMetadata`` of the same entries.

    Raises:
        TypeError: setting ``"autoreset_mode"`` to another mode, deleting or popping it, ``clear()``.
    """

    _KEY = "autoreset_mode"

    def _refuse(self, what: str) -> TypeError:
        return TypeError(f"metadata[{self._KEY!r}] is fixed at construction (the step graph was recorded for "
                         f"{self[self._KEY]}): {what}; build a new env with autoreset_mode=...")

    def __setitem__(self, key, value) -> None:
        if key == self._KEY and key in self:
            try:
                same = autoreset_mode(value) is self[key]
            except ValueError:
                same = False
            if not same:
                raise self._refuse(f"got {value!r}")
            return  # the mode it holds: nothing changes
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        if key == self._KEY:
            raise self._refuse("it cannot be deleted")
        super().__delitem__(key)

    def update(self, *args, **kwargs) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other):
        self.update(other)
        return self

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key, *default):
        if key == self._KEY and key in self:
            raise self._refuse("it cannot be popped")
        return super().pop(key, *default)

    def popitem(self):
        if self and next(reversed(self)) == self._KEY:
            raise self._refuse("popitem() would remove it")
        return super().popitem()

    def clear(self) -> None:
        if self._KEY in self:
            raise self._refuse("clear() would remove it")
        super().clear()


class SharedEnvCalls:
    """Gymnasium's ``call``, ``get_attr`` and ``set_attr`` for a vector env that is one object for
    all its envs (a course env, a sharded env): the per-env answers ``SyncVectorEnv`` gives, where
    the envs have no Python objects of their own.

    * ``call(name, *args, **kwargs)``: a tuple of ``num_envs`` results. ``"render"`` gives each
      env's frame (None each without ``render_mode``); ``"observation_space"`` and
      ``"action_space"`` each env's space (the single spaces); any other name is the vector env's
      attribute, called once with the arguments where it is a method, its value (or result)
      once per env (the same object each time).
    * ``get_attr(name)``: ``call(name)``, as ``SyncVectorEnv``'s.
    * ``set_attr(name, values)``: ``values`` one value, or ``num_envs`` equal values (a list or a
      tuple), set once on the vector env: a live attribute (``render_mode``, ``render_size``) takes
      it; a setting fixed at construction raises its AttributeError.

    Raises:
        AttributeError: no attribute ``name`` (``call``, ``get_attr``), or a read-only one (``set_attr``).
        ValueError: ``set_attr`` values of another length than ``num_envs``, or values that
            differ between envs (the envs share the one attribute).
    """

    #: names whose per-env value is another attribute of the vector env
    _PER_ENV_ATTRIBUTES = MappingProxyType({"observation_space": "single_observation_space",
                                            "action_space": "single_action_space"})

    def call(self, name: str, *args, **kwargs) -> tuple:
        """See the class docstring; returns a tuple of ``num_envs`` results."""
        if name == "render":
            frames = self.render(*args, **kwargs)
            return (None,) * self.num_envs if frames is None else tuple(frames)
        value = getattr(self, self._PER_ENV_ATTRIBUTES.get(name, name))
        result = value(*args, **kwargs) if callable(value) else value
        return (result,) * self.num_envs

    def get_attr(self, name: str) -> tuple:
        """Each env's attribute ``name``: ``call(name)``."""
        return self.call(name)

    def set_attr(self, name: str, values) -> None:
        """Set the attribute ``name`` of every env to one value (see the class docstring)."""
        if not isinstance(values, (list, tuple)):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError("Values must be a list or tuple with length equal to the number of environments. "
                             f"Got `{len(values)}` values for {self.num_envs} environments.")
        if any(not _equal(v, values[0]) for v in values[1:]):
            raise ValueError(f"{type(self).__name__}.set_attr({name!r}): the envs share one attribute (one vector env "
                             f"holds them all), so every env takes the same value; got different values {values!r}")
        setattr(self, name, values[0])


def _equal(a, b) -> bool:
    """Whether two values are one value (an array compares whole)."""
    if a is b:
        return True
    try:
        return bool(np.all(a == b)) and type(a) is type(b)
    except (TypeError, ValueError):
        return False


class CourseVectorEnv(CourseEnvLifecycle, SharedEnvCalls, VectorEnv):
    """Base class of the course envs (see the module docstring); not registered itself.

    Attributes after construction: every public attribute set while constructing (the
    constructor's arguments as checked, the spaces, ``course``, the body state, the graphs)
    and every public class setting is **read-only**: the recorded step graph and the
    buffers were built from it, so setting it raises ``AttributeError`` (naming the
    constructor argument to change) instead of being silently ignored. The exceptions
    are :attr:`live_fields` (``render_mode``, ``render_size``), which the next call uses.
    Configs and body parameters (``car``, ``quadrotor``, ``track_config``) are frozen
    dataclasses.

    Subclass attributes:
        action_labels: the action's components for error messages, e.g. ``"(steering, throttle)"``.
        info_fields: ``(name, dtype)`` of the per-env info arrays ``step()`` returns (``self._info[name]``).
        argument_attributes: constructor argument -> the attribute that keeps it when the
            names differ (``{"track": "track_config"}``), or None where no attribute keeps
            it (``seed``: the course's seeds; ``capture``: ``graph is None``).
    """

    #: Attributes the next step / render uses, settable after construction (validated).
    live_fields: tuple[str, ...] = ("render_mode", "render_size")
    argument_attributes: dict[str, str | None] = {"seed": None, "capture": None}

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 20, "autoreset_mode": AutoresetMode.NEXT_STEP}
    action_labels = ""
    info_fields: tuple[tuple[str, Any], ...] = ()

    # -- live settings ----------------------------------------------------------------------
    @property
    def render_mode(self) -> str | None:
        """None, ``"rgb_array"`` or ``"human"`` (a window, :mod:`trackgen_env.envs.viewer`); settable (the
        next ``render()`` uses it; leaving ``"human"`` closes the window)."""
        return self.__dict__.get("_render_mode")

    @render_mode.setter
    def render_mode(self, value) -> None:
        if value not in (None, *self.metadata["render_modes"]):
            modes = self.metadata["render_modes"]
            raise ValueError(f"render_mode must be None or one of {modes}, got {value!r}" if modes else
                             f"render_mode must be None: {type(self).__name__} draws no frames, got {value!r}")
        if value == "human":
            require_pygame()  # the install hint now, not at the first step
        elif self.__dict__.get("_window") is not None:
            self.__dict__.pop("_window").close()
        self.__dict__["_render_mode"] = value

    @property
    def render_size(self) -> int:
        """[pixels] the frames' side, an int in [16, 4096]; settable (the next ``render()`` uses it)."""
        return self.__dict__["_render_size"]

    @render_size.setter
    def render_size(self, value) -> None:
        self.__dict__["_render_size"] = check_int("render_size", value, lo=16, hi=4096)

    # -- construction ----------------------------------------------------------------------
    def _setup(self, num_envs, device, *, max_episode_steps, laps, seed, render_mode, autoreset_mode_, output,
               render_size, auto_steps: int) -> int:
        """Check and set the shared arguments, and refuse a construction that cannot fit in
        memory (:meth:`memory_estimate`); returns the int seed of the courses (drawn when None).
        ``auto_steps`` is the env's own step limit, which ``max_episode_steps="auto"`` stands for.

        Raises:
            TypeError / ValueError: a bad argument (``capture`` not a bool among them).
            MemoryError: the construction's estimate exceeds the memory available on the device.
        """
        self.num_envs = check_num_envs(num_envs)
        self.device = wp.get_device(resolve_device(device))
        self.max_episode_steps = check_limit("max_episode_steps", max_episode_steps, auto=auto_steps)
        self.laps = check_limit("laps", laps)
        # what the kernels compare with: no limit is the int32 counters' maximum
        self._step_limit = INT32_MAX if self.max_episode_steps is None else self.max_episode_steps
        self._lap_limit = INT32_MAX if self.laps is None else self.laps
        self.autoreset_mode = autoreset_mode(autoreset_mode_)
        # per instance: the class's dict is shared by every env
        self.metadata = EnvMetadata({**type(self).metadata, "autoreset_mode": self.autoreset_mode})
        self.render_mode = render_mode
        self.output = check_output(output)
        self.render_size = render_size
        arguments = self._bound_arguments()
        check_bool("capture", arguments.get("capture", True))
        seed = check_seed(seed, self.num_envs)
        self._refuse_if_too_big(arguments, {
            "num_envs": self._construction_size(), "device": str(self.device), "max_episode_steps": max_episode_steps,
            "laps": laps, "render_mode": render_mode, "autoreset_mode": self.autoreset_mode, "output": self.output,
            "render_size": render_size})
        return int(np.random.SeedSequence().entropy % (1 << 31)) if seed is None else seed

    def _spaces(self, obs_dim: int, action_dim: int) -> None:
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = spaces.Box(-1.0, 1.0, (action_dim,), np.float32)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def _finish_init(self, action: wp.array, capture: bool) -> None:
        """Allocate the shared buffers around the subclass's ``action`` array, warm up, record.

        Args:
            action: the stable ``[E]`` (vector dtype) or ``[E, A]`` float32 action array the
                dynamics read; ``step()`` writes the checked action into it.
            capture: record the step (and the masked reset) as graphs.
        """
        E, dev = self.num_envs, self.device
        # [E, D] float32, or an image observation's [E, H, W, C] uint8
        obs_shape = (E, *self.single_observation_space.shape)
        obs_dtype = wp.uint8 if self.single_observation_space.dtype == np.uint8 else wp.float32
        self.course.bind(**self.body.pose())
        self._action = action
        self._autoreset = wp.zeros(E, dtype=wp.int32, device=dev)
        self._all_envs = wp.ones(E, dtype=wp.int32, device=dev)
        self._no_envs = wp.zeros(E, dtype=wp.int32, device=dev)
        self._reset_mask = wp.zeros(E, dtype=wp.int32, device=dev)  # DISABLED: reset(options={"reset_mask": m})
        self._any = wp.zeros(1, dtype=wp.int32, device=dev)  # SAME_STEP: did any env end (the restart's condition)
        self._obs = wp.zeros(obs_shape, dtype=obs_dtype, device=dev)
        self._reward = wp.zeros(E, dtype=wp.float32, device=dev)
        self._terminated = wp.zeros(E, dtype=wp.bool, device=dev)
        self._truncated = wp.zeros(E, dtype=wp.bool, device=dev)
        self._info = {name: wp.zeros(E, dtype=dtype, device=dev) for name, dtype in self.info_fields}
        same_step = self.autoreset_mode is AutoresetMode.SAME_STEP
        self._final_obs = wp.zeros(obs_shape, dtype=obs_dtype, device=dev) if same_step else None
        self._final_info = {name: wp.zeros(E, dtype=d, device=dev) for name, d in self.info_fields} if same_step else {}
        self._io = EnvIO(device=dev, output=self.output, action=action, action_dim=self.single_action_space.shape[0],
                         action_labels=self.action_labels, obs=self._obs, reward=self._reward,
                         terminated=self._terminated, truncated=self._truncated, info=self._info,
                         final_obs=self._final_obs, final_info=self._final_info)
        self._frames = None  # [E, H, W, 3] uint8, allocated at the first render()
        self._needs_reset = True
        # the params' commit count the construction's courses were drawn with; None once a reset used them
        self._construction_commits = self.course.generator.params.commits

        # warm-up: load every module outside any capture (the course is prepared already), then
        # record; no regeneration here, so that the first reset() keeps the construction's courses
        self._advance(self._no_envs)
        self._restart(self._no_envs)
        self.graph = self._record(self._step_body, "step") if capture else None
        self.reset_graph = (
            self._record(self._reset_body, "masked reset")
            if capture and self.autoreset_mode is AutoresetMode.DISABLED else None
        )
        self._freeze_settings()

    def _record(self, body, what: str):
        try:
            with wp.ScopedCapture(device=self.device) as cap:
                body()
            return cap.graph
        except RuntimeError as exc:  # CaptureError, e.g. a host-side generator stage (NotCapturableError)
            warnings.warn(f"{type(self).__name__}: the {what} cannot be recorded ({exc}); running it eagerly",
                          RuntimeWarning, stacklevel=4)
            return None

    # -- the bodies ---------------------------------------------------------------------------
    @property
    def body(self) -> Body:
        """The env's bodies (:class:`~trackgen_env.envs.body.Body`): the track env's ``state`` (the
        cars), the gates env's ``drone`` (the quadrotors)."""
        return getattr(self, self._body_attribute)

    def _dynamics(self, reset_mask: wp.array, reset_only: bool) -> None:
        """Put the masked envs at their start (:meth:`_start`); unless ``reset_only``, advance the
        others one ``dt`` under ``self._action``."""
        start_position, start_orientation, start_velocity = self._start(reset_mask)
        self.body.step(self._action, reset_mask, start_position, start_orientation, start_velocity=start_velocity,
                       reset_only=reset_only)

    # -- what a subclass supplies ------------------------------------------------------------
    #: the attribute that holds the env's :class:`~trackgen_env.envs.body.Body`
    _body_attribute = "state"

    def _start(self, reset_mask: wp.array) -> tuple[wp.array, wp.array, wp.array | None]:
        """The masked envs' start (its draws, where the course's progress counts from): ``[E]`` start
        positions, orientations and velocities (None: at rest) for :meth:`Body.step
        <trackgen_env.envs.body.Body.step>` (see the module docstring)."""
        raise NotImplementedError

    def _observe(self, res, reset_mask: wp.array, restart: bool) -> None:
        """Write ``self._obs`` (only) from the bodies and the course step ``res`` (see the module docstring)."""
        raise NotImplementedError

    def _reward_termination(self, res, reset_mask: wp.array, restart: bool) -> None:
        """Write reward, termination, the info arrays and ``self._autoreset`` (see the module docstring)."""
        raise NotImplementedError

    def _draw(self, frames: wp.array, views: wp.array, num: int) -> None:
        """Draw the first ``num`` envs into ``frames`` (see the module docstring)."""
        raise NotImplementedError

    # -- the recorded bodies -----------------------------------------------------------------
    def _step_body(self):
        """One step: (NEXT_STEP) the ended envs' next courses -> dynamics -> ``course.step()`` ->
        observe -> reward and termination -> (SAME_STEP) the ended envs' restart."""
        reset_mask = self._no_envs
        if self.autoreset_mode is AutoresetMode.NEXT_STEP:
            # the envs that ended at the last step start their next episode in this one (the action ignored)
            self.course.regenerate(mask=self._autoreset, advance=True)
            reset_mask = self._autoreset
        self._advance(reset_mask)
        if self.autoreset_mode is AutoresetMode.SAME_STEP:
            self._autoreset_in_place()

    def _reset_body(self):
        self.course.regenerate(mask=self._reset_mask, advance=True)
        self._restart(self._reset_mask)

    def _advance(self, reset_mask: wp.array):
        """Reset the masked envs, step the others; observe every env, then write its reward and termination."""
        self._dynamics(reset_mask, False)
        res = self.course.step()
        self._observe(res, reset_mask, False)
        self._reward_termination(res, reset_mask, False)

    def _autoreset_in_place(self):
        """SAME_STEP: keep the ended envs' last observation and info, then restart them on their next course."""
        wp.copy(self._final_obs, self._obs)
        for name, arr in self._info.items():
            wp.copy(self._final_info[name], arr)
        self.course.regenerate(mask=self._autoreset, advance=True)
        exec_modes.when_any(self._autoreset, self._any, lambda: self._restart(self._autoreset))

    def _restart(self, mask: wp.array):
        """Reset the masked envs (on their regenerated course) and observe them; the others are
        untouched (the course steps the masked envs only: the others did not move)."""
        self._dynamics(mask, True)
        res = self.course.step(mask=mask)
        self._observe(res, mask, True)
        self._reward_termination(res, mask, True)

    # -- Gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset every env (or, under DISABLED, the envs of ``options["reset_mask"]``).

        Args:
            seed: None (the next courses of each env's stream; the first reset after
                construction keeps the construction's courses, unless a live parameter was
                set or moved in between), an int ``s`` (env i's
                courses restart from seed ``hash(s, i)``: the same as constructing with
                ``seed=s``), or ``E`` ints (env i's courses restart from seed ``seed[i]``).
            options: None, or (``autoreset_mode=DISABLED`` only) ``{"reset_mask": m}`` with
                ``m`` an ``[E]`` bool NumPy array, or an ``[E]`` bool torch tensor on any device
                (``terminated | truncated`` with ``output="torch"``; copied to the host once),
                with at least one True: only those envs get a new course (``advance=True``) and
                restart; the other envs are untouched.

        Returns:
            ``(obs [E, D] float32, info dict)`` (NumPy, or torch views with ``output="torch"``);
            after a masked reset ``obs`` holds every env's current observation and the info
            masks (``"_laps"``, ...) are ``reset_mask``.

        Raises:
            ValueError: a seed outside ``[0, 2**64)`` (or per-env seeds outside ``[0, 2**32)``, or not
                ``num_envs`` of them: :func:`~trackgen_env.core.checks.check_seed`); options other than
                ``reset_mask``; a ``reset_mask`` in
                another autoreset mode, of another shape, all False, or with a seed.
            TypeError: a seed that is no int; a ``reset_mask`` that is neither a bool NumPy
                array nor a bool torch tensor.
            RuntimeError: a masked reset before the first full ``reset()``; the env is closed.
        """
        self.check_open()
        seed = check_seed(seed, self.num_envs)
        mask = self.check_reset_options(options, seed)
        with self._io.stream_scope():
            out = self._reset(seed, mask)
        if self.render_mode == "human":
            self._show_window()
        return out

    def _reset(self, seed: int | None, mask: np.ndarray | None):
        if mask is not None:
            self._reset_mask.assign(mask.astype(np.int32))
            if self.reset_graph is not None:
                wp.capture_launch(self.reset_graph)
            else:
                self._reset_body()
            self._warn_if_few_valid(mask)
            return self._io.masked_reset_outputs(mask)
        super().reset(seed=seed if isinstance(seed, int) else None)
        fresh = self._keeps_construction_courses
        if seed is not None:
            self.course.generate(seeds=seed)
        elif not fresh:
            self.course.regenerate(advance=True)
        else:
            self.course.reset()  # the construction's courses (checked then)
        if seed is not None or not fresh:
            # a live parameter may have been set since (a band too wide for the layout): say so
            # here rather than as envs that end at every step
            self._warn_if_few_valid(None)
        self._construction_commits = None
        self._advance(self._all_envs)
        self._needs_reset = False
        obs, _, _, _, info = self._io.outputs(final=False)
        return obs, info

    @property
    def _keeps_construction_courses(self) -> bool:
        """Whether a plain ``reset()`` now would keep the courses generated at construction:
        no reset has used them yet and no live parameter was set or moved since (a set since
        means they no longer describe the parameters, so the reset draws new ones)."""
        return self._construction_commits == self.course.generator.params.commits

    #: whether a reset warns of few valid courses itself (a ShardedVectorEnv warns once for its shards)
    _warn_on_reset = True

    def _warn_if_few_valid(self, mask: np.ndarray | None) -> None:
        """``Program.warn_if_few_valid`` after a reset (a generator of the package's; a producer of
        your own need not have it)."""
        check = getattr(self.course.generator, "warn_if_few_valid", None)
        if check is not None and self._warn_on_reset:
            check("this reset", mask, min_invalid=RESET_MIN_INVALID)

    def check_reset_options(self, options, seed, *, num_envs: int | None = None) -> np.ndarray | None:
        """The checks of :meth:`reset`'s ``options`` (with its ``seed``): None, or the reset mask as a
        bool NumPy array; ``num_envs``: the mask's length (default this env's; a sharded env's all envs).

        Raises:
            as :meth:`reset` for bad options.
        """
        num_envs = self.num_envs if num_envs is None else num_envs
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be None or a dict, got {type(options).__name__} {options!r}")
        if not options:
            return None
        name = type(self).__name__
        if set(options) != {"reset_mask"}:
            unknown = sorted(map(str, set(options) - {"reset_mask"}))
            raise ValueError(f"{name}.reset takes no options but reset_mask, got {unknown}" if unknown else
                             f"{name}.reset takes options={{'reset_mask': mask}}, got {options!r}")
        if self.autoreset_mode is not AutoresetMode.DISABLED:
            raise ValueError(f"reset_mask needs autoreset_mode=DISABLED, this env's is {self.autoreset_mode.value}")
        # a torch mask (``terminated | truncated`` with torch output) costs one host copy; a masked
        # reset syncs anyway (it writes the mask and reads the outputs)
        mask = host_bool_mask(options["reset_mask"])
        # the messages begin as Gymnasium's vector envs' do (tests/test_peer_gymnasium.py matches them)
        if not isinstance(mask, np.ndarray):
            raise TypeError(f"options['reset_mask'] must be a bool NumPy array or a bool torch tensor, got "
                            f"{type(mask).__name__}")
        if mask.dtype != np.bool_:
            raise TypeError(f"`options['reset_mask']` must have `dtype=np.bool_`, got {mask.dtype} (a bool NumPy array "
                            "or a bool torch tensor)")
        if mask.shape != (num_envs,):
            raise ValueError(f"`options['reset_mask']` must have shape `({num_envs},)`, got {mask.shape}")
        if not mask.any():
            raise ValueError("`options['reset_mask']` must contain a boolean array with at least one True value, got "
                             f"reset_mask={mask}")
        if seed is not None:
            raise ValueError("a masked reset takes no seed (it draws each masked env's next course)")
        if self._needs_reset:
            raise RuntimeError("call reset() (every env) before a masked reset")
        return mask

    def step(self, actions):
        """Advance every env by ``dt``, with the autoreset of ``autoreset_mode``.

        Args:
            actions: ``[E, A]`` real floats (NumPy or array-like; a torch tensor too), clipped to [-1, 1].

        Returns:
            ``(obs [E, D] float32, reward [E] float32, terminated [E] bool, truncated [E] bool,
            info)``; ``info`` holds the per-env info arrays with their Gymnasium ``"_name"``
            masks, and under SAME_STEP ``"final_obs"`` / ``"final_info"`` (see the class docstring).

        Raises:
            RuntimeError: ``reset()`` was not called first, or the env is closed.
            TypeError: ``actions`` is not of a real floating dtype.
            ValueError: ``actions`` has another shape, or (NumPy) holds NaN.
        """
        self.check_steppable()
        with self._io.stream_scope():
            self._io.write_actions(actions)
            self._replay_step()
            out = self._io.outputs(final=self.autoreset_mode is AutoresetMode.SAME_STEP)
        if self.render_mode == "human":
            self._show_window()
        return out

    def check_steppable(self) -> None:
        """Raises RuntimeError where :meth:`step` would: the env is closed, or ``reset()`` was not called yet."""
        self.check_open()
        if self._needs_reset:
            raise RuntimeError("call reset() before step()")

    def step_into(self, actions: np.ndarray, out: HostOutputs, rows: slice) -> None:
        """:meth:`step` with the actions checked already and the outputs written into ``out``'s rows.

        The step of :class:`~trackgen_env.envs.sharded.ShardedVectorEnv`'s shards: the GIL is held
        only for a few calls (the clip, the replay's call, one copy per output array), the work
        between them runs without it.

        Args:
            actions: a host array :func:`~trackgen_env.envs.io.check_actions` accepted, whose rows
                ``rows`` (``E`` of them) are this env's; clipped to [-1, 1] here.
            out: fresh NumPy outputs with this env's dtypes (:meth:`new_outputs`), written at ``rows``.
            rows: this env's rows of ``actions`` and ``out``.

        Raises:
            RuntimeError: as :meth:`check_steppable` (call it first to refuse before any env steps).
        """
        self.check_steppable()
        with self._io.stream_scope():
            self._io.write_checked_actions(actions, rows)
            self._replay_step()
            self._io.copy_outputs(out, rows)

    def new_outputs(self, num_envs: int, *, final: bool | None = None) -> HostOutputs:
        """Fresh NumPy outputs of ``num_envs`` envs of this env's kind, for :meth:`step_into`;
        ``final``: with SAME_STEP's ``final_obs`` / ``final_info`` (default: under SAME_STEP)."""
        if final is None:
            final = self.autoreset_mode is AutoresetMode.SAME_STEP
        return self._io.new_outputs(num_envs, final=final)

    def copy_outputs(self, out: HostOutputs, rows: slice) -> None:
        """Copy the current outputs (the last step's or reset's) into ``out``'s rows ``rows``."""
        self.check_open()
        self._io.copy_outputs(out, rows)

    def _replay_step(self) -> None:
        if self.graph is not None:
            wp.capture_launch(self.graph)
        else:
            self._step_body()

    # -- rendering ---------------------------------------------------------------------------
    def render(self):
        """One RGB frame ``[H, W, 3]`` uint8 per env (``H = W = render_size``), drawn on the device.

        Returns:
            A tuple of ``num_envs`` frames (Gymnasium's vector convention; views of one
            ``[E, H, W, 3]`` host array, fresh each call), or None without ``render_mode``. With
            ``render_mode="human"`` it shows the frames of the first 16 envs, tiled, in a window
            (as every ``step()`` and ``reset()`` does) and returns None.
            For a video of one env, ``gymnasium.wrappers.vector.RecordVideo(env, ...,
            record_first_only=True)``.

        Raises:
            RuntimeError: the env is closed.
        """
        self.check_open()
        if self.render_mode is None:
            gymnasium.logger.warn('render() needs render_mode="rgb_array" (or "human": a window)')
            return None
        if self.render_mode == "human":
            self._show_window()
            return None
        return tuple(self.render_frames())

    def _show_window(self) -> None:
        """``render_mode="human"``: the frames of the first ``HUMAN_ENVS`` envs, tiled, in the env's
        window (opened at the first call), at most ``metadata["render_fps"]`` a second."""
        window = self.__dict__.get("_window")
        if window is None:
            window = self.__dict__["_window"] = Window(type(self).__name__, self.metadata["render_fps"])
        window.show(tile(self.render_frames(min(self.num_envs, HUMAN_ENVS))))

    def render_frames(self, num: int | None = None) -> np.ndarray:
        """The frames of the first ``num`` envs (all when None) as one ``[num, H, W, 3]`` uint8 host array.

        Raises:
            ValueError: ``num`` outside ``1 .. num_envs``.
            RuntimeError: the env is closed.
        """
        self.check_open()
        num = self.num_envs if num is None else check_int("num", num, lo=1, hi=self.num_envs)
        size = self.render_size
        if self._frames is None or self._frames.shape[0] < num or self._frames.shape[1] != size:
            self._frames = wp.zeros((num, size, size, 3), dtype=wp.uint8, device=self.device)
            self._views = wp.zeros((num, 2), dtype=wp.vec4, device=self.device)
        frames = self._frames if self._frames.shape[0] == num else self._frames[:num]
        with self._io.stream_scope():
            self._draw(frames, self._views, num)
            out = frames.numpy()
        return out.copy() if self.device.is_cpu else out

