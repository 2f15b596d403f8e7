"""benchmarks/: what the numbers count, and where the results are written."""

import importlib.util
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "benchmarks", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_transitions_per_second_leave_the_reset_steps_out():
    r = _load("bench_track_env").steps_per_second(8, "cpu", False, "random", 0.3)
    assert r["reset_steps"] > 0  # random actions leave the band within a few dozen steps
    total = r["steps"] * 8
    assert r["env_steps_per_s"] * r["seconds"] == pytest.approx(total)
    assert r["transitions_per_s"] * r["seconds"] == pytest.approx(total - r["reset_steps"])


def test_default_results_go_to_an_untracked_folder_not_over_the_reference_results(tmp_path, capsys):
    bench = _load("bench_track_env")
    bench.__file__ = str(tmp_path / "benchmarks" / "bench_track_env.py")  # where the default path is taken from
    bench.main(["--device", "cpu", "--num-envs", "2", "--seconds", "0.05"])
    assert os.listdir(tmp_path / "benchmarks" / "results") == ["latest"]
    assert (tmp_path / "benchmarks" / "results" / "latest" / "track_env_cpu.json").is_file()
    assert "transitions/s (random)" in capsys.readouterr().out
    ignored = subprocess.run(["git", "check-ignore", "-q", "benchmarks/results/latest/track_env_cpu.json"], cwd=ROOT)
    assert ignored.returncode == 0, "benchmarks/results/latest/ must be ignored by git"
    tracked = subprocess.run(["git", "ls-files", "benchmarks/results"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "track_env_cpu.json" in tracked and "latest" not in tracked


def test_memory_per_env_parts_sum_to_the_total_and_the_json_says_so(tmp_path, capsys):
    bench = _load("bench_memory_startup")
    path = tmp_path / "memory.json"
    result = bench.main(["--device", "cpu", "--num-envs", "3", "--no-latency", "--json", str(path)])
    assert json.loads(path.read_text()) == json.loads(json.dumps(result))
    assert result["first_use"] == {}
    assert set(result["memory"]) == {"TrackGen-Track-v0", "TrackGen-Gates-v0"}
    for env_id, m in result["memory"].items():
        assert m["num_envs"] == 3
        assert {"generator", "course", "env buffers", "numpy outputs"} <= set(m["parts"]), env_id
        assert all(isinstance(b, int) and b >= 0 for b in m["parts"].values())
        assert sum(m["parts"].values()) == m["total"] > 0
        assert sum(m["per_env"].values()) == pytest.approx(m["total_per_env"]) == pytest.approx(m["total"] / 3)
        assert m["device_total_per_env"] == pytest.approx(m["total_per_env"] - m["per_env"]["numpy outputs"])
    track = result["memory"]["TrackGen-Track-v0"]
    assert {"checkpoints", "progress", "collision", "localizer", "state"} <= set(track["parts"])
    assert result["track_ratio_to_target"] == pytest.approx(track["device_total_per_env"] / (16 * 1024))
    assert "| **total** |" in capsys.readouterr().out
