"""Progress in TrackGen-Track-v0 when a step crosses several checkpoints (issue 9, item 1)."""

import numpy as np

from trackgen_env.envs.controllers import PurePursuit
from trackgen_env.envs.track import TrackVectorEnv


def test_pure_pursuit_laps_with_checkpoints_closer_than_a_step():
    """checkpoint_spacing=0.15 m, half the 0.3 m an rc10 covers per step at top speed: the
    controller's steps cross one or two checkpoints, and every one must count for a lap."""
    n = 64
    env = TrackVectorEnv(n, "cpu", seed=2026, max_episode_steps=600, checkpoint_spacing=0.15)
    assert env.car.max_speed * env.car.dt > 0.15
    controller = PurePursuit(env.car)
    obs, _ = env.reset()
    outcome = np.full(n, "", dtype=object)
    for _ in range(600):
        obs, _, terminated, truncated, info = env.step(controller(obs))
        for e in np.flatnonzero((terminated | truncated) & (outcome == "")):
            outcome[e] = "lap" if info["laps"][e] >= 1 and not info["off_track"][e] else "fail"
        if (outcome != "").all():
            break
    assert (outcome == "lap").mean() >= 0.95, dict(zip(*np.unique(outcome, return_counts=True)))
