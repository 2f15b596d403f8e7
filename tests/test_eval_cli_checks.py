"""``eval`` refuses what it cannot run before it builds or loads anything, with the CLI's flag names;
and the smaller CLI checks of ``demo`` and the program name.

The runs here are hand-written run folders (a ``train.json``, a ``model.zip`` that is never loaded
because the check comes first) or a tiny untrained PPO, so each test takes seconds.
"""

import json
import re
import sys
import warnings

import numpy as np
import pytest

import trackgen_env.__main__ as cli
from trackgen_env.__main__ import build_parser, main
from trackgen_env.envs.car import CAR_PRESETS
from trackgen_env.generators import TrackGenConfig
from trackgen_env.generators.centerline_io import centerline_length
from trackgen_env.generators.track import TrackGenerator, centerline_scale_limit
from trackgen_env.integrations.runs import observation_stats, read_train_record
from trackgen_env.integrations.evaluation import check_circuit_scale

from stadium import stadium

CIRCUIT_CSV_HEADER = "x_m,y_m,w_tr_right_m,w_tr_left_m"


def _circuit(folder, name="Stadium"):
    """A 12 m wide stadium circuit (about 500 m long) in its own folder, as ``--circuits`` reads one."""
    folder.mkdir(exist_ok=True)
    xy = stadium(150.0, 30.0, 5.0)
    path = folder / f"{name}.csv"
    np.savetxt(path, np.column_stack([xy, np.full((len(xy), 2), 6.0)]), delimiter=",", header=CIRCUIT_CSV_HEADER)
    return path


