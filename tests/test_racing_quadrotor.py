"""QuadrotorParams.racing(): the published racing quadrotor; hover, a collective-thrust step and a body-rate
step match the model's closed forms; the reference controller flies a split-S layout with it."""

import math

import numpy as np
import pytest
import warp as wp

from trackgen_env.envs.controllers import ControllerGains
from trackgen_env.envs.quadrotor import GRAVITY, Quadrotor, QuadrotorParams

RACING = QuadrotorParams.racing()


def _step(quad, thrust, roll=0.0, pitch=0.0, yaw=0.0, steps=1):
    action = wp.array(np.tile(np.array([thrust, roll, pitch, yaw], np.float32), (quad.num_envs, 1)),
                      dtype=wp.float32, device=quad.device)
    no_reset = wp.zeros(quad.num_envs, dtype=wp.int32, device=quad.device)
    for _ in range(steps):
        quad.step(action, no_reset, quad.position, quad.orientation)


def test_published_parameters():
    assert RACING.mass == 0.85 and RACING.thrust_to_weight == 3.3
    assert RACING.max_body_rate == (15.0, 15.0, 0.3) and RACING.drag == (0.0, 0.0, 0.0)
    # the rate lag's initial slope is the largest angular acceleration of two rotors at full thrust (l = 0.15 m,
    # J_xx = 1 g m^2)
    motor = 3.3 * 0.85 * GRAVITY / 4.0
    assert RACING.max_body_rate[0] / RACING.body_rate_time_constant == pytest.approx(2.0 * 0.15 * motor / 1.0e-3)
    assert RACING.max_thrust == pytest.approx(3.3 * 0.85 * GRAVITY)
    assert QuadrotorParams.racing(dt=0.01).dt == 0.01 and QuadrotorParams.racing(dt=0.01).mass == 0.85
    with pytest.raises(ValueError):
        QuadrotorParams.racing(mass=-1.0)


def test_hover_is_an_equilibrium():
    quad = Quadrotor(2, "cpu", RACING)
    quad.position.assign(np.tile([1.0, -2.0, 1.5], (2, 1)))
    _step(quad, RACING.hover_action, steps=round(5.0 / RACING.dt))
    np.testing.assert_allclose(quad.position.numpy(), np.tile([1.0, -2.0, 1.5], (2, 1)), atol=1e-5)
    np.testing.assert_allclose(quad.velocity.numpy(), 0.0, atol=1e-5)


@pytest.mark.parametrize("action", [1.0, 0.5, -0.5])
def test_collective_thrust_step(action):
    """Level, no drag: a constant thrust accelerates straight up at T/m - g; the semi-implicit Euler substeps
    give v = a t and z = a h^2 n (n + 1) / 2 after n substeps of h."""
    quad = Quadrotor(1, "cpu", RACING)
    steps = 25
    _step(quad, action, steps=steps)
    thrust = RACING.mass * GRAVITY * (1.0 + action * (RACING.thrust_to_weight - 1.0) if action >= 0 else 1.0 + action)
    accel = thrust / RACING.mass - GRAVITY
    t, h, n = steps * RACING.dt, RACING.dt / RACING.substeps, steps * RACING.substeps
    assert quad.velocity.numpy()[0, 2] == pytest.approx(accel * t, rel=1e-4)
    assert quad.position.numpy()[0, 2] == pytest.approx(accel * h * h * n * (n + 1) / 2, rel=1e-4)
    np.testing.assert_allclose(quad.velocity.numpy()[0, :2], 0.0, atol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_body_rate_step(axis):
    """A rate command steps the body rate through the first-order lag: w(t) = w_cmd (1 - exp(-t / tau))."""
    quad = Quadrotor(1, "cpu", RACING)
    rates = [0.0, 0.0, 0.0]
    rates[axis] = 0.6
    for steps in (1, 2):
        _step(quad, RACING.hover_action, *rates, steps=1)
        t = steps * RACING.dt
        expected = 0.6 * RACING.max_body_rate[axis] * (1.0 - math.exp(-t / RACING.body_rate_time_constant))
        assert quad.body_rate.numpy()[0, axis] == pytest.approx(expected, rel=1e-4)


def test_racing_gains():
    gains = ControllerGains.racing()
    assert (gains.speed, gains.lateral_accel, gains.preview, gains.max_tilt) == (8.0, 12.0, 3.0, 1.2)
    assert ControllerGains.racing(speed=5.0).speed == 5.0
    # the thrust-to-weight holds altitude at the largest tilt
    assert RACING.thrust_to_weight * math.cos(gains.max_tilt) > 1.0


def test_reference_controller_flies_a_split_s_with_the_racing_quadrotor():
    """Two stacked gates flown in opposite directions (a vertical half loop), 1.5 m openings, 8-10 m legs."""
    from trackgen_env.demos.gates import fly
    from trackgen_env.envs import GatesVectorEnv
    from trackgen_env.envs.controllers import CourseLinePilot
    from trackgen_env.generators.gate_layouts import parse_gate_layout

    layout = parse_gate_layout({"gate_size": 1.5, "gates": [[0, 0, 1.2], [8, 3, 1.5], [8, -5, 1.2], [-4, -6, 3.5],
                                                            [-4, -6, 0.9], [-6, 3, 1.2]]}, name="split-s")
    env = GatesVectorEnv(1, "cpu", layout=layout, quadrotor=RACING)
    try:
        result = fly(env, CourseLinePilot(env, ControllerGains.racing()), round(20.0 / RACING.dt), progress=False)
    finally:
        env.close()
    assert result["collisions"] == 0 and result["out_of_bounds"] == 0
    assert result["laps"] >= 1
