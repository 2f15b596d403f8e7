"""The one body interface (:class:`trackgen_env.envs.body.Body`) of the car and the quadrotor."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv
from trackgen_env.envs.body import Body
from trackgen_env.envs.car import CAR_PRESETS, CarState
from trackgen_env.envs.quadrotor import Quadrotor


@pytest.mark.parametrize("body", [lambda: CarState(CAR_PRESETS["rc10"], 3, "cpu"), lambda: Quadrotor(3, "cpu")])
def test_car_and_quadrotor_are_bodies_with_one_step_signature(body):
    b = body()
    assert isinstance(b, Body)
    assert inspect.signature(type(b).step).parameters.keys() == inspect.signature(Body.step).parameters.keys()
    pose = b.pose()
    assert set(pose) == {"position", "orientation", "half_extents"}
    assert pose["position"] is b.position and pose["orientation"] is b.orientation


@pytest.mark.parametrize("cls, attribute", [(TrackVectorEnv, "state"), (GatesVectorEnv, "drone")])
def test_the_env_steps_its_body_and_the_course_reads_its_pose(cls, attribute):
    env = cls(2, "cpu", seed=0)
    try:
        assert env.body is getattr(env, attribute)
        env.reset(seed=0)
        before = env.body.position.numpy().copy()
        action = np.zeros((2, env.single_action_space.shape[0]), np.float32)
        action[:, -1 if cls is TrackVectorEnv else 0] = 1.0  # full throttle / thrust
        for _ in range(5):
            env.step(action)
        assert not np.array_equal(env.body.position.numpy(), before)
        assert (env.body.elapsed.numpy() == 5).all()
    finally:
        env.close()

