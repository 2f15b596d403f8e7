"""Physics sanity of the quadrotor model the gates env flies (trackgen_env.envs.quadrotor.Quadrotor, the
env's ``drone``) and of the reference controller (trackgen_env.envs.controllers)."""

import functools
import math

import numpy as np
import pytest
import warp as wp

from trackgen_env.envs.controllers import ControllerGains, ReferenceController
from trackgen_env.envs.quadrotor import Quadrotor, QuadrotorParams

HOVER_TOLERANCE = 0.01  # [m] altitude drift allowed over 5 s of hover
TRACKING_TOLERANCE = 0.1  # [m] largest distance from the course line once converged


@functools.lru_cache(maxsize=None)
def _no_reset(num_envs, device):
    return wp.zeros(num_envs, dtype=wp.int32, device=device)  # read only: one per shape serves every test


def _fly(quad, action):
    """One control step of every drone, as the env's dynamics run it for the envs that are not reset."""
    quad.step(action, _no_reset(quad.num_envs, str(quad.device)), quad.position, quad.orientation)


def _actions(num_envs, thrust, roll=0.0, pitch=0.0, yaw=0.0, device="cpu"):
    a = np.tile(np.array([thrust, roll, pitch, yaw], np.float32), (num_envs, 1))
    return wp.array(a, dtype=wp.float32, device=device)


def test_hover_thrust_keeps_altitude_for_5_s(device):
    quad = Quadrotor(8, device)
    quad.position.assign(np.tile([0.0, 0.0, 1.0], (8, 1)))
    action = _actions(8, quad.params.hover_action, device=device)
    for _ in range(round(5.0 / quad.params.dt)):
        _fly(quad, action)
    p = quad.position.numpy()
    assert np.all(np.abs(p[:, 2] - 1.0) < HOVER_TOLERANCE)
    assert np.all(np.abs(p[:, :2]) < 1e-6)
    np.testing.assert_allclose(quad.orientation.numpy(), np.tile([0, 0, 0, 1.0], (8, 1)), atol=1e-6)


def test_zero_thrust_falls_with_gravity(device):
    params = QuadrotorParams(drag=(0.0, 0.0, 0.0))
    quad = Quadrotor(1, device, params)
    action = _actions(1, -1.0, device=device)
    steps = 50
    for _ in range(steps):
        _fly(quad, action)
    t = steps * params.dt
    h = params.dt / params.substeps
    # semi-implicit Euler: z_n = -g h^2 n (n + 1) / 2 after n substeps
    n = steps * params.substeps
    expected = -params.gravity * h * h * n * (n + 1) / 2
    assert quad.position.numpy()[0, 2] == pytest.approx(expected, rel=1e-4)
    assert quad.velocity.numpy()[0, 2] == pytest.approx(-params.gravity * t, rel=1e-4)


def test_body_rate_follows_command_with_first_order_lag(device):
    params = QuadrotorParams()
    quad = Quadrotor(1, device, params)
    action = _actions(1, params.hover_action, yaw=1.0, device=device)
    steps = 3
    for _ in range(steps):
        _fly(quad, action)
    t = steps * params.dt
    expected = params.max_body_rate[2] * (1.0 - math.exp(-t / params.body_rate_time_constant))
    assert quad.body_rate.numpy()[0, 2] == pytest.approx(expected, rel=1e-4)


def test_positive_roll_rate_tilts_thrust_towards_minus_y(device):
    """Right-hand rule: a positive roll rate turns body z towards world -y (body frame x forward, y left, z up)."""
    quad = Quadrotor(1, device)
    quad.position.assign([[0.0, 0.0, 1.0]])
    _fly(quad, _actions(1, quad.params.hover_action, roll=0.2, device=device))
    for _ in range(20):
        _fly(quad, _actions(1, quad.params.hover_action, device=device))
    assert quad.velocity.numpy()[0, 1] < -0.05


