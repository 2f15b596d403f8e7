"""``python -m trackgen_env train`` / ``eval``: a tiny end-to-end run, and clear errors for bad arguments."""

import contextlib
import io
import json
import math
import os

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402

import trackgen_env.integrations.evaluation as evaluation_module  # noqa: E402
import trackgen_env.integrations.train as train_module  # noqa: E402
from trackgen_env.__main__ import main  # noqa: E402
from trackgen_env.integrations.evaluation import EVAL_SEED, evaluate  # noqa: E402


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A 512-step run of 4 envs (one rollout is 4 x 256 = 1024 steps), with torch at 2 threads before it
    and the thread count recorded while PPO learns."""
    out = tmp_path_factory.mktemp("run")
    learn, seen = PPO.learn, {}

    def recording_learn(self, *args, **kwargs):
        seen["threads"] = torch.get_num_threads()
        return learn(self, *args, **kwargs)

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    text = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(text):
        mp.setattr(PPO, "learn", recording_learn)
        rc = main(
            [
                "train",
                "--trainer",
                "sb3",
                "--env",
                "TrackGen-Track-v0",
                "--steps",
                "512",
                "--num-envs",
                "4",
                "--seed",
                "3",
                "--device",
                "cpu",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
    seen["after"] = torch.get_num_threads()
    torch.set_num_threads(before)
    assert rc == 0
    return out, seen, text.getvalue()


def test_train_writes_model_stats_monitor_logs_and_record(trained):
    trained, _, _ = trained
    for name in ("model.zip", "vecnormalize.pkl", "monitor.csv", "train.json"):
        assert (trained / name).is_file(), name
    assert any((trained / "tb").rglob("events.out.tfevents.*"))
    record = json.loads((trained / "train.json").read_text())
    assert record["env_id"] == "TrackGen-Track-v0" and record["seed"] == 3 and record["num_envs"] == 4
    assert record["steps"] >= 512
    assert '"env_id": "TrackGen-Track-v0"' in (trained / "monitor.csv").read_text().splitlines()[0]  # was "None"
    # what eval needs to run the policy: the observation statistics of vecnormalize.pkl
    assert record["vecnormalize"] == {"file": "vecnormalize.pkl", "norm_obs": True, "norm_reward": True,
                                      "clip_obs": 10.0}


def test_train_runs_torch_on_one_thread_with_a_cpu_policy_and_restores_the_callers_count(trained):
    out, seen, _ = trained
    assert seen["threads"] == 1 and seen["after"] == 2
    assert json.loads((out / "train.json").read_text())["torch_threads"] == 1


def test_train_records_the_resolved_devices_not_none(trained):
    record = json.loads((trained[0] / "train.json").read_text())
    assert record["device"] == "cpu" and record["policy_device"] == "cpu"


def test_train_rounds_steps_up_to_whole_rollouts_and_says_so(trained):
    out, _, text = trained
    record = json.loads((out / "train.json").read_text())
    assert (record["steps_requested"], record["steps"], record["rollout_steps"]) == (512, 1024, 1024)
    assert "trained 1024 env steps: --steps 512 rounded up to whole rollouts of 1024 (4 envs x 256 steps)" in text


def test_train_says_one_env_in_the_singular(tmp_path, capsys):
    assert (
        main(
            [
                "train",
                "--trainer",
                "sb3",
                "--steps",
                "10",
                "--num-envs",
                "1",
                "--device",
                "cpu",
                "--out",
                str(tmp_path / "r"),
                "--no-progress",
            ]
        )
        == 0
    )
    assert "rounded up to whole rollouts of 256 (1 env x 256 steps)" in capsys.readouterr().out


def test_rollout_steps_are_whole_rollouts():
    assert train_module._rollout_steps(10, 16, 256) == 4096
    assert train_module._rollout_steps(4096, 16, 256) == 4096
    assert train_module._rollout_steps(4097, 16, 256) == 8192


@pytest.mark.parametrize("batch, rollout, expected", [(512, 4096, 512), (512, 1024, 512), (512, 256, 256),
                                                     (2048, 512, 512), (512, 768, 384), (512, 4352, 272)])
def test_the_default_minibatch_is_the_largest_whole_one(batch, rollout, expected):
    assert train_module.minibatch_size(batch, rollout) == expected


def test_train_fits_the_default_minibatch_to_a_small_rollout_and_keeps_a_given_one(tmp_path):
    """3 envs x 256 steps: the default 512 would leave a truncated minibatch of 256 (SB3 warns);
    the run uses 384 and records it. A batch_size the caller gives is used as given."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*mini-batch.*")  # SB3's truncated-minibatch warning
        train_module.train("TrackGen-Track-v0", 768, num_envs=3, seed=1, device="cpu", out=tmp_path / "a",
                           progress=False)
    assert json.loads((tmp_path / "a" / "train.json").read_text())["ppo"]["batch_size"] == 384
    with pytest.warns(UserWarning, match="mini-batch size of 48"):  # SB3's, for the caller's choice
        train_module.train("TrackGen-Track-v0", 64, num_envs=2, seed=1, device="cpu", out=tmp_path / "b",
                           progress=False, ppo_kwargs={"n_steps": 32, "batch_size": 48})
    assert json.loads((tmp_path / "b" / "train.json").read_text())["ppo"]["batch_size"] == 48


