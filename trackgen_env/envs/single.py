"""One env as a ``gymnasium.Env`` (``gymnasium.make("TrackGen-Track-v0")``), over a one-env vector env.

:class:`TrackEnv` and :class:`GatesEnv` are the ``entry_point`` of ``TrackGen-Track-v0`` and
``TrackGen-Gates-v0`` (the native vector envs are their ``vector_entry_point``). Each holds a
:class:`~trackgen_env.envs.track.TrackVectorEnv` / :class:`~trackgen_env.envs.gates.GatesVectorEnv`
of ``num_envs=1`` in ``AutoresetMode.DISABLED`` (``self.vector_env``) and speaks the single-env
API of Gymnasium: the spaces are the vector env's single spaces, ``step()`` returns an
unbatched observation ``[D]`` float32, a float reward, bool ``terminated`` / ``truncated`` and
an info dict of scalars (NumPy scalars of the vector env's info dtypes, ``int32`` for
``laps``, Python bools for the flags: ``SyncVectorEnv`` batches them into the native env's
arrays), and the user calls ``reset()`` after an episode ends (no autoreset). It has none of a
vector env's attributes (``num_envs``, ``single_observation_space``, ``autoreset_mode``, ...):
libraries (TorchRL) read ``num_envs`` on ``env.unwrapped`` as "this env is batched". For many
envs use the vector env itself: one graph replay steps them all, where
``gymnasium.make_vec(..., vectorization_mode="sync")`` steps ``num_envs`` of these one by one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode

from ..core.checks import check_seed
from .base import CourseVectorEnv
from .gates import GatesVectorEnv
from .io import check_action
from .lifecycle import ReadOnlyAfterConstruction
from .track import TrackVectorEnv

__all__ = ["SingleCourseEnv", "TrackEnv", "GatesEnv"]

# arguments of the vector env that the single env fixes itself
_FIXED = ("num_envs", "autoreset_mode", "output")
# the vector env's attributes that only a vector env has: not read through the single env (a
# library takes an env with ``num_envs`` for a batched one), and not settable on it
_VECTOR_ONLY = ("num_envs", "single_observation_space", "single_action_space", "autoreset_mode")


class SingleCourseEnv(ReadOnlyAfterConstruction, gymnasium.Env):
    """A ``gymnasium.Env`` over a one-env course vector env (see the module docstring); the base of
    :class:`TrackEnv` and :class:`GatesEnv`, which set ``vector_class`` and ``metadata``.

    Args:
        device: the vector env's Warp device (None: ``cuda:0`` when present, else ``cpu``).
        render_mode: None, ``"rgb_array"`` (``render()`` returns one ``[H, W, 3]`` uint8 frame) or
            ``"human"`` (a window showing it at every step).
        **kwargs: the vector env's other constructor arguments (``seed``, ``max_episode_steps``,
            ``laps``, ``render_size``, ``car``, ``track``, ``gates``, ...); ``num_envs``,
            ``autoreset_mode`` and ``output`` are fixed (1, ``DISABLED``, ``"numpy"``).

    Attributes:
        vector_env: the one-env vector env (its ``car``, ``course``, ``quadrotor``, ...).
        render_mode, render_size: live, as on the vector env: setting them sets (and checks)
            the vector env's, which the next ``render()`` uses.
        every read-only attribute of the vector env (``laps``, ``max_episode_steps``, ``car``,
            ``course``, ...) but the vector-only ones (``num_envs``, ``single_observation_space``,
            ``single_action_space``, ``autoreset_mode``: AttributeError): readable here, and
            read-only as there: setting or deleting one raises AttributeError naming the
            constructor argument (the single env's own ``observation_space``, ``action_space``
            and ``metadata`` are read-only too, and so are the vector-only names).

    ``close()`` releases the vector env's memory; the env is not used up by it, as Gymnasium's
    envs are not (a checker closes an env and then resets it): ``reset()`` after ``close()``
    builds the one-env vector env again from the construction's arguments (with the render
    settings as last set), so its first courses are the construction's again; ``step()`` and
    ``render()`` between ``close()`` and that reset raise RuntimeError.

    Raises:
        TypeError: ``num_envs``, ``autoreset_mode`` or ``output`` passed.
        ValueError, TypeError: as the vector env's constructor.
    """

    vector_class: type[CourseVectorEnv] = CourseVectorEnv
    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 20}

    def __init__(self, device: str | None = None, *, render_mode: str | None = None, **kwargs):
        fixed = sorted(set(kwargs) & set(_FIXED))
        if fixed:
            raise TypeError(f"{type(self).__name__} is one env with its own reset (num_envs=1, "
                            f"autoreset_mode=DISABLED, "
                            f'output="numpy"): do not pass {fixed}; for many envs use gymnasium.make_vec')
        # the one-env vector env of these arguments (again at a reset after close(), with the live settings)
        self._build = lambda **live: self.vector_class(1, device, autoreset_mode=AutoresetMode.DISABLED, output="numpy",
                                                       **{**kwargs, "render_mode": render_mode, **live})
        self.vector_env = self._build()
        self.observation_space = self.vector_env.single_observation_space
        self.action_space = self.vector_env.single_action_space
        self._last: tuple | None = None  # the ended step's outputs, returned again by a step after it
        self._warned_done = False
        self._closed = False
        # from here on the vector env's read-only attributes are read-only here too
        self._freeze(self.vector_env._frozen | {"vector_env"})

    # -- attributes: the vector env's, live or read-only as there ----------------------------
    @property
    def render_mode(self) -> str | None:
        """None, ``"rgb_array"`` or ``"human"``, the vector env's; settable (checked there; the next
        ``render()`` uses it)."""
        return self.vector_env.render_mode

    @render_mode.setter
    def render_mode(self, value) -> None:
        self.vector_env.render_mode = value

    @property
    def render_size(self) -> int:
        """[pixels] the frame's side, the vector env's, an int in [16, 4096]; settable (checked there)."""
        return self.vector_env.render_size

    @render_size.setter
    def render_size(self, value) -> None:
        self.vector_env.render_size = value

    def __getattr__(self, name):
        # only called when the normal lookup fails: the vector env's read-only settings (laps, car, ...)
        if name in _VECTOR_ONLY:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}: it is one env, not a "
                                 f"vector env (the one-env vector env inside has it: env.unwrapped.vector_env.{name})")
        if self._is_read_only(name):
            return getattr(self.__dict__["vector_env"], name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _read_only_message(self, name: str) -> str:
        cls = type(self).__name__
        if name in _FIXED:
            return (f"{cls}.{name} is read-only: the single env fixes it (num_envs=1, autoreset_mode=DISABLED, "
                    f'output="numpy"); for many envs use gymnasium.make_vec')
        if name == "vector_env":
            return f"{cls}.vector_env is read-only: it is built at construction; build a new env"
        if name in _VECTOR_ONLY:
            return (f"{cls}.{name} is read-only, and not an attribute of the single env: it is one env, not a vector "
                    "env; for many envs use gymnasium.make_vec")
        return self.vector_env._read_only_message(name, owner=cls)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode on a new course (the first reset keeps the construction's course).

        Args:
            seed: None (the next course of the env's stream) or an int >= 0 (the courses restart from
                ``hash(seed, 0)``: the same as constructing with ``seed=seed``).
            options: None or ``{}`` (the env takes no options).

        Returns:
            ``(obs [D] float32, info)``, ``info`` a dict of scalars (``"laps"``, ...; see the module docstring).

        Raises:
            TypeError: a seed that is not an int (a NumPy integer is taken as its int), options
                that are not None or a mapping.
            ValueError: a seed outside ``[0, 2**64)``; options given. Each before anything changes.
        """
        cls = type(self).__name__
        seed = check_seed(seed, name=f"{cls}.reset seed")  # a NumPy integer is taken as its int
        if options is not None and not isinstance(options, Mapping):
            raise TypeError(f"{cls}.reset options must be None or a dict, got {type(options).__name__} {options!r}")
        if options:
            raise ValueError(f"{cls}.reset takes no options, got {sorted(options)}")
        if self._closed:  # reopen: the one-env vector env again, of the construction's arguments
            self.__dict__["vector_env"] = self._build(render_mode=self.render_mode, render_size=self.render_size)
            self._closed = False
        obs, info = self.vector_env.reset(seed=seed)
        super().reset(seed=seed)  # np_random, as Gymnasium's envs (the courses are seeded on the device)
        self._last = None
        self._warned_done = False
        return obs[0], _unbatch(info)

    def step(self, action):
        """Advance the env by ``dt``.

        Args:
            action: ``action_space.shape`` real floats (clipped to [-1, 1]).

        Returns:
            ``(obs [D] float32, reward float, terminated bool, truncated bool, info dict)``. After the
            episode ended, a step does not move the env (as Gymnasium's CartPole): it warns once and
            returns the last observation and flags with reward 0; call ``reset()``.

        Raises:
            RuntimeError: ``reset()`` was not called first (after ``close()`` too).
            TypeError: not of a real floating dtype. ValueError: another shape, or NaN.
            (Checked in that order, after the episode ended too.)
        """
        # a live step's checks, in its order, on the ended episode's path too
        self._check_open()
        self.vector_env.check_steppable()
        a = check_action(action, self.action_space.shape[0], self.vector_env.action_labels)
        if self._last is not None:
            if not self._warned_done:
                gymnasium.logger.warn("step() called after the episode ended (terminated or truncated); "
                                      "call reset() first: the env stays where it ended, with reward 0")
                self._warned_done = True
            obs, _, terminated, truncated, info = self._last
            return obs.copy(), 0.0, terminated, truncated, dict(info)
        obs, reward, terminated, truncated, info = self.vector_env.step(a[None])
        out = (obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), _unbatch(info))
        if out[2] or out[3]:
            self._last = out
            return out[0].copy(), *out[1:4], dict(out[4])
        return out

    def render(self):
        """One RGB frame ``[render_size, render_size, 3]`` uint8, or None without ``render_mode``.

        Raises:
            RuntimeError: the env was closed and not reset since.
        """
        self._check_open()
        frames = self.vector_env.render()
        return None if frames is None else frames[0]

    def close(self):
        """Close the vector env (releases its memory); calling it again does nothing; ``reset()`` reopens
        the env (see the class docstring)."""
        if not self._closed:
            self._closed = True
            self._last = None
            self.vector_env.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"the env is closed ({type(self).__name__}.close() released its memory): call reset() "
                               "to reopen it")


