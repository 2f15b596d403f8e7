"""``ShardedVectorEnv``: one vector env split over worker threads, one shard per CPU core.

Warp runs a CPU kernel on one thread. A shard is an env of its own (its own buffers and
recorded step graph) over a contiguous slice of the envs; ``step`` steps every shard in a
``ThreadPoolExecutor`` and concatenates the outputs. Warp calls its native library through
``ctypes.CDLL``, which releases the GIL for the call, so the shards' graph replays (the
kernels) run in parallel; only the shards' short Python parts (action checks, output
copies) take turns. ``benchmarks/run.py`` measures the scaling (``benchmarks/NOTES.md``).

The shards are seeded so that the sharded env equals one env of the same seeds: an int
seed ``s`` gives env ``i`` the seed ``env_seeds(s, num_envs)[i]`` exactly as one env does
(:func:`~trackgen_env.seeding.env_seeds`), so every course, start and output is the same,
env for env, as ``gymnasium.make_vec(env_id, num_envs, seed=s)``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import gymnasium
import numpy as np
from gymnasium.vector.utils import batch_space

from ..checks import check_int
from ..seeding import env_seeds

__all__ = ["ShardedVectorEnv"]


def _shard_seeds(seed, num_envs: int, bounds) -> list:
    """Per-shard seed lists of an int seed, ``num_envs`` ints, or None (one int drawn from the OS)."""
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**31))
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        per_env = env_seeds(int(seed), num_envs)
    else:
        per_env = np.asarray(seed)
        if per_env.shape != (num_envs,):
            raise ValueError(f"seed must be an int, None or {num_envs} ints, got shape {per_env.shape}")
    return [[int(x) for x in per_env[a:b]] for a, b in bounds]


class ShardedVectorEnv(gymnasium.vector.VectorEnv):
    """``num_envs`` envs of ``env_id`` as ``num_shards`` shard envs stepped in parallel threads.

    Args:
        env_id: a registered vector env id (``"TrackGen-Track-v0"``, ``"TrackGen-Gates-v0"``).
        num_envs: envs in all, an int >= 1.
        num_shards: shards (worker threads), an int in ``[1, num_envs]``; None: the CPU
            cores this process may use (``os.sched_getaffinity``), at most ``num_envs``. Shard
            ``k`` holds envs ``[k E / S, (k + 1) E / S)``.
        seed: an int, ``num_envs`` ints, or None (as the env's ``seed``).
        **kwargs: the env's other arguments (``device``, ``autoreset_mode``, ``car``, ...);
            ``output`` must be ``"numpy"`` (the outputs are concatenated on the host).

    ``step`` runs the shards in parallel; ``reset`` runs them in turn (it may record a graph,
    and Warp's CPU capture state is one per process). ``reset(seed=, options=)`` and
    ``step(actions [E, A])`` return what one env of
    ``num_envs`` would: ``obs [E, D]``, ``reward [E]``, ``terminated [E]``, ``truncated
    [E]`` NumPy arrays and the info dict with each array concatenated over the shards.
    ``options={"reset_mask": m}`` (``[E]`` bool) resets the masked envs of the shards that hold one.

    Raises:
        TypeError / ValueError: bad ``num_envs`` / ``num_shards`` / ``seed``, ``output`` other
            than ``"numpy"``; actions of another leading size (before any shard steps). The
            shard env's own errors as it raises them.
    """

    def __init__(self, env_id: str, num_envs: int, num_shards: int | None = None, *, seed=None, **kwargs):
        self.num_envs = check_int("num_envs", num_envs, lo=1)
        if num_shards is None:
            num_shards = min(len(os.sched_getaffinity(0)), self.num_envs)
        self.num_shards = check_int("num_shards", num_shards, lo=1, hi=self.num_envs)
        if kwargs.get("output", "numpy") != "numpy":
            raise ValueError(f"ShardedVectorEnv concatenates NumPy outputs: output must be 'numpy', got {kwargs['output']!r}")
        E, S = self.num_envs, self.num_shards
        self.bounds = [(k * E // S, (k + 1) * E // S) for k in range(S)]
        seeds = _shard_seeds(seed, E, self.bounds)
        self.shards = [gymnasium.make_vec(env_id, num_envs=b - a, seed=s, **kwargs)
                       for (a, b), s in zip(self.bounds, seeds)]
        first = self.shards[0]
        self.metadata = dict(first.metadata)
        self.render_mode = first.render_mode
        self.single_observation_space = first.single_observation_space
        self.single_action_space = first.single_action_space
        self.observation_space = batch_space(self.single_observation_space, E)
        self.action_space = batch_space(self.single_action_space, E)
        self._pool = ThreadPoolExecutor(max_workers=S, thread_name_prefix="trackgen-shard")

    def _map(self, fn):
        return list(self._pool.map(fn, range(self.num_shards)))

    def _join(self, outs):
        """Concatenate a tuple of per-shard outputs (arrays, and info dicts of arrays)."""
        joined = []
        for parts in zip(*outs):
            if isinstance(parts[0], dict):
                joined.append({key: np.concatenate([p[key] for p in parts]) for key in parts[0]})
            else:
                joined.append(np.concatenate(parts))
        return tuple(joined)

    def reset(self, *, seed=None, options=None):
        """Reset as one env would (see the class docstring); ``(obs [E, D], info)``."""
        seeds = [None] * self.num_shards if seed is None else _shard_seeds(seed, self.num_envs, self.bounds)
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (self.num_envs,):
                raise ValueError(f"options['reset_mask'] must have shape ({self.num_envs},), got {mask.shape}")

            def one(k):
                a, b = self.bounds[k]
                shard = self.shards[k]
                if not mask[a:b].any():  # a shard whose envs are all left alone: its current outputs
                    return shard._io.masked_reset_outputs(mask[a:b])
                return shard.reset(seed=seeds[k], options={**options, "reset_mask": mask[a:b]})
        else:
            def one(k):
                return self.shards[k].reset(seed=seeds[k], options=options)
        # in turn, not in the threads: a reset may record a graph, and Warp's CPU capture state is
        # one per process (a capture in one thread would take in another thread's launches)
        return self._join([one(k) for k in range(self.num_shards)])

    def step(self, actions):
        """Step every shard in its thread; ``(obs, reward, terminated, truncated, info)`` over all envs."""
        actions = np.asarray(actions)
        if actions.ndim < 1 or actions.shape[0] != self.num_envs:
            raise ValueError(f"actions must have shape {self.action_space.shape}, got {actions.shape}")
        return self._join(self._map(lambda k: self.shards[k].step(actions[slice(*self.bounds[k])])))

    def close_extras(self, **kwargs):
        """Close every shard and stop the worker threads."""
        for shard in self.shards:
            shard.close()
        self._pool.shutdown()
