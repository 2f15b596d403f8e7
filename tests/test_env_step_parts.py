"""The step's parts apart: the observation kernel writes the observation only; reward, termination,
the info arrays and the autoreset mask come from the next part alone."""

from __future__ import annotations

import numpy as np
import pytest

from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv


def _outcome(env) -> list[np.ndarray]:
    return [a.numpy().copy() for a in (env._reward, env._terminated, env._truncated, env._autoreset,
                                       *env._info.values())]


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
def test_observe_writes_the_observation_only_and_the_outcome_comes_after(cls):
    env = cls(6, "cpu", seed=2, capture=False)
    try:
        env.reset(seed=2)
        rng = np.random.default_rng(0)
        for _ in range(20):
            env.step(rng.uniform(-1, 1, (6, env.single_action_space.shape[0])).astype(np.float32))
        obs = env._obs.numpy().copy()
        res = env.course.step()  # the bodies did not move: the same frame again
        for arr in (env._reward, env._terminated, env._truncated, env._autoreset, *env._info.values()):
            arr.fill_(1)
        marked = _outcome(env)
        env._obs.zero_()
        env._observe(res, env._no_envs, False)
        np.testing.assert_array_equal(env._obs.numpy(), obs)
        for before, after in zip(marked, _outcome(env)):
            np.testing.assert_array_equal(before, after)  # untouched by the observation
        env._reward_termination(res, env._no_envs, False)
        assert not np.array_equal(_outcome(env)[0], marked[0])  # the reward is this part's
        np.testing.assert_array_equal(env._obs.numpy(), obs)  # and the observation not
    finally:
        env.close()
