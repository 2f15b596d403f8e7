"""trackgen_env.integrations.layouts: every layout of a folder flown, one row per layout, Markdown and JSON."""

import json

import pytest
from test_gate_layout_formats import SCG
from test_gate_stats import write_fixture_folder

from trackgen_env.envs.controllers import ControllerGains
from trackgen_env.integrations.layouts import evaluate_layouts, layouts_json, layouts_markdown, main


@pytest.fixture
def folder(tmp_path):
    write_fixture_folder(tmp_path)
    (tmp_path / "competition.yaml").write_text(SCG)  # 0.45 m gates and two poles
    return tmp_path


def test_one_row_per_layout(folder):
    rows = evaluate_layouts(folder)
    assert [r.layout for r in rows] == ["competition", "pair_race", "splits", "square"]
    by_name = {r.layout: r for r in rows}
    assert [by_name[n].num_gates for n in ("competition", "pair_race", "splits", "square")] == [4, 3, 4, 4]
    # the poles are not collision objects: the gates are flown alone, and the row says so
    assert by_name["competition"].obstacles_left_out == 2 and by_name["square"].obstacles_left_out == 0
    square = by_name["square"]
    assert square.lap_completed and square.collisions == 0 and square.gates_passed == 4
    assert square.lap_time == square.reference_lap_time and square.ratio == 1.0  # the controller is the reference
    for r in rows:
        assert r.lap_completed == (r.lap_time is not None)


def test_a_slower_controller_against_the_reference(folder):
    rows = evaluate_layouts(folder, gains=ControllerGains(speed=1.5))
    square = {r.layout: r for r in rows}["square"]
    assert square.lap_completed and square.ratio > 1.2  # slower than the default 2.5 m/s reference


def test_tables(folder):
    rows = evaluate_layouts(folder)
    md = layouts_markdown(rows).splitlines()
    assert md[0].startswith("| layout | lap completed | collisions | gates passed | lap time [s] | reference lap")
    assert len(md) == 2 + len(rows) and md[2].startswith("| competition | ")
    data = json.loads(layouts_json(rows))
    assert [d["layout"] for d in data] == [r.layout for r in rows]
    assert set(data[0]) == {"layout", "lap_completed", "collisions", "gates_passed", "num_gates", "lap_time",
                            "reference_lap_time", "ratio", "obstacles_left_out"}


def test_command_line(folder, tmp_path, capsys):
    out_json, out_md = tmp_path / "rows.json", tmp_path / "rows.md"
    rows = main([str(folder), "--controller", "--json", str(out_json), "--md", str(out_md)])
    assert json.loads(out_json.read_text()) == [r.row() for r in rows]
    assert out_md.read_text().strip() == layouts_markdown(rows)
    assert "| square | yes | 0 | 4 / 4 |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing")])


@pytest.mark.parametrize("trainer", ["rsl_rl", "sb3"])
def test_eval_cli_flies_a_trained_policy_on_every_layout(tmp_path, capsys, trainer):
    pytest.importorskip("stable_baselines3")
    pytest.importorskip({"rsl_rl": "rsl_rl", "sb3": "stable_baselines3"}[trainer])
    from trackgen_env.__main__ import main as cli

    run = tmp_path / "run"
    assert cli(["train", "--trainer", trainer, "--env", "TrackGen-Gates-v0", "--steps", "512", "--num-envs", "4",
                "--seed", "3", "--device", "cpu", "--out", str(run), "--no-progress"]) == 0
    layouts = tmp_path / "layouts"
    layouts.mkdir()
    write_fixture_folder(layouts)
    (layouts / "competition.yaml").write_text(SCG)
    out = tmp_path / "rows.json"
    capsys.readouterr()
    assert cli(["eval", str(run), "--layouts", str(layouts), "--json", str(out)]) == 0  # the run's folder
    rows = json.loads(out.read_text())
    assert [r["layout"] for r in rows] == ["competition", "pair_race", "splits", "square"]
    for r in rows:
        assert r["collisions"] is None  # not reported for a policy
        assert 0 <= r["gates_passed"] <= r["num_gates"]
        assert r["lap_completed"] == (r["lap_time"] is not None)
    square = rows[-1]
    assert square["reference_lap_time"] is not None  # the reference controller laps it
    assert {r["layout"]: r["obstacles_left_out"] for r in rows}["competition"] == 2
    assert "| square |" in capsys.readouterr().out


def test_eval_cli_refuses_flags_that_do_not_apply(folder, capsys):
    from trackgen_env.__main__ import main as cli

    assert cli(["eval", "--layouts", str(folder), "--controller", "pure_pursuit"]) == 2
    assert "--controller does not apply to --layouts" in capsys.readouterr().err


def test_eval_layouts_refuses_a_car_policy_naming_its_env(tmp_path, capsys):
    """--layouts with a TrackGen-Track-v0 run names the run's env (not a flag the user did not pass)."""
    from trackgen_env.__main__ import main as cli

    run = tmp_path / "run"
    run.mkdir()
    (run / "policy.pt").write_bytes(b"")
    (run / "train.json").write_text(json.dumps({"env_id": "TrackGen-Track-v0", "trainer": "rsl_rl"}))
    layouts = tmp_path / "layouts"
    layouts.mkdir()
    write_fixture_folder(layouts)
    assert cli(["eval", str(run), "--layouts", str(layouts)]) == 2
    err = capsys.readouterr().err
    assert "MODEL must be a TrackGen-Gates-v0 policy, got one of TrackGen-Track-v0" in err and "--gates-file" not in err
