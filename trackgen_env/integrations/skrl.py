"""skrl on trackgen_env's vector envs: :func:`make_skrl_env` and :class:`SkrlWrapper`.

skrl's own Gymnasium wrapper (``skrl.envs.wrappers.torch.wrap_env(env, "gymnasium")``) gets two
things wrong on these envs, both silently:

* **reset transitions.** It steps a vector env in whatever auto-reset mode it has; under
  Gymnasium's default NEXT_STEP, the step after an episode's end ignores the action and returns
  reward 0, and skrl's agents record it as an ordinary transition.
* **views.** With ``output="torch"`` it hands skrl the env's zero-copy views, which the next
  ``step()`` overwrites; skrl's trainer keeps the observation it acted on until after that step and
  then records it, so the memory holds the *next* observation in its place.

:class:`SkrlWrapper` is an skrl ``Wrapper`` that requires an env in ``AutoresetMode.SAME_STEP`` with
torch outputs (:func:`make_skrl_env` builds one), passes skrl's torch actions to the env on its
device (no NumPy round trip), and returns copies: ``observations`` ``[E, D]``, ``rewards``,
``terminated``, ``truncated`` ``[E, 1]``, and the env's info.

skrl is optional: ``pip install skrl`` (it is in the ``dev`` extra).
"""

from __future__ import annotations

from typing import Any

import gymnasium
from gymnasium.vector import AutoresetMode, VectorEnv

__all__ = ["SkrlWrapper", "make_skrl_env"]  # noqa: F822


def make_skrl_env(env_id: str, num_envs: int, *, seed=None, **kwargs) -> "SkrlWrapper":  # noqa: F821
    """``gymnasium.make_vec(env_id, num_envs, autoreset_mode=SAME_STEP, output="torch", **kwargs)`` as a
    :class:`SkrlWrapper` whose first ``reset()`` uses ``seed``.

    Raises:
        ImportError: skrl is not installed.
        TypeError: ``autoreset_mode`` or ``output`` passed in ``kwargs`` (set here).
    """
    cls = _wrapper_class()
    for name in ("autoreset_mode", "output"):
        if name in kwargs:
            raise TypeError(f"make_skrl_env sets {name} itself (SAME_STEP, torch); do not pass it")
    env = gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                             autoreset_mode=AutoresetMode.SAME_STEP, output="torch", **kwargs)
    return cls(env, seed=seed)


def _wrapper_class():
    cls = globals().get("_SkrlWrapper")
    if cls is None:
        cls = globals()["_SkrlWrapper"] = _build_wrapper_class()
    return cls


def _build_wrapper_class():
    try:
        from skrl.envs.wrappers.torch.base import Wrapper
    except ImportError as exc:
        raise ImportError("the skrl wrapper needs skrl: pip install skrl") from exc
    import torch

    class SkrlWrapper(Wrapper):
        """A trackgen vector env (SAME_STEP, ``output="torch"``) as an skrl env (the module docstring).

        Raises:
            TypeError: ``env`` is not a Gymnasium ``VectorEnv``.
            ValueError: its autoreset mode is not SAME_STEP, or its outputs are not torch tensors.
        """

        def __init__(self, env: VectorEnv, *, seed=None):
            if not isinstance(env, VectorEnv):
                raise TypeError(f"SkrlWrapper needs a gymnasium.vector.VectorEnv, got {type(env).__name__}")
            mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
            if mode != AutoresetMode.SAME_STEP:
                raise ValueError(
                    f"SkrlWrapper needs an env in AutoresetMode.SAME_STEP, got {mode}: under NEXT_STEP skrl "
                    "records the step after an episode's end (action ignored, reward 0) as a transition; "
                    "build it with trackgen_env.integrations.skrl.make_skrl_env(env_id, N)"
                )
            if getattr(env.unwrapped, "output", "numpy") != "torch":
                raise ValueError('SkrlWrapper needs torch outputs: build the env with output="torch"')
            super().__init__(env)
            self._seed = seed
            self._observation = self._info = None
            self._device = torch.device(str(env.unwrapped.device))  # a Warp device: its torch name

        @property
        def observation_space(self) -> gymnasium.Space:
            return self._env.single_observation_space

        @property
        def action_space(self) -> gymnasium.Space:
            return self._env.single_action_space

        def reset(self) -> tuple[torch.Tensor, dict[str, Any]]:
            """The observations (a copy) and info; the vector env resets itself after that (SAME_STEP),
            so only the first call resets it, as skrl's own vector wrappers do."""
            if self._observation is None:
                obs, self._info = self._env.reset(seed=self._seed)
                self._observation = obs.clone()
            return self._observation, self._info

        def step(self, actions: torch.Tensor):
            obs, reward, terminated, truncated, info = self._env.step(actions)
            n = self.num_envs
            self._observation, self._info = obs.clone(), info  # the env overwrites its buffers at the next step
            return (self._observation, reward.clone().view(n, 1), terminated.clone().view(n, 1),
                    truncated.clone().view(n, 1), info)

        def state(self):
            return None

        def render(self, *args, **kwargs):
            return self._env.render(*args, **kwargs)

        def close(self) -> None:
            self._env.close()

    SkrlWrapper.__module__ = __name__
    SkrlWrapper.__qualname__ = "SkrlWrapper"
    return SkrlWrapper


def __getattr__(name: str):
    # skrl is imported when the wrapper is first used, so ``import trackgen_env`` works without it
    if name == "SkrlWrapper":
        return _wrapper_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
