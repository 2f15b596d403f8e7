"""``train --trainer rsl_rl`` (the default) and ``eval`` of its runs: it learns in a test-sized budget, the
same seed gives the same policy, every eval mode runs its policy, and bad input is refused before training."""

import contextlib
import io
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("rsl_rl")
pytest.importorskip("stable_baselines3")  # eval drives the env through the SB3 adapter

from trackgen_env.__main__ import main  # noqa: E402
from trackgen_env.integrations.circuits import evaluate_circuits  # noqa: E402
from trackgen_env.integrations.evaluation import evaluate  # noqa: E402
from trackgen_env.integrations.train_rsl_rl import resolve_trainer, train_rsl_rl  # noqa: E402


def _quiet(argv):
    before = torch.get_num_threads()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        rc = main(argv)
    torch.set_num_threads(before)
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """The CLI's default trainer on the track env: 256 envs, ~160k steps (a few seconds on one core)."""
    out = tmp_path_factory.mktemp("rsl_rl") / "run"
    rc, text = _quiet(["train", "--steps", "160000", "--num-envs", "256", "--seed", "2", "--device", "cpu",
                       "--out", str(out), "--no-progress"])
    assert rc == 0, text
    return out, text


def test_the_default_trainer_is_rsl_rl_and_records_the_run(learned):
    out, text = learned
    for name in ("policy.pt", "policy.onnx", "model.pt", "monitor.csv", "train.json", "learning_curve.png"):
        assert (out / name).is_file(), name
    record = json.loads((out / "train.json").read_text())
    assert record["trainer"] == "rsl_rl" and record["num_envs"] == 256 and record["world_size"] == 1
    assert record["steps"] == 20 * 256 * 32 and record["steps_requested"] == 160000  # whole iterations
    assert record["env_steps_per_s"] > 0 and record["rsl_rl"]["algorithm"]["schedule"] == "adaptive"
    assert "rsl_rl:" in text and "env-steps/s" in text
    assert any((out / "tb").rglob("events.out.tfevents.*"))


def test_the_onnx_policy_is_one_file_that_acts_as_the_torchscript_one(learned, tmp_path):
    """policy.onnx holds its weights (no policy.onnx.data beside it): a copy of it alone runs, and acts as policy.pt."""
    onnx = pytest.importorskip("onnx")
    from onnx.reference import ReferenceEvaluator

    out, _ = learned
    assert not (out / "policy.onnx.data").exists()
    copy = tmp_path / "alone.onnx"
    copy.write_bytes((out / "policy.onnx").read_bytes())
    model = onnx.load(str(copy))
    obs = np.random.default_rng(0).normal(size=(3, model.graph.input[0].type.tensor_type.shape.dim[1].dim_value))
    actions = ReferenceEvaluator(model).run(None, {model.graph.input[0].name: obs.astype(np.float32)})[0]
    policy = torch.jit.load(str(out / "policy.pt"))
    expected = policy(torch.as_tensor(obs, dtype=torch.float32)).detach().numpy()
    np.testing.assert_allclose(actions, expected, atol=1e-5)


def test_a_short_run_laps_held_out_tracks_a_random_policy_does_not(learned):
    out, _ = learned
    trained, random = evaluate(out / "policy.pt", episodes=32, device="cpu")
    assert random.lap_completion_rate == 0.0
    assert trained.lap_completion_rate >= 0.2, trained  # 0.41 measured (seed 2)


def test_eval_runs_the_checkpoint_and_the_exported_policy_alike(learned):
    out, _ = learned
    from_export = evaluate(out / "policy.pt", episodes=4, device="cpu", random_policy=False)[0]
    from_checkpoint = evaluate(out / "model.pt", episodes=4, device="cpu", random_policy=False)[0]
    assert from_export == from_checkpoint


def test_every_eval_mode_runs_an_rsl_rl_policy(learned, tmp_path):
    out, _ = learned
    folder = tmp_path / "circuits"
    folder.mkdir()
    t = np.linspace(0.0, 2.0 * np.pi, 80, endpoint=False)
    rows = np.stack([60.0 * np.cos(t), 40.0 * np.sin(t), np.full_like(t, 6.0), np.full_like(t, 6.0)], axis=1)
    np.savetxt(folder / "Oval.csv", rows, delimiter=",", header="x_m,y_m,w_tr_right_m,w_tr_left_m")
    results = evaluate_circuits(folder, model=out / "policy.pt", device="cpu")
    assert len(results) == 1 and results[0].circuit == "Oval"
    rc, text = _quiet(["eval", str(out / "policy.pt"), "--track-csv", str(folder / "Oval.csv"), "--device", "cpu"])
    assert rc == 0 and "trained PPO" in text
    rc, text = _quiet(["eval", str(out / "policy.pt"), "--episodes", "2", "--device", "cpu"])
    assert rc == 0 and "held-out courses" in text


