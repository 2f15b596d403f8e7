"""Adapters from trackgen_env's Gymnasium vector envs to other RL libraries' APIs.

:class:`SB3VecEnv` makes a native vector env (``TrackGen-Track-v0``, ``TrackGen-Gates-v0``,
or any :class:`gymnasium.vector.VectorEnv` in ``AutoresetMode.SAME_STEP``) a
Stable-Baselines3 :class:`~stable_baselines3.common.vec_env.VecEnv`, so SB3's algorithms
and VecEnv wrappers (``VecNormalize``, ``VecMonitor``, ...) run on it directly: one
``step()`` of the adapter is one ``step()`` of the vector env (one graph replay), with
no per-env Python loop around the simulation.

Stable-Baselines3 is optional: ``pip install -e ".[sb3]"`` (a source checkout; :data:`SB3_INSTALL_HINT`).
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from ..core.checks import check_seed, install_hint
from ..envs.sharded import ShardedVectorEnv

__all__ = ["SB3VecEnv", "make_sb3_vec_env", "require_sb3", "SB3_INSTALL_HINT"]  # noqa: F822 (module __getattr__)

#: How to install the SB3 extra: a source checkout's form (the README's), else the index's.
SB3_INSTALL_HINT = install_hint("sb3")
_SB3_HINT = f"the SB3 adapter needs stable-baselines3: {SB3_INSTALL_HINT}"
# keys of a SAME_STEP step's info that the adapter moves into SB3's per-env infos itself
_FINAL_KEYS = ("final_obs", "_final_obs", "final_info", "_final_info")


def require_sb3() -> None:
    """Import Stable-Baselines3 (and torch, which it imports), or say how to install it.

    Raises:
        ImportError: stable-baselines3 is missing (:data:`SB3_INSTALL_HINT`).
    """
    _sb3_vec_env_base()


def _sb3_vec_env_base():
    try:
        from stable_baselines3.common.vec_env import VecEnv
    except ImportError as exc:
        raise ImportError(_SB3_HINT) from exc
    return VecEnv


def _autoreset_mode(env: VectorEnv) -> AutoresetMode:
    mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    return AutoresetMode(mode) if not isinstance(mode, AutoresetMode) else mode


def _split_info(info: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """Gymnasium's vector info (``{key: [E] values, "_key": [E] bool mask}``) -> ``E`` per-env dicts.

    An entry goes to env ``i`` when its mask says so (every env when a key has no mask);
    nested dicts (such as ``final_info``) are split the same way.
    """
    out: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, value in info.items():
        if key.startswith("_") or key in _FINAL_KEYS:
            continue
        mask = info.get("_" + key)
        parts = _split_info(value, num_envs) if isinstance(value, dict) else None
        for i in range(num_envs):
            if mask is not None and not mask[i]:
                continue
            out[i][key] = parts[i] if parts is not None else value[i]
    return out


def make_sb3_vec_env(env_id: str, num_envs: int = 16, num_shards: int | None = None, **kwargs):
    """``gymnasium.make_vec(env_id, num_envs, autoreset_mode=SAME_STEP, **kwargs)`` wrapped in :class:`SB3VecEnv`.

    Args:
        env_id: a registered vector env, e.g. ``"TrackGen-Track-v0"`` or ``"TrackGen-Gates-v0"``.
        num_envs: number of envs (>= 1).
        num_shards: None (one env), or the envs split over that many threads, one CPU core each
            (a :class:`~trackgen_env.envs.ShardedVectorEnv`: the same outputs as one env of the
            same seed; an int in ``[1, num_envs]``).
        **kwargs: the env's constructor arguments (``device``, ``seed``, ``max_episode_steps``, ...);
            ``autoreset_mode`` is set here and must not be passed.

    Returns:
        An :class:`SB3VecEnv`.

    Raises:
        ImportError: stable-baselines3 is not installed.
        TypeError / ValueError: a bad ``num_shards`` (as ``ShardedVectorEnv``'s).
        TypeError: ``autoreset_mode`` passed in ``kwargs``; ``env_id`` has no vector entry point
            taking ``autoreset_mode`` (another env: the message gives the ``SB3VecEnv`` recipe).
    """
    _sb3_vec_env_base()  # fail before building an env when SB3 is missing
    if "autoreset_mode" in kwargs:
        raise TypeError("make_sb3_vec_env sets autoreset_mode=AutoresetMode.SAME_STEP itself; do not pass it")
    if num_shards is not None:
        return _adapter_class()(ShardedVectorEnv(env_id, num_envs, num_shards, autoreset_mode=AutoresetMode.SAME_STEP,
                                                 **kwargs))
    try:
        env = gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                                 autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    except (TypeError, gymnasium.error.Error) as exc:
        # an env without a vector entry point, or one whose vector env takes no autoreset_mode
        if isinstance(exc, TypeError) and "autoreset_mode" not in str(exc):
            raise
        raise TypeError(
            f"make_sb3_vec_env builds {env_id!r}'s own vector env with autoreset_mode=SAME_STEP (the trackgen "
            f"envs'), which this env does not offer ({exc}); wrap a SAME_STEP vector env of it yourself: "
            f"SB3VecEnv(gymnasium.make_vec({env_id!r}, {num_envs}, vectorization_mode='sync', "
            f"vector_kwargs={{'autoreset_mode': AutoresetMode.SAME_STEP}}))"
        ) from None
    return _adapter_class()(env)


def _adapter_class():
    cls = globals().get("_SB3VecEnv")
    if cls is None:
        cls = globals()["_SB3VecEnv"] = _build_adapter_class()
    return cls


def _build_adapter_class():
    VecEnv = _sb3_vec_env_base()

    class SB3VecEnv(VecEnv):
        """A Gymnasium vector env in ``AutoresetMode.SAME_STEP`` seen as a Stable-Baselines3 ``VecEnv``.

        Construct the env with ``autoreset_mode=AutoresetMode.SAME_STEP`` (or use
        :func:`make_sb3_vec_env`); SB3 assumes that the observation returned with
        ``done`` is already the next episode's first one, which is Gymnasium's SAME_STEP mode.

        Step results (``step_wait()``), per SB3's ``VecEnv`` contract:

        * ``obs``: ``[E, *obs_shape]`` (float32 for our envs); a finished env's row is its
          new episode's first observation.
        * ``rewards``: ``[E]`` float32.
        * ``dones``: ``[E]`` bool, ``terminated | truncated``.
        * ``infos``: a list of ``E`` dicts: the env's step info for that env (e.g. ``"laps"``,
          ``"off_track"`` for ``TrackGen-Track-v0``; ``"gates_passed"`` for gates); for a
          finished env, the info of its *final* step (the env's ``info["final_info"]``) plus
          ``"terminal_observation"`` (``info["final_obs"][i]``, the episode's last
          observation); and for every env ``"TimeLimit.truncated"`` (``truncated and not terminated``,
          as SB3's ``DummyVecEnv`` sets it every step).

        Seeding: ``seed(s)`` stores ``s`` for the next ``reset()``, which calls
        ``env.reset(seed=s)`` once for the whole vector env (our envs seed env ``i`` with
        ``hash(s, i)``); ``seed(None)`` draws one from NumPy's global RNG (as SB3 does).

        Attributes and methods (``get_attr``, ``set_attr``, ``env_method``): the vector env is
        **one** object holding all ``E`` envs, so there are no per-env Python objects.
        ``get_attr(name, indices)`` returns a list with the vector env's attribute once per
        requested index (the same object each time: e.g. ``render_mode``, ``car``, or
        ``[E]`` arrays covering all envs); ``env_method(name, *args, indices=, **kw)`` calls
        the vector env's method **once** and returns its result once per requested index;
        ``set_attr(name, value, indices)`` sets the vector env's attribute, and only for all
        envs (``indices`` None or every index), since it is shared. Each looks through Gymnasium
        vector wrappers around the env (which forward no attributes) to the outermost that has
        the name, as SB3's wrappers do.
        ``env_is_wrapped(cls)`` is True for every index when any Gymnasium vector wrapper in
        the env's chain is an instance of ``cls``.

        Args:
            env: a :class:`gymnasium.vector.VectorEnv` whose ``metadata["autoreset_mode"]`` is
                ``AutoresetMode.SAME_STEP``.

        Raises:
            TypeError: ``env`` is not a Gymnasium ``VectorEnv``.
            ValueError: its autoreset mode is not SAME_STEP, or its ``output`` is not ``"numpy"``.
            ImportError: stable-baselines3 is not installed (raised on first use of the name).
        """

        def __init__(self, env: VectorEnv):
            if not isinstance(env, VectorEnv):
                raise TypeError(f"SB3VecEnv needs a gymnasium.vector.VectorEnv, got {type(env).__name__}")
            mode = _autoreset_mode(env)
            if mode != AutoresetMode.SAME_STEP:
                raise ValueError(
                    f"SB3VecEnv needs an env in AutoresetMode.SAME_STEP (SB3 expects the new episode's first "
                    f"observation with done), got {mode}; build it with "
                    f'gymnasium.make_vec(env_id, num_envs=N, autoreset_mode=AutoresetMode.SAME_STEP) or '
                    f"trackgen_env.integrations.sb3.make_sb3_vec_env(env_id, N)"
                )
            output = getattr(env.unwrapped, "output", "numpy")
            if output != "numpy":
                raise ValueError(f'SB3VecEnv needs NumPy outputs (SB3 works on NumPy arrays): build the env with '
                                 f'output="numpy", got {output!r}')
            self.env = env
            self.spec = getattr(env, "spec", None)  # the env's EnvSpec: VecMonitor records its id
            self._seed: int | None = None
            self._actions: np.ndarray | None = None
            super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)

        # -- stepping ----------------------------------------------------------------------
        def set_options(self, options=None) -> None:
            """SB3's ``set_options`` (the options of the next ``reset()``: one dict, or one per env),
            checked now, as that reset would check them, so a refused call leaves the options set
            before it in place.

            Raises:
                ValueError: per-env options that differ (the vector env takes one dict for all
                    envs), or options the env's ``reset`` refuses (e.g. an unknown key).
                TypeError: as the env's ``reset`` for options of the wrong type.
            """
            if options is None or isinstance(options, dict):
                per_env = [options] * self.num_envs
            elif isinstance(options, (list, tuple)):
                per_env = list(options)
            else:
                raise TypeError(f"SB3VecEnv.set_options: expected None, an options dict or a list of them (one per "
                                f"env), "
                                f"got {type(options).__name__} {options!r}")
            if len(per_env) != self.num_envs:
                raise ValueError(f"SB3VecEnv.set_options: expected one options dict or {self.num_envs} (one per env), "
                                 f"got {len(per_env)}")
            if any(o != per_env[0] for o in per_env):
                raise ValueError("SB3VecEnv: the vector env takes one options dict for all envs; got different "
                                 "per-env options")
            check = getattr(self.env.unwrapped, "check_reset_options", None)
            if check is not None:
                check(per_env[0] or None, None)
            super().set_options(options)

        def reset(self):
            """Reset every env (with the seed from ``seed()``, if any, and options from ``set_options()``);
            returns ``obs``."""
            options = self._options[0] if self._options[0] else None
            obs, info = self.env.reset(seed=self._seed, options=options)
            self.reset_infos = _split_info(info, self.num_envs)
            self._seed = None
            self._reset_seeds()
            self._reset_options()
            return obs

        def step_async(self, actions: np.ndarray) -> None:
            self._actions = actions

        def step_wait(self):
            if self._actions is None:
                raise RuntimeError("SB3VecEnv: step_wait() without step_async()")
            actions, self._actions = self._actions, None
            obs, reward, terminated, truncated, info = self.env.step(actions)
            terminated = np.asarray(terminated, dtype=bool)
            truncated = np.asarray(truncated, dtype=bool)
            dones = terminated | truncated
            infos = _split_info(info, self.num_envs)
            done_envs = np.flatnonzero(dones)
            if done_envs.size:
                if "final_obs" not in info:
                    raise RuntimeError("SB3VecEnv: an env ended but the step's info holds no 'final_obs' (is it "
                                       "SAME_STEP?)")
                final_obs, final_info = info["final_obs"], info.get("final_info", {})
                finals = _split_info(final_info, self.num_envs) if final_info else None
                for i in done_envs:
                    # SB3 reads the finished episode's last step (e.g. laps) from infos[i]
                    if finals is not None:
                        infos[i] = finals[i]
                    infos[i]["terminal_observation"] = np.array(final_obs[i])
            for i, info_i in enumerate(infos):  # every step, as SB3's DummyVecEnv and SubprocVecEnv give it
                info_i["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            return obs, np.asarray(reward, dtype=np.float32), dones, infos

        def seed(self, seed: int | None = None) -> list[int | None]:
            """Use ``seed`` (an int in ``[0, 2**64)``; None: draw one) at the next ``reset()``; returns it
            once per env.

            Raises:
                TypeError / ValueError: ``seed`` is not None or an int in ``[0, 2**64)`` (a float, a bool, a
                    negative int: :func:`~trackgen_env.core.checks.check_seed`); the seed set before stays in place.
            """
            if seed is None:
                seed = int(np.random.randint(0, 2**31 - 1))
            self._seed = check_seed(seed, name="SB3VecEnv.seed(seed)", none=False)
            return [self._seed] * self.num_envs

        def close(self) -> None:
            self.env.close()

        # -- rendering ---------------------------------------------------------------------
        def get_images(self):
            """The env's ``render()`` frames, one ``[H, W, 3]`` uint8 per env (render_mode ``"rgb_array"``)."""
            if self.env.render_mode != "rgb_array":
                raise ValueError(f'SB3VecEnv.get_images() needs render_mode="rgb_array", got {self.env.render_mode!r}')
            frames = self.env.render()
            return list(frames) if frames is not None else [None] * self.num_envs

        # -- attributes and methods of the (single) vector env ----------------------------
        def _count(self, indices) -> int:
            idx = list(self._get_indices(indices))
            bad = [i for i in idx if not 0 <= int(i) < self.num_envs]
            if bad:
                raise IndexError(f"SB3VecEnv: env indices must be in [0, {self.num_envs}), got {bad}")
            return len(idx)

        def _owner(self, attr_name: str):
            """The outermost of the vector env and the Gymnasium vector wrappers around it that has
            ``attr_name`` (Gymnasium 1.x's wrappers forward no attributes; SB3's ``get_attr`` looks
            through its own wrappers), else the outermost."""
            env = self.env
            while not hasattr(env, attr_name):
                inner = getattr(env, "env", None)
                if not isinstance(inner, VectorEnv) or inner is env:
                    return self.env
                env = inner
            return env

        def get_attr(self, attr_name: str, indices=None) -> list[Any]:
            n = self._count(indices)
            return [getattr(self._owner(attr_name), attr_name)] * n

        def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
            if indices is not None and (sorted(set(int(i) for i in self._get_indices(indices)))
                                        != list(range(self.num_envs))):
                raise ValueError(
                    f"SB3VecEnv.set_attr({attr_name!r}): the envs share one vector env, so an attribute can only be "
                    f"set for all envs (indices=None), got indices={indices!r}"
                )
            setattr(self._owner(attr_name), attr_name, value)
            # live in the env: the adapter's render() follows it, as SB3's __init__ set it
            if attr_name == "render_mode":
                self.render_mode = self.env.render_mode
                self.metadata = {"render_modes": [] if self.render_mode is None else
                                 ["human", "rgb_array"] if self.render_mode == "rgb_array" else [self.render_mode]}

        def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
            n = self._count(indices)
            result = getattr(self._owner(method_name), method_name)(*method_args, **method_kwargs)
            return [result] * n

        def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
            n = self._count(indices)
            env, wrapped = self.env, False
            while True:
                wrapped = wrapped or isinstance(env, wrapper_class)
                inner = getattr(env, "env", None)
                if not isinstance(inner, VectorEnv) or inner is env:
                    break
                env = inner
            return [wrapped] * n

    SB3VecEnv.__module__ = __name__
    SB3VecEnv.__qualname__ = "SB3VecEnv"
    return SB3VecEnv


def __getattr__(name: str):
    # SB3 is imported only when the adapter is first used, so ``import trackgen_env``
    # works without it
    if name == "SB3VecEnv":
        return _adapter_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
