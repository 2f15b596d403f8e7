"""A diverged simulation (NaN inputs) is a collision, never an out-of-bounds read."""

import numpy as np
import pytest
import warp as wp

from trackgen_env.course import Course
from trackgen_env.pipeline import presets


@pytest.mark.parametrize("backend", ["segments", "sdf"])
@pytest.mark.parametrize("box", [False, True])
def test_a_nan_body_is_a_hit_on_the_band(backend, box):
    course = Course.track(presets.track(num_envs=4, device="cpu"), checkpoint_spacing=0.6, collision=backend, seeds=1)
    position = course.result.start_position.numpy().copy()
    position[0, 0] = np.nan
    arrays = {"position": wp.array(position, dtype=wp.vec3, device="cpu")}
    if box:
        quat = course.result.start_orientation.numpy().copy()
        quat[1] = np.nan
        arrays["orientation"] = wp.array(quat, dtype=wp.quat, device="cpu")
        arrays["half_extents"] = wp.array(np.full((4, 3), 0.05, np.float32), dtype=wp.vec3, device="cpu")
    course.bind(**arrays)
    hit = course.step().contacts.hit.numpy()
    assert hit.tolist() == ([1, 1, 0, 0] if box else [1, 0, 0, 0])
