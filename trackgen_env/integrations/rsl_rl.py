"""rsl_rl (``rsl-rl-lib``, the PPO of Isaac Lab) on trackgen_env's vector envs.

:class:`RslRlVecEnv` makes a native vector env (``TrackGen-Track-v0``, ``TrackGen-Gates-v0``)
an ``rsl_rl.env.VecEnv``, so rsl_rl's ``OnPolicyRunner`` trains on it directly, with the env's
zero-copy torch outputs on the env's device and no NumPy round trip:

* observations: a ``TensorDict`` ``{"policy": [E, D] float32}`` on the env's device (rsl_rl's
  ``obs_groups`` map ``"actor"`` and ``"critic"`` to it);
* ``dones`` ``[E]`` long: ``terminated | truncated``;
* ``extras["time_outs"]`` ``[E]`` bool: ``truncated & ~terminated``, so PPO bootstraps a
  time-limit end from the value and treats an edge contact or a completed lap as terminal;
* ``extras["episode"]`` on a step where episodes ended: per ended episode its return, length and
  the env's episode counters from the final step (``laps``, ``lap_rate``; gates: ``gates_passed``),
  which rsl_rl's logger averages per iteration into TensorBoard (``Episode/<key>``).

Two rules make the batch right:

* **SAME_STEP auto-reset.** The env is built with ``autoreset_mode=AutoresetMode.SAME_STEP``: a
  finished env resets within the step that ended it, so every transition rsl_rl stores had its
  action applied. Under NEXT_STEP the step after an end would ignore the action and return reward
  0, and rsl_rl would store it as a transition; the adapter refuses such an env.
* **Copies, not views.** The env's torch outputs are views of its own buffers, overwritten by the
  next ``step()``. rsl_rl's PPO keeps the observation it acted on (``transition.observations``)
  until after the next ``env.step()``; a view would then hold the *next* observation. The adapter
  hands out a copy of the observation and the reward each step (and fresh ``dones`` / time-outs).

:class:`OnPolicyRunner` is rsl_rl's runner with one addition: its multi-GPU mode
(``torchrun``, one process per GPU, NCCL) also runs on CPU processes over gloo.

rsl_rl is optional: ``pip install -e ".[rsl_rl]"`` (a source checkout; :data:`RSL_RL_INSTALL_HINT`).
"""

from __future__ import annotations

import os
import time
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from ..core.checks import install_hint

__all__ = ["RslRlVecEnv", "make_rsl_rl_vec_env", "require_rsl_rl", "OnPolicyRunner", "RSL_RL_INSTALL_HINT",  # noqa: F822
           "EPISODE_KEYS", "load_policy"]

#: How to install the rsl_rl extra.
RSL_RL_INSTALL_HINT = install_hint("rsl_rl")

#: Per env: the info counters of an episode's final step that the adapter reports per episode.
EPISODE_KEYS = {"TrackGen-Track-v0": ("laps",), "TrackGen-Gates-v0": ("laps", "gates_passed"),
                "TrackGen-Race-v0": ("laps", "rank", "finished")}


def require_rsl_rl() -> None:
    """Import rsl_rl (and torch), or say how to install them.

    Raises:
        ImportError: rsl-rl-lib is missing (:data:`RSL_RL_INSTALL_HINT`).
    """
    _rsl_rl()


def _rsl_rl():
    try:
        import rsl_rl.env
        import rsl_rl.runners
    except ImportError as exc:
        raise ImportError(f"the rsl_rl adapter needs rsl-rl-lib: {RSL_RL_INSTALL_HINT}") from exc
    return rsl_rl


def _autoreset_mode(env: VectorEnv) -> AutoresetMode:
    mode = env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    return AutoresetMode(mode) if not isinstance(mode, AutoresetMode) else mode


