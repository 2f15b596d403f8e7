"""examples/gates_curriculum.py: the level rule, the live generator parameters it moves, and a brief run."""

from pathlib import Path

import numpy as np
import pytest
from examples_import import EXAMPLES, load_example

from trackgen_env.envs.gates import GatesVectorEnv

EXAMPLE = EXAMPLES / "gates_curriculum.py"


def test_level_goes_up_at_70_percent_and_down_below_60_percent():
    c = load_example("gates_curriculum").Curriculum(levels=3)
    assert [c.update(s) for s in (0.7, 0.65, 0.9, 0.95, 0.59, 0.6, 0.1, 0.0)] == [1, 1, 2, 2, 1, 1, 0, 0]
    easy, hard = c.params(0), c.params(2)
    assert easy["gate_frames.gate_width"] > hard["gate_frames.gate_width"]
    assert easy["layout.max_turn"] < hard["layout.max_turn"]


def _turns(gates):
    legs = np.roll(gates, -1, axis=0) - gates
    heading = np.arctan2(legs[:, 1], legs[:, 0])
    return np.abs((heading - np.roll(heading, 1) + np.pi) % (2 * np.pi) - np.pi)


def test_difficulty_parameters_reach_the_next_courses_without_re_recording():
    """Width, turn limit and size set between episodes shape every env's next course; the step graph stays."""
    module = load_example("gates_curriculum")
    env = GatesVectorEnv(16, "cpu", seed=41, max_episode_steps=2)
    env.reset(seed=41)
    graph = env.graph
    values = module.Curriculum(levels=3).params(0)
    values["layout.max_turn"] = 1.0
    module.apply(env.course, values)
    hover = np.zeros((16, 4), np.float32)
    for _ in range(3):  # truncation at step 2, the auto-reset (a new course) at step 3
        env.step(hover)
    assert env.graph is graph
    courses = [c for c in env.courses() if c["valid"]]
    assert len(courses) >= 12
    for c in courses:
        assert c["gate_width"] == pytest.approx(values["gate_frames.gate_width"])
        assert _turns(c["gate_position"]).max() <= 1.0 + 1e-4
        radius = np.linalg.norm(c["gate_position"][:, :2] - c["gate_position"][:, :2].mean(axis=0), axis=1)
        assert radius.max() <= values["layout.size"] / 2 * 1.5
    # the observation's next gate has the new opening
    obs, *_ = env.step(hover)
    width = np.linalg.norm(obs[:, 16:19] - obs[:, 19:22], axis=1)
    valid = np.array([c["valid"] for c in env.courses()])
    np.testing.assert_allclose(width[valid], values["gate_frames.gate_width"], rtol=1e-4)


def test_curriculum_example_trains_briefly_and_applies_its_level(tmp_path):
    pytest.importorskip("stable_baselines3")
    import torch

    threads = torch.get_num_threads()
    try:
        result = load_example("gates_curriculum").main(["--steps", "512", "--num-envs", "4", "--n-steps", "64",
                                                        "--levels", "3",
                                      "--out", str(tmp_path), "--no-progress"])
    finally:
        torch.set_num_threads(threads)
    assert Path(result["model"]).is_file() and (tmp_path / "curriculum.csv").is_file()
    rows = (tmp_path / "curriculum.csv").read_text().splitlines()
    assert rows[0] == "steps,success,level" and len(rows) == 1 + len(result["log"])
    for steps, success, level in result["log"]:
        assert 0.0 <= success <= 1.0 and 0 <= level <= 2
