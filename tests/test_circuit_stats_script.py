"""benchmarks/circuit_stats.py: the side-by-side table and the plot, on a tiny circuit folder."""

import importlib.util
import json
import os
import re

import numpy as np
import pytest

from stadium import stadium

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load():
    spec = importlib.util.spec_from_file_location("circuit_stats", os.path.join(ROOT, "benchmarks", "circuit_stats.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_stadium_csv(path, straight, radius, half_width):
    xy = stadium(straight, radius, 5.0)
    rows = np.column_stack([xy, np.full(len(xy), half_width), np.full(len(xy), half_width)])
    np.savetxt(path, rows, delimiter=",", header="x_m,y_m,w_tr_right_m,w_tr_left_m", fmt="%.6f")


def test_the_script_compares_and_plots(tmp_path, capsys):
    write_stadium_csv(tmp_path / "A.csv", 600.0, 60.0, 6.0)
    write_stadium_csv(tmp_path / "B.csv", 300.0, 30.0, 5.0)
    png, out = tmp_path / "stats.png", tmp_path / "stats.json"
    result = _load().main(["--circuits", str(tmp_path), "--num-envs", "4", "--png", str(png), "--json", str(out)])
    assert png.stat().st_size > 0
    assert json.loads(out.read_text()) == result
    assert result["num_real"] == 2 and sorted(result["families"]) == ["circuit", "default"]
    default, circuit = result["families"]["default"], result["families"]["circuit"]
    assert default["num_generated"] >= 1 and circuit["num_generated"] >= 1
    straights = default["measures"]["straight_fraction"]
    assert straights["real_min"] > 0.5 > straights["generated_median"]  # the default family has almost none
    assert circuit["measures"]["straight_fraction"]["generated_median"] > 0.5  # the circuit family's laps are
    text = capsys.readouterr().out
    assert "| loop length / width |" in text and "| A |" in text and "| B |" in text
    assert "generated `circuit`" in text and "every measure inside the real range" in text
    # a measure named with pipes is one cell: every table row has as many cells as its header
    tables = [t for t in text.split("\n\n") if t.startswith("|")]
    assert len(tables) == 3  # the two families' tables and the circuits'
    for table in tables:
        rows = [r for r in table.splitlines() if r.startswith("|")]
        cells = [len(re.split(r"(?<!\\)\|", r)) for r in rows]
        assert len(set(cells)) <= 1, table
    assert "median \\|curvature\\| x width" in text


def test_one_family_on_request(tmp_path):
    write_stadium_csv(tmp_path / "A.csv", 600.0, 60.0, 6.0)
    result = _load().main(["--circuits", str(tmp_path), "--family", "circuit", "--num-envs", "2",
                           "--png", str(tmp_path / "s.png")])
    assert list(result["families"]) == ["circuit"]


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_a_folder_without_circuits_is_a_usage_error(tmp_path, capsys, make):
    folder = tmp_path / "nothing" if make == "missing" else tmp_path
    with pytest.raises(SystemExit) as exc:
        _load().main(["--circuits", str(folder), "--num-envs", "2", "--png", str(tmp_path / "s.png")])
    assert exc.value.code == 2
    assert "--circuits" in capsys.readouterr().err
