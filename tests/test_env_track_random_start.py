"""``TrackVectorEnv(random_start=True)`` (a start at a random checkpoint, with a heading error and a
speed) and ``stall_steps`` (a truncation without new ground)."""

import math
import re

import numpy as np
import pytest

from trackgen_env.envs.controllers import PurePursuit
from trackgen_env.envs.track import TrackVectorEnv


def _start(num_envs, seed=0, **kwargs):
    """The first and second episodes' start (pose, speed, start checkpoint) of every env."""
    env = TrackVectorEnv(num_envs, "cpu", seed=seed, random_start=True, **kwargs)
    out = []
    for _ in range(2):
        env.reset()
        out.append((env.car_pose().copy(), env.state.speed.numpy().copy(), env._start_checkpoint.numpy().copy()))
    env.close()
    return out


def test_random_starts_spread_over_the_lap_and_are_deterministic_per_env():
    first, second = _start(32, start_yaw=0.4, start_speed=(0.5, 2.0))
    pose, speed, checkpoint = first
    assert np.unique(checkpoint).size > 16  # spread over the lap, not at the start line
    assert np.all((speed >= 0.5) & (speed < 2.0)) and speed.std() > 0.2
    assert not np.array_equal(second[2], checkpoint)  # a new draw every episode
    again = _start(32, start_yaw=0.4, start_speed=(0.5, 2.0))
    for (a, b) in zip(first + second, again[0] + again[1]):
        np.testing.assert_array_equal(a, b)
    alone = _start(1, start_yaw=0.4, start_speed=(0.5, 2.0))
    for episode in range(2):  # env 0's starts do not depend on num_envs
        for got, want in zip(alone[episode], (first, second)[episode]):
            np.testing.assert_array_equal(got[0], want[0])


def test_the_start_pose_is_the_drawn_checkpoint_turned_by_at_most_start_yaw():
    env = TrackVectorEnv(32, "cpu", seed=4, random_start=True, start_yaw=0.3)
    obs, _ = env.reset()
    cps = env.course.checkpoints
    k = env._start_checkpoint.numpy()
    rows = np.arange(32)
    pose = env.car_pose()
    np.testing.assert_allclose(pose[:, :2], cps.position.numpy()[rows, k, :2], atol=1e-5)
    direction = cps.direction.numpy()[rows, k]
    error = (pose[:, 2] - np.arctan2(direction[:, 1], direction[:, 0]) + math.pi) % (2 * math.pi) - math.pi
    assert np.all(np.abs(error) <= 0.3 + 1e-5) and np.abs(error).max() > 0.15
    np.testing.assert_allclose(obs[:, 4], error, atol=0.05)  # the observed heading error is that turn
    assert np.all(env.state.speed.numpy() == 0.0)  # default start_speed: at rest
    env.close()


def test_a_lap_from_a_random_start_is_one_full_loop_under_pure_pursuit():
    env = TrackVectorEnv(8, "cpu", seed=3, random_start=True, max_episode_steps=2000)
    obs, _ = env.reset()
    assert np.unique(env._start_checkpoint.numpy()).size > 4
    length = env.course.result.loop_length.numpy().copy()
    controller = PurePursuit(env.car)
    done, travelled, laps = np.zeros(8, bool), np.zeros(8), np.zeros(8, int)
    for _ in range(2000):
        obs, reward, terminated, truncated, info = env.step(controller(obs))
        travelled += np.where(done, 0.0, reward)
        ended = (terminated | truncated) & ~done
        laps[ended] = info["laps"][ended]
        assert not np.any(info["off_track"] & ~done)
        done |= terminated | truncated
        if done.all():
            break
    env.close()
    assert np.all(laps == 1)
    # the lap ends back at the start checkpoint: one loop of progress, to within a step of travel
    np.testing.assert_allclose(travelled, length, atol=2.0 * env.car.max_speed * env.car.dt)


def test_the_default_start_is_unchanged():
    default = TrackVectorEnv(4, "cpu", seed=7)
    off = TrackVectorEnv(4, "cpu", seed=7, random_start=False, start_yaw=0.5, start_speed=(1.0, 2.0))
    for env in (default, off):
        env.reset()
    np.testing.assert_array_equal(default.car_pose(), off.car_pose())
    r = default.course.result
    np.testing.assert_allclose(default.car_pose()[:, :2], r.start_position.numpy()[:, :2])
    assert np.all(off.state.speed.numpy() == 0.0)
    default.close()
    off.close()


@pytest.mark.parametrize("model", ["kinematic", "dynamic"])
def test_a_start_speed_moves_the_car_along_its_heading(model):
    env = TrackVectorEnv(4, "cpu", seed=1, random_start=True, start_speed=(1.5, 1.5), car="f1tenth", car_model=model)
    env.reset()
    before = env.car_pose()
    env.step(np.zeros((4, 2), np.float32))  # no throttle, no steer: coasting straight on
    after = env.car_pose()
    step = after[:, :2] - before[:, :2]
    heading = np.stack([np.cos(before[:, 2]), np.sin(before[:, 2])], axis=1)
    np.testing.assert_allclose((step * heading).sum(axis=1), 1.5 * env.car.dt, rtol=0.05)
    env.close()


def test_stall_steps_truncates_a_car_that_stops_and_not_one_that_drives():
    env = TrackVectorEnv(2, "cpu", seed=0, stall_steps=30, autoreset_mode="Disabled")
    obs, _ = env.reset()
    controller = PurePursuit(env.car)
    for step in range(1, 31):
        action = controller(obs)
        action[0, 1] = -1.0  # env 0 brakes to rest at the start line; env 1 drives
        obs, _, terminated, truncated, _ = env.step(action)
        assert not terminated.any()
        assert list(truncated) == [step == 30, False]
    env.close()


@pytest.mark.parametrize("kwargs, error, message", [
    ({"random_start": 1}, TypeError, "random_start must be a bool, got int 1"),
    ({"start_yaw": -0.1}, ValueError, "start_yaw"),
    ({"start_yaw": 2.0}, ValueError, "start_yaw"),
    ({"start_speed": 1.0}, TypeError, "start_speed must be a (lo, hi) pair, got 1.0"),
    ({"start_speed": (2.0, 1.0)}, ValueError, "start_speed needs lo <= hi, got (2.0, 1.0)"),
    ({"start_speed": (0.0, 99.0)}, ValueError, "start_speed[1]"),
    ({"stall_steps": 0}, ValueError, "stall_steps"),
    ({"stall_steps": 1.5}, TypeError, "stall_steps"),
])
def test_bad_start_arguments_are_refused(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        TrackVectorEnv(1, "cpu", **kwargs)
