"""``Course.step(mask=m)``: a step of the masked envs only (an env's restart). The built-in
per-step components skip the other envs, whose results and state keep their last step's; the
masked envs get what a full step gives them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import warp as wp

from trackgen_env import GateGenConfig, TrackGenConfig, tools
from trackgen_env.course import Course

DEV = "cpu"
E = 6
MASK = np.array([1, 0, 0, 1, 0, 1], np.int32)


def _courses():
    """Pairs of identical courses over every built-in per-step component."""
    def track(collision, extra=()):
        return lambda: Course.track(TrackGenConfig(num_envs=E, device=DEV, elevation=0.5), checkpoint_spacing=0.6,
                                    collision=collision, extra=list(extra), seeds=3)
    return {
        "segments + localizer (fused)": track("segments", [tools.Localizer()]),
        "sdf + localizer": track("sdf", [tools.Localizer()]),
        "gates, frame collision": lambda: Course.gates(GateGenConfig(num_envs=E, device=DEV, gate_width=0.6),
                                                       collision=tools.FrameCollision(0.05), seeds=3),
        "gates, disc collision": lambda: Course.gates(GateGenConfig(num_envs=E, device=DEV, gate_width=0.6),
                                                      collision=0.05, seeds=3),
    }


def _snapshot(res) -> dict:
    return {(name, f.name): getattr(value, f.name).numpy().copy()
            for name, value in res.items() for f in dataclasses.fields(value)}


@pytest.mark.parametrize("make", list(_courses()))
def test_a_masked_step_steps_the_masked_envs_only(make):
    full, masked = _courses()[make](), _courses()[make]()
    start = full.result.start_position.numpy()
    positions = []
    for course in (full, masked):
        p = wp.array(start, dtype=wp.vec3, device=DEV)
        course.bind(position=p)
        positions.append(p)
        course.step()
    before = _snapshot(masked.step())
    # the masked envs stay at the start (a restart); the others jump past checkpoint 1, which
    # the masked step must not see (in a restart they stay put)
    on = MASK != 0
    cps = full.checkpoints
    ahead = cps.position.numpy()[:, 1] + np.float32(0.05) * cps.direction.numpy()[:, 1]
    target = np.where(on[:, None], start, ahead).astype(np.float32)
    for p in positions:
        p.assign(target)
    after_full = _snapshot(full.step())
    after = _snapshot(masked.step(mask=wp.array(MASK, device=DEV)))
    for name in {k[0] for k in before}:  # every component's results would change for the others
        assert any(not np.array_equal(after_full[k][~on], before[k][~on]) for k in before if k[0] == name), name
    for key, value in after.items():
        assert np.array_equal(value[on], after_full[key][on]), key   # what a full step gives them
        assert np.array_equal(value[~on], before[key][~on]), key     # the others untouched


def test_a_restart_through_a_masked_step_continues_as_a_full_step_would():
    """In a restart the other envs stay put: the course's state after the masked step is the
    state after a full step, so the next full steps agree everywhere."""
    full, masked = (Course.track(TrackGenConfig(num_envs=E, device=DEV), checkpoint_spacing=0.6, collision="segments",
                                 extra=[tools.Localizer()], seeds=3) for _ in range(2))
    start = full.result.start_position.numpy()
    positions = [wp.array(start, dtype=wp.vec3, device=DEV) for _ in range(2)]
    for course, p in zip((full, masked), positions):
        course.bind(position=p)
    for k in range(12):
        moved = start + np.float32(0.15 * k) * np.array([1.0, 0.6, 0.0], np.float32)
        for p in positions:
            p.assign(moved)
        a, b = _snapshot(full.step()), _snapshot(masked.step())
        assert all(np.array_equal(a[key], b[key]) for key in a)
        if k % 4 == 3:  # the masked envs restart at the start pose
            restarted = np.where(MASK[:, None] != 0, start, moved).astype(np.float32)
            for p in positions:
                p.assign(restarted)
            full.step()
            masked.step(mask=wp.array(MASK, device=DEV))


def test_a_component_of_yours_sees_the_step_mask():
    seen = []

    class Spy(tools.Component):
        def step(self, ctx):
            seen.append(None if ctx.step_mask is None else ctx.step_mask.numpy().tolist())

    course = Course.track(TrackGenConfig(num_envs=E, device=DEV), checkpoint_spacing=0.6, extra=[Spy(name="spy")],
                          seeds=1)
    course.bind(position=wp.array(course.result.start_position.numpy(), dtype=wp.vec3, device=DEV))
    course.step()
    course.step(mask=wp.array(MASK, device=DEV))
    course.step()
    assert seen == [None, MASK.tolist(), None]


@pytest.mark.parametrize("mask, exc",
                         [(np.ones(E, np.int32), TypeError), (wp.ones(E + 1, dtype=wp.int32, device=DEV), ValueError),
                                       (wp.ones(E, dtype=wp.float32, device=DEV), ValueError)])
def test_a_bad_step_mask_is_refused_before_anything_runs(mask, exc):
    course = Course.track(TrackGenConfig(num_envs=E, device=DEV), checkpoint_spacing=0.6, seeds=1)
    course.bind(position=wp.array(course.result.start_position.numpy(), dtype=wp.vec3, device=DEV))
    before = _snapshot(course.step())
    with pytest.raises(exc, match="mask"):
        course.step(mask=mask)
    assert all(np.array_equal(v, before[k]) for k, v in _snapshot(course.step()).items())


def test_a_bool_mask_is_named_by_its_dtype():
    course = Course.track(TrackGenConfig(num_envs=E, device=DEV), checkpoint_spacing=0.6, seeds=1)
    course.bind(position=wp.array(course.result.start_position.numpy(), dtype=wp.vec3, device=DEV))
    with pytest.raises(ValueError,
                       match=r"mask must be a \[6\] int32 wp.array on cpu, got shape \(6,\) dtype bool on cpu$"):
        course.step(mask=wp.zeros(E, dtype=wp.bool, device=DEV))
