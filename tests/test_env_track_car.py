"""The single-track car kernel (trackgen_env.envs.car) against the model's closed forms."""

import math

import numpy as np
import pytest
import warp as wp

from trackgen_env.envs.car import CAR_PRESETS, CarParams, CarState, car_params

RC = CAR_PRESETS["rc10"]


def _drive(device, actions, steps, params=RC, start_yaw=0.0):
    E = len(actions)
    car = CarState(params, E, device)
    act = wp.array(np.asarray(actions, np.float32), dtype=wp.vec2, device=device)
    start_p = wp.array(np.zeros((E, 3), np.float32), dtype=wp.vec3, device=device)
    q = wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), start_yaw)
    start_q = wp.array([q] * E, dtype=wp.quat, device=device)
    car.step(act, wp.ones(E, dtype=wp.int32, device=device), start_p, start_q)  # reset to the start
    no_reset = wp.zeros(E, dtype=wp.int32, device=device)
    for _ in range(steps):
        car.step(act, no_reset, start_p, start_q)
    return car


def test_full_throttle_speed_follows_motor_line(device):
    """v(t) = v_max (1 - exp(-a_max t / v_max)) for a = a_max (1 - v / v_max)."""
    car = _drive(device, [[0.0, 1.0]], 40)
    t = 40 * RC.dt
    expected = RC.max_speed * (1.0 - math.exp(-RC.max_accel * t / RC.max_speed))
    assert car.speed.numpy()[0] == pytest.approx(expected, rel=0.02)
    assert car.position.numpy()[0, 1] == 0.0  # straight along +x


@pytest.mark.parametrize("change", [{"max_accel": 300.0}, {"max_accel": 1.0e6}, {"dt": 10.0}])
def test_a_stiff_motor_or_a_long_step_never_carries_the_car_past_top_speed(device, change):
    import dataclasses

    params = dataclasses.replace(RC, **change)
    car = _drive(device, [[0.0, 1.0]], 20, params=params)
    assert 0.0 < car.speed.numpy()[0] <= params.max_speed


def test_a_car_parameter_beyond_float32_is_refused():
    import dataclasses

    with pytest.raises(ValueError, match="max_speed"):
        dataclasses.replace(RC, max_speed=1.0e39)


def test_brake_stops_without_reversing(device):
    car = _drive(device, [[0.0, -1.0]], 10)
    assert car.speed.numpy()[0] == 0.0
    assert np.all(car.position.numpy()[0] == 0.0)


def test_constant_steering_turns_at_kinematic_yaw_rate(device):
    """At low speed (no friction limit), yaw rate = v sin(beta) / l_r with tan(beta) = l_r / L tan(delta)."""
    car = _drive(device, [[0.5, 0.1]], 30)
    v = float(car.speed.numpy()[0])
    lr = RC.cog_to_rear * RC.wheelbase
    beta = math.atan(lr / RC.wheelbase * math.tan(0.5 * RC.max_steer))
    assert v > 0.1
    assert v * v * math.sin(beta) / lr < RC.max_lateral_accel  # below the limit
    assert car.yaw_rate.numpy()[0] == pytest.approx(v * math.sin(beta) / lr, rel=0.02)
    assert car.yaw.numpy()[0] > 0.0  # left


def test_lateral_acceleration_is_friction_limited(device):
    car = _drive(device, [[1.0, 1.0], [-1.0, 1.0]], 60)
    v, r = car.speed.numpy(), car.yaw_rate.numpy()
    assert np.all(np.abs(v * r) <= RC.max_lateral_accel * 1.05)
    assert r[0] > 0 > r[1]


def test_actions_out_of_range_are_clipped(device):
    a = _drive(device, [[5.0, 9.0]], 20)
    b = _drive(device, [[1.0, 1.0]], 20)
    np.testing.assert_array_equal(a.position.numpy(), b.position.numpy())


def test_reset_mask_puts_the_car_at_rest_at_the_start_pose(device):
    car = _drive(device, [[0.3, 1.0]], 20, start_yaw=1.0)
    E = 1
    start_p = wp.array([[1.0, 2.0, 0.0]], dtype=wp.vec3, device=device)
    start_q = wp.array([wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), 1.0)], dtype=wp.quat, device=device)
    act = wp.array([[1.0, 1.0]], dtype=wp.vec2, device=device)
    car.step(act, wp.ones(E, dtype=wp.int32, device=device), start_p, start_q)
    np.testing.assert_allclose(car.position.numpy()[0], [1.0, 2.0, 0.0])
    assert car.yaw.numpy()[0] == pytest.approx(1.0, abs=1e-6)
    assert car.speed.numpy()[0] == 0.0 and car.elapsed.numpy()[0] == 0