def _unbatch(info: dict[str, Any]) -> dict[str, Any]:
    """Env 0's entries of a vector info dict, without the ``"_name"`` masks: a number as the NumPy
    scalar of its array's dtype (``np.int32``), a flag as a Python bool. ``SyncVectorEnv`` batches
    a NumPy number into an array of its dtype and a Python bool into a bool array (a ``np.bool_``
    it would keep as objects), so its info arrays are the native env's, dtype for dtype."""
    return {k: v[0].item() if v.dtype == np.bool_ else v[0] for k, v in info.items() if not k.startswith("_")}


class TrackEnv(SingleCourseEnv):
    """``TrackGen-Track-v0`` as one ``gymnasium.Env``: a car on generated tracks (:class:`TrackVectorEnv`,
    whose docstring holds the spaces, reward and episode end; here unbatched)."""

    vector_class = TrackVectorEnv
    metadata = {"render_modes": TrackVectorEnv.metadata["render_modes"],
                "render_fps": TrackVectorEnv.metadata["render_fps"]}


class GatesEnv(SingleCourseEnv):
    """``TrackGen-Gates-v0`` as one ``gymnasium.Env``: a quadrotor through generated gates
    (:class:`GatesVectorEnv`, whose docstring holds the spaces, reward and episode end; here unbatched)."""

    vector_class = GatesVectorEnv
    metadata = {"render_modes": GatesVectorEnv.metadata["render_modes"],
                "render_fps": GatesVectorEnv.metadata["render_fps"]}