def _run_folder(tmp_path, record: dict | None, name="run"):
    """A run folder with a ``model.zip`` that is no model (a check that loads it would fail differently)."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "model.zip").write_bytes(b"not a model")
    if record is not None:
        (folder / "train.json").write_text(json.dumps(record))
    return folder / "model.zip"


def _err(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


# --- item 1: the env of the model is checked first, the same way for --track-csv and --circuits


@pytest.mark.parametrize("where", ["--track-csv", "--circuits"])
def test_a_gates_model_on_real_circuits_is_refused_by_its_env_id(where, tmp_path, capsys):
    model = _run_folder(tmp_path, {"env_id": "TrackGen-Gates-v0", "vecnormalize": {"norm_obs": True}})
    csv = _circuit(tmp_path / "circuits")
    target = str(csv) if where == "--track-csv" else str(csv.parent)
    err = _err(capsys, ["eval", str(model), where, target, "--device", "cpu"])
    assert (f"error: {where} drives a real circuit with the car: env must be TrackGen-Track-v0, "
            "got TrackGen-Gates-v0") in err


# --- item 2: the observation statistics a run records that it needs


def test_eval_refuses_a_run_that_normalised_observations_without_its_statistics(tmp_path, capsys):
    model = _run_folder(tmp_path, {"env_id": "TrackGen-Track-v0", "seed": 0, "num_envs": 1,
                                   "vecnormalize": {"file": "vecnormalize.pkl", "norm_obs": True}})
    err = _err(capsys, ["eval", str(model), "--episodes", "1", "--device", "cpu"])
    assert "vecnormalize.pkl" in err and "normalised observations" in err
    csv = _circuit(tmp_path / "circuits")
    err = _err(capsys, ["eval", str(model), "--circuits", str(csv.parent), "--device", "cpu"])
    assert "vecnormalize.pkl" in err and "normalised observations" in err


def test_observation_stats_follow_the_record(tmp_path):
    model = _run_folder(tmp_path, None)
    with pytest.warns(RuntimeWarning, match="raw observations"):  # no record: nothing says, so warn
        assert observation_stats(model, {}) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a record that says no normalisation: no warning
        assert observation_stats(model, {"vecnormalize": {"norm_obs": False}}) is None
    (model.parent / "vecnormalize.pkl").write_bytes(b"")
    assert observation_stats(model, {"vecnormalize": {"norm_obs": True}}) == model.parent / "vecnormalize.pkl"


# --- items 3, 4, 6: --track-scale, one check with the flag's name; circuits that the scale makes unusable


@pytest.mark.filterwarnings("ignore:.*float32 \\(the courses. type\\) steps by")  # a 1000 km circuit, centred far out
def test_the_generators_capacity_message_gives_the_longest_circuit_that_fits():
    xy = stadium(150.0, 30.0, 5.0)
    points = np.column_stack([xy, np.full((len(xy), 2), 6.0)]) * 1000.0  # 500 km long, 12 km wide
    most = centerline_scale_limit(points, 0.11)
    with pytest.raises(ValueError, match="over the 65536 a track holds") as info:
        TrackGenerator.from_centerline(points, point_spacing=0.11)
    text = str(info.value)
    longest = float(text.split("expected a circuit up to ")[1].split(" m long")[0].replace(",", ""))
    seg = np.linalg.norm(np.diff(np.vstack([points[:, :2], points[:1, :2]]), axis=0), axis=1)
    assert longest > 0.0 and longest == pytest.approx(most * seg.sum(), abs=1.0)
    # the circuit scaled by the bound fits, a little more does not
    TrackGenerator.from_centerline(points * most * 0.999, point_spacing=0.11)
    with pytest.raises(ValueError, match="over the 65536"):
        TrackGenerator.from_centerline(points * most * 1.01, point_spacing=0.11)


@pytest.mark.parametrize("scale, message", [
    ("1000", "--track-scale 1000 makes Stadium"),
    ("1e-6", "--track-scale 1e-06 makes Stadium"),
])
@pytest.mark.parametrize("where", ["--track-csv", "--circuits"])
def test_a_scale_that_makes_the_circuit_unusable_names_the_flag_and_the_length(where, scale, message, tmp_path, capsys):
    model = _run_folder(tmp_path, {"env_id": "TrackGen-Track-v0", "vecnormalize": {"norm_obs": False}})
    csv = _circuit(tmp_path / "circuits")
    err = _err(capsys, ["eval", str(model), where, str(csv) if where == "--track-csv" else str(csv.parent),
                        "--track-scale", scale, "--device", "cpu"])
    assert message in err
    length = float(re.search(r"makes Stadium ([0-9.,e+-]+) m long", err).group(1).replace(",", ""))
    assert length == pytest.approx(centerline_length(np.loadtxt(csv, delimiter=",")) * float(scale), rel=1e-2)
    assert ("pass a smaller --track-scale (at most" if scale == "1000"
            else "pass a larger --track-scale (at least") in err
    assert "point_spacing" not in err and "max_loop_length" not in err


def test_the_largest_scale_shown_fits():
    xy = stadium(150.0, 30.0, 5.0)
    points = np.column_stack([xy, np.full((len(xy), 2), 6.0)])
    car = CAR_PRESETS["rc10"]
    with pytest.raises(ValueError, match=r"at most ([0-9.]+)\)") as info:
        check_circuit_scale({"Stadium": points}, 1e4, car, True)
    shown = float(info.value.args[0].rsplit("at most ", 1)[1].rstrip(")"))
    check_circuit_scale({"Stadium": points}, shown, car, True)  # fits
    assert shown <= centerline_scale_limit(points, car.wheelbase / 3.0)


@pytest.mark.parametrize("argv, message", [
    (["--track-scale", "0.1"], "--track-scale scales the --track-csv circuit or the --circuits circuits"),
    (["--track-scale", "-1", "--track-csv", "x.csv"], "--track-scale must be a finite number > 0, got -1.0"),
    (["--track-scale", "-1", "--circuits", "."], "--track-scale must be a finite number > 0, got -1.0"),
    (["--track-scale", "nan", "--circuits", "."], "--track-scale must be a finite number > 0, got nan"),
])
def test_track_scale_is_checked_once_with_the_flags_name(argv, message, tmp_path, capsys):
    model = _run_folder(tmp_path, {"env_id": "TrackGen-Track-v0"})
    err = _err(capsys, ["eval", str(model), *argv])
    assert message in err and "track_scale" not in err and "scale must" not in err.replace("track-scale must", "")


# --- item 7: a plugin spec whose module is missing


def test_a_plugin_run_without_its_plugin_says_what_must_be_importable(tmp_path, capsys):
    spec = TrackGenConfig(num_envs=1, device="cpu").to_spec().to_dict()
    model = _run_folder(tmp_path, {"env_id": "TrackGen-Track-v0", "seed": 0, "num_envs": 1, "spec": spec,
                                   "plugin": "no_such_plugin_stage:REGISTRY"})
    err = _err(capsys, ["eval", str(model), "--episodes", "1", "--device", "cpu"])
    assert "--plugin no_such_plugin_stage:REGISTRY" in err and "importable" in err and "PYTHONPATH" in err
    assert "No module named 'no_such_plugin_stage'" in err


# --- item 8: a corrupted train.json is named


@pytest.mark.parametrize("circuits", [False, True])
def test_a_corrupted_train_json_is_named(circuits, tmp_path, capsys):
    model = _run_folder(tmp_path, None)
    (model.parent / "train.json").write_text("{\n'env_id': 1}")
    extra = ["--circuits", str(_circuit(tmp_path / "circuits").parent)] if circuits else ["--episodes", "1"]
    err = _err(capsys, ["eval", str(model), *extra, "--device", "cpu"])
    assert str(model.parent / "train.json") in err and "not JSON" in err


def test_read_train_record_refuses_json_that_is_no_record(tmp_path):
    model = _run_folder(tmp_path, None)
    (model.parent / "train.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="train.json: expected the JSON object"):
        read_train_record(model)


# --- item 9: --seed does not apply to --circuits (no run draws anything)


def test_seed_is_refused_with_circuits_as_episodes_is(tmp_path, capsys):
    base = ["eval", "--circuits", str(_circuit(tmp_path / "circuits").parent), "--controller", "pure_pursuit"]
    assert "--seed does not apply to --circuits" in _err(capsys, [*base, "--seed", "5"])
    assert "--episodes does not apply to --circuits" in _err(capsys, [*base, "--episodes", "5"])


# --- item 10: an output file that cannot be written is refused before the evaluation


@pytest.mark.parametrize("flag, circuits", [("--json", False), ("--json", True), ("--md", True)])
def test_an_unwritable_output_file_is_refused_before_evaluating(flag, circuits, tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(cli, "evaluate", lambda *a, **k: ran.append(1))
    monkeypatch.setattr(cli, "evaluate_circuits", lambda *a, **k: ran.append(1))
    model = _run_folder(tmp_path, {"env_id": "TrackGen-Track-v0"})
    target = tmp_path / "no" / "such" / "out.json"
    extra = ["--circuits", str(tmp_path)] if circuits else []
    err = _err(capsys, ["eval", str(model), *extra, flag, str(target)])
    assert f"{flag} {target}: cannot write" in err and not ran
    assert not target.exists()


def test_a_writable_output_file_is_left_as_it_was(tmp_path):
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    old.write_text("kept")
    cli._check_writable(str(new), "--json")
    cli._check_writable(str(old), "--json")
    assert not new.exists() and old.read_text() == "kept"


# --- items 5, 11, 15: demo help and report, the program name


def test_demo_help_gives_the_default_steps_that_the_demo_drives():
    from trackgen_env.demos import CIRCUIT_LAPS, CIRCUIT_SPEED

    demo = build_parser()._subparsers._group_actions[0].choices["demo"]
    steps = next(a for a in demo._actions if a.dest == "steps")
    assert "one lap with --track-csv" not in steps.help
    assert f"{CIRCUIT_LAPS:g} laps at a {CIRCUIT_SPEED:g} m/s average" in steps.help


def test_demo_says_when_no_episode_finished(tmp_path, capsys):
    assert main(["demo", "--steps", "1", "--num-envs", "1", "--device", "cpu", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "no episode finished" in out and "of 0 finished episodes" not in out


@pytest.mark.parametrize("argv0, prog", [("/usr/local/bin/trackgen-env", "trackgen-env"),
                                         ("/src/trackgen_env/__main__.py", "python -m trackgen_env")])
def test_usage_names_the_program_as_it_was_invoked(argv0, prog, monkeypatch):
    monkeypatch.setattr(sys, "argv", [argv0])
    assert build_parser().format_usage().startswith(f"usage: {prog} ")


def test_sb3_install_hint_gives_the_source_checkouts_form():
    from trackgen_env.integrations.sb3 import SB3_INSTALL_HINT

    assert 'pip install -e ".[sb3]"' in SB3_INSTALL_HINT


@pytest.mark.parametrize("command", ["train", "eval", "circuits"])
def test_train_and_eval_without_sb3_give_the_install_hint(command, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)
    monkeypatch.setitem(sys.modules, "stable_baselines3.common.vec_env", None)
    model = _run_folder(tmp_path, {"env_id": "TrackGen-Track-v0", "seed": 0, "num_envs": 1,
                                   "vecnormalize": {"norm_obs": False}})
    argv = {"train": ["train", "--trainer", "sb3", "--steps", "1", "--device", "cpu", "--out", str(tmp_path / "out")],
            "eval": ["eval", str(model), "--episodes", "1", "--device", "cpu"],
            "circuits": ["eval", str(model), "--circuits", str(_circuit(tmp_path / "circuits").parent), "--device",
                         "cpu"]}
    err = _err(capsys, argv[command])
    assert 'pip install -e ".[sb3]"' in err


def test_one_scale_for_a_folder_is_bounded_by_every_circuit():
    """With --circuits one --track-scale applies to all: the bounds shown hold for each circuit, and
    name the circuit that sets them (following the first message must not fail on another)."""
    car = CAR_PRESETS["rc10"]
    short, wide = stadium(150.0, 30.0, 5.0), stadium(600.0, 120.0, 5.0)
    circuits = {"Short": np.column_stack([short, np.full((len(short), 2), 3.0)]),  # 6 m wide, ~500 m
                "Long": np.column_stack([wide, np.full((len(wide), 2), 6.0)])}  # 12 m wide, ~2 km
    with pytest.raises(ValueError, match=r"makes Long .* \(at most ([0-9.]+) for every circuit\)") as too_long:
        check_circuit_scale(circuits, 1e3, car, True)
    most = float(too_long.value.args[0].rsplit("at most ", 1)[1].split(" ")[0])
    with pytest.raises(ValueError, match=r"makes Short .* \(at least ([0-9.e-]+) for every circuit\)") as too_narrow:
        check_circuit_scale(circuits, 1e-6, car, True)
    least = float(too_narrow.value.args[0].rsplit("at least ", 1)[1].split(" ")[0])
    for name, points in circuits.items():  # each bound holds for each circuit alone
        check_circuit_scale({name: points}, most, car, True)
        check_circuit_scale({name: points}, least, car, True)


@pytest.mark.parametrize("record, message", [
    ({"env_id": "TrackGen-Track-v0", "seed": 0}, "a record with a 'seed' also needs the training run's 'num_envs'"),
    ({"env_id": "TrackGen-Track-v0", "seed": None, "num_envs": 2}, "field 'seed' must be a JSON int, got None"),
    ({"env_id": "TrackGen-Track-v0", "env_kwargs": [1, 2]}, "field 'env_kwargs' must be a JSON dict, got \\[1, 2\\]"),
    ({"env_id": 3}, "field 'env_id' must be a JSON str, got 3"),
    ({"env_id": "TrackGen-Track-v0", "seed": 0, "num_envs": 0}, "field 'num_envs' must be >= 1"),
])
def test_a_damaged_record_is_named_in_one_line(record, message, tmp_path, capsys):
    model = _run_folder(tmp_path, record)
    with pytest.raises(ValueError, match=message):
        read_train_record(model)
    err = _err(capsys, ["eval", str(model), "--episodes", "1", "--device", "cpu"])
    assert "train.json: " in err and re.search(message, err)


@pytest.mark.parametrize("argv, message", [
    (["demo", "--steps", "99999999999999999999999"], "--steps must be <= 2\\*\\*53"),
    (["demo", "--seed", "99999999999999999999999"], "--seed must be an int in \\[0, 2\\*\\*64\\)"),
    (["demo", "--seed", "-1"], "--seed must be an int in \\[0, 2\\*\\*64\\)"),
])
def test_steps_and_seeds_outside_their_range_get_one_line(argv, message, capsys):
    assert re.search(message, _err(capsys, argv))
