"""trackgen_env.core.gate_stats: the measures equal their closed forms on hand-built layouts; the script runs."""

import importlib.util
import json
import math
import os

import numpy as np
import pytest

from trackgen_env.core.gate_stats import GATE_MEASURES, gate_layout_stats, gate_result_stats, race_layout_stats
from trackgen_env.generators.gate_layouts import RaceLayout, load_layout_folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def square(side=6.0, z=1.5):
    pos = np.array([[0, 0, z], [side, 0, z], [side, side, z], [0, side, z]], dtype=float)
    # each normal the bisector of its legs (the loaders' rule): 45 deg between the legs' headings
    normal = np.array([[1, -1, 0], [1, 1, 0], [-1, 1, 0], [-1, -1, 0]], dtype=float)
    return pos, normal


def test_square_of_four_gates():
    side, size = 6.0, 1.5
    s = gate_layout_stats(*square(side), size, size)
    assert s.num_gates == 4 and s.gate_size == pytest.approx(size)
    np.testing.assert_allclose(s.legs, side / size)
    np.testing.assert_allclose(s.turns, 90.0)
    np.testing.assert_allclose(s.slopes, 0.0, atol=1e-12)
    np.testing.assert_allclose(s.relative_yaw, 90.0)
    assert s.leg_min == s.leg_median == s.leg_max == pytest.approx(4.0)
    assert s.turn_max == pytest.approx(90.0) and s.climb_max == 0.0 and s.dive_max == 0.0
    assert s.reversals == 0 and s.stacked == 0
    assert s.extent == pytest.approx(side * math.sqrt(2.0) / size) and s.height_range == 0.0


def split_s(length=8.0, low=1.0, high=3.5):
    """Gate 0 above gate 1 (flown the opposite way: the split-S), gate 2 ``length`` behind them."""
    pos = np.array([[0, 0, high], [0, 0, low], [-length, 0, low]], dtype=float)
    normal = np.array([[1, 0, 0], [-1, 0, 0], [1, 0, 0]], dtype=float)
    return pos, normal


def test_split_s_pair():
    length, low, high, size = 8.0, 1.0, 3.5, 1.5
    s = gate_layout_stats(*split_s(length, low, high), size, size)
    dh = high - low
    climb = math.degrees(math.atan2(dh, length))
    np.testing.assert_allclose(s.legs, [dh / size, length / size, math.hypot(length, dh) / size])
    # gate 0: in along the climb, out straight down; gate 1: down then back; gate 2: back then up
    np.testing.assert_allclose(s.turns, [90.0 + climb, 90.0, 180.0 - climb])
    np.testing.assert_allclose(s.slopes, [-90.0, 0.0, climb], atol=1e-12)
    np.testing.assert_allclose(s.relative_yaw, [180.0, 180.0, 0.0])
    assert s.dive_max == pytest.approx(90.0) and s.climb_max == pytest.approx(climb)
    assert s.reversals == 2 and s.stacked == 1
    assert s.extent == pytest.approx(length / size) and s.height_range == pytest.approx(dh / size)


def test_scale_free():
    pos, normal = split_s()
    a, b = gate_layout_stats(pos, normal, 1.5, 1.5), gate_layout_stats(pos * 0.25, normal, 0.375, 0.375)
    for key in GATE_MEASURES:
        expected = a.row()[key] * (0.25 if key == "gate_size" else 1.0)
        assert b.row()[key] == pytest.approx(expected, abs=1e-9), key


def test_race_layout_uses_its_normals_and_sizes():
    pos, _ = square()
    layout = RaceLayout(position=pos, orientation=np.tile([0.0, 0.0, 0.0, 1.0], (4, 1)), width=[1.0, 1.0, 2.0, 2.0],
                        height=[1.0, 1.0, 2.0, 2.0])
    s = race_layout_stats(layout)
    assert s.gate_size == pytest.approx(1.5)
    np.testing.assert_allclose(s.relative_yaw, 0.0)  # every gate faces +x