def test_saturating_random_actions_give_finite_state_10000_steps_4096_drones(device):
    """10,000 steps of random +-1 actions on 4096 drones: every output stays finite, quaternions unit."""
    num_envs, batches, steps = 4096, 16, 10_000
    rng = np.random.default_rng(0)
    quad = Quadrotor(num_envs, device)
    actions = [
        wp.array(rng.choice([-1.0, 1.0], size=(num_envs, 4)).astype(np.float32), device=device) for _ in range(batches)
    ]
    _fly(quad, actions[0])  # load the module before recording
    with wp.ScopedCapture(device=device) as capture:
        for a in actions:
            _fly(quad, a)
    for _ in range(steps // batches - 1):
        wp.capture_launch(capture.graph)
    for a in actions[1:]:  # the first step above + 624 replays of 16 + 15 = 10,000 steps
        _fly(quad, a)
    for arr in (quad.position, quad.velocity, quad.orientation, quad.body_rate):
        assert np.all(np.isfinite(arr.numpy()))
    np.testing.assert_allclose(np.linalg.norm(quad.orientation.numpy(), axis=1), 1.0, atol=1e-4)
    assert np.all(np.abs(quad.body_rate.numpy()) <= np.array(quad.params.max_body_rate) + 1e-4)


def _test_curves(num_points):
    th = np.linspace(0.0, 2.0 * np.pi, num_points, endpoint=False)
    return np.array(
        [
            np.stack([2.0 * np.cos(th), 2.0 * np.sin(th), 1.5 + 0.5 * np.sin(2.0 * th)], -1),
            np.stack([4.0 * np.cos(th), 2.0 * np.sin(th), 1.0 + 0.3 * np.cos(th)], -1),
        ],
        np.float32,
    )


def test_reference_controller_tracks_closed_3d_lines(device):
    lines = _test_curves(64)
    dense = _test_curves(4000)
    num_envs = len(lines)
    line = wp.array(lines, dtype=wp.vec3, device=device)
    num_points = wp.array(np.full(num_envs, 64, np.int32), device=device)
    generation = wp.zeros(num_envs, dtype=wp.int32, device=device)
    quad = Quadrotor(num_envs, device)
    quad.position.assign(lines[:, 0])
    ctrl = ReferenceController(num_envs, device)
    worst = np.zeros(num_envs)
    for i in range(600):
        _fly(quad, ctrl.compute(quad.position, quad.velocity, quad.orientation, line, num_points, generation))
        if i >= 100:
            p = quad.position.numpy()
            dist = np.linalg.norm(dense - p[:, None, :], axis=2).min(axis=1)
            worst = np.maximum(worst, dist)
    assert np.all(worst < TRACKING_TOLERANCE)
    speed = np.linalg.norm(quad.velocity.numpy(), axis=1)
    assert np.all(speed > 0.5 * ctrl.gains.speed)


def test_reference_controller_restarts_its_search_on_a_new_generation(device):
    lines = _test_curves(64)
    line = wp.array(lines[:1], dtype=wp.vec3, device=device)
    num_points = wp.array([64], dtype=wp.int32, device=device)
    generation = wp.zeros(1, dtype=wp.int32, device=device)
    quad = Quadrotor(1, device)
    quad.position.assign(lines[:1, 0])
    ctrl = ReferenceController(1, device)
    ctrl.compute(quad.position, quad.velocity, quad.orientation, line, num_points, generation)
    assert ctrl.segment.numpy()[0] in (0, 63)
    quad.position.assign(lines[:1, 32])  # far outside the search window
    generation.fill_(1)
    ctrl.compute(quad.position, quad.velocity, quad.orientation, line, num_points, generation)
    assert ctrl.segment.numpy()[0] in (31, 32)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"mass": 0.0}, ValueError),
        ({"mass": "1"}, TypeError),
        ({"thrust_to_weight": 1.0}, ValueError),
        ({"max_body_rate": (1.0, 1.0)}, TypeError),
        ({"max_body_rate": (1.0, -1.0, 1.0)}, ValueError),
        ({"drag": (0.0, float("nan"), 0.0)}, ValueError),
        ({"dt": 0.0}, ValueError),
        ({"substeps": 0}, ValueError),
        ({"substeps": 1.5}, TypeError),
    ],
)
def test_bad_quadrotor_params_are_refused(kwargs, error):
    with pytest.raises(error):
        QuadrotorParams(**kwargs)


def test_bad_controller_gains_are_refused():
    with pytest.raises(ValueError):
        ControllerGains(speed=0.0)
    with pytest.raises(TypeError):
        ControllerGains(search_window=2.5)


def test_step_refuses_an_action_of_the_wrong_shape(device):
    quad = Quadrotor(2, device)
    with pytest.raises(ValueError, match=r"\[2, 4\] float32"):
        _fly(quad, wp.zeros((2, 3), dtype=wp.float32, device=device))
