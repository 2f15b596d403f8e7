"""A real circuit through the Python API: the episode holds a lap, a too-small car or a folded band
is named, a CSV's header needs no ``#``, and the device may be given as torch names it."""

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest

from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv
from trackgen_env.envs.base import auto_episode_steps
from trackgen_env.envs.car import CAR_PRESETS
from trackgen_env.envs.controllers import PurePursuit
from trackgen_env.envs.track import (
    CIRCUIT_MIN_SPEED_FRACTION,
    DEFAULT_MAX_EPISODE_STEPS,
)
from trackgen_env.generators.centerline_io import (
    band_folds,
    centerline_length,
    check_centerline,
    load_centerline_csv,
)


def _stadium(straight: float, radius: float, width: float, spacing: float) -> np.ndarray:
    """A closed stadium-shaped circuit, counter-clockwise: [N, 4] x, y, width right, width left."""
    pts = []
    n_straight, n_arc = int(straight / spacing), int(math.pi * radius / spacing)
    for i in range(n_straight):
        pts.append((-straight / 2 + i * spacing, -radius))
    for i in range(n_arc):
        a = -math.pi / 2 + math.pi * i / n_arc
        pts.append((straight / 2 + radius * math.cos(a), radius * math.sin(a)))
    for i in range(n_straight):
        pts.append((straight / 2 - i * spacing, radius))
    for i in range(n_arc):
        a = math.pi / 2 + math.pi * i / n_arc
        pts.append((-straight / 2 + radius * math.cos(a), radius * math.sin(a)))
    xy = np.array(pts)
    return np.concatenate([xy, np.full((len(xy), 2), width)], axis=1)


def test_a_full_size_circuit_through_make_vec_gets_the_time_for_its_lap():
    points = _stadium(1800.0, 120.0, 6.0, 5.0)  # 4.3 km, as Spielberg
    length = centerline_length(points)
    env = gym.make_vec("TrackGen-Track-v0", num_envs=1, device="cpu", seed=0, centerline=points, car="full")
    full = CAR_PRESETS["full"]
    assert env.max_episode_steps == math.ceil(length / (CIRCUIT_MIN_SPEED_FRACTION * full.max_speed * full.dt))
    controller = PurePursuit(env.car)
    obs, _ = env.reset()
    for step in range(env.max_episode_steps):
        obs, _, terminated, truncated, info = env.step(controller(obs))
        if terminated[0] or truncated[0]:
            break
    # the lap ends the episode, not the limit (1000 steps cut the car off after 1.9 km)
    assert terminated[0] and not truncated[0] and info["laps"][0] == 1, step
    assert step >= DEFAULT_MAX_EPISODE_STEPS
    env.close()


def test_auto_is_one_rule_for_a_circuit_and_a_race_layout_and_generated_courses_keep_their_limit():
    assert auto_episode_steps(1000, 1, 100.0, 1.0, 0.05) == 2000
    assert auto_episode_steps(1000, 2, 100.0, 1.0, 0.05) == 4000
    assert auto_episode_steps(1000, None, 10.0, 1.0, 0.05) == 1000  # never below the env's default
    assert auto_episode_steps(1000, 1, 1e12, 1.0, 0.05) == 2**31 - 1
    assert TrackVectorEnv(2, "cpu", seed=0).max_episode_steps == DEFAULT_MAX_EPISODE_STEPS
    assert TrackVectorEnv(2, "cpu", seed=0, max_episode_steps="auto").max_episode_steps == DEFAULT_MAX_EPISODE_STEPS
    points = _stadium(1800.0, 120.0, 6.0, 5.0)
    env = TrackVectorEnv(1, "cpu", seed=0, centerline=points, car="full", laps=2)
    full = CAR_PRESETS["full"]
    assert env.max_episode_steps == auto_episode_steps(1000, 2, centerline_length(points),
                                                       CIRCUIT_MIN_SPEED_FRACTION * full.max_speed, full.dt)
    env = TrackVectorEnv(1, "cpu", seed=0, centerline=points, car="full", max_episode_steps=500)
    assert env.max_episode_steps == 500
    assert GatesVectorEnv(2, "cpu", seed=0).max_episode_steps == 1500