def make_rsl_rl_vec_env(env_id: str, num_envs: int, *, seed=None, monitor: bool = False, **kwargs) -> "RslRlVecEnv":  # noqa: F821
    """``gymnasium.make_vec(env_id, num_envs, autoreset_mode=SAME_STEP, output="torch", **kwargs)`` as an
    :class:`RslRlVecEnv`, reset with ``seed`` (an int: env ``i`` drives the courses of ``hash(seed, i)``;
    or one seed per env).

    Raises:
        ImportError: rsl-rl-lib is not installed.
        TypeError: ``autoreset_mode`` or ``output`` passed in ``kwargs`` (the adapter sets them).
    """
    _rsl_rl()
    for name in ("autoreset_mode", "output"):
        if name in kwargs:
            raise TypeError(f"make_rsl_rl_vec_env sets {name} itself (SAME_STEP, torch); do not pass it")
    env = gymnasium.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                             autoreset_mode=AutoresetMode.SAME_STEP, output="torch", **kwargs)
    try:
        return _adapter_class()(env, seed=seed, monitor=monitor)
    except BaseException:
        env.close()
        raise


def _adapter_class():
    cls = globals().get("_RslRlVecEnv")
    if cls is None:
        cls = globals()["_RslRlVecEnv"] = _build_adapter_class()
    return cls


