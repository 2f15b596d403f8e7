"""``TrackVectorEnv(friction_range=...)``: a per-env, per-episode friction scale drawn from the env's stream."""

from dataclasses import replace

import numpy as np
import pytest

from trackgen_env.envs.car import CAR_PRESETS
from trackgen_env.envs.track import TrackVectorEnv

RC = CAR_PRESETS["rc10"]


def _rollout(steps=120, **kwargs):
    """Poses of 4 envs under a fixed sweep of steering and full throttle (no auto-reset)."""
    env = TrackVectorEnv(4, "cpu", seed=5, autoreset_mode="Disabled", max_episode_steps=None, **kwargs)
    env.reset()
    t = np.arange(steps)
    poses = []
    for k in range(steps):
        steer = np.sin(0.05 * t[k] + np.arange(4))
        env.step(np.stack([steer, np.ones(4)], axis=1).astype(np.float32))
        poses.append(env.car_pose())
    grip = env.state.grip.numpy().copy()
    env.close()
    return np.array(poses), grip


@pytest.mark.parametrize("model", ["kinematic", "dynamic"])
def test_a_friction_scale_drives_as_a_car_with_that_friction(model):
    # 0.5: halving is exact in binary, so both cars hold the same float32 grip
    scaled, grip = _rollout(car=RC, car_model=model, friction_range=(0.5, 0.5))
    slippery, _ = _rollout(car=replace(RC, friction=0.5 * RC.friction), car_model=model)
    default, ones = _rollout(car=RC, car_model=model)
    assert np.all(grip == 0.5) and np.all(ones == 1.0)
    np.testing.assert_allclose(scaled, slippery, atol=1e-4)
    assert np.abs(scaled - default).max() > 0.1  # less grip: another path


def test_draws_are_in_range_per_env_deterministic_and_new_each_episode():
    def grips(num_envs, seed=0):
        env = TrackVectorEnv(num_envs, "cpu", seed=seed, friction_range=(0.7, 1.2))
        env.reset()
        first = env.state.grip.numpy().copy()
        env.reset()  # the next courses of every env's stream
        second = env.state.grip.numpy().copy()
        env.close()
        return first, second

    first, second = grips(64)
    assert np.all((first >= 0.7) & (first < 1.2)) and np.all((second >= 0.7) & (second < 1.2))
    assert np.unique(first).size == 64 and np.all(first != second)
    assert first.std() > 0.1  # spread over the range, not a narrow band
    again, _ = grips(64)
    np.testing.assert_array_equal(first, again)
    alone, alone_second = grips(1)
    assert alone[0] == first[0] and alone_second[0] == second[0]  # env 0's draws do not depend on num_envs
    assert not np.array_equal(grips(64, seed=1)[0], first)


def test_an_auto_reset_draws_a_new_scale_for_the_finished_env_only():
    env = TrackVectorEnv(8, "cpu", seed=2, friction_range=(0.6, 1.4), max_episode_steps=5)
    env.reset()
    before = env.state.grip.numpy().copy()
    for _ in range(5):  # every env is truncated at step 5; the next step resets it (NEXT_STEP)
        env.step(np.zeros((8, 2), np.float32))
    np.testing.assert_array_equal(env.state.grip.numpy(), before)
    env.step(np.zeros((8, 2), np.float32))
    assert np.all(env.state.grip.numpy() != before)
    env.close()


@pytest.mark.parametrize("value, error, message", [
    (0.5, TypeError, "friction_range must be None or a (lo, hi) pair"),
    ((0.5,), TypeError, "friction_range must be None or a (lo, hi) pair"),
    ((0.0, 1.0), ValueError, "friction_range[0]"),
    ((0.5, 2.5), ValueError, "friction_range[1]"),
    ((1.2, 0.8), ValueError, "friction_range needs lo <= hi, got (1.2, 0.8)"),
])
def test_bad_friction_ranges_are_refused(value, error, message):
    with pytest.raises(error, match=__import__("re").escape(message)):
        TrackVectorEnv(1, "cpu", friction_range=value)
