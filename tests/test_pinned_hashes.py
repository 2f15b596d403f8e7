"""Behaviour pins: SHA-256 of the default course batches and of short env rollouts.

Written before the refactors of the layout (issue "One home for each idea") so that moving
code cannot change a course or a rollout unnoticed. A deliberate behaviour change updates
the pin in the same commit and says why. The pins hold for the Warp version they were
taken with (floating-point code generation may differ between versions); with another
Warp the test skips and says so, and ``python tests/test_pinned_hashes.py`` prints new ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
import sys

import gymnasium as gym
import numpy as np
import pytest
import warp as wp

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env import GateGenConfig, GateGenerator, TrackGenConfig, TrackGenerator

PINNED_WARP = "1.19.0"
PINS = {
    "track_batch": "f1244fc7b8d3c16cbb90e6e800759a75ea68f2be622272828cba398a9ccd2768",
    "gates_batch": "c56b1d91839dbcecf12af2f2b9a492f28ffebf61f69e8d039fe8f7d4e73e1803",
    "track_rollout_pure_pursuit": "516366f53fe3242130fba72ae96ef643fe9db49797dc72da87a4ebd920ceb9f3",
    "track_rollout_random": "84f78d883833d30a0c122f3b67045d083ba304f276f0c99c5ed93f99697c0a08",
    "gates_rollout_pilot": "cbd4a1a269da90cdbc1bc5f29e76d53996142aab215056c5ac2b7f4629021c06",
    # stop 29: the gates env's ceiling reaches the top of each opening plus the margin (it was the
    # highest gate centre plus the margin): random flights end out of bounds later; the pilot's
    # rollout keeps its pin
    "gates_rollout_random": "faba710d56dc80fa4dfa93f90aa522b039d641147736cdfc1f1ef0e79d186c3c",
    "track_rollout_same_step": "4d3525ff77829231cb3351541dc8031156498679bf650f2137fc0ea51045f665",
    "gates_rollout_same_step": "c0442355859e49dcf37586053dbdf2348c6c24bacf91abcfe516800fe1635ff2",  # the same change
    "track_course_components": "0b3b016665a08d07a68a5dd9a9464cfe08b2ac3d5a9aed01be37792a10760052",
    "gates_course_components": "b5df25aaa9ff0cda5b2a26010895d96826d4fa0a6150bf70934eee737438ff79",
}


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _result_digest(result) -> str:
    return _digest(getattr(result, f.name).numpy() for f in dataclasses.fields(result))


def track_batch() -> str:
    return _result_digest(TrackGenerator(TrackGenConfig(num_envs=64, device="cpu"), seeds=0).result)


def gates_batch() -> str:
    return _result_digest(GateGenerator(GateGenConfig(num_envs=64, device="cpu"), seeds=0).result)


def _rollout(env_id: str, policy: str, steps: int = 300, **kwargs) -> str:
    env = gym.make_vec(env_id, num_envs=16, device="cpu", seed=0, **kwargs)
    obs, _ = env.reset(seed=0)
    if policy == "controller":
        if env_id == "TrackGen-Track-v0":
            from trackgen_env.envs.controllers import PurePursuit

            act = PurePursuit(env.unwrapped.car)
        else:
            from trackgen_env.envs.controllers import CourseLinePilot

            act = CourseLinePilot(env.unwrapped)
    else:
        rng = np.random.default_rng(0)
        act = lambda o: rng.uniform(-1, 1, (16,) + env.single_action_space.shape).astype(np.float32)  # noqa: E731
    out = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(act(obs))
        out += [obs, reward, terminated, truncated]
        if "final_obs" in info:  # SAME_STEP: the ended episodes' last observation and info
            out += [info["_final_obs"], info["final_obs"]] + [info["final_info"][k] for k in sorted(info["final_info"])]
    env.close()
    return _digest(out)


def _course_digest(family: str) -> str:
    """A course with every built-in per-step component, stepped and regenerated under a mask."""
    from trackgen_env import tools
    from trackgen_env.course import Course

    E = 8
    if family == "track":
        course = Course.track(TrackGenConfig(num_envs=E, device="cpu"), checkpoint_spacing=0.6, collision="sdf",
                              extra=[tools.Localizer()], seeds=3)
    else:
        course = Course.gates(GateGenConfig(num_envs=E, device="cpu", gate_width=0.6), collision=0.02, seeds=3)
    start = course.result.start_position.numpy()
    position = wp.array(start, dtype=wp.vec3, device="cpu")
    course.bind(position=position)
    out = []
    mask = wp.array([1, 0, 0, 1, 0, 0, 0, 1], dtype=wp.int32, device="cpu")
    for k in range(40):
        position.assign(start + np.float32(0.05 * k) * np.array([1.0, 0.5, 0.02], np.float32))
        res = course.step()
        for value in res.values():
            out += [getattr(value, f.name).numpy() for f in dataclasses.fields(value)]
        if k % 10 == 9:
            course.regenerate(mask=mask, advance=True)
            out += [getattr(course.result, f.name).numpy() for f in dataclasses.fields(course.result)]
    return _digest(out)


COMPUTE = {
    "track_batch": track_batch,
    "gates_batch": gates_batch,
    "track_rollout_pure_pursuit": lambda: _rollout("TrackGen-Track-v0", "controller"),
    "track_rollout_random": lambda: _rollout("TrackGen-Track-v0", "random"),
    "gates_rollout_pilot": lambda: _rollout("TrackGen-Gates-v0", "controller"),
    "gates_rollout_random": lambda: _rollout("TrackGen-Gates-v0", "random"),
    "track_rollout_same_step": lambda: _rollout("TrackGen-Track-v0", "random", autoreset_mode="SameStep"),
    "gates_rollout_same_step": lambda: _rollout("TrackGen-Gates-v0", "random", autoreset_mode="SameStep"),
    "track_course_components": lambda: _course_digest("track"),
    "gates_course_components": lambda: _course_digest("gates"),
}


@pytest.mark.parametrize("name", list(PINS))
def test_behaviour_is_pinned(name):
    if wp.__version__ != PINNED_WARP:
        pytest.skip(f"pins taken with warp {PINNED_WARP}, running {wp.__version__}: re-pin with "
                    "`python tests/test_pinned_hashes.py`")
    assert COMPUTE[name]() == PINS[name]


if __name__ == "__main__":
    for key, fn in COMPUTE.items():
        print(f'    "{key}": "{fn()}",', file=sys.stdout)
