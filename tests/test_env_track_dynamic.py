"""The dynamic single-track car (car_model="dynamic", trackgen_env.envs.car) against the kinematic
model at low speed and the linear model's steady-state cornering; bounded under saturating actions."""

import math

import numpy as np
import pytest
import warp as wp

from trackgen_env.envs.car import CAR_PRESETS, CarParams, CarState, understeer_gradient
from trackgen_env.envs.track import TrackVectorEnv
from trackgen_env.core.polyline import GRAVITY

RC = CAR_PRESETS["rc10"]


def _start(device, E):
    start_p = wp.zeros(E, dtype=wp.vec3, device=device)
    start_q = wp.array([wp.quat_identity()] * E, dtype=wp.quat, device=device)
    return start_p, start_q


def _run(device, model, actions, steps, params=RC, speed=None):
    """Reset E cars, optionally set their speed, then hold ``actions`` [E, 2] for ``steps`` steps."""
    E = len(actions)
    car = CarState(params, E, device, model=model)
    act = wp.array(np.asarray(actions, np.float32), dtype=wp.vec2, device=device)
    start_p, start_q = _start(device, E)
    car.step(act, wp.ones(E, dtype=wp.int32, device=device), start_p, start_q)
    if speed is not None:
        car.speed.fill_(speed)
    no_reset = wp.zeros(E, dtype=wp.int32, device=device)
    for _ in range(steps):
        car.step(act, no_reset, start_p, start_q)
    return car


def test_matches_the_kinematic_model_below_1_m_s(device):
    """Below kinematic_speed (1 m/s for rc10) the dynamic car is the kinematic one, step for step."""
    actions = [[0.0, 0.1], [0.5, 0.1], [-1.0, 0.12], [1.0, 0.05]]
    kin = _run(device, "kinematic", actions, 25)
    dyn = _run(device, "dynamic", actions, 25)
    assert RC.kinematic_speed >= 1.0
    assert 0.3 < kin.speed.numpy().min() and kin.speed.numpy().max() < 1.0
    for name in ("position", "yaw", "speed", "yaw_rate"):
        np.testing.assert_allclose(getattr(dyn, name).numpy(), getattr(kin, name).numpy(), atol=1e-6, err_msg=name)


@pytest.mark.parametrize("v,steering", [(3.0, 0.1), (4.5, 0.1), (3.0, -0.15)])
def test_steady_state_cornering_matches_the_understeer_gradient(device, v, steering):
    """Constant speed (throttle 0: no motor force) and steering: the yaw rate settles at
    ``v delta / (L + K v^2)`` and the slip angle at ``r (l_r / v - v / (mu C_Sr g))`` (linear tyres)."""
    car = _run(device, "dynamic", [[steering, 0.0]], 200, speed=v)
    assert v > RC.dynamic_speed
    delta = steering * RC.max_steer
    K = understeer_gradient(RC)
    assert K > 0  # rc10 understeers: C_Sf < C_Sr
    r = v * delta / (RC.wheelbase + K * v * v)
    l_r = RC.cog_to_rear * RC.wheelbase
    beta = r * (l_r / v - v / (RC.friction * RC.cornering_stiffness_rear * GRAVITY))
    assert car.speed.numpy()[0] == pytest.approx(v)
    assert car.yaw_rate.numpy()[0] == pytest.approx(r, rel=1e-4)
    assert car.slip.numpy()[0] == pytest.approx(beta, rel=1e-3)
    # the kinematic model would turn faster: the understeer is the tyres'
    assert abs(r) < abs(v * math.sin(math.atan(l_r / RC.wheelbase * math.tan(delta))) / l_r)


def test_no_nan_under_saturating_random_actions(device):
    """1024 envs, 1e4 steps of random actions beyond [-1, 1] (clipped: full lock, full throttle,
    full brake, switching every step) from standstill, the kernel launched directly: all finite."""
    E, steps, pool = 1024, 10_000, 31
    rng = np.random.default_rng(0)
    car = CarState(CAR_PRESETS["f1tenth"], E, device, model="dynamic")
    acts = [wp.array(rng.uniform(-3.0, 3.0, (E, 2)).astype(np.float32), dtype=wp.vec2, device=device)
            for _ in range(pool)]
    start_p, start_q = _start(device, E)
    car.step(acts[0], wp.ones(E, dtype=wp.int32, device=device), start_p, start_q)
    no_reset = wp.zeros(E, dtype=wp.int32, device=device)
    for k in range(steps):
        car.step(acts[(7 * k + k // pool) % pool], no_reset, start_p, start_q)
    for name in ("position", "yaw", "speed", "yaw_rate", "slip"):
        assert np.all(np.isfinite(getattr(car, name).numpy())), name
    assert car.speed.numpy().max() <= CAR_PRESETS["f1tenth"].max_speed
    assert np.abs(car.slip.numpy()).max() <= math.pi / 4 + 1e-6  # a spin is held at 45 deg of slip
    assert np.abs(car.yaw_rate.numpy()).max() < 100.0


def test_standstill_is_at_rest(device):
    car = _run(device, "dynamic", [[1.0, 0.0], [-1.0, -1.0]], 100)
    np.testing.assert_array_equal(car.position.numpy(), 0.0)
    np.testing.assert_array_equal(car.yaw_rate.numpy(), 0.0)


def test_the_dynamic_model_needs_tyres():
    bare = CarParams(wheelbase=1.0, cog_to_rear=0.5, max_steer=0.4, max_accel=1, max_brake=1, max_speed=1,
                     friction=1, length=1, width=1, height=1)
    assert not bare.has_tyres
    with pytest.raises(ValueError, match="tyre parameters"):
        understeer_gradient(bare)
    with pytest.raises(ValueError, match="tyre parameters"):
        CarState(bare, 1, "cpu", model="dynamic")
    with pytest.raises(ValueError, match="car_model"):
        CarState(RC, 1, "cpu", model="pacejka")
    with pytest.raises(ValueError, match="all set or all None"):
        CarParams(wheelbase=1.0, cog_to_rear=0.5, max_steer=0.4, max_accel=1, max_brake=1, max_speed=1,
                  friction=1, length=1, width=1, height=1, mass=3.0)
    with pytest.raises(ValueError, match="car_model"):
        TrackVectorEnv(1, "cpu", car_model="tyres")


def test_track_env_drives_the_dynamic_car(device):
    env = TrackVectorEnv(4, device, seed=0, car_model="dynamic")
    obs, _ = env.reset()
    for _ in range(60):
        obs, reward, *_ = env.step(np.tile([[0.1, 0.6]], (4, 1)).astype(np.float32))
    assert env.car_model == "dynamic"
    assert np.all(np.isfinite(obs)) and obs[:, 0].max() > RC.dynamic_speed
    env.close()
