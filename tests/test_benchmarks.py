"""benchmarks/: what the numbers count, that the references do the env's work, and where results go."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # benchmarks/ is not installed with the package

from benchmarks import measure  # noqa: E402
from benchmarks.floor import FusedWarpStep, NumpyStep  # noqa: E402
from trackgen_env.envs.controllers import PurePursuit  # noqa: E402
from trackgen_env.envs.track import TrackVectorEnv  # noqa: E402


def test_transitions_per_second_leave_the_reset_steps_out():
    env = TrackVectorEnv(8, "cpu", seed=0)
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    r = measure.steps_per_second(env.step, obs, lambda _: rng.uniform(-1, 1, (8, 2)).astype(np.float32), 8, 0.3)
    env.close()
    assert r["reset_steps"] > 0  # random actions leave the band within a few dozen steps
    total = r["steps"] * 8
    assert r["env_steps_per_s"] * r["seconds"] == pytest.approx(total)
    assert r["transitions_per_s"] * r["seconds"] == pytest.approx(total - r["reset_steps"])


def test_the_floor_and_the_numpy_step_compute_the_envs_observations_and_rewards():
    """The references time the same work: driven by the same actions on the same tracks, their
    outputs follow the env's (the floor: every observation entry; NumPy: the first 8)."""
    E = 16
    env = TrackVectorEnv(E, "cpu", seed=1)
    obs, _ = env.reset(seed=1)
    fused, numpy_step = FusedWarpStep(env, capture=True), NumpyStep(env)
    f_obs, n_obs = fused.reset(), numpy_step.reset()
    pursuit = PurePursuit(env.car)
    heading = 4  # the floor takes the segment's direction, the env the interpolated tangent
    lap = 7  # checkpoints passed / checkpoints: the references pass one by arc length, the env by its plane
    others = [i for i in range(obs.shape[1]) if i not in (heading, lap)]
    for _ in range(40):
        a = pursuit(obs)
        obs, reward, term, trunc, _ = env.step(a)
        f_obs, f_reward, f_term, f_trunc = fused.step(a)
        n_obs, n_reward, n_term, n_trunc = numpy_step.step(a)
        np.testing.assert_allclose(f_obs[:, others], obs[:, others], atol=2e-3)
        np.testing.assert_allclose(f_obs[:, heading], obs[:, heading], atol=0.1)
        np.testing.assert_allclose(f_obs[:, lap], obs[:, lap], atol=0.05)  # one checkpoint of ~30
        np.testing.assert_allclose(n_obs[:, others[:6]], obs[:, others[:6]], atol=2e-3)
        np.testing.assert_allclose(n_obs[:, lap], obs[:, lap], atol=0.05)
        np.testing.assert_allclose(f_reward, reward, atol=1e-4)
        np.testing.assert_allclose(n_reward, reward, atol=1e-4)
        assert np.array_equal(f_term, term) and np.array_equal(n_term, term)
    assert np.abs(obs[:, 0]).max() > 0.5  # the cars drove
    env.close()


def test_memory_per_env_parts_sum_to_the_total():
    for env_id in measure.ENVS:
        m = measure.memory_per_env(env_id, 3, "cpu")
        assert m["num_envs"] == 3
        assert {"generator", "course", "env buffers", "numpy outputs"} <= set(m["parts"]), env_id
        assert all(isinstance(b, int) and b >= 0 for b in m["parts"].values())
        assert sum(m["parts"].values()) == m["total"] > 0
        assert sum(m["per_env"].values()) == pytest.approx(m["total_per_env"]) == pytest.approx(m["total"] / 3)
        assert m["device_total_per_env"] == pytest.approx(m["total_per_env"] - m["per_env"]["numpy outputs"])


def test_run_quick_writes_every_section_with_finite_ratios(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    run = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"), "--quick", "--out", str(tmp_path)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert {"results.json", "results.md", "throughput.png"} <= set(os.listdir(tmp_path))
    result = json.loads((tmp_path / "results.json").read_text())
    for section in ("throughput", "generation", "resets", "breakdown", "memory", "first_use", "carracing", "sharding"):
        assert section in result, section
    for env_id in measure.ENVS:
        rows = result["throughput"]["rows"][env_id]
        assert [r["num_envs"] for r in rows] == [1, 64]
        assert all(r["replay_numpy"]["transitions_per_s"] > 0 and r["eager_numpy"]["transitions_per_s"] > 0 for r in rows)
        # SAME_STEP: no reset steps, so every env-step is a transition
        assert all(r["same_step"]["reset_steps"] == 0 and r["same_step"]["transitions_per_s"] > 0 for r in rows)
    track = result["throughput"]["rows"]["TrackGen-Track-v0"]
    assert all(r["floor"]["transitions_per_s"] > 0 and r["numpy_step"]["transitions_per_s"] > 0 for r in track)
    assert result["generation"]["track"]["courses_per_s"] > 0
    assert {"0.0", "0.01", "1.0"} <= set(result["resets"]["TrackGen-Track-v0"])
    assert result["first_use"]["TrackGen-Track-v0"]["warm"]["total_s"] > 0
    assert result["sharding"]["equal_to_one_env"] is True
    # the shards' replays alone (in turn, one thread) beside in parallel: both timed
    assert result["sharding"]["replay_cpu_us_2_alone"] > 0 and result["sharding"]["replay_contention_2"] > 0
    assert "stepped in turn in one thread" in (tmp_path / "results.md").read_text()
    ratios = result["ratios"]
    expected = {"track_step_time_over_floor_64", "track_over_numpy_step_64", "track_replay_over_eager_64",
                "track_courses_per_s_64", "sharding_speedup_2", "track_device_bytes_per_env"}
    if "skipped" in result["carracing"]:
        assert "gymnasium[box2d]" in result["carracing"]["skipped"]
        assert "Skipped: CarRacing-v3 unavailable" in (tmp_path / "results.md").read_text()
    else:
        expected |= {"track_over_carracing_pixels", "track_over_carracing_physics", "track_over_carracing_sync_vector",
                     "track_generation_over_carracing"}
    assert expected <= set(ratios)
    assert all(isinstance(v, float) and math.isfinite(v) and v > 0 for v in ratios.values()), ratios
    text = (tmp_path / "results.md").read_text()
    assert "python benchmarks/run.py --quick --only throughput" in text and "| 4096 |" not in text
    assert text.strip() in run.stdout


def test_the_default_results_folder_is_untracked():
    ignored = subprocess.run(["git", "check-ignore", "-q", "benchmarks/results/latest/results.json"], cwd=ROOT)
    assert ignored.returncode == 0, "benchmarks/results/latest/ must be ignored by git"


def test_steal_is_a_share_of_the_cpu_time_between_two_readings(tmp_path, monkeypatch):
    assert measure.steal_percent((10, 1000), (15, 1200)) == pytest.approx(2.5)
    assert measure.steal_percent(None, (15, 1200)) is None and measure.steal_percent((10, 1000), (10, 1000)) is None
    stat = tmp_path / "stat"  # /proc/stat's first line: user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  100 5 50 800 10 0 5 30 7 0\ncpu0 1 2 3\n")
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: real_open(stat if path == "/proc/stat" else path, *a, **k))
    assert measure.cpu_times() == (30, 1000)  # guest time is inside user: not counted twice
