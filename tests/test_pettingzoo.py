"""The PettingZoo face of TrackGen-Race-v0: PettingZoo's own API and seed tests, and its semantics."""

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test

from trackgen_env.envs.race import RaceVectorEnv
from trackgen_env.integrations.pettingzoo import parallel_env


@pytest.mark.parametrize("num_agents", [1, 2, 4])
def test_parallel_api_test(num_agents):
    env = parallel_env(num_agents=num_agents, device="cpu", seed=0, max_episode_steps=200)
    parallel_api_test(env, num_cycles=300)


def test_parallel_seed_test():
    parallel_seed_test(lambda: parallel_env(num_agents=3, device="cpu", seed=1, max_episode_steps=100), num_cycles=50)


def test_agents_are_the_race_envs_cars_on_one_course():
    env = parallel_env(num_agents=3, device="cpu", seed=4)
    obs, infos = env.reset(seed=4)
    assert env.possible_agents == ["car_0", "car_1", "car_2"] and env.agents == env.possible_agents
    race = RaceVectorEnv(1, "cpu", num_agents=3, seed=4)
    vobs, vinfo = race.reset(seed=4)
    for i, agent in enumerate(env.agents):
        np.testing.assert_array_equal(obs[agent], vobs[i])
        assert infos[agent]["rank"] == vinfo["rank"][i]
    act = {agent: np.array([0.0, 0.6], np.float32) for agent in env.agents}
    obs, rewards, terms, truncs, infos = env.step(act)
    vobs, vrew, *_ = race.step(np.tile([0.0, 0.6], (3, 1)).astype(np.float32))
    for i, agent in enumerate(env.possible_agents):
        np.testing.assert_array_equal(obs[agent], vobs[i])
        assert rewards[agent] == pytest.approx(float(vrew[i]))


def test_an_out_car_leaves_the_agents_and_the_race_goes_on():
    env = parallel_env(num_agents=3, device="cpu", seed=4)
    env.reset(seed=4)
    # car_0 steers hard at full throttle into the band; the others wait
    for _ in range(200):
        actions = {a: np.array([1.0, 1.0] if a == "car_0" else [0.0, 0.0], np.float32) for a in env.agents}
        obs, rewards, terms, truncs, infos = env.step(actions)
        if "car_0" not in env.agents:
            break
    assert terms["car_0"] and infos["car_0"]["out"]
    assert env.agents == ["car_1", "car_2"]
    with pytest.raises(KeyError, match="not live"):
        env.step({"car_0": np.zeros(2, np.float32)})


def test_the_face_sets_its_own_vector_arguments():
    with pytest.raises(TypeError, match="parallel_env sets"):
        parallel_env(num_agents=2, device="cpu", num_envs=4)
    with pytest.raises(ValueError, match="num_agents must be an int in"):
        parallel_env(num_agents=0, device="cpu")


@pytest.mark.parametrize("action, error, match", [
    (0.5, ValueError, r"car_0: action must have shape \(2,\)"),
    (np.zeros((1, 2), np.float32), ValueError, r"car_0: action must have shape \(2,\)"),
    (np.zeros(3, np.float32), ValueError, r"car_0: action must have shape \(2,\)"),
    ([1, 1], TypeError, "car_0: "),
    (np.array([np.nan, 0.0], np.float32), ValueError, "car_0: action holds NaN"),
])
def test_a_malformed_action_is_refused_naming_the_agent_and_the_race_is_unchanged(action, error, match):
    env = parallel_env(num_agents=2, device="cpu")
    obs, _ = env.reset(seed=0)
    good = {"car_0": np.zeros(2, np.float32), "car_1": np.zeros(2, np.float32)}
    with pytest.raises(error, match=match):
        env.step({**good, "car_0": action})
    after, *_ = env.step(good)
    reference = parallel_env(num_agents=2, device="cpu")
    reference.reset(seed=0)
    expected, *_ = reference.step(good)
    for agent in expected:
        np.testing.assert_array_equal(after[agent], expected[agent])
    env.close()
    reference.close()
