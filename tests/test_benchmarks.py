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
    run = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "run.py"), "--quick", "--out",
                          str(tmp_path)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert {"results.json", "results.md", "throughput.png"} <= set(os.listdir(tmp_path))
    result = json.loads((tmp_path / "results.json").read_text())
    for section in ("throughput", "generation", "resets", "regeneration", "breakdown", "memory", "lidar", "pixels",
                    "first_use", "carracing", "sharding"):
        assert section in result, section
    from benchmarks.run import OPT_IN

    assert result["not_run"] == OPT_IN  # the CPU runs every section but the opt-in training
    for env_id in measure.ENVS:
        rows = result["throughput"]["rows"][env_id]
        assert [r["num_envs"] for r in rows] == [1, 64]
        assert all(r["replay_numpy"]["transitions_per_s"] > 0 and r["eager_numpy"]["transitions_per_s"] > 0
                   for r in rows)
        # SAME_STEP: no reset steps, so every env-step is a transition
        assert all(r["same_step"]["reset_steps"] == 0 and r["same_step"]["transitions_per_s"] > 0 for r in rows)
    track = result["throughput"]["rows"]["TrackGen-Track-v0"]
    assert all(r["floor"]["transitions_per_s"] > 0 and r["numpy_step"]["transitions_per_s"] > 0 for r in track)
    assert all(r["floor_torch"]["transitions_per_s"] > 0 for r in track)
    for env_id in measure.ENVS:  # 0, 1 and 1 % of 64 envs (1) masked
        regen = result["regeneration"][env_id]
        assert set(regen["masked"]) == {"0", "1"} and regen["masked_1pct_envs"] == 1, regen
        assert all(v > 0 for v in regen["masked"].values()) and math.isfinite(regen["idle_regeneration_us"])
    assert result["generation"]["track"]["courses_per_s"] > 0
    assert {"0.0", "0.01", "1.0"} <= set(result["resets"]["TrackGen-Track-v0"])
    assert result["first_use"]["TrackGen-Track-v0"]["warm"]["total_s"] > 0
    assert result["sharding"]["equal_to_one_env"] is True
    lidar = result["lidar"]
    assert lidar["lidar_1080"]["rays_per_s"] == pytest.approx(1080 * lidar["lidar_1080"]["env_steps_per_s"])
    assert "| lidar | 1080 |" in (tmp_path / "results.md").read_text()
    pixels = result["pixels"]
    assert pixels["num_envs"] == 64 and pixels["pixels_numpy"]["env_steps_per_s"] > 0
    assert pixels["pixels_torch"]["env_steps_per_s"] > 0
    assert "## Pixel observation" in (tmp_path / "results.md").read_text()
    # the shards' replays alone (in turn, one thread) beside in parallel: both timed
    assert result["sharding"]["replay_cpu_us_2_alone"] > 0 and result["sharding"]["replay_contention_2"] > 0
    assert "stepped in turn in one thread" in (tmp_path / "results.md").read_text()
    ratios = result["ratios"]
    expected = {"track_step_time_over_floor_64", "track_over_numpy_step_64", "track_replay_over_eager_64",
                "track_courses_per_s_64", "sharding_speedup_2", "track_device_bytes_per_env",
                "track_torch_transitions_per_s_64", "track_torch_step_time_over_floor_64",
                "track_masked_regeneration_1pct_us_64", "lidar_64_over_state_64", "lidar_1080_over_state_64"}
    if "skipped" in result["carracing"]:
        assert "gymnasium[box2d]" in result["carracing"]["skipped"]
        assert "Skipped: CarRacing-v3 unavailable" in (tmp_path / "results.md").read_text()
    else:
        expected |= {"track_over_carracing_pixels", "track_over_carracing_physics", "track_over_carracing_sync_vector",
                     "track_generation_over_carracing", "pixels_numpy_64_over_carracing",
                     "pixels_torch_64_over_carracing", "pixels_64_over_carracing"}
    assert expected <= set(ratios)
    # the idle regeneration is a difference of two timings: near 0, either sign
    assert all(isinstance(v, float) and math.isfinite(v) and (v > 0 or k.startswith("track_idle_regeneration"))
               for k, v in ratios.items()), ratios
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
    monkeypatch.setattr("builtins.open", lambda path, *a,
                        **k: real_open(stat if path == "/proc/stat" else path, *a, **k))
    assert measure.cpu_times() == (30, 1000)  # guest time is inside user: not counted twice