def _build_adapter_class():
    rsl_rl = _rsl_rl()
    import torch
    from tensordict import TensorDict

    class RslRlVecEnv(rsl_rl.env.VecEnv):
        """A trackgen vector env (SAME_STEP, ``output="torch"``) seen as an rsl_rl ``VecEnv`` (module docstring).

        Args:
            env: a :class:`gymnasium.vector.VectorEnv` in ``AutoresetMode.SAME_STEP`` with torch outputs.
            seed: the seed of the first ``reset()`` (None: the env's own).
            monitor: keep a row per finished episode in :attr:`episodes` (``r``: return, ``l``: length,
                ``t``: seconds since construction, and the env's episode counters), as SB3's ``VecMonitor``.

        Attributes:
            episodes: with ``monitor``, one dict per finished episode, in the order they ended.

        Raises:
            TypeError: ``env`` is not a Gymnasium ``VectorEnv``.
            ValueError: its autoreset mode is not SAME_STEP, or its outputs are not torch tensors.
        """

        def __init__(self, env: VectorEnv, *, seed=None, monitor: bool = False):
            if not isinstance(env, VectorEnv):
                raise TypeError(f"RslRlVecEnv needs a gymnasium.vector.VectorEnv, got {type(env).__name__}")
            mode = _autoreset_mode(env)
            if mode != AutoresetMode.SAME_STEP:
                raise ValueError(
                    f"RslRlVecEnv needs an env in AutoresetMode.SAME_STEP, got {mode}: under NEXT_STEP the step after "
                    "an episode's end ignores the action, and rsl_rl would store it as a transition; build it with "
                    "trackgen_env.integrations.rsl_rl.make_rsl_rl_vec_env(env_id, N)")
            output = getattr(env.unwrapped, "output", "numpy")
            if output != "torch":
                raise ValueError(
                    f'RslRlVecEnv needs torch outputs on the env\'s device: build the env with output="torch", '
                    f"got {output!r}"
                )
            self.env = env
            base = env.unwrapped
            self.num_envs = env.num_envs
            self.num_actions = int(np.prod(env.single_action_space.shape))
            limit = getattr(base, "max_episode_steps", None)
            self.max_episode_length = int(limit) if limit is not None else 2**31 - 1
            self.cfg = {"env_id": getattr(getattr(env, "spec", None), "id", None), "num_envs": self.num_envs}
            self.env_id = self.cfg["env_id"]
            obs, info = env.reset(seed=seed)
            self.device = obs.device
            self._keys = tuple(k for k in EPISODE_KEYS.get(self.env_id, ("laps",)) if k in info)
            self._obs = obs.clone()
            self._length = torch.zeros(self.num_envs, dtype=torch.long, device=self.device)
            self._return = torch.zeros(self.num_envs, dtype=torch.float32, device=self.device)
            self.monitor = monitor
            self.episodes: list[dict[str, float]] = []
            self._start = time.perf_counter()

        # -- rsl_rl's VecEnv -----------------------------------------------------------------
        @property
        def episode_length_buf(self) -> torch.Tensor:
            """``[E]`` long: the steps of each env's current episode (read-only: the env's time
            limit counts its own steps, so rsl_rl's ``init_at_random_ep_len`` does not apply)."""
            return self._length

        @episode_length_buf.setter
        def episode_length_buf(self, value) -> None:
            raise ValueError("RslRlVecEnv: the env counts its episodes' steps itself; rsl_rl's "
                             "learn(init_at_random_ep_len=True) is not supported (pass False)")

        def get_observations(self) -> TensorDict:
            """The current observations (a copy: the env's buffer changes with every step)."""
            return TensorDict({"policy": self._obs.clone()}, batch_size=[self.num_envs], device=self.device)

        def step(self, actions: torch.Tensor):
            """One step of every env; returns ``(obs, rewards, dones, extras)`` (module docstring)."""
            obs, reward, terminated, truncated, info = self.env.step(actions)
            done = terminated | truncated
            self._obs = obs.clone()  # the env overwrites its buffer at the next step; rsl_rl keeps this one
            reward = reward.clone()
            extras: dict[str, Any] = {"time_outs": truncated & ~terminated}
            self._return += reward
            self._length += 1
            ended = done.nonzero().flatten()  # one host sync per step, as rsl_rl's logger does
            if ended.numel():
                final = info["final_info"]
                episode = {key: final[key][ended].float() for key in self._keys}
                if "laps" in episode:
                    episode["lap_rate"] = (episode["laps"] >= 1).float()
                extras["episode"] = episode  # rsl_rl's logger logs the episodes' return and length itself
                if self.monitor:
                    self._record(ended, episode)
                self._return[ended] = 0.0
                self._length[ended] = 0
            return (TensorDict({"policy": self._obs}, batch_size=[self.num_envs], device=self.device), reward,
                    done.long(), extras)

        def _record(self, ended: torch.Tensor, episode: dict) -> None:
            t = round(time.perf_counter() - self._start, 6)
            columns = {"r": self._return[ended].tolist(), "l": self._length[ended].tolist()}
            columns.update({k: episode[k].long().tolist() for k in self._keys})
            for i in range(len(columns["r"])):
                self.episodes.append({"r": columns["r"][i], "l": columns["l"][i], "t": t,
                                      **{k: columns[k][i] for k in self._keys}})

        def write_monitor(self, path: str | os.PathLike) -> None:
            """Write :attr:`episodes` as SB3's ``VecMonitor`` CSV (a ``#`` JSON header line, then ``r,l,t,<keys>``)."""
            import json

            with open(path, "w") as f:
                f.write("#" + json.dumps({"t_start": self._start, "env_id": self.env_id}) + "\n")
                f.write(",".join(["r", "l", "t", *self._keys]) + "\n")
                for row in self.episodes:
                    f.write(",".join(str(row[k]) for k in ("r", "l", "t", *self._keys)) + "\n")

        def close(self) -> None:
            self.env.close()

    RslRlVecEnv.__module__ = __name__
    RslRlVecEnv.__qualname__ = "RslRlVecEnv"
    return RslRlVecEnv


