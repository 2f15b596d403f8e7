"""``TrackVectorEnv(accel_range=..., steer_range=...)``: per-env, per-episode scales of the car's
motor and brakes (``max_accel``, ``max_brake``) and of its steering (``max_steer``), drawn from the
env's stream like ``friction_range``."""

import math
import re
from dataclasses import replace

import numpy as np
import pytest

from trackgen_env.envs.car import CAR_PRESETS
from trackgen_env.envs.track import TrackVectorEnv

RC = CAR_PRESETS["rc10"]


def _rollout(steps=120, **kwargs):
    """Poses and speeds of 4 envs under a fixed sweep of steering and throttle (no auto-reset)."""
    env = TrackVectorEnv(4, "cpu", seed=5, autoreset_mode="Disabled", max_episode_steps=None, **kwargs)
    env.reset()
    poses = []
    for k in range(steps):
        steer = np.sin(0.05 * k + np.arange(4))
        throttle = np.where(k % 40 < 30, 1.0, -1.0)  # braking phases too
        env.step(np.stack([steer, np.full(4, throttle)], axis=1).astype(np.float32))
        poses.append(np.concatenate([env.car_pose(), env.state.speed.numpy()[:, None]], axis=1))
    scales = env.state.accel_scale.numpy().copy(), env.state.steer_scale.numpy().copy()
    env.close()
    return np.array(poses), scales


@pytest.mark.parametrize("model", ["kinematic", "dynamic"])
def test_off_by_default_and_a_unit_range_changes_no_byte(model):
    default, (accel, steer) = _rollout(car_model=model)
    unit, _ = _rollout(car_model=model, accel_range=(1.0, 1.0), steer_range=(1.0, 1.0))
    assert np.all(accel == 1.0) and np.all(steer == 1.0)
    assert default.tobytes() == unit.tobytes()


@pytest.mark.parametrize("model", ["kinematic", "dynamic"])
def test_a_scale_drives_as_a_car_with_that_motor_and_steering(model):
    # 0.5: halving is exact in binary, so both cars hold the same float32 limits; no load
    # transfer (cog_height 0), so the dynamic model's micro steps, sized from the heaviest axle
    # load under the car's nominal brakes, are the same count for both cars
    car = replace(RC, cog_height=0.0)
    scaled, (accel, steer) = _rollout(car=car, car_model=model, accel_range=(0.5, 0.5), steer_range=(0.5, 0.5))
    weaker = replace(car, max_accel=0.5 * car.max_accel, max_brake=0.5 * car.max_brake, max_steer=0.5 * car.max_steer)
    expected, _ = _rollout(car=weaker, car_model=model)
    default, _ = _rollout(car=car, car_model=model)
    assert np.all(accel == 0.5) and np.all(steer == 0.5)
    np.testing.assert_array_equal(scaled, expected)
    assert np.abs(scaled - default).max() > 0.1  # a weaker motor and less lock: another path


@pytest.mark.parametrize("model", ["kinematic", "dynamic"])
def test_full_throttle_at_full_lock_from_rest_follows_the_drawn_scales(model):
    """One step from rest: the speed of the motor line with ``max_accel`` scaled, and the
    kinematic yaw rate (both models below 1 m/s) of the scaled wheel angle."""
    E = 64
    env = TrackVectorEnv(E, "cpu", seed=9, car_model=model, accel_range=(0.6, 1.4), steer_range=(0.8, 1.2))
    env.reset()
    env.step(np.tile(np.float32([1.0, 1.0]), (E, 1)))
    k, s = env.state.accel_scale.numpy().astype(np.float64), env.state.steer_scale.numpy().astype(np.float64)
    h = RC.dt / RC.substeps
    v = np.zeros(E)
    for _ in range(RC.substeps):  # the motor line, integrated as the kernel does
        v_prev, v = v, v + k * RC.max_accel * (1.0 - v / RC.max_speed) * h
    delta = s * RC.max_steer
    l_r = RC.cog_to_rear * RC.wheelbase
    yaw_rate = 0.5 * (v_prev + v) / l_r * np.sin(np.arctan(RC.cog_to_rear * np.tan(delta)))
    np.testing.assert_allclose(env.state.speed.numpy(), v, rtol=1e-5)
    np.testing.assert_allclose(env.state.steer.numpy(), delta, rtol=1e-6)
    np.testing.assert_allclose(env.state.yaw_rate.numpy(), yaw_rate, rtol=1e-4)
    assert np.ptp(env.state.speed.numpy()) > 0.1 and np.ptp(env.state.yaw_rate.numpy()) > 0.1  # the draws differ
    env.close()