def test_the_floor_with_torch_outputs_steps_as_with_numpy_outputs():
    """The floor of the torch column does the NumPy floor's work, its outputs views of the device buffers."""
    torch = pytest.importorskip("torch")
    env = TrackVectorEnv(8, "cpu", seed=2)
    env.reset(seed=2)
    host, views = FusedWarpStep(env), FusedWarpStep(env, output="torch")
    obs = host.reset()
    views.reset()
    pursuit = PurePursuit(env.car)
    for _ in range(30):
        action = pursuit(obs)
        out, t_out = host.step(action), views.step(torch.from_numpy(action))
        assert all(isinstance(t, torch.Tensor) for t in t_out)
        for a, b in zip(out, t_out):
            np.testing.assert_array_equal(a, b.numpy())
        obs = out[0]
    assert np.abs(obs[:, 0]).max() > 0.5  # the cars drove
    with pytest.raises(ValueError, match='"numpy" or "torch"'):
        FusedWarpStep(env, output="jax")
    env.close()


def test_the_gpu_targets_are_the_ratios_a_gpu_run_computes():
    """Each CUDA target is read off a ratio that ``ratios`` names the same way at 131072 envs (a
    misspelt name would leave a target unmeasured), and a GPU run leaves out the CPU-only sections."""
    from benchmarks import run

    E = run.WORK_ENVS["cuda"]
    tp = lambda x: {"transitions_per_s": float(x)}  # noqa: E731
    row = {"num_envs": E, **{k: tp(1e8) for k in ("replay_numpy", "eager_numpy", "replay_torch", "floor",
                                                  "floor_torch", "numpy_step")}}
    result = {"throughput": {"rows": {"TrackGen-Track-v0": [row]}},
              "generation": {"track": {"courses_per_s": 2e7}},
              "regeneration": {"TrackGen-Track-v0": {"idle_regeneration_us": 4.0, "masked_1pct_us": 150.0}},
              "memory": {"TrackGen-Track-v0": {"device_total_per_env": 15_000.0}},
              "race": {"car_steps_over_track": 0.8},
              "pixels": {"num_envs": run.PIXELS_ENVS, "pixels_numpy": {"env_steps_per_s": 1e5},
                         "pixels_torch": {"env_steps_per_s": 1e6}, "carracing_pixels": {"env_steps_per_s": 200.0}}}
    ratios = run.ratios(result, E)
    assert set(run.TARGETS["cuda"]) <= set(ratios)
    assert ratios[f"pixels_{run.PIXELS_ENVS}_over_carracing"] == 5000.0  # the faster output's
    assert {run.met_target(ratios[k], t) for k, t in run.TARGETS["cuda"].items()} == {False, True}  # 1e8 < 6e8
    assert run.met_target(ratios[f"track_masked_regeneration_1pct_us_{E}"], run.TARGETS["cuda"][
        f"track_masked_regeneration_1pct_us_{E}"])
    text = run.markdown({"device": "cuda:0", "machine": "x86_64", "warp": "1.19.0", "date": "2026-12-03",
                         "load_average_before": 0.0, "load_average_after": 0.0, "ratios": ratios,
                         "config": {"quick": False, "num_envs": [E], "work_envs": E},
                         "not_run": {k: run.CPU_ONLY[k] for k in run.CPU_ONLY}},
                        "python benchmarks/run.py --device cuda:0")
    assert f"| track_torch_transitions_per_s_{E} | 100,000,000.00 | >= 6e+08 | no |" in text
    assert f"| track_masked_regeneration_1pct_us_{E} | 150.00 | <= 200 | yes |" in text
    assert "Sections not run on this device: `first_use`" in text and "Not measured in this run" not in text
    assert run.default_sections("cpu") == [s for s in run.SECTIONS if s not in run.OPT_IN]
    assert set(run.SECTIONS) - set(run.default_sections("cuda:0")) == set(run.CPU_ONLY) | set(run.OPT_IN)
    assert set(run.CPU_ONLY) == {"first_use", "sharding"} and set(run.OPT_IN) == {"training"}
    # the CPU targets too
    cpu = {**result, "throughput": {"rows": {"TrackGen-Track-v0": [{**row, "num_envs": 4096}]}}}
    cpu_ratios = run.ratios(cpu, run.WORK_ENVS["cpu"])
    assert {k for k in run.TARGETS["cpu"] if k in cpu_ratios} == {"track_step_time_over_floor_4096",
                                                                   "track_courses_per_s_4096",
                                                                  "track_device_bytes_per_env",
                                                                  "race_car_steps_over_track_4096",
                                                                  "pixels_1024_over_carracing"}


