"""presets.race_gates(): the race-like gate family (stages.race_gates): geometry and clearance on every valid env,
the valid rate, determinism, split-S pairs, and its statistics against real layouts."""

import math
import os

import numpy as np
import pytest
import warp as wp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trackgen_env.core.gate_stats import gate_result_stats
from trackgen_env.pipeline import build, presets
from trackgen_env.core.seeding import env_seeds

REAL_GATES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "shared",
                          "real-courses", "gates")


def _normals(quat):
    x, y, z, w = np.moveaxis(quat.astype(np.float64), -1, 0)
    return np.stack([1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + z * w), 2.0 * (x * z - y * w)], axis=-1)


def check_geometry(result, spec):
    """The rules race_checks enforces, recomputed on the host for every valid env."""
    s_ = spec.settings
    p = spec.params
    pos = result.gate_position.numpy().astype(np.float64)
    nrm = _normals(result.gate_orientation.numpy())
    size = result.gate_width.numpy()
    start = result.start_position.numpy()
    valid = result.valid.numpy()
    assert valid.any()
    np.testing.assert_allclose(result.gate_height.numpy()[valid == 1], size[valid == 1])  # square openings
    for e in np.flatnonzero(valid):
        g, s = int(result.num_gates.numpy()[e]), float(size[e])
        P = pos[e, :g]
        assert p["race_layout.size_lo"] - 1e-6 <= s <= p["race_layout.size_hi"] + 1e-6
        np.testing.assert_allclose(np.linalg.norm(nrm[e, :g], axis=1), 1.0, atol=1e-5)
        np.testing.assert_allclose(nrm[e, :g, 2], 0.0, atol=1e-5)  # upright gates
        assert np.all(P[:, 2] - 0.5 * s >= s_["ground_clearance"] - 1e-3)  # ground
        assert np.all(np.hypot(*(P[:, :2] - start[e, :2]).T) >= s_["start_clearance"] * (1 - 1e-3))  # start
        legs = np.roll(P, -1, axis=0) - P
        flat = np.hypot(legs[:, 0], legs[:, 1])
        stacked = np.flatnonzero(flat < 1e-3)  # the split-S pair: gate k above gate k + 1
        assert len(stacked) <= 1
        pair = {int(stacked[0]), (int(stacked[0]) + 1) % g} if len(stacked) else set()
        if pair:
            k = int(stacked[0])
            assert legs[k, 2] <= -1.5 * s * (1 - 1e-3)  # down, frames clear of each other
            assert nrm[e, k] @ nrm[e, (k + 1) % g] < -0.5  # flown the opposite way
            assert 0 not in pair  # the start faces gate 0 along its horizontal legs
        spacing = max(s_["min_gate_spacing"], 2.0 * math.sqrt(2.0) * s)
        for j in range(g):
            for k in range(j + 1, g):
                if {j, k} != pair:
                    assert np.hypot(*(P[k, :2] - P[j, :2])) >= spacing * (1 - 1e-3)
        for j in range(g):
            if j not in stacked:
                assert abs(legs[j, 2]) <= s_["max_climb"] * flat[j] * (1 + 1e-3) + 1e-5
            if j not in pair:
                a, b = legs[j - 1, :2] / flat[j - 1], legs[j, :2] / flat[j]
                turn = abs(math.atan2(a[0] * b[1] - a[1] * b[0], a @ b))
                assert turn <= p["race_layout.max_turn"] + 1e-3
        # each gate faces along the course: its normal points from the previous gate's side to the next's
        for j in range(g):
            if j not in pair:
                assert nrm[e, j, :2] @ (P[(j + 1) % g, :2] - P[j - 1, :2]) > 0


@pytest.mark.filterwarnings("ignore::UserWarning")  # a drawn config may leave few valid envs: they are checked
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), num_gates=st.integers(4, 12), share=st.floats(0.0, 1.0),
       size_lo=st.floats(0.3, 1.5), size_span=st.floats(0.0, 1.5))
