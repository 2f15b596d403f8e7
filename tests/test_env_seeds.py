"""Per-env seed lists, as Gymnasium's ``reset(seed=[...])``: env i's courses come from ``seed[i]``."""

import numpy as np
import pytest

from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv
from trackgen_env.core.seeding import env_seeds


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
def test_a_seed_list_gives_env_i_the_seed_i(cls):
    env = cls(num_envs=4, device="cpu", seed=1)
    by_int, _ = env.reset(seed=9)
    by_int = by_int.copy()
    by_list, _ = env.reset(seed=[int(s) for s in env_seeds(9, 4).view(np.uint32)])
    assert np.array_equal(by_int, by_list)
    built = cls(num_envs=4, device="cpu", seed=env_seeds(9, 4).view(np.uint32))
    assert np.array_equal(built.reset()[0], by_int)


def test_a_seed_list_of_another_length_is_refused_and_the_env_stays_usable():
    env = TrackVectorEnv(num_envs=4, device="cpu", seed=1)
    obs, _ = env.reset(seed=3)
    obs = obs.copy()
    with pytest.raises(ValueError, match="4 ints"):
        env.reset(seed=[1, 2, 3])
    with pytest.raises(ValueError, match="4 ints"):
        env.reset(seed=[1, 2, 3, -4])
    assert np.array_equal(env.reset(seed=3)[0], obs)


def test_reset_options_that_are_not_a_dict_are_refused():
    env = TrackVectorEnv(num_envs=2, device="cpu", seed=1)
    with pytest.raises(TypeError, match="options must be None or a dict"):
        env.reset(options=5)
    env.reset()


@pytest.mark.parametrize("cls, name", [(TrackVectorEnv, "max_episode_steps"), (TrackVectorEnv, "off_track_penalty"),
                                       (GatesVectorEnv, "crash_penalty"), (GatesVectorEnv, "laps")])
def test_values_recorded_into_the_step_graph_cannot_be_set_after_construction(cls, name):
    env = cls(num_envs=2, device="cpu", seed=1)
    before = getattr(env, name)
    with pytest.raises(AttributeError, match="fixed at construction"):
        setattr(env, name, 7)
    assert getattr(env, name) == before


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
def test_env_seeds_are_non_negative_and_reset_takes_them_as_they_are(cls):
    seeds = env_seeds(9, 64)
    assert seeds.dtype == np.uint32 and seeds.min() >= 0 and (seeds >= 2**31).any()  # high bit kept, not negative
    env = cls(num_envs=4, device="cpu", seed=1)
    by_int, _ = env.reset(seed=9)
    by_int = by_int.copy()
    by_values, _ = env.reset(seed=env_seeds(9, 4))  # no view, no conversion
    assert np.array_equal(by_int, by_values)
    by_list, _ = env.reset(seed=env_seeds(9, 4).tolist())
    assert np.array_equal(by_int, by_list)