def test_draws_are_in_range_per_env_deterministic_and_leave_the_grip_draws_alone():
    def draws(num_envs, seed=0, **ranges):
        env = TrackVectorEnv(num_envs, "cpu", seed=seed, **ranges)
        out = []
        for _ in range(2):  # two episodes: the next courses of every env's stream
            env.reset()
            st = env.state
            out.append(np.stack([st.grip.numpy(), st.accel_scale.numpy(), st.steer_scale.numpy()]))
        env.close()
        return np.array(out)  # [episode, (grip, accel, steer), E]

    ranges = dict(friction_range=(0.7, 1.2), accel_range=(0.7, 1.2), steer_range=(0.7, 1.2))
    both = draws(64, **ranges)
    assert np.all((both >= 0.7) & (both < 1.2))
    assert all(np.unique(both[0, i]).size == 64 for i in range(3)) and np.all(both[0] != both[1])
    assert both[0].std(axis=1).min() > 0.1  # spread over the range, not a narrow band
    # one draw index each: the three scales of an env differ, and adding two leaves the grip's
    assert np.all(both[:, 0] != both[:, 1]) and np.all(both[:, 1] != both[:, 2])
    np.testing.assert_array_equal(draws(64, friction_range=(0.7, 1.2))[:, 0], both[:, 0])
    np.testing.assert_array_equal(draws(64, **ranges), both)
    np.testing.assert_array_equal(draws(1, **ranges)[:, :, 0], both[:, :, 0])  # env 0's draws whatever num_envs
    assert not np.array_equal(draws(64, seed=1, **ranges), both)


def test_an_auto_reset_draws_new_scales_for_the_finished_envs_only():
    env = TrackVectorEnv(8, "cpu", seed=2, accel_range=(0.6, 1.4), steer_range=(0.6, 1.4), max_episode_steps=5)
    env.reset()
    st = env.state
    before = st.accel_scale.numpy().copy(), st.steer_scale.numpy().copy()
    for _ in range(5):  # every env is truncated at step 5; the next step resets it (NEXT_STEP)
        env.step(np.zeros((8, 2), np.float32))
    np.testing.assert_array_equal(st.accel_scale.numpy(), before[0])
    np.testing.assert_array_equal(st.steer_scale.numpy(), before[1])
    env.step(np.zeros((8, 2), np.float32))
    assert np.all(st.accel_scale.numpy() != before[0]) and np.all(st.steer_scale.numpy() != before[1])
    env.close()


@pytest.mark.parametrize("name", ["accel_range", "steer_range"])
@pytest.mark.parametrize("value, error, message", [
    (0.5, TypeError, "{name} must be None or a (lo, hi) pair of"),
    ((0.5, 1.0, 1.5), TypeError, "{name} must be None or a (lo, hi) pair of"),
    ((0.0, 1.0), ValueError, "{name}[0]"),
    ((0.5, 2.5), ValueError, "{name}[1]"),
    ((1.2, 0.8), ValueError, "{name} needs lo <= hi, got (1.2, 0.8)"),
])
def test_bad_ranges_are_refused(name, value, error, message):
    with pytest.raises(error, match=re.escape(message.format(name=name))):
        TrackVectorEnv(1, "cpu", **{name: value})


def test_a_steer_range_past_a_right_angle_of_lock_is_refused():
    car = replace(RC, max_steer=1.0)
    with pytest.raises(ValueError,
                       match=re.escape("steer_range[1] times the car's max_steer (1.0 rad) must be < pi/2, got 1.6")):
        TrackVectorEnv(1, "cpu", car=car, steer_range=(1.0, 1.6))
    env = TrackVectorEnv(1, "cpu", car=car, steer_range=(1.0, 1.5))  # 1.5 rad of lock: still < pi/2
    assert env.steer_range == (1.0, 1.5) and 1.5 < 0.5 * math.pi
    env.close()


def test_the_ranges_are_read_only_and_a_refused_change_leaves_the_env_running():
    env = TrackVectorEnv(2, "cpu", seed=4, accel_range=(0.8, 1.2))
    env.reset()
    drawn = env.state.accel_scale.numpy().copy()
    with pytest.raises(AttributeError, match="accel_range"):
        env.accel_range = (0.1, 0.2)
    with pytest.raises(AttributeError, match="steer_range"):
        env.steer_range = (0.9, 1.1)
    assert env.accel_range == (0.8, 1.2) and env.steer_range is None
    obs, *_ = env.step(np.ones((2, 2), np.float32))
    assert np.all(np.isfinite(obs)) and np.array_equal(env.state.accel_scale.numpy(), drawn)
    env.close()