def test_the_small_car_on_a_full_size_circuit_is_told_to_scale_it():
    points = _stadium(300.0, 60.0, 6.0, 2.0)
    with pytest.warns(UserWarning, match=r"60 times the car's width \(0.2 m\).*points \* 0.1.*car='full'"):
        env = TrackVectorEnv(1, "cpu", seed=0, centerline=points)  # rc10, the default car
    assert env.max_episode_steps > 10_000  # and it gets the time for the lap all the same
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TrackVectorEnv(1, "cpu", seed=0, centerline=points, car="full")
        TrackVectorEnv(1, "cpu", seed=0, centerline=points * 0.1)  # the 1:10 circuit for the 1:10 car


def test_a_csv_header_row_without_a_hash_is_a_header(tmp_path):
    rows = "\n".join(f"{x:.3f},{y:.3f},1.0,1.2" for x, y in _stadium(40.0, 10.0, 1.0, 1.0)[:, :2])
    (tmp_path / "hash.csv").write_text("# x_m,y_m,w_tr_right_m,w_tr_left_m\n" + rows + "\n")
    (tmp_path / "bare.csv").write_text("x_m,y_m,w_tr_right_m,w_tr_left_m\n" + rows + "\n")
    (tmp_path / "spaced.csv").write_text("x_m, y_m, w_tr_right_m, w_tr_left_m\n" + rows + "\n")
    expected = load_centerline_csv(tmp_path / "hash.csv")
    assert np.array_equal(load_centerline_csv(tmp_path / "bare.csv"), expected)
    assert np.array_equal(load_centerline_csv(tmp_path / "spaced.csv"), expected)
    (tmp_path / "bad.csv").write_text("x_m,y_m,w_tr_right_m,w_tr_left_m\n1,2,3,4\nfoo,2,3,4\n")
    with pytest.raises(ValueError, match="expected 4 numeric comma-separated columns"):
        load_centerline_csv(tmp_path / "bad.csv")  # only the first row may be a header


def test_a_band_that_folds_over_itself_warns_naming_where():
    t = np.linspace(0.0, 2.0 * np.pi, 100, endpoint=False)
    circle = np.stack([5.0 * np.cos(t), 5.0 * np.sin(t), np.full(100, 0.5), np.full(100, 6.0)], axis=1)
    assert [rows.size for _, rows in band_folds(circle)] == [100, 0]  # the inner (left) edge folds
    with pytest.warns(UserWarning, match=r"folds over itself at row 0 \(x 5 m, y 0 m\).*left width there \(6 m\) "
                                         r"is more than the radius of the corner \(5 m\)"):
        check_centerline(circle, name="circle")
    # a circuit scaled in x and y but not in its widths: the band folds in its tightest corners
    scaled = _stadium(30.0, 1.0, 1.5, 0.25)
    with pytest.warns(UserWarning, match=r"points: the band folds over itself at row \d+ \(x "):
        TrackVectorEnv(1, "cpu", seed=0, centerline=scaled)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_centerline(_stadium(30.0, 1.0, 0.5, 0.25), name="fits")
        check_centerline(circle[:, [0, 1, 3, 2]], name="outer")  # the wide side outside: the outer edge never folds


@pytest.mark.parametrize("device", ["CPU", " cpu ", "Cpu"])
def test_the_device_is_a_name_in_any_case(device):
    assert str(TrackVectorEnv(2, device, seed=0).device) == "cpu"
    assert str(gym.make_vec("TrackGen-Gates-v0", num_envs=2, device=device, seed=0).device) == "cpu"


def test_the_device_may_be_a_torch_device():
    torch = pytest.importorskip("torch")
    env = TrackVectorEnv(2, torch.device("cpu"), seed=0, output="torch")
    obs, _ = env.reset()
    assert str(env.device) == "cpu" and obs.device == torch.device("cpu")
    with pytest.raises(ValueError, match="device must be one of"):
        TrackVectorEnv(2, torch.device("meta"), seed=0)


def test_the_envs_page_circuit_example_runs(tmp_path, monkeypatch):
    import pathlib
    import re

    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "envs.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "Spielberg.csv" in b]
    rows = _stadium(1800.0, 120.0, 6.0, 5.0)
    np.savetxt(tmp_path / "Spielberg.csv", rows, delimiter=",", header="x_m,y_m,w_tr_right_m,w_tr_left_m")
    monkeypatch.chdir(tmp_path)
    ns = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither the full-size car nor the 1:10 circuit warns
        block = block.replace('car="full")', 'car="full", device="cpu")')
        exec(block.replace("points * 0.1)", 'points * 0.1, device="cpu")'), ns)
    assert ns["envs"].max_episode_steps > 5000 and ns["small"].max_episode_steps > 1000