def test_yaw_stays_wrapped_and_matches_orientation(device):
    car = _drive(device, [[1.0, 0.3]], 200)
    yaw = car.yaw.numpy()[0]
    assert -math.pi <= yaw < math.pi
    q = car.orientation.numpy()[0]
    assert math.atan2(2 * (q[3] * q[2] + q[0] * q[1]), 1 - 2 * (q[1] ** 2 + q[2] ** 2)) == pytest.approx(yaw, abs=1e-5)


def test_car_params_refuse_bad_values():
    with pytest.raises(ValueError, match="wheelbase"):
        CarParams(wheelbase=-1.0, cog_to_rear=0.5, max_steer=0.4, max_accel=1, max_brake=1, max_speed=1,
                  friction=1, length=1, width=1, height=1)
    with pytest.raises(ValueError, match="cog_to_rear"):
        CarParams(wheelbase=1.0, cog_to_rear=1.0, max_steer=0.4, max_accel=1, max_brake=1, max_speed=1,
                  friction=1, length=1, width=1, height=1)
    with pytest.raises(ValueError, match="substeps"):
        CarParams(wheelbase=1.0, cog_to_rear=0.5, max_steer=0.4, max_accel=1, max_brake=1, max_speed=1,
                  friction=1, length=1, width=1, height=1, substeps=0)
    with pytest.raises(ValueError, match="rc10"):
        car_params("kart")
    with pytest.raises(TypeError):
        car_params(3)


def test_a_car_wider_than_a_band_it_can_draw_is_refused_at_construction():
    """The full-size car (2 m) on the default 0.8 m band would be off the band from the start:
    every env would end at every step. Refused, naming both widths and the fixes, and so is a
    randomized width whose narrowest draw the car does not fit; wider tracks are accepted."""
    from trackgen_env import TrackGenConfig
    from trackgen_env.envs.track import TrackVectorEnv
    from trackgen_env.pipeline import presets

    with pytest.raises(ValueError, match=r"the car is 2 m wide and the narrowest band these tracks draw is 0.8 m"):
        TrackVectorEnv(2, "cpu", car="full")
    with pytest.raises(ValueError, match=r"the car is 0.2 m wide and the narrowest band these tracks draw is 0.2 m"):
        TrackVectorEnv(2, "cpu", track=presets.track().with_params({"band.width": 0.20000001}))  # float32 0.2
    with pytest.raises(ValueError, match=r"narrowest band these tracks draw is 1.5 m"):
        TrackVectorEnv(2, "cpu", car="full", track=presets.track().with_randomize({"band.width": (1.5, 3.0)}))
    env = TrackVectorEnv(2, "cpu", car="full", track=TrackGenConfig(width=6.0, size=80.0), seed=0)
    env.reset(seed=0)
    _, reward, terminated, *_ = env.step(np.zeros((2, 2), np.float32))
    assert not terminated.any()
    env.close()


def test_a_live_band_width_the_car_does_not_fit_is_refused_and_changes_nothing():
    """A curriculum's live set of ``band.width`` (or a live range) meets the construction's rule:
    refused in any env where the car would not fit, the old value (range) left in place."""
    from trackgen_env.envs.track import TrackVectorEnv
    from trackgen_env.pipeline import presets

    env = TrackVectorEnv(3, "cpu", seed=0)  # rc10: 0.2 m wide on 0.8 m bands
    params = env.course.generator.params
    width = env.car.width
    with pytest.raises(ValueError, match=rf"must be wider than the car \({width:g} m\): a {width:g} m \(env 1\) band"):
        params["band.width"] = [0.8, width, 0.8]
    with pytest.raises(ValueError, match=r"a 0.15 m \(env 1\) band"):
        params["band.width"] = [0.8, 0.15, 0.8]
    # refused as the float32 it would store, and the message tells the two apart
    with pytest.raises(ValueError, match=r"\(given 0.20000001, which float32 stores as 0.200000003\)$"):
        params["band.width"] = 0.20000001
    assert np.allclose(params["band.width"].numpy(), 0.8)
    params["band.width"] = 0.5
    env.close()
    env = TrackVectorEnv(3, "cpu", seed=0, track=presets.track().with_randomize({"band.width": (0.6, 1.0)}))
    params = env.course.generator.params
    with pytest.raises(ValueError, match=r"must be wider than the car"):
        params.set_range("band.width", 0.1, 1.0)
    assert np.allclose(params.randomize["band.width"][0].numpy(), 0.6)
    params.set_range("band.width", 0.3, [0.5, 0.6, 0.7])
    env.close()
