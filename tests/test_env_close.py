"""``close()`` ends the env as Gymnasium's ``VectorEnv.close`` does: the buffers and graphs are released,
a second close is a no-op, and using the env after it is a clear error (issue 9, item 6)."""

import gc
import weakref

import numpy as np
import pytest
from gymnasium.wrappers.vector import RecordEpisodeStatistics

from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv

ENVS = [TrackVectorEnv, GatesVectorEnv]


@pytest.mark.parametrize("cls", ENVS)
def test_close_releases_the_course_the_graphs_and_the_buffers(cls):
    env = cls(3, "cpu", seed=0)
    env.reset(seed=0)
    env.step(np.zeros(env.action_space.shape, np.float32))
    held = [weakref.ref(x) for x in (env.course, env.graph, env._obs, env._io, env.course.generator)]
    assert all(r() is not None for r in held)
    env.close()
    gc.collect()
    assert env.closed and [r() for r in held] == [None] * len(held)
    with pytest.raises(AttributeError, match=rf"{cls.__name__}\.course was released by close\(\): the env is closed"):
        env.course  # noqa: B018
    assert env.num_envs == 3 and env.single_action_space.shape[0] in (2, 4)  # the settings stay


@pytest.mark.parametrize("cls", ENVS)
def test_the_courses_parameters_kept_past_close_refuse_use(cls):
    env = cls(2, "cpu", seed=0)
    params = env.course.generator.params
    name = next(iter(params))
    env.close()
    for use in (lambda: params[name], lambda: params.__setitem__(name, 1.0), lambda: params.randomize):
        with pytest.raises(RuntimeError, match="the env is closed"):
            use()


@pytest.mark.parametrize("cls", ENVS)
def test_step_reset_render_after_close_raise_and_close_again_is_a_no_op(cls):
    env = cls(2, "cpu", seed=0, render_mode="rgb_array", render_size=32)
    env.reset(seed=0)
    env.close()
    env.close()
    for use in (lambda: env.step(np.zeros(env.action_space.shape, np.float32)), lambda: env.reset(),
                lambda: env.reset(seed=1), env.render, env.render_frames, env.memory_usage):
        with pytest.raises(RuntimeError, match="the env is closed"):
            use()
    # the host copies of the course and the body, as every other method
    inspections = (env.tracks, env.car_pose) if cls is TrackVectorEnv else (env.courses, env.drone_state)
    for use in inspections:
        with pytest.raises(RuntimeError, match="the env is closed"):
            use()


def test_a_wrapper_closes_the_env():
    env = TrackVectorEnv(2, "cpu", seed=0)
    wrapped = RecordEpisodeStatistics(env)
    wrapped.reset(seed=0)
    wrapped.close()
    assert env.closed
    with pytest.raises(RuntimeError, match="the env is closed"):
        wrapped.step(np.zeros((2, 2), np.float32))


def test_a_refused_construction_is_closed_cleanly():
    """Gymnasium's ``__del__`` closes a half-built env too: close must cope with missing buffers."""
    with pytest.raises(ValueError, match="laps"):
        TrackVectorEnv(2, "cpu", laps=0)
    gc.collect()