def test_geometry_and_clearance_hold_on_every_valid_env(seed, num_gates, share, size_lo, size_span):
    spec = presets.race_gates(num_envs=16, device="cpu", num_gates=num_gates, split_s_share=share, size_lo=size_lo,
                              size_hi=size_lo + size_span)
    check_geometry(build(spec, seeds=seed).result, spec)


def test_valid_rate_and_split_s_share_at_the_defaults():
    spec = presets.race_gates(num_envs=512, device="cpu")
    result = build(spec, seeds=2024).result
    assert result.valid.numpy().mean() >= 0.99
    check_geometry(result, spec)
    stats = gate_result_stats(result)
    share = np.mean([s.stacked == 1 for s in stats])
    assert 0.2 <= share <= 0.4  # split_s_share = 0.3
    assert np.mean([s.reversals >= 1 for s in stats]) >= share  # every split-S reverses
    sizes = result.gate_width.numpy()
    assert sizes.min() >= 0.6 and sizes.max() <= 2.4 and sizes.std() > 0.3  # drawn per course


def _snapshot(result, e):
    return [getattr(result, n).numpy()[e].tobytes() for n in ("gate_position", "gate_orientation", "gate_width",
                                                               "start_position", "valid")]


def test_env_course_does_not_depend_on_num_envs():
    big = build(presets.race_gates(num_envs=64, device="cpu"), seeds=42).result
    seeds = env_seeds(42, 64).view(np.int32)
    for i in (0, 17, 63):
        one = build(presets.race_gates(num_envs=1, device="cpu"),
                    seeds=wp.array([seeds[i]], dtype=wp.int32, device="cpu")).result
        assert _snapshot(one, 0) == _snapshot(big, i)
    again = build(presets.race_gates(num_envs=64, device="cpu"), seeds=42).result
    assert all(_snapshot(again, e) == _snapshot(big, e) for e in range(64))


def test_scale_free_in_the_gate_size():
    """Every length is in gate sizes: the same draws at another size range give the same shape, scaled."""
    a = build(presets.race_gates(num_envs=8, device="cpu", size_lo=1.0, size_hi=1.0), seeds=5).result
    b = build(presets.race_gates(num_envs=8, device="cpu", size_lo=2.0, size_hi=2.0), seeds=5).result
    both = (a.valid.numpy() == 1) & (b.valid.numpy() == 1)
    assert both.any()
    pa, pb = a.gate_position.numpy()[both], b.gate_position.numpy()[both]
    np.testing.assert_allclose(pb[..., :2], 2.0 * pa[..., :2], rtol=1e-4, atol=1e-4)


def test_bad_arguments():
    with pytest.raises(TypeError, match="unknown layout parameters"):
        presets.race_gates(legs=3)
    with pytest.raises(ValueError):
        presets.race_gates(num_gates=3)
    with pytest.raises(ValueError):
        build(presets.race_gates(size_lo=2.0, size_hi=1.0))


@pytest.mark.skipif(not os.path.isdir(REAL_GATES), reason="the real layouts are not beside the project")
def test_statistics_inside_the_real_layouts_range():
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "gate_stats.py")
    spec = importlib.util.spec_from_file_location("gate_stats_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    real = module.real_layouts(REAL_GATES)
    generated = gate_result_stats(build(presets.race_gates(num_envs=512, device="cpu"), seeds=11).result)
    assert module.all_inside(generated, real) >= 0.9


def test_the_reference_controller_flies_race_courses():
    from trackgen_env.demos.gates import fly
    from trackgen_env.envs import GatesVectorEnv
    from trackgen_env.envs.controllers import CourseLinePilot

    env = GatesVectorEnv(8, "cpu", gates=presets.race_gates(num_envs=8), seed=4)
    try:
        result = fly(env, CourseLinePilot(env), 1500, progress=False)
    finally:
        env.close()
    assert result["collisions"] == 0 and result["out_of_bounds"] == 0
    assert result["laps"] >= 8
