"""``eval --circuits DIR``: a folder of circuits driven by a controller or a saved model, as Markdown and JSON."""

import json
import math

import numpy as np
import pytest

from trackgen_env.__main__ import main
from trackgen_env.envs.car import CAR_PRESETS
from trackgen_env.integrations.circuits import evaluate_circuits
from trackgen_env.integrations.laptime import reference_lap_time
from trackgen_env.generators import TrackGenConfig

from stadium import stadium


@pytest.fixture(scope="module")
def circuits(tmp_path_factory):
    """Two small circuits (12 m wide), one with a race line beside it."""
    folder = tmp_path_factory.mktemp("circuits")
    xy = stadium(150.0, 30.0, 5.0)
    np.savetxt(folder / "Stadium.csv", np.column_stack([xy, np.full((len(xy), 2), 6.0)]), delimiter=",",
               header="x_m,y_m,w_tr_right_m,w_tr_left_m")
    t = np.linspace(0.0, 2.0 * np.pi, 80, endpoint=False)
    oval = np.stack([60.0 * np.cos(t), 40.0 * np.sin(t)], axis=1)
    np.savetxt(folder / "Oval.csv", np.column_stack([oval, np.full((80, 2), 6.0)]), delimiter=",",
               header="x_m,y_m,w_tr_right_m,w_tr_left_m")
    (folder / "racelines").mkdir()
    np.savetxt(folder / "racelines" / "Oval.csv", 0.98 * oval, delimiter=",", header="x_m,y_m")
    return folder


def test_pure_pursuit_laps_the_folder_and_writes_markdown_and_json(circuits, tmp_path, capsys):
    md, js = tmp_path / "table.md", tmp_path / "table.json"
    assert main(["eval", "--circuits", str(circuits), "--controller", "pure_pursuit", "--device", "cpu",
                 "--md", str(md), "--json", str(js)]) == 0
    table = md.read_text()
    assert table.strip() in capsys.readouterr().out
    assert "| Oval |" in table and "| Stadium |" in table and "(centreline)" in table
    # each row says the scale it drove at (0.8 m / 12 m: 1:15)
    assert "| circuit | scale |" in table and "| Oval | 1:15.0 |" in table and "| Stadium | 1:15.0 |" in table
    data = json.loads(js.read_text())
    rows = {r["circuit"]: r for r in data["circuits"]}
    assert rows["Oval"]["reference_line"] == "raceline" and rows["Stadium"]["reference_line"] == "centerline"
    scale = TrackGenConfig().width / 12.0  # the training width / the circuits' width
    for r in rows.values():
        assert r["scale"] == pytest.approx(scale)
        assert r["lap_completed"] and r["off_track_count"] == 0
        assert r["ratio"] == pytest.approx(r["lap_time_s"] / r["reference_lap_time_s"])
        assert r["ratio"] > 1.0  # the reference is the limit
    expected = reference_lap_time(stadium(150.0, 30.0, 5.0) * scale, CAR_PRESETS["rc10"])
    assert rows["Stadium"]["reference_lap_time_s"] == pytest.approx(expected, rel=1e-6)
    assert data["summary"]["laps_completed"] == 2 and data["summary"]["clean_laps"] == 2


def test_the_full_size_car_drives_at_true_scale(circuits):
    results = evaluate_circuits(circuits, controller="pure_pursuit", car="full", car_model="dynamic", device="cpu")
    assert [r.scale for r in results] == [1.0, 1.0]
    assert all(r.lap_completed for r in results)


def test_an_untrained_model_gets_a_row_per_circuit(circuits, tmp_path):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    from trackgen_env.integrations.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("TrackGen-Track-v0", 1, device="cpu", seed=0)
    PPO("MlpPolicy", venv, n_steps=8, batch_size=8, seed=0, device="cpu").save(tmp_path / "model.zip")
    venv.close()
    with pytest.warns(RuntimeWarning, match="raw observations"):  # no train.json says whether it normalised
        results = evaluate_circuits(circuits, model=tmp_path / "model.zip", device="cpu", time_factor=1.5)
    assert [r.circuit for r in results] == ["Oval", "Stadium"]
    for r in results:
        assert r.lap_completed == (not math.isnan(r.lap_time_s))
        assert 0.0 <= r.lap_fraction <= 1.0 and r.off_track_count >= 0


