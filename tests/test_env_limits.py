"""Episode limits and construction flags: every value that does not fit the device's int32 is refused,
None means no limit, and a flag that is not a bool is refused (issue 9, item 4 and the smaller things)."""

import numpy as np
import pytest

from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv
from trackgen_env.envs.controllers import PurePursuit

ENVS = [TrackVectorEnv, GatesVectorEnv]


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize("name", ["max_episode_steps", "laps"])
@pytest.mark.parametrize("value", [2**31, 2**40, 0, -1])
def test_a_limit_outside_int32_or_below_one_is_refused(cls, name, value):
    with pytest.raises(ValueError,
                       match=rf"{name} must be None \(no limit\) or an int in \[1, 2\*\*31 - 1\].*got {value}"):
        cls(2, "cpu", seed=0, **{name: value})


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize("name, expected", [("max_episode_steps", r'None \(no limit\), an int or "auto"'),
                                            ("laps", r"None \(no limit\) or an int")])
@pytest.mark.parametrize("value", [10.0, "10", "x", "Auto", [10]])
def test_a_limit_that_is_not_an_int_is_refused_with_the_same_type_error_in_both_envs(cls, name, expected, value):
    """Before the fix ``max_episode_steps="10"`` was a TypeError on the track env but a ValueError on the gates env."""
    with pytest.raises(TypeError, match=rf"{name} must be {expected}.*, got {type(value).__name__}"):
        cls(2, "cpu", seed=0, **{name: value})


def test_laps_takes_no_auto():
    for cls in ENVS:
        with pytest.raises(TypeError, match=r"laps must be None \(no limit\) or an int, got str 'auto'"):
            cls(2, "cpu", seed=0, laps="auto")


@pytest.mark.parametrize("cls, default", [(TrackVectorEnv, 1000), (GatesVectorEnv, 1500)])
def test_auto_is_each_envs_own_default_step_limit(cls, default):
    """Before the fix the track env refused ``max_episode_steps="auto"`` (TypeError)."""
    assert cls(2, "cpu", seed=0).max_episode_steps == default
    assert cls(2, "cpu", seed=0, max_episode_steps="auto").max_episode_steps == default


def test_auto_truncates_the_track_env_at_its_default():
    env = TrackVectorEnv(2, "cpu", seed=0, max_episode_steps="auto", autoreset_mode="Disabled")
    env.reset(seed=0)
    still = np.zeros(env.action_space.shape, np.float32)
    for t in range(1, 1001):
        *_, truncated, _ = env.step(still)
        assert truncated.all() == (t == 1000)


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize("limit", [2**31 - 1, None])
def test_the_largest_step_limit_and_no_limit_do_not_truncate(cls, limit):
    """Before the fix, 2**31 wrapped to a negative int32: every env truncated after one step."""
    env = cls(3, "cpu", seed=0, max_episode_steps=limit)
    assert env.max_episode_steps == limit
    env.reset(seed=0)
    hover = np.zeros(env.action_space.shape, np.float32)
    for _ in range(5):
        *_, truncated, _ = env.step(hover)
        assert not truncated.any()


@pytest.mark.parametrize("cls", ENVS)
def test_the_largest_lap_limit_and_no_limit_do_not_terminate_at_once(cls):
    for laps in (2**31 - 1, None):
        env = cls(3, "cpu", seed=0, laps=laps)
        env.reset(seed=0)
        _, _, terminated, _, _ = env.step(np.zeros(env.action_space.shape, np.float32))
        assert not terminated.any()


def test_no_lap_limit_drives_on_after_a_completed_lap():
    env = TrackVectorEnv(4, "cpu", seed=0, laps=None, max_episode_steps=400)
    policy = PurePursuit(env.car)
    obs, _ = env.reset(seed=0)
    most = np.zeros(4, int)
    for _ in range(300):
        obs, _, terminated, truncated, info = env.step(policy(obs))
        assert not truncated.any()
        most = np.maximum(most, info["laps"])
        assert not (terminated & (info["laps"] > 0) & ~info["off_track"]).any()  # a lap ends nothing
    assert most.max() >= 2


@pytest.mark.parametrize("cls", ENVS)
@pytest.mark.parametrize("capture", ["no", 1, None])
def test_capture_must_be_a_bool(cls, capture):
    with pytest.raises(TypeError, match=f"capture must be a bool, got {type(capture).__name__}"):
        cls(2, "cpu", seed=0, capture=capture)


def test_the_seed_error_states_the_ranges_the_check_applies():
    """A scalar seed is an int in [0, 2**64) (all of its bits go into the per-env hash); a
    per-env seed must be in [0, 2**32). The message says exactly that."""
    small = TrackVectorEnv(2, "cpu", seed=0).tracks()
    big = TrackVectorEnv(2, "cpu", seed=2**32).tracks()
    assert not np.array_equal(small[0]["centerline"], big[0]["centerline"])
    env = TrackVectorEnv(2, "cpu", seed=0)
    expected = r"seed must be None, an int in \[0, 2\*\*64\), or 2 ints in \[0, 2\*\*32\) \(one per env\)"
    for bad in (-1, 2**64, [0, 2**32], [0, -1], [1, 2, 3], []):
        with pytest.raises(ValueError, match=expected):
            env.reset(seed=bad)
    # what is no int at all is a TypeError, as num_envs' and the limits' (the message the same)
    for bad in (1.5, "3", True, np.float32(2.0), [0.5, 1.0], [True, False]):
        with pytest.raises(TypeError, match=expected):
            env.reset(seed=bad)
    assert env.reset(seed=[3, 4])[0].shape[0] == 2  # the env still resets after the refusals
    one = r"seed must be None, an int in \[0, 2\*\*64\), or a list of 1 int in \[0, 2\*\*32\) \(one per env\)"
    with pytest.raises(ValueError, match=one):
        TrackVectorEnv(1, "cpu", seed=0).reset(seed=-1)


@pytest.mark.parametrize("copy_it", ["pickle", "deepcopy", "copy"])
def test_an_env_refuses_to_be_pickled_or_copied_with_a_type_error_and_still_steps(copy_it):
    import copy
    import pickle

    env = TrackVectorEnv(2, "cpu", seed=0)
    env.reset(seed=0)
    do = {"pickle": pickle.dumps, "deepcopy": copy.deepcopy, "copy": copy.copy}[copy_it]
    with pytest.raises(TypeError, match="cannot be pickled or copied .* build another env"):
        do(env)
    assert env.step(np.zeros((2, 2), np.float32))[0].shape[0] == 2
