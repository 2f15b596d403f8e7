"""``"layout.num_turns"``: a live count of active control points within the ``num_control_points`` capacity."""

import numpy as np
import pytest

from trackgen_env.pipeline import build, presets


def _counts(program):
    return program._ctx.fields["ctrl_count"].numpy()


def test_the_default_is_every_control_point_so_courses_are_unchanged():
    spec = presets.track(num_envs=8, device="cpu", num_control_points=9)
    assert spec.params["layout.num_turns"] == 9
    a = build(spec, seeds=4)
    assert (_counts(a) == 9).all()
    b = build(spec.with_params({"layout.num_turns": 9.7}), seeds=4)  # floored: the same 9
    np.testing.assert_array_equal(a.result.centerline.numpy(), b.result.centerline.numpy())


def test_a_live_set_reaches_the_next_generation_and_fewer_turns_draw_other_shorter_loops():
    program = build(presets.track(num_envs=64, device="cpu"), seeds=1)
    before, length = program.result.centerline.numpy().copy(), program.result.loop_length.numpy().mean()
    program.params["layout.num_turns"] = 5
    program.generate()
    assert (_counts(program) == 5).all()
    assert program.result.valid.numpy().mean() >= 0.95
    assert not np.array_equal(before, program.result.centerline.numpy())
    assert program.result.loop_length.numpy().mean() < length  # a coarser polygon: fewer lobes to wind round


def test_randomized_turns_are_floored_per_env_within_the_range():
    spec = presets.track(num_envs=64, device="cpu").with_randomize({"layout.num_turns": (4.0, 12.999)})
    program = build(spec, seeds=2)
    counts = _counts(program)
    assert counts.min() >= 4 and counts.max() <= 12 and np.unique(counts).size >= 6
    np.testing.assert_array_equal(counts, np.floor(program.params["layout.num_turns"].numpy()))


def test_more_turns_than_the_capacity_are_refused_at_build_and_when_set_live():
    spec = presets.track(num_envs=2, device="cpu", num_control_points=10)
    with pytest.raises(ValueError, match=r"layout.num_turns .* must be < num_control_points \+ 1 = 11.*got 11"):
        build(spec.with_params({"layout.num_turns": 11}))
    with pytest.raises(ValueError, match="must be < num_control_points"):
        build(spec.with_randomize({"layout.num_turns": (5, 12)}))
    with pytest.raises(ValueError, match="must be < num_control_points"):  # float32 holds (and draws) 10.9999999 as 11
        build(spec.with_randomize({"layout.num_turns": (10.99999, 10.9999999)}))
    program = build(spec)
    with pytest.raises(ValueError, match=r"params\['layout.num_turns'\] must be < num_control_points \+ 1 = 11"):
        program.params["layout.num_turns"] = [4, 11]
    assert (program.params["layout.num_turns"].numpy() == 10).all()  # unchanged
    with pytest.raises(ValueError, match=r"in \[4, 20\]"):
        program.params["layout.num_turns"] = 3