def test_eval_flies_an_rsl_rl_gates_policy_on_a_gates_file(tmp_path):
    run = tmp_path / "run"
    rc, text = _quiet(["train", "--env", "TrackGen-Gates-v0", "--steps", "64", "--num-envs", "2", "--seed", "3",
                       "--device", "cpu", "--out", str(run), "--no-progress"])
    assert rc == 0, text
    layout = tmp_path / "layout.yaml"
    layout.write_text(json.dumps({"gates": [[2.0, 0.0, 1.0], [0.0, 2.0, 1.5], [-2.0, 0.0, 1.0], [0.0, -2.0, 1.5]]}))
    trained, random = evaluate(run / "policy.pt", episodes=2, device="cpu", gates_file=layout)
    assert trained.episodes == 2 and trained.mean_gates_passed is not None


def test_the_same_seed_gives_the_same_policy(tmp_path):
    def weights(out, seed):
        with contextlib.redirect_stdout(io.StringIO()):
            train_rsl_rl(
                "TrackGen-Track-v0", 3 * 16 * 32, num_envs=16, seed=seed, device="cpu", out=out, progress=False
            )
        return torch.load(out / "model.pt", weights_only=False)["actor_state_dict"]

    a, b, c = weights(tmp_path / "a", 7), weights(tmp_path / "b", 7), weights(tmp_path / "c", 8)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


@pytest.mark.parametrize("argv, message", [
    (["--preset", "circuit_car_dr", "--trainer", "rsl_rl"],
     "the preset 'circuit_car_dr' has a recipe for sb3 only, got --trainer rsl_rl"),
    (["--trainer", "rsl_rl", "--preset", "circuit_random_start"], "has a recipe for sb3 only"),
])
def test_a_preset_without_a_recipe_for_the_trainer_is_refused(argv, message, tmp_path, capsys):
    assert main(["train", *argv, "--out", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_an_unknown_trainer_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--trainer", "ppo2"])
    assert exc.value.code == 2
    assert "invalid choice: 'ppo2'" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"trainer must be one of \['rsl_rl', 'sb3'\], got 'ppo2'"):
        resolve_trainer("ppo2", None)


def test_presets_carry_their_trainer():
    assert resolve_trainer(None, "circuit") == "rsl_rl" and resolve_trainer("sb3", "circuit") == "sb3"
    assert resolve_trainer(None, "circuit_car_dr") == "sb3" and resolve_trainer(None, None) == "rsl_rl"


@pytest.mark.parametrize("kind", ["sb3", "rsl_rl"])
def test_a_run_folder_of_the_other_trainer_is_refused_before_training(kind, tmp_path, capsys, monkeypatch):
    import trackgen_env.__main__ as cli

    monkeypatch.setattr(cli, "run_trainer", lambda *a, **k: pytest.fail("trained"))
    (tmp_path / "train.json").write_text(json.dumps({"trainer": kind, "env_id": "TrackGen-Track-v0"}))
    other = "rsl_rl" if kind == "sb3" else "sb3"
    assert main(["train", "--trainer", other, "--steps", "10", "--out", str(tmp_path)]) == 2
    assert f"holds a run of the {kind} trainer" in capsys.readouterr().err


def test_eval_refuses_a_policy_file_of_the_other_trainer(tmp_path, capsys):
    (tmp_path / "train.json").write_text(json.dumps({"trainer": "rsl_rl", "env_id": "TrackGen-Track-v0"}))
    (tmp_path / "model.zip").write_text("")
    assert main(["eval", str(tmp_path / "model.zip"), "--device", "cpu"]) == 2
    assert "is a sb3 policy, but" in capsys.readouterr().err
    folder = tmp_path / "circuits"
    folder.mkdir()
    t = np.linspace(0.0, 2.0 * np.pi, 80, endpoint=False)
    rows = np.stack([60.0 * np.cos(t), 40.0 * np.sin(t), np.full_like(t, 6.0), np.full_like(t, 6.0)], axis=1)
    np.savetxt(folder / "Oval.csv", rows, delimiter=",")
    assert main(["eval", str(tmp_path / "model.zip"), "--circuits", str(folder), "--device", "cpu"]) == 2
    assert "is a sb3 policy, but" in capsys.readouterr().err


def test_train_without_rsl_rl_gives_the_install_hint(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "rsl_rl", None)
    monkeypatch.setitem(sys.modules, "rsl_rl.env", None)
    monkeypatch.setitem(sys.modules, "rsl_rl.runners", None)
    assert main(["train", "--steps", "64", "--num-envs", "2", "--device", "cpu", "--out", str(tmp_path / "r")]) == 2
    assert 'pip install -e ".[rsl_rl]"' in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