@pytest.mark.parametrize("bad, match", [
    (dict(position=np.zeros((2, 3))), "position must be"),
    (dict(normal=np.zeros((3, 3))), "normal must be"),
    (dict(width=0.0), "must be > 0"),
    (dict(position=np.array([[0, 0, 1], [0, 0, 1], [1, 1, 1], [2, 0, 1]], float)), "same centre"),
    (dict(normal=np.tile([0.0, 0.0, 1.0], (4, 1))), "no horizontal part"),
    (dict(height=np.nan), "non-finite"),
])
def test_bad_input(bad, match):
    pos, normal = square()
    args = dict(position=pos, normal=normal, width=1.0, height=1.0)
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        gate_layout_stats(**args)


def test_generated_batch():
    from trackgen_env.generators.gates import GateGenerator
    from trackgen_env.generators.gates_config import GateGenConfig

    result = GateGenerator(GateGenConfig(num_envs=4, gate_width=0.6), seeds=3).generate()
    stats = gate_result_stats(result)
    assert len(stats) == int(result.valid.numpy().sum()) >= 1
    pos = result.gate_position.numpy()
    for e, s in enumerate(stats):
        n = result.num_gates.numpy()[e]
        legs = np.linalg.norm(np.roll(pos[e, :n], -1, axis=0) - pos[e, :n], axis=1)
        np.testing.assert_allclose(s.legs * s.gate_size, legs, rtol=1e-5)
        assert s.gate_size == pytest.approx(0.5 * (0.6 + result.gate_height.numpy()[e]))


def write_fixture_folder(folder):
    """Two hand-written layouts and a two-file pair (corners + race order), as YAML."""
    (folder / "square.yaml").write_text(
        "gate_size: 1.0\ngates:\n  - [0, 0, 1.5]\n  - [6, 0, 1.5]\n  - [6, 6, 1.5]\n  - [0, 6, 1.5]\n")
    (folder / "splits.toml").write_text(
        "gate_size = 1.5\ngates = [[0, 0, 3.5], [0, 0, 1.0], [-8, 0, 1.0], [-4, 5, 2.0]]\n")
    corners = "\n".join(
        f"Gate{k}:\n  nominal_location: [[{x}, {y - 0.5}, 2.0], [{x}, {y + 0.5}, 2.0], [{x}, {y + 0.5}, 1.0], "
        f"[{x}, {y - 0.5}, 1.0]]" for k, (x, y) in enumerate([(0, 0), (8, 3), (4, 9)], start=1))
    (folder / "pair_gates.yaml").write_text(corners + "\n")
    (folder / "pair_race.yaml").write_text("gate_names: [Gate1, Gate2, Gate3]\n")
    (folder / "notes.md").write_text("not a layout\n")


def test_folder_loads_pairs(tmp_path):
    write_fixture_folder(tmp_path)
    layouts = load_layout_folder(tmp_path)
    assert list(layouts) == ["pair_race", "splits", "square"]
    np.testing.assert_allclose(layouts["pair_race"].position[1], [8.0, 3.0, 1.5])
    assert layouts["pair_race"].course_width == pytest.approx(1.0)


def test_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no folder"):
        load_layout_folder(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no gate layout files"):
        load_layout_folder(tmp_path)
    (tmp_path / "race.yaml").write_text("gate_names: [Gate1, Gate2, Gate3]\n")
    with pytest.raises(ValueError, match="race.yaml.*Gate1"):
        load_layout_folder(tmp_path)


def test_the_script_compares_and_plots(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("gate_stats_script", os.path.join(ROOT, "benchmarks",
                                                                                    "gate_stats.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = tmp_path / "layouts"
    folder.mkdir()
    write_fixture_folder(folder)
    png, out = tmp_path / "stats.png", tmp_path / "stats.json"
    result = module.main(["--layouts", str(folder), "--num-envs", "4", "--png", str(png), "--json", str(out)])
    assert png.stat().st_size > 0
    assert json.loads(out.read_text()) == result
    assert result["num_real"] == 3 and result["real"]["splits"]["stacked"] == 1
    default = result["families"]["default"]
    assert default["num_generated"] >= 1 and 0.0 <= default["all_inside"] <= 1.0
    assert default["measures"]["stacked"]["real_max"] == 1.0
    text = capsys.readouterr().out
    assert "| stacked gate pairs |" in text and "| splits |" in text and "| pair_race |" in text
