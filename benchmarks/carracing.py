"""Gymnasium's CarRacing-v3 (Box2D physics, 96x96 pixel observations), timed as its users run it.

Needs ``gymnasium[box2d]`` (``pip install -e .[bench]``); :func:`available` says why not.

* ``pixels``: ``gymnasium.make("CarRacing-v3")``, one env, ``step`` with random actions
  (a fixed pool drawn from its action space), reset when an episode ends (the TimeLimit of
  1000 steps, or leaving the playfield): what a user runs;
* ``physics``: the same env with its pixel drawing stubbed out (``env.unwrapped._render``
  returns a constant zero frame): Box2D physics, tile contacts and reward only;
* ``sync_vector``: ``gymnasium.make_vec("CarRacing-v3", num_envs, vectorization_mode="sync")``
  (pixels), env-steps/s over all its envs;
* ``track_generation``: ``reset()`` of the physics-only env, i.e. a new random track with its
  retries (``_create_track`` until it succeeds, the Box2D road tiles), the car, one step.
"""

from __future__ import annotations

import time

import numpy as np

ENV_ID = "CarRacing-v3"


def available() -> str | None:
    """None when CarRacing-v3 can be built here, else the reason (the error's message)."""
    try:
        import gymnasium

        gymnasium.make(ENV_ID).close()
    except Exception as exc:  # DependencyNotInstalled (no Box2D / pygame), ImportError, ...
        return f"{type(exc).__name__}: {exc}"
    return None


def _stub_pixels(env) -> None:
    frame = np.zeros((96, 96, 3), np.uint8)
    env.unwrapped._render = lambda mode, frame=frame: frame


def _run(env, seconds: float, min_steps: int, num_envs: int = 1, seed: int = 0) -> dict:
    env.action_space.seed(seed)
    pool = [env.action_space.sample() for _ in range(64)]
    env.reset(seed=seed)
    n, resets, t0 = 0, 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < min_steps:
        _, _, term, trunc, _ = env.step(pool[n % 64])
        n += 1
        if num_envs == 1 and (term or trunc):
            env.reset()
            resets += 1
    elapsed = time.perf_counter() - t0
    return {"steps": n, "seconds": elapsed, "env_steps_per_s": n * num_envs / elapsed, "resets": resets}


def measure(seconds: float = 2.0, num_vector_envs: int = 8, tracks: int = 10, min_steps: int = 20,
            seed: int = 0) -> dict:
    """``{"pixels", "physics", "sync_vector", "track_generation"}`` (see the module docstring)."""
    import gymnasium

    env = gymnasium.make(ENV_ID)
    pixels = _run(env, seconds, min_steps, seed=seed)
    _stub_pixels(env)
    physics = _run(env, seconds, min_steps, seed=seed)
    t0 = time.perf_counter()
    for i in range(tracks):
        env.reset(seed=seed + 1 + i)
    per_track = (time.perf_counter() - t0) / tracks
    env.close()
    vec = gymnasium.make_vec(ENV_ID, num_envs=num_vector_envs, vectorization_mode="sync")
    sync = _run(vec, seconds, max(1, min_steps // num_vector_envs), num_envs=num_vector_envs, seed=seed)
    sync["num_envs"] = num_vector_envs
    vec.close()
    return {"pixels": pixels, "physics": physics, "sync_vector": sync,
            "track_generation": {"tracks": tracks, "s_per_track": per_track, "tracks_per_s": 1.0 / per_track}}
