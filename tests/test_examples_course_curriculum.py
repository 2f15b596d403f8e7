"""examples/course_curriculum.py: size and turns grow through the live parameters, no re-recording, sized for
the end."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from examples_import import EXAMPLES, load_example

from trackgen_env.envs.track import TrackVectorEnv

EXAMPLE = EXAMPLES / "course_curriculum.py"


@pytest.fixture(scope="module")
def example():
    return load_example("course_curriculum")


def test_the_schedule_runs_from_start_to_final_and_clips(example):
    assert example.params_at(0.0) == example.START and example.params_at(1.0) == example.FINAL
    assert example.params_at(-1.0) == example.START and example.params_at(2.0) == example.FINAL
    sizes = [example.params_at(p)["layout.size"] for p in np.linspace(0, 1, 11)]
    assert np.all(np.diff(sizes) > 0)


def test_the_next_courses_grow_without_re_recording_and_the_ring_holds_the_final_size(example):
    env = TrackVectorEnv(16, "cpu", seed=4, track=example.make_spec(16, "cpu"), max_episode_steps=2)
    env.reset(seed=4)
    example.apply(env.course, example.params_at(0.0))
    env.reset()  # each env's next course, at the start values
    graph, course = env.graph, env.course
    small = course.result.loop_length.numpy()[course.result.valid.numpy() == 1]
    assert (course.generator._ctx.fields["ctrl_count"].numpy() == 5).all()
    example.apply(env.course, example.params_at(1.0))
    action = np.zeros((16, 2), np.float32)
    for _ in range(3):  # truncation at step 2, the auto-reset (a new course) at step 3
        env.step(action)
    assert env.graph is graph
    r = course.result
    assert (course.generator._ctx.fields["ctrl_count"].numpy() == 12).all()
    large = r.loop_length.numpy()[r.valid.numpy() == 1]
    assert len(small) >= 15 and len(large) >= 15 and large.mean() > 1.4 * small.mean()
    checkpoints = course.components["checkpoints"]
    assert not checkpoints.clipped.numpy().any()  # the ring was sized for the final size


def test_the_grid_course_covers_the_final_size(example):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no resolution warning: the grids are sized for the final size
        course = example.grid_course(4, "cpu")
    hf = course.heightfield
    side = hf.cell_size * (hf.heights.shape[-1] - 1)
    assert side >= example.FINAL["layout.size"]
    assert course.generator.params["layout.size"].numpy()[0] == example.START["layout.size"]


def test_the_example_trains_briefly_and_grows_the_courses(example, tmp_path):
    pytest.importorskip("stable_baselines3")
    import torch

    threads = torch.get_num_threads()
    try:
        result = example.main(["--steps", "1024", "--num-envs", "4", "--n-steps", "32", "--max-episode-steps", "16",
                               "--out", str(tmp_path), "--no-progress"])
    finally:
        torch.set_num_threads(threads)
    assert Path(result["model"]).is_file() and (tmp_path / "curriculum.csv").is_file()
    steps, sizes, turns, lengths, same = map(np.array, zip(*result["log"]))
    assert len(steps) == 8 and same.all()
    assert sizes[0] == example.START["layout.size"] and np.all(np.diff(sizes) > 0)
    assert turns[0] == 5 and turns[-1] >= 10
    assert lengths[-1] > lengths[0]


def test_the_example_prints_no_warp_module_load_lines(tmp_path):
    """Run as a script: its report, not one "Module ... load" line per Warp module."""
    pytest.importorskip("stable_baselines3")
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(EXAMPLE.parent.parent)}
    run = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "256", "--num-envs", "4", "--n-steps", "32",
                          "--max-episode-steps", "16", "--no-progress", "--out", str(tmp_path)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "saved" in run.stdout and "Module " not in run.stdout + run.stderr