def load_policy(path: str | os.PathLike, device: str = "cpu", actor_cfg: dict | None = None):
    """The deterministic policy of an rsl_rl run: ``policy.pt`` (the TorchScript export, observation
    normaliser included) or ``model.pt`` (the runner's checkpoint; ``actor_cfg``: the run's
    ``cfg["actor"]`` from ``train.json``, which rebuilds the actor).

    Returns:
        ``(act, obs_dim, action_dim)``: ``act(obs [N, obs_dim] NumPy) -> [N, action_dim]`` float32
        NumPy actions in [-1, 1], the policy's mean.

    Raises:
        ValueError: the file is neither (naming it and what was expected).
    """
    import torch

    try:
        module = torch.jit.load(str(path), map_location=device)
    except Exception:  # not a TorchScript archive: a checkpoint of the runner
        module = None
    if module is not None:
        weights = [p for p in module.parameters() if p.dim() == 2]
        obs_dim, action_dim = int(weights[0].shape[1]), int(weights[-1].shape[0])
    else:
        try:
            saved = torch.load(str(path), map_location=device, weights_only=False)
            state = saved["actor_state_dict"]
        except Exception as exc:
            raise ValueError(f"{path}: cannot load an rsl_rl policy ({type(exc).__name__}: {exc}); expected the "
                             "policy.pt (TorchScript) or model.pt (the runner's checkpoint) that train wrote") from exc
        if actor_cfg is None:
            raise ValueError(f"{path}: an rsl_rl checkpoint needs its run's actor settings (train.json's rsl_rl.actor) "
                             "to rebuild the actor: keep train.json beside it, or pass policy.pt")
        from rsl_rl.utils import resolve_class
        from tensordict import TensorDict

        weights = [v for k, v in state.items() if k.startswith("mlp.") and k.endswith("weight")]
        obs_dim, action_dim = int(weights[0].shape[1]), int(weights[-1].shape[0])
        actor_class, kwargs = resolve_class(actor_cfg)
        obs = TensorDict({"policy": torch.zeros(1, obs_dim)}, batch_size=[1])
        actor = actor_class(obs, {"actor": ["policy"]}, "actor", action_dim, **kwargs)
        actor.load_state_dict(state)
        module = actor.as_jit().to(device).eval()

    def act(obs: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            x = torch.as_tensor(np.asarray(obs, dtype=np.float32), device=device)
            return module(x).clamp(-1.0, 1.0).cpu().numpy()

    return act, obs_dim, action_dim


def _build_runner_class():
    rsl_rl = _rsl_rl()
    import torch

    class OnPolicyRunner(rsl_rl.runners.OnPolicyRunner):
        """rsl_rl's ``OnPolicyRunner``; under ``torchrun`` with a CPU ``device`` its multi-GPU mode runs over
        gloo (rsl_rl's own needs ``cuda:<LOCAL_RANK>`` and NCCL, which it keeps for CUDA devices).

        Each process builds its own env (disjoint seeds: :func:`~trackgen_env.integrations.train_rsl_rl.rank_seeds`);
        rank 0's weights are broadcast, the gradients of every minibatch averaged, the observation
        normaliser's statistics merged, and rank 0 alone logs and saves.
        """

        def _configure_multi_gpu(self) -> None:
            world_size = int(os.getenv("WORLD_SIZE", "1"))
            if world_size <= 1 or str(self.device).startswith("cuda"):
                super()._configure_multi_gpu()
                return
            self.gpu_world_size = world_size
            self.is_distributed = True
            self.gpu_local_rank = int(os.getenv("LOCAL_RANK", "0"))
            self.gpu_global_rank = int(os.getenv("RANK", "0"))
            self.cfg["multi_gpu"] = {"global_rank": self.gpu_global_rank, "local_rank": self.gpu_local_rank,
                                     "world_size": self.gpu_world_size}
            if not torch.distributed.is_initialized():
                torch.distributed.init_process_group(backend="gloo", rank=self.gpu_global_rank,
                                                     world_size=self.gpu_world_size)

    OnPolicyRunner.__module__ = __name__
    OnPolicyRunner.__qualname__ = "OnPolicyRunner"
    return OnPolicyRunner


def __getattr__(name: str):
    # rsl_rl is imported when an adapter is first used, so ``import trackgen_env`` works without it
    if name == "RslRlVecEnv":
        return _adapter_class()
    if name == "OnPolicyRunner":
        cls = globals().get("_OnPolicyRunner")
        if cls is None:
            cls = globals()["_OnPolicyRunner"] = _build_runner_class()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