@pytest.mark.parametrize("argv, expected", [([], 1), (["--torch-threads", "2"], 2)])
def test_eval_sets_torch_threads_while_it_runs(trained, monkeypatch, argv, expected):
    seen = []
    run = evaluation_module._run_episodes

    def recording_run(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return run(*args, **kwargs)

    monkeypatch.setattr(evaluation_module, "_run_episodes", recording_run)
    before = torch.get_num_threads()
    torch.set_num_threads(3 if expected != 3 else 4)
    try:
        outer = torch.get_num_threads()
        assert main(["eval", str(trained[0] / "model.zip"), "--episodes", "1", "--device", "cpu", *argv]) == 0
        assert seen == [expected, expected] and torch.get_num_threads() == outer
    finally:
        torch.set_num_threads(before)


def test_eval_reports_trained_and_random_on_held_out_tracks(trained, capsys):
    trained = trained[0]
    assert main(["eval", str(trained / "model.zip"), "--episodes", "3", "--device", "cpu",
                 "--json", str(trained / "eval.json")]) == 0
    text = capsys.readouterr().out
    assert "lap completion" in text and "trained PPO" in text and "random" in text
    rows = json.loads((trained / "eval.json").read_text())
    assert [r["policy"] for r in rows] == ["trained PPO", "random"]
    assert all(r["episodes"] == 3 and 0.0 <= r["lap_completion_rate"] <= 1.0 for r in rows)


@pytest.mark.parametrize("damage", ["empty", "junk", "another run's"])
def test_eval_names_a_vecnormalize_file_it_cannot_use(trained, tmp_path, capsys, damage):
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(trained[0], copy)
    stats = copy / "vecnormalize.pkl"
    if damage == "empty":
        stats.write_bytes(b"")
    elif damage == "junk":
        stats.write_bytes(b"garbage\n")
    else:  # the gates env's statistics (44 observations) beside the car's policy (38)
        from stable_baselines3.common.vec_env import VecNormalize

        from trackgen_env.integrations.sb3 import make_sb3_vec_env

        other = VecNormalize(make_sb3_vec_env("TrackGen-Gates-v0", 1, device="cpu", seed=0))
        other.save(str(stats))
        other.close()
    capsys.readouterr()
    assert main(["eval", str(copy / "model.zip"), "--episodes", "1", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "vecnormalize.pkl: cannot load the run's observation statistics" in err
    # the same on the circuits' path, which reads the statistics itself
    assert main(["eval", str(copy / "model.zip"), "--circuits", str(_oval_folder(tmp_path)), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "vecnormalize.pkl: cannot load the run's observation statistics" in err


def _oval_folder(tmp_path):
    import numpy as np

    folder = tmp_path / "circuits"
    folder.mkdir(exist_ok=True)
    t = np.linspace(0.0, 2.0 * np.pi, 80, endpoint=False)
    rows = np.stack([60.0 * np.cos(t), 40.0 * np.sin(t), np.full_like(t, 6.0), np.full_like(t, 6.0)], axis=1)
    np.savetxt(folder / "Oval.csv", rows, delimiter=",", header="x_m,y_m,w_tr_right_m,w_tr_left_m")
    return folder


@pytest.mark.parametrize("where", [[], ["--circuits", "CIRCUITS"]])
def test_eval_names_a_model_file_it_cannot_load(tmp_path, capsys, where):
    model = tmp_path / "model.zip"
    model.write_text("{}")  # no zip
    (tmp_path / "train.json").write_text('{"env_id": "TrackGen-Track-v0", "vecnormalize": {"norm_obs": false}}')
    argv = [str(_oval_folder(tmp_path)) if a == "CIRCUITS" else a for a in where]
    assert main(["eval", str(model), *argv, "--device", "cpu"] + ([] if where else ["--episodes", "1"])) == 2
    err = capsys.readouterr().err
    assert "model.zip: cannot load the PPO model (ValueError: the file" in err and "Error: Error" not in err


def test_eval_on_a_real_circuit_csv(trained, tmp_path):
    trained = trained[0]
    import numpy as np

    t = np.linspace(0.0, 2.0 * np.pi, 80, endpoint=False)
    rows = np.stack([60.0 * np.cos(t), 40.0 * np.sin(t), np.full_like(t, 6.0), np.full_like(t, 6.0)], axis=1)
    csv = tmp_path / "oval.csv"
    np.savetxt(csv, rows, delimiter=",", header="x_m,y_m,w_tr_right_m,w_tr_left_m")
    (trained_res, random_res) = evaluate(trained / "model.zip", episodes=1, device="cpu", track_csv=csv)
    assert trained_res.episodes == 1 and random_res.episodes == 1


def test_eval_refuses_the_training_seed(trained):
    with pytest.raises(ValueError, match="shares per-env course seeds"):
        evaluate(trained[0] / "model.zip", episodes=2, seed=3, device="cpu")


@pytest.mark.parametrize("argv, message", [
    (["train", "--steps", "0"], "--steps must be >= 1"),
    (["train", "--steps", "10", "--num-envs", "0"], "--num-envs must be >= 1"),
    (["train", "--steps", "10", "--seed", "-1"], "seed must be an int in [0, 2**64)"),
    (["eval", "no/such/model.zip"], "no model at"),
    (["eval", "x.zip", "--episodes", "0"], "--episodes must be >= 1"),
    (["train", "--steps", "10", "--torch-threads", "0"], "--torch-threads must be >= 1"),
    (["eval", "x.zip", "--torch-threads", "0"], "--torch-threads must be >= 1"),
])
def test_bad_arguments_exit_2_with_a_clear_error(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_unknown_env_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--trainer", "sb3", "--env", "CartPole-v1", "--steps", "10"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_eval_seed_default_is_documented_and_disjoint_from_small_training_seeds():
    from trackgen_env.core.seeding import env_seeds

    held_out = set(env_seeds(EVAL_SEED, 256).tolist())
    for seed in range(8):
        assert not held_out.intersection(env_seeds(seed, 256).tolist())


def test_plot_learning_curve_from_a_monitor_csv(tmp_path):
    from trackgen_env.integrations.train import plot_learning_curve

    csv = tmp_path / "monitor.csv"
    lines = ['#{"t_start": 0, "env_id": "None"}', "r,l,t,laps"] + [f"{i * 0.1},{100 + i},{i},{i % 2}"
                                                                   for i in range(50)]
    csv.write_text("\n".join(lines) + "\n")
    plot_learning_curve(csv, tmp_path / "curve.png", window=10)
    assert (tmp_path / "curve.png").stat().st_size > 1000


def test_torch_threads_default_is_one_on_the_cpu_and_torchs_own_on_cuda():
    from trackgen_env.integrations.runs import torch_threads_for

    assert torch_threads_for("cpu") == 1 and torch_threads_for("cuda") is None
    assert torch_threads_for("cpu", 3) == 3 and torch_threads_for("cuda", 2) == 2
    with pytest.raises(ValueError, match="torch_threads"):
        torch_threads_for("cpu", 0)


def test_train_says_the_envs_it_used_when_num_envs_is_not_given(tmp_path, monkeypatch, capsys):
    """The rounding line names the env's default num_envs (train.json's), not the unset option."""
    import trackgen_env.__main__ as cli

    def fake_train(trainer, env_id, steps, *, num_envs, out, **kwargs):
        assert num_envs is None  # the env's default is train's to choose
        record = {"steps": 4096, "steps_requested": 10, "rollout_steps": 4096, "num_envs": 16, "ppo": {"n_steps": 256},
                  "wall_time_s": 1.0, "env_steps_per_s": 4096}
        (tmp_path / "train.json").write_text(json.dumps(record))
        return tmp_path / "model.zip"

    monkeypatch.setattr(cli, "run_trainer", fake_train)
    assert (
        main(
            [
                "train",
                "--trainer",
                "sb3",
                "--env",
                "TrackGen-Track-v0",
                "--steps",
                "10",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    assert "rounded up to whole rollouts of 4096 (16 envs x 256 steps)" in capsys.readouterr().out


EXAMPLES = __import__("pathlib").Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def spec_run(tmp_path_factory):
    """``train --spec spec.json --plugin plugin_stage:REGISTRY``: the plugin example's spec, saved as JSON."""
    import sys

    sys.path.insert(0, str(EXAMPLES))
    try:
        import plugin_stage

        tmp = tmp_path_factory.mktemp("spec_run")
        spec = plugin_stage.make_spec(2, "cpu").with_params({"band.width": 0.7})
        (tmp / "in.json").write_text(json.dumps(spec.to_dict()))
        before = torch.get_num_threads()
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(
                [
                    "train",
                    "--trainer",
                    "sb3",
                    "--spec",
                    str(tmp / "in.json"),
                    "--plugin",
                    "plugin_stage:REGISTRY",
                    "--steps",
                    "64",
                    "--seed",
                    "3",
                    "--device",
                    "cpu",
                    "--out",
                    str(tmp / "run"),
                    "--no-progress",
                ]
            )
        torch.set_num_threads(before)
        assert rc == 0
        yield tmp / "run", spec, plugin_stage
    finally:
        sys.path.remove(str(EXAMPLES))


def test_train_with_a_spec_and_a_plugin_saves_the_spec_that_rebuilds_the_same_courses(spec_run):
    from trackgen_env.envs.track import TrackVectorEnv
    from trackgen_env.pipeline import PipelineSpec, build

    run, spec, plugin_stage = spec_run
    record = json.loads((run / "train.json").read_text())
    assert record["num_envs"] == 2 and record["plugin"] == "plugin_stage:REGISTRY"  # num_envs: the spec's
    saved = PipelineSpec.from_dict(json.loads((run / "spec.json").read_text()))
    assert saved == spec and record["spec"] == spec.to_dict()
    assert "acme.chicane" in saved.stages and "track" not in record["env_kwargs"]
    env = TrackVectorEnv(2, "cpu", seed=3, track=saved, registry=plugin_stage.REGISTRY)
    again = build(saved, registry=plugin_stage.REGISTRY, seeds=3)
    np.testing.assert_array_equal(env.course.result.centerline.numpy(), again.result.centerline.numpy())


def _record_env_kwargs(monkeypatch) -> list:
    """The env kwargs of every SB3 env that training and evaluation make from now on, in order."""
    seen = []
    make = train_module.make_sb3_vec_env

    def recording_make(env_id, num_envs, **kwargs):
        seen.append(kwargs)
        return make(env_id, num_envs, **kwargs)

    monkeypatch.setattr(train_module, "make_sb3_vec_env", recording_make)
    monkeypatch.setattr(evaluation_module, "make_sb3_vec_env", recording_make)
    return seen


def test_eval_of_a_spec_run_drives_the_spec_with_its_plugin(spec_run, monkeypatch):
    run, _, plugin_stage = spec_run
    seen = _record_env_kwargs(monkeypatch)
    results = evaluate(run / "model.zip", episodes=2, device="cpu", random_policy=False)
    assert results[0].episodes == 2
    assert "acme.chicane" in seen[0]["track"].stages and seen[0]["registry"] is plugin_stage.REGISTRY


@pytest.mark.parametrize("argv, message", [
    (["--plugin", "plugin_stage:REGISTRY"], "a plugin registry (--plugin) holds the stages of a spec"),
    (["--spec", "GATES", "--env", "TrackGen-Track-v0"],
     "the spec is of the gates family, which TrackGen-Gates-v0 drives"),
    (["--spec", "TRACK", "--plugin", "no_such_module_xyz:R"],
     "the plugin registry 'no_such_module_xyz:R' (--plugin): cannot import 'no_such_module_xyz' (No module named "
     "'no_such_module_xyz')"),
    (["--spec", "TRACK", "--plugin", "json"], "a plugin registry is named 'module:attribute'"),
    (["--spec", "TRACK", "--plugin", "json:dumps"], "must be a pipeline.Registry"),
    (["--spec", "MISSING"], "MISSING.json: cannot read the file (No such file or directory)"),
])
def test_bad_spec_arguments_exit_2_with_a_clear_error(argv, message, tmp_path, capsys):
    from trackgen_env.pipeline import presets

    files = {"GATES": presets.gates(gate_width=0.6), "TRACK": presets.track()}
    for name, spec in files.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(spec.to_dict()))
    argv = [str(tmp_path / f"{a}.json") if a in (*files, "MISSING") else a for a in argv]
    assert main(["train", "--trainer", "sb3", "--steps", "10", "--out", str(tmp_path / "out"), *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["params"].update({"band.width": -1.0}), "parameter 'band.width' must be finite and in (0, inf)"),
    (lambda d: d["settings"].update({"max_points": 3}), "max_points must be >= 8, got 3"),
])
def test_a_spec_refused_by_the_env_leaves_no_out_folder(edit, message, tmp_path, capsys):
    from trackgen_env.pipeline import presets

    data = presets.track().to_dict()
    edit(data)
    (tmp_path / "spec.json").write_text(json.dumps(data))
    out = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--trainer",
                "sb3",
                "--steps",
                "64",
                "--num-envs",
                "2",
                "--device",
                "cpu",
                "--spec",
                str(tmp_path / "spec.json"),
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_an_out_that_is_a_file_is_refused_naming_the_flag(tmp_path, capsys):
    (tmp_path / "run.json").write_text("{}")
    assert main(["train", "--trainer", "sb3", "--steps", "10", "--out", str(tmp_path / "run.json")]) == 2
    assert "--out " + str(tmp_path / "run.json") + ": expected a folder for the run" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["train", "--steps", "10"], ["demo", "--steps", "2", "--no-progress"]])
def test_an_out_folder_that_cannot_be_made_is_refused_naming_the_flag(command, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    out = blocker / "run"  # under a file: no folder can be made there
    assert main([*command, "--out", str(out)]) == 2
    assert f"error: --out {out}: cannot make the folder (" in capsys.readouterr().err


def test_train_checks_its_out_folder_before_training_and_leaves_none_made(tmp_path, monkeypatch):
    made = []
    monkeypatch.setattr(
        "trackgen_env.__main__.run_trainer", lambda *a, **k: made.append(os.path.isdir(k["out"])) or 1 / 0
    )
    with pytest.raises(ZeroDivisionError):
        main(["train", "--trainer", "sb3", "--steps", "10", "--out", str(tmp_path / "new" / "run")])
    assert made == [False] and not (tmp_path / "new").exists()  # checked, then removed: train() makes it


def test_train_refuses_a_spec_and_env_kwargs_that_set_the_courses_too(tmp_path):
    from trackgen_env.generators import TrackGenConfig
    from trackgen_env.pipeline import presets

    with pytest.raises(ValueError, match=r"set the env arguments \['track'\]: do not pass them in env_kwargs too"):
        train_module.train("TrackGen-Track-v0", 10, spec=presets.track(), env_kwargs={"track": TrackGenConfig()},
                           out=tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_a_spec_with_plugin_stages_but_no_plugin_gets_one_line_naming_the_stage(tmp_path, capsys):
    import sys

    sys.path.insert(0, str(EXAMPLES))
    try:
        import plugin_stage

        (tmp_path / "spec.json").write_text(json.dumps(plugin_stage.make_spec(2, "cpu").to_dict()))
    finally:
        sys.path.remove(str(EXAMPLES))
    assert (
        main(
            [
                "train",
                "--trainer",
                "sb3",
                "--spec",
                str(tmp_path / "spec.json"),
                "--steps",
                "10",
                "--out",
                str(tmp_path / "out"),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and "KeyError" not in err
    assert "['acme.chicane']" in err and "--plugin module:REGISTRY" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content", ["# a README\n\nnot JSON\n", b"\x89PNG\r\n\x1a\n\xff\xfe", '{"family": "track"}',
                                     '[1, 2]'])
def test_a_spec_file_that_is_no_spec_is_named_in_one_line(content, tmp_path, capsys):
    path = tmp_path / "README.md"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    assert (
        main(
            [
                "train",
                "--trainer",
                "sb3",
                "--spec",
                str(path),
                "--steps",
                "10",
                "--out",
                str(tmp_path / "out"),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(f"error: --spec {path}: expected a JSON spec (PipelineSpec.to_dict()")
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def preset_run(tmp_path_factory):
    """``train --preset circuit``: a 64-step run of 2 envs on the recipe that transfers."""
    out = tmp_path_factory.mktemp("preset_run")
    before = torch.get_num_threads()
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(
            [
                "train",
                "--trainer",
                "sb3",
                "--preset",
                "circuit",
                "--steps",
                "64",
                "--num-envs",
                "2",
                "--seed",
                "3",
                "--device",
                "cpu",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
    torch.set_num_threads(before)
    assert rc == 0
    return out


def test_train_preset_circuit_trains_on_the_recipes_courses_and_episodes(preset_run):
    from trackgen_env.pipeline import PipelineSpec

    record = json.loads((preset_run / "train.json").read_text())
    env_id, spec, env_kwargs = train_module.train_preset("circuit", 2, "cpu")
    assert record["preset"] == "circuit" and record["env_id"] == env_id == "TrackGen-Track-v0"
    assert record["num_envs"] == 2 and record["env_kwargs"] == {"max_episode_steps": 2500,
                                                                "friction_range": [0.85, 1.15]}
    assert env_kwargs == {"max_episode_steps": 2500, "friction_range": (0.85, 1.15)}
    saved = PipelineSpec.from_dict(json.loads((preset_run / "spec.json").read_text()))
    assert saved == spec and record["spec"] == spec.to_dict()
    # the recipe's learning rate falls linearly to 0: recorded as set, and what the model got
    assert record["ppo"]["learning_rate"] == "lin_3e-4"
    model = PPO.load(preset_run / "model.zip", device="cpu")
    assert model.lr_schedule(1.0) == pytest.approx(3e-4) and model.lr_schedule(0.5) == pytest.approx(1.5e-4)
    assert "circuit_layout" in saved.stages and saved.randomize == {"band.width": (0.9, 1.5)}


@pytest.mark.parametrize("name", sorted(n for n, r in train_module.TRAIN_PRESETS.items()
                                  if r["env_id"] == "TrackGen-Track-v0"))
def test_every_corner_of_a_circuit_recipe_is_drivable_by_its_car_at_full_lock(name):
    """The family is drawn in widths, the car is not: on the recipe's narrowest band the
    tightest corner the family draws (``min_corner_radius`` widths) must leave its outer
    edge outside the circle that the car's outer front body corner sweeps at full lock (no
    reverse gear: a car that cannot make a corner stands in it)."""
    from trackgen_env.envs.car import car_params

    env_id, spec, env_kwargs = train_module.train_preset(name, 1, "cpu")
    p = car_params(env_kwargs.get("car", "rc10"))
    # kinematic single-track model: the turn centre on the rear axle line, L / tan(max_steer)
    # from the rear axle; the body box centred at the centre of mass, l_r ahead of the rear axle
    # from the recipe's least lock (a drawn steering scale below 1 turns wider)
    lock = p.max_steer * env_kwargs.get("steer_range", (1.0, 1.0))[0]
    rear = p.wheelbase / math.tan(lock)
    swept = math.hypot(rear + 0.5 * p.width, p.cog_to_rear * p.wheelbase + 0.5 * p.length)
    w_lo = spec.randomize["band.width"][0]
    outer = (spec.params["circuit_layout.min_corner_radius"] + 0.5) * w_lo
    assert outer >= swept, f"{name}: a corner's outer edge at {outer:.3f} m, the car sweeps {swept:.3f} m"


def test_eval_of_a_preset_run_drives_the_recipes_courses(preset_run, monkeypatch):
    seen = _record_env_kwargs(monkeypatch)
    evaluate(preset_run / "model.zip", episodes=1, device="cpu", random_policy=False)
    assert "circuit_layout" in seen[0]["track"].stages and seen[0]["max_episode_steps"] == 2500
    assert seen[0]["friction_range"] == [0.85, 1.15]


def test_the_random_start_preset_is_the_circuit_recipe_with_training_starts_that_eval_drops(tmp_path, monkeypatch):
    _, spec, circuit = train_module.train_preset("circuit", 2, "cpu")
    env_id, spec_rs, env_kwargs = train_module.train_preset("circuit_random_start", 2, "cpu")
    assert env_id == "TrackGen-Track-v0" and spec_rs == spec
    assert env_kwargs == {**circuit, "random_start": True, "start_yaw": 0.5, "start_speed": (0.0, 2.0),
                          "stall_steps": 100}
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(
                [
                    "train",
                    "--trainer",
                    "sb3",
                    "--preset",
                    "circuit_random_start",
                    "--steps",
                    "64",
                    "--num-envs",
                    "2",
                    "--device",
                    "cpu",
                    "--out",
                    str(tmp_path),
                    "--no-progress",
                ]
            )
            == 0
        )
    seen = _record_env_kwargs(monkeypatch)
    evaluate(tmp_path / "model.zip", episodes=1, device="cpu", random_policy=False)
    # evaluation drives from the start line, to the time limit alone
    assert not set(train_module.TRAINING_ONLY_TRACK_KWARGS) & set(seen[0])
    assert seen[0]["friction_range"] == [0.85, 1.15] and seen[0]["max_episode_steps"] == 2500


def test_the_car_dr_preset_is_the_circuit_recipe_with_motor_and_steering_draws_that_eval_drops(tmp_path, monkeypatch):
    _, spec, circuit = train_module.train_preset("circuit", 2, "cpu")
    env_id, spec_dr, env_kwargs = train_module.train_preset("circuit_car_dr", 2, "cpu")
    assert env_id == "TrackGen-Track-v0" and spec_dr == spec
    assert env_kwargs == {**circuit, "accel_range": (0.8, 1.2), "steer_range": (0.95, 1.05)}
    seen = _record_env_kwargs(monkeypatch)
    with contextlib.redirect_stdout(io.StringIO()):
        assert (
            main(
                [
                    "train",
                    "--trainer",
                    "sb3",
                    "--preset",
                    "circuit_car_dr",
                    "--steps",
                    "64",
                    "--num-envs",
                    "2",
                    "--device",
                    "cpu",
                    "--out",
                    str(tmp_path),
                    "--no-progress",
                ]
            )
            == 0
        )
    assert seen[0]["accel_range"] == (0.8, 1.2) and seen[0]["steer_range"] == (0.95, 1.05)  # training draws them
    evaluate(tmp_path / "model.zip", episodes=1, device="cpu", random_policy=False)
    # evaluation drives the car's own motor and steering
    assert "accel_range" not in seen[1] and "steer_range" not in seen[1]
    assert seen[1]["friction_range"] == [0.85, 1.15] and seen[1]["max_episode_steps"] == 2500


def test_train_preset_errors(tmp_path, capsys):
    from trackgen_env.pipeline import presets

    (tmp_path / "spec.json").write_text(json.dumps(presets.track().to_dict()))
    assert (
        main(
            ["train", "--trainer", "sb3", "--preset", "circuit", "--spec", str(tmp_path / "spec.json"), "--steps", "10"]
        )
        == 2
    )
    assert "pass --preset or --spec, not both" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--trainer", "sb3", "--preset", "no_such_recipe", "--steps", "10"])
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(ValueError,
                       match="preset must be one of \\['circuit', 'circuit_car_dr', 'circuit_random_start', "
                             "'race'\\], got 'nope'"):
        train_module.train(preset="nope", steps=10, out=tmp_path / "a", progress=False)
    with pytest.raises(ValueError, match="the preset 'circuit' trains TrackGen-Track-v0, got env TrackGen-Gates-v0"):
        train_module.train("TrackGen-Gates-v0", 10, preset="circuit", out=tmp_path / "b", progress=False)
    with pytest.raises(ValueError, match="pass preset or spec"):
        train_module.train("TrackGen-Track-v0", 10, preset="circuit", spec=presets.track(), out=tmp_path / "c",
                           progress=False)
    assert not any((tmp_path / d).exists() for d in "abc")  # refused before anything was written


def test_learning_rate_is_a_number_or_a_linear_schedule_and_refuses_the_rest():
    from trackgen_env.integrations.train import LinearSchedule, learning_rate

    assert learning_rate(3e-4) == 3e-4
    schedule = learning_rate("lin_3e-4")
    assert isinstance(schedule, LinearSchedule) and repr(schedule) == "lin_0.0003"
    assert schedule(1.0) == pytest.approx(3e-4) and schedule(0.25) == pytest.approx(7.5e-5) and schedule(0.0) == 0.0
    own = lambda progress: 1e-4  # noqa: E731  an SB3 schedule of the caller's
    assert learning_rate(own) is own
    for bad in ("exp_3e-4", "lin_", "lin_-1", 0.0, -1e-3, float("nan"), True, None):
        with pytest.raises(ValueError, match="learning_rate"):
            learning_rate(bad)


def test_a_bad_learning_rate_is_refused_before_the_run_folder_is_made(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="learning_rate must be"):
        train_module.train("TrackGen-Track-v0", steps=64, num_envs=2, out=out, ppo_kwargs={"learning_rate": "cosine"})
    assert not out.exists()


@pytest.mark.parametrize("setting, value", [("max_points", 251.0), ("max_points", "251"), ("point_spacing", "0.1")])
def test_a_spec_file_with_a_mistyped_setting_is_named_in_one_line(setting, value, tmp_path, capsys):
    from trackgen_env.pipeline import presets

    data = presets.track(num_envs=2, device="cpu").to_dict()
    data["settings"][setting] = value
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    assert (
        main(
            [
                "train",
                "--trainer",
                "sb3",
                "--spec",
                str(path),
                "--steps",
                "10",
                "--out",
                str(tmp_path / "out"),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith(f"error: --spec {path}") and setting in err and "Traceback" not in err


def test_a_typo_of_a_randomized_parameter_is_pointed_at():
    from trackgen_env.pipeline import PipelineSpec, presets

    data = presets.track(num_envs=2, device="cpu").with_randomize({"band.width": (0.6, 1.0)}).to_dict()
    data["params"]["band.widht"] = data["params"].pop("band.width")
    with pytest.raises(ValueError, match="'band.widht' among them looks like a typo of it"):
        PipelineSpec.from_dict(data)


def test_eval_takes_the_runs_folder_and_no_progress_and_writes_no_carriage_returns(trained, capsys, tmp_path):
    out = trained[0]
    assert main(["eval", str(out), "--episodes", "2", "--device", "cpu", "--no-progress"]) == 0
    assert "2 episodes per policy" in capsys.readouterr().out
    # the progress bar is on by default, but stderr here is no terminal: no carriage-return redraws
    assert main(["eval", str(out), "--episodes", "2", "--device", "cpu"]) == 0
    assert "\r" not in capsys.readouterr().err
    assert main(["eval", str(tmp_path), "--device", "cpu"]) == 2
    assert f"no policy.pt or model.zip in the folder {str(tmp_path)!r}" in capsys.readouterr().err


def test_count_flags_take_scientific_notation_and_refuse_fractions(capsys):
    from trackgen_env.__main__ import build_parser

    parser = build_parser()
    assert parser.parse_args(["train", "--steps", "1e5"]).steps == 100_000
    assert parser.parse_args(["train", "--steps", "2.5e3", "--num-envs", "1e1"]).num_envs == 10
    assert parser.parse_args(["eval", "m.zip", "--episodes", "1e2", "--no-progress"]).no_progress is True
    assert parser.parse_args(["demo", "--steps", "100_000"]).steps == 100_000
    for bad in ("1.5", "1e-3", "inf", "ten"):
        with pytest.raises(SystemExit):
            parser.parse_args(["train", "--steps", bad])
        assert "argument --steps" in capsys.readouterr().err