@pytest.mark.parametrize("randomize, width", [(None, 1.2), ((1.0, 1.6), 1.3)])
def test_a_spec_run_is_scaled_to_its_specs_band_width(circuits, tmp_path, monkeypatch, randomize, width):
    """A model trained on a spec drives the circuits at the spec's width (the middle of a drawn range),
    with the car's own friction (not the run's randomised one)."""
    pytest.importorskip("stable_baselines3")
    import trackgen_env.integrations.circuits as circuits_module
    from stable_baselines3 import PPO

    from trackgen_env.integrations.sb3 import make_sb3_vec_env
    from trackgen_env.pipeline import presets

    venv = make_sb3_vec_env("TrackGen-Track-v0", 1, device="cpu", seed=0)
    PPO("MlpPolicy", venv, n_steps=8, batch_size=8, seed=0, device="cpu").save(tmp_path / "model.zip")
    venv.close()
    spec = presets.circuit(width=1.2, width_range=randomize, num_envs=1, device="cpu")
    (tmp_path / "train.json").write_text(json.dumps({"env_id": "TrackGen-Track-v0", "spec": spec.to_dict(),
                                                     "vecnormalize": {"norm_obs": False},
                                                     "env_kwargs": {"friction_range": [0.5, 0.6], "random_start": True,
                                                                    "start_yaw": 0.5, "start_speed": [0.0, 2.0],
                                                                    "stall_steps": 100, "accel_range": [0.8, 1.2],
                                                                    "steer_range": [0.95, 1.05]}}))
    built = []

    def recording_env(*args, **kwargs):
        built.append(kwargs)
        return env_cls(*args, **kwargs)

    env_cls = circuits_module.TrackVectorEnv
    monkeypatch.setattr(circuits_module, "TrackVectorEnv", recording_env)
    results = evaluate_circuits(circuits, model=tmp_path / "model.zip", device="cpu", time_factor=1.1)
    assert [r.scale for r in results] == pytest.approx([width / 12.0] * 2)
    assert len(built) == 2 and all("friction_range" not in kwargs for kwargs in built)
    # the circuits are driven from the start line, to the time limit alone (training-only starts and cuts)
    assert all("random_start" not in kwargs and "stall_steps" not in kwargs for kwargs in built)
    # and with the car's own motor and steering
    assert all("accel_range" not in kwargs and "steer_range" not in kwargs for kwargs in built)


@pytest.mark.parametrize("argv, message", [
    (["eval", "--circuits", "no/such/dir", "--controller", "pure_pursuit"], "no circuit folder"),
    (["eval", "--circuits", "."], "a model (MODEL) or a controller"),
    (["eval", "x.zip", "--circuits", ".", "--controller", "pure_pursuit"], "a model (MODEL) or a controller"),
    (["eval", "x.zip", "--controller", "pure_pursuit"], "--controller applies to --circuits only"),
    (["eval"], "eval needs MODEL"),
    (["eval", "--circuits", ".", "--controller", "pure_pursuit", "--track-csv", "a.csv"], "--track-csv does not apply"),
    (["eval", "--circuits", ".", "--controller", "pure_pursuit", "--env", "TrackGen-Gates-v0"],
     "env must be TrackGen-Track-v0"),
])
def test_bad_circuit_arguments_exit_2(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    ("1.0,2.0\n3.0;4.0\n5.0,6.0\n", "expected comma-separated columns x_m, y_m"),
    ("1.0,2.0\nnan,4.0\n5.0,6.0\n7.0,1.0\n", "non-finite value in row 1"),
])
def test_a_bad_raceline_file_is_named(content, message, tmp_path):
    """A race line with a NaN or a semicolon gave "xy holds non-finite values" or numpy's message, without the file."""
    from pathlib import Path

    from trackgen_env.integrations.circuits import _reference_line

    (tmp_path / "racelines").mkdir()
    (tmp_path / "racelines" / "Oval.csv").write_text(content)
    with pytest.raises(ValueError, match=rf"racelines/Oval.csv: {message}"):
        _reference_line(Path(tmp_path / "Oval.csv"), np.zeros((3, 4)), 1.0)
