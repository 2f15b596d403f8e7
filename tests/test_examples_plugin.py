"""examples/plugin_stage.py: the "acme.chicane" plugin changes the courses as declared, and trains briefly."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from examples_import import EXAMPLES, load_example

from trackgen_env.course import Course
from trackgen_env.pipeline import build, presets

EXAMPLE = EXAMPLES / "plugin_stage.py"


@pytest.fixture(scope="module")
def example():
    return load_example("plugin_stage")


def test_the_chicane_moves_the_longest_straights_control_points_apart_sideways(example):
    spec = example.make_spec(32, "cpu", offset=(0.3, 0.3))
    with_plugin, plain = build(spec, registry=example.REGISTRY,
                               seeds=7), build(presets.track(num_envs=32, device="cpu"), seeds=7)
    assert with_plugin.stages == ("band", "layout", "acme.chicane", "spline", "resample", "checks", "start")
    assert with_plugin.result.valid.numpy().mean() >= 0.95
    # the layout's draws are the same (the plugin draws nothing): where both kept the same
    # attempt's draw, exactly two control points differ, each by the offset, on opposite sides
    moved = np.linalg.norm(with_plugin._ctx.fields["ctrl"].numpy() - plain._ctx.fields["ctrl"].numpy(), axis=2)
    same_draw = with_plugin._ctx.attempt.numpy() == plain._ctx.attempt.numpy()
    assert same_draw.sum() >= 16
    for row in moved[same_draw]:
        assert np.count_nonzero(row > 1e-6) == 2
        np.testing.assert_allclose(np.sort(row)[-2:], 0.3, atol=1e-5)
    # and the courses changed: every valid track of the same draw, by about the offset
    shift = np.abs(with_plugin.result.centerline.numpy() - plain.result.centerline.numpy()).max(axis=(1, 2))
    assert (shift[same_draw] > 0.1).all()


def test_the_randomized_offset_is_per_env_within_its_range_and_the_course_stays_consistent(example):
    program = build(example.make_spec(16, "cpu"), registry=example.REGISTRY, seeds=3)
    offsets = program.params["acme.chicane.offset"].numpy()
    lo, hi = example.OFFSET_RANGE
    assert ((offsets >= lo) & (offsets < hi)).all() and np.unique(offsets).size == 16
    course = Course.track(program, checkpoint_spacing=0.6)
    r = course.result
    valid = r.valid.numpy().astype(bool)
    n, L = r.num_points.numpy(), r.loop_length.numpy()
    s = r.arc_length.numpy()
    for e in np.flatnonzero(valid):  # the contract downstream components rely on: evenly spaced points
        np.testing.assert_allclose(s[e, : n[e]], np.arange(n[e]) * L[e] / n[e], rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(r.tangent.numpy()[valid], axis=2), 1.0, atol=1e-5)


def test_the_example_trains_ppo_briefly_through_the_env(example, tmp_path):
    pytest.importorskip("stable_baselines3")
    import torch

    threads = torch.get_num_threads()
    try:
        with warnings.catch_warnings():
            # SB3's "Path ... does not exist. Will create it.", a truncated minibatch
            warnings.simplefilter("error", UserWarning)
            out = example.main(["--steps", "96", "--num-envs", "3", "--n-steps", "32", "--out", str(tmp_path / "new")])
    finally:
        torch.set_num_threads(threads)
    assert Path(out["model"]).is_file()
    env = out["env"]
    assert "acme.chicane" in env.course.generator.stages and env.registry is example.REGISTRY


def test_the_example_prints_no_warp_module_load_lines(tmp_path):
    """Run as a script: its report, not one "Module ... load" line per Warp module."""
    pytest.importorskip("stable_baselines3")
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(EXAMPLE.parent.parent)}
    run = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "128", "--num-envs", "4", "--n-steps", "32",
                          "--out", str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "saved" in run.stdout and "Module " not in run.stdout + run.stderr
