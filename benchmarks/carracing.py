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


class _Runner:
    """Steps a CarRacing env (or a vector env of ``num_envs``) with random actions in timed slices."""

    def __init__(self, env, num_envs: int = 1, seed: int = 0):
        self.env, self.num_envs = env, num_envs
        env.action_space.seed(seed)
        self.pool = [env.action_space.sample() for _ in range(64)]
        env.reset(seed=seed)
        self.n, self.elapsed, self.resets = 0, 0.0, 0

    def warm_up(self, steps: int = 10) -> _Runner:
        """``steps`` untimed steps (not counted), as :meth:`benchmarks.measure.Timer.warm_up`."""
        self.run(0.0, steps)
        self.n, self.elapsed, self.resets = 0, 0.0, 0
        return self

    def run(self, seconds: float, min_steps: int = 1) -> None:
        spent, steps = 0.0, 0
        while spent < seconds or steps < min_steps:
            t0 = time.perf_counter()
            _, _, term, trunc, _ = self.env.step(self.pool[self.n % 64])
            if self.num_envs == 1 and (term or trunc):
                self.env.reset()  # the reset is part of running it (a vector env resets itself)
                self.resets += 1
            dt = time.perf_counter() - t0
            spent, steps, self.elapsed, self.n = spent + dt, steps + 1, self.elapsed + dt, self.n + 1

    def result(self) -> dict:
        return {"steps": self.n, "seconds": self.elapsed, "env_steps_per_s": self.n * self.num_envs / self.elapsed,
                "resets": self.resets, "num_envs": self.num_envs}


def pixels_runner(seed: int = 0) -> _Runner:
    """The ``pixels`` runner alone (one ``gymnasium.make("CarRacing-v3")``), for timing in turns with others."""
    import gymnasium

    return _Runner(gymnasium.make(ENV_ID), seed=seed)


def measure(seconds: float = 2.0, num_vector_envs: int = 8, tracks: int = 10, min_steps: int = 20,
            seed: int = 0, others: dict | None = None, rounds: int = 5) -> dict:
    """``{"pixels", "physics", "sync_vector", "track_generation"}`` (see the module docstring).

    ``others``: ``{name: timer}`` (objects with ``run(seconds, min_steps)`` and ``result()``, e.g.
    :class:`benchmarks.measure.Timer`), timed in turns with the CarRacing runs (``rounds`` round-robin
    turns of ``seconds / rounds`` each), so that their ratios see the same load; their results are
    returned under their names.
    """
    import gymnasium

    # without Gymnasium's passive checker: the stub returns one constant frame, which it flags (an
    # observation shared between steps); the checker only looks at the first reset and step
    physics_env = gymnasium.make(ENV_ID, disable_env_checker=True)
    _stub_pixels(physics_env)
    runners = {"pixels": _Runner(gymnasium.make(ENV_ID), seed=seed), "physics": _Runner(physics_env, seed=seed),
               "sync_vector": _Runner(gymnasium.make_vec(ENV_ID, num_envs=num_vector_envs, vectorization_mode="sync"),
                                      num_envs=num_vector_envs, seed=seed)}
    timers = {**runners, **(others or {})}
    for _ in range(rounds):
        for name, t in timers.items():
            t.run(seconds / rounds, max(1, min_steps // rounds) if name in runners else 1)
    out = {name: t.result() for name, t in timers.items()}
    t0 = time.perf_counter()
    for i in range(tracks):
        physics_env.reset(seed=seed + 1 + i)
    per_track = (time.perf_counter() - t0) / tracks
    out["track_generation"] = {"tracks": tracks, "s_per_track": per_track, "tracks_per_s": 1.0 / per_track}
    for r in runners.values():
        r.env.close()
    return out
