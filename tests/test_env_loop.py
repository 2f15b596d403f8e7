"""``env_loop``: on the CPU a per-env kernel runs as one thread looping over every env; any other
split of the envs over threads (a thread per env, as on CUDA; a few envs per thread) gives the
same bytes, for the generation (every built-in stage, the commit, the checkpoints, full and
masked) and for the step (car, drone, collision, localizer, progress, observation, resets)."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
import warp as wp
from test_generation_in_place import DEV, E, _builtin_programs

from trackgen_env import TrackGenConfig, pipeline
from trackgen_env.core import env_loop
from trackgen_env.course import Course
from trackgen_env.envs.track import TrackVectorEnv


def _splits():
    """``env_loop.shape`` replacements: a thread per env (CUDA's split) and 4 envs per thread."""
    return {"thread_per_env": lambda device, n: (n, 1), "four_envs_per_thread": lambda device, n: (-(-n // 4), 4)}


def _generation_bytes():
    mask = wp.array([0, 1, 1, 0, 0, 1], dtype=wp.int32, device=DEV)
    out = []
    for program in _builtin_programs():
        program.enqueue(advance=True, mask=mask)  # after the full generation of construction
        out += [getattr(program.result, f.name).numpy().tobytes() for f in dataclasses.fields(program.result)]
    course = Course.track(pipeline.presets.track(num_envs=E, device=DEV), checkpoint_spacing=0.6, seeds=1)
    course.regenerate(mask=mask, advance=True)
    checkpoints = course.components["checkpoints"].result
    out += [getattr(checkpoints, f.name).numpy().tobytes() for f in dataclasses.fields(checkpoints)]
    return out


@pytest.mark.parametrize("split", list(_splits()))
def test_the_same_bytes_however_the_per_env_kernels_split_the_envs_over_threads(monkeypatch, split):
    """On the CPU a per-env kernel runs as one thread looping over every env (``env_loop``);
    any other split (a thread per env as on CUDA, a few envs per thread) gives the same
    bytes, for every built-in stage, the commit and the checkpoints, full and masked."""
    default = _generation_bytes()
    monkeypatch.setattr(env_loop, "shape", _splits()[split])
    assert _generation_bytes() == default


def _rollout_bytes():
    """Short random-action rollouts with auto-resets: the Track env (flat, and on hills with a
    banked heightfield ground), the Gates env, and a course stepped with the "sdf" collision."""
    rng = np.random.default_rng(0)
    envs = [gym.make_vec("TrackGen-Track-v0", num_envs=E, device=DEV, seed=0),
            TrackVectorEnv(num_envs=E, device=DEV, track=TrackGenConfig(elevation=1.5, banking=0.3), seed=0),
            gym.make_vec("TrackGen-Gates-v0", num_envs=E, device=DEV, seed=0)]
    out = []
    for env in envs:
        out.append(env.reset(seed=0)[0].tobytes())
        for _ in range(40):
            obs, reward, terminated, truncated, _ = env.step(
                rng.uniform(-1, 1, (E,) + env.single_action_space.shape).astype(np.float32))
            out += [obs.tobytes(), reward.tobytes(), terminated.tobytes(), truncated.tobytes()]
        env.close()
    course = Course.track(TrackGenConfig(num_envs=E, device=DEV), checkpoint_spacing=0.6, collision="sdf", seeds=2)
    start = course.result.start_position.numpy()
    position = wp.array(start, dtype=wp.vec3, device=DEV)
    course.bind(position=position)
    for k in range(5):
        position.assign(start + np.float32(0.3 * k))
        out += [course.step().contacts.distance.numpy().tobytes()]
    return out


@pytest.mark.parametrize("split", list(_splits()))
def test_the_same_rollouts_however_the_per_env_kernels_split_the_envs_over_threads(monkeypatch, split):
    """The step's kernels (car, drone, collision, localizer, progress, observation, resets) as
    the generation's: any split of the envs over threads gives the bytes of the default."""
    default = _rollout_bytes()
    monkeypatch.setattr(env_loop, "shape", _splits()[split])
    assert _rollout_bytes() == default
