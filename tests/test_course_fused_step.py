"""The fused step of ``BandCollision("segments")`` and the ``Localizer`` that follows it.

``course.step()`` runs the two in one kernel (``BandCollision.step_with``) when they read
the same line and position with the same window: one search of the position instead of
two. The results must be those of the two ``step`` calls, bit for bit, whatever the warm
starts (they differ after a ``reset`` of one component only), and the fusion must not
happen when the two do not search the same thing.
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from trackgen_env.envs.track import TrackVectorEnv
from trackgen_env.tools import BandCollision, Localizer

E = 24


def _env():
    return TrackVectorEnv(E, "cpu", seed=3, capture=False)


def _outputs(course) -> dict[str, np.ndarray]:
    col, loc = course.components["collision"], course.components["localizer"]
    fr = loc.result
    return {
        "hit": col.result.hit.numpy().copy(), "distance": col.result.distance.numpy().copy(),
        "collision.segment": col.segment.numpy().copy(), "localizer.warm": loc._warm.numpy().copy(),
        "s": fr.s.numpy().copy(), "lateral_offset": fr.lateral_offset.numpy().copy(),
        "heading_error": fr.heading_error.numpy().copy(), "curvature": fr.curvature.numpy().copy(),
        "segment": fr.segment.numpy().copy(),
    }


def _place(env, rng, step: int) -> None:
    """Cars near their centreline (most steps) or anywhere (a teleport: the global search)."""
    r = env.course.result
    line, n = r.centerline.numpy(), r.num_points.numpy()
    j = (np.arange(E) * 7 + step) % np.maximum(n, 1)
    p = line[np.arange(E), j] + rng.normal(0.0, 0.6, (E, 3)).astype(np.float32) * np.float32([1, 1, 0])
    if step % 5 == 4:
        p = rng.uniform(-60.0, 60.0, (E, 3)).astype(np.float32) * np.float32([1, 1, 0])
    yaw = rng.uniform(-np.pi, np.pi, E).astype(np.float32)
    q = np.stack([np.zeros(E), np.zeros(E), np.sin(yaw / 2), np.cos(yaw / 2)], axis=1).astype(np.float32)
    env.state.position.assign(p)
    env.state.orientation.assign(q)


def test_course_step_launches_one_kernel_for_collision_and_localizer():
    env = _env()
    launched = []
    launch = wp.launch

    def spy(kernel, *args, **kwargs):
        launched.append(kernel.key)
        return launch(kernel, *args, **kwargs)

    wp.launch = spy
    try:
        env.course.step()
    finally:
        wp.launch = launch
    assert launched.count("_band_collision") == 1  # the collision's kernel, with the frame
    assert "_localize" not in launched


def test_fused_step_matches_the_two_steps_bit_for_bit():
    fused, apart = _env(), _env()
    apart.course.components["collision"].step_with = lambda ctx, follower: False  # the course steps both
    rng_f, rng_a = np.random.default_rng(0), np.random.default_rng(0)
    some = wp.array((np.arange(E) % 3 == 0).astype(np.int32), dtype=wp.int32, device="cpu")
    for step in range(15):
        _place(fused, rng_f, step)
        _place(apart, rng_a, step)
        if step == 6:  # only the localizer's warm start is unset: the two searches differ
            for env in (fused, apart):
                loc = env.course.components["localizer"]
                loc.reset(loc.context, some)
        fused.course.step()
        apart.course.step()
        out_f, out_a = _outputs(fused.course), _outputs(apart.course)
        for name in out_f:
            np.testing.assert_array_equal(out_f[name], out_a[name], err_msg=f"{name} at step {step}")


@pytest.mark.parametrize("change", ["window", "position", "backend"])
def test_no_fusion_unless_the_same_search(change):
    env = _env()
    col, loc = env.course.components["collision"], env.course.components["localizer"]
    ctx = col.context
    other = Localizer(warm_window=col.window + 1 if change == "window" else col.window)
    other.bound = dict(loc.bound)
    if change == "position":
        other.bound["position"] = wp.zeros(E, dtype=wp.vec3, device="cpu")
    other._frame, other._warm, other._no_orientation = loc._frame, loc._warm, loc._no_orientation
    subject = col
    if change == "backend":
        subject = BandCollision("sdf")
    assert subject.step_with(ctx, other if change != "backend" else loc) is False
    assert col.step_with(ctx, loc) is True  # the env's own pair fuses


def test_the_localizer_keeps_no_per_point_copy_of_the_line():
    """Its memory is per env only (24 bytes: frame outputs and warm segment), whatever the
    centreline capacity; the 20-byte-per-point record it once kept cost 8 KiB per env."""
    parts = TrackVectorEnv.memory_estimate(256).parts
    assert parts["localizer"] / 256 <= 32, parts["localizer"] / 256


def test_progress_keeps_no_per_checkpoint_copy_of_the_openings():
    """It reads the checkpoints' arrays; the 32-byte record per opening it once kept cost
    2.2 KiB per env."""
    parts = TrackVectorEnv.memory_estimate(256).parts
    assert parts["progress"] / 256 <= 64, parts["progress"] / 256