def test_the_device_check_script_writes_its_logs_and_results(tmp_path):
    """benchmarks/device_check.sh, the GPU session's one command, run here on the CPU with a quick
    benchmark: its files land under $OUT, where the device tool brings them back from."""
    env = {**os.environ, "OUT": str(tmp_path), "DEVICE": "cpu", "BENCH_ARGS": "--quick --only generation",
           "TESTS_LIMIT_S": "120"}
    run = subprocess.run(["bash", os.path.join(ROOT, "benchmarks", "device_check.sh")], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert {"device.txt", "run.log", "pytest-cuda.log", "run"} == set(os.listdir(tmp_path))
    assert "warp " in (tmp_path / "device.txt").read_text()
    assert "benchmarks/run.py exit 0" in (tmp_path / "run.log").read_text()
    assert json.loads((tmp_path / "run" / "results.json").read_text())["generation"]["track"]["courses_per_s"] > 0
    tests = (tmp_path / "pytest-cuda.log").read_text()
    assert "pytest exit 0" in tests and " deselected" in tests and "error" not in tests.lower()


@pytest.mark.parametrize("args, message", [
    (["--work-envs", "0"], "--work-envs: expected an int > 0, got '0'"),
    (["--work-envs", "2.5"], "--work-envs: expected an int > 0, got '2.5'"),
    (["--seconds", "-1"], "--seconds: expected a finite number > 0, got '-1'"),
    (["--seconds", "nan"], "--seconds: expected a finite number > 0, got 'nan'"),
    (["--seconds", "inf"], "--seconds: expected a finite number > 0, got 'inf'"),
    (["--device", "tpu"], "--device: device must be one of ['cpu'"),
    (["--work-envs", "1", "--only", "sharding"], "needs at least 2"),
    (["--work-envs", "100000000"], "GiB by their memory estimate, and cpu has"),
    (["--out", ""], "--out: expected a folder, got an empty string"),
])
def test_run_refuses_bad_arguments_before_measuring(args, message, tmp_path, capsys):
    from benchmarks import run

    with pytest.raises(SystemExit) as exc:
        run.main(["--quick", "--only", "memory", "--out", str(tmp_path), *args])
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_run_refuses_an_output_folder_it_cannot_write_before_measuring(tmp_path, capsys):
    from benchmarks import run

    taken = tmp_path / "a_file"
    taken.write_text("")
    with pytest.raises(SystemExit) as exc:
        run.main(["--quick", "--only", "generation", "--out", str(taken)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"--out {taken}: cannot write there" in err
    assert "generation:" not in err and sorted(os.listdir(tmp_path)) == ["a_file"]


def test_the_shadow_policy_drives_a_lidar_env_on_pure_pursuits_lines():
    """The lidar benchmark's policy: a state twin's pure-pursuit actions put the lidar env's cars on the
    same lines (their motion entries equal a pure-pursuit state env's, step for step)."""
    E = 4
    lidar = TrackVectorEnv(E, "cpu", seed=2, obs_type="lidar", num_beams=8)
    state, pursuit = measure.make_env("TrackGen-Track-v0", E, "cpu", seed=2)
    shadow = measure.ShadowPursuit(E, "cpu", seed=2)
    lidar.reset(seed=2)
    obs_s, _ = state.reset(seed=2)
    for _ in range(30):
        obs = lidar.step(shadow(None))[0]
        obs_s = state.step(pursuit(obs_s))[0]
        np.testing.assert_array_equal(obs[:, 8:], obs_s[:, :3])
    assert obs_s[:, 0].min() > 0.5  # the cars drove
    for env in (lidar, state, shadow):
        env.close()


def test_the_training_section_measures_the_trainers_in_one_run(tmp_path):
    """``--only training --quick``: the env alone, SB3, rsl_rl and the CleanRL example, each a positive
    env-steps/s, their ratio, the held-out lap rates and the laps-vs-time figure."""
    pytest.importorskip("rsl_rl")
    pytest.importorskip("stable_baselines3")
    from benchmarks import run

    result = run.main(["--quick", "--only", "training", "--out", str(tmp_path)])["training"]
    for key in ("env", "sb3", "rsl_rl", "cleanrl"):
        assert result[key]["env_steps_per_s"] > 0, result[key]
    assert result["rsl_rl_over_sb3"] == result["rsl_rl"]["env_steps_per_s"] / result["sb3"]["env_steps_per_s"]
    assert 0.0 <= result["rsl_rl"]["held_out_lap_rate"] <= 1.0
    assert (tmp_path / "training.png").is_file()
    assert "## Training speed" in (tmp_path / "results.md").read_text()
