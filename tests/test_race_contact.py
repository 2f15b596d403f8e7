"""Car-car contact: the separating axis test of trackgen_env.envs.contact, against geometry and NumPy."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trackgen_env.envs.contact import boxes_overlap_batch, boxes_overlap_numpy

RC10 = np.array([0.225, 0.1])  # half length, half width [m]


def _corner_poses(gap: float, yaws: np.ndarray, frame_yaw: float, origin: np.ndarray):
    """Box 2 at relative yaw ``yaws`` whose nearest corner lies ``gap`` [m] beyond box 1's front
    face (negative: inside box 1), the pair turned by ``frame_yaw`` and moved to ``origin``."""
    h1, h2 = RC10, np.array([0.29, 0.155])
    p1, p2 = [], []
    for theta in yaws:
        f = np.array([np.cos(theta), np.sin(theta)])
        left = np.array([-f[1], f[0]])
        corners = [sx * h2[0] * f + sy * h2[1] * left for sx in (-1, 1) for sy in (-1, 1)]
        lowest = min(c[0] for c in corners)  # box 2's extreme towards box 1, along box 1's x
        near = [c for c in corners if c[0] - lowest < 1e-12][0]
        # that corner on box 1's axis (y = 0), ``gap`` beyond the middle of its front face
        centre = np.array([h1[0] + gap, 0.0]) - near
        p1.append([0.0, 0.0])
        p2.append(centre)
    c, s = np.cos(frame_yaw), np.sin(frame_yaw)
    rot = np.array([[c, -s], [s, c]])
    p1 = np.array(p1) @ rot.T + origin
    p2 = np.array(p2) @ rot.T + origin
    M = len(yaws)
    return p1, np.full(M, frame_yaw), np.tile(h1, (M, 1)), p2, yaws + frame_yaw, np.tile(h2, (M, 1))


YAWS = np.deg2rad(np.arange(0.0, 360.0, 7.5))


@pytest.mark.parametrize("frame_yaw, origin", [(0.0, (0.0, 0.0)), (1.1, (3.0, -2.0)), (-2.7, (-40.0, 25.0))])
def test_overlap_by_construction_is_contact_at_every_relative_yaw(frame_yaw, origin):
    """A corner of box 2 1 mm inside box 1's front face: contact, whatever the relative yaw."""
    poses = _corner_poses(-1e-3, YAWS, frame_yaw, np.array(origin))
    assert boxes_overlap_batch(*poses).all()
    # symmetric: the same pair the other way round
    p1, y1, h1, p2, y2, h2 = poses
    assert boxes_overlap_batch(p2, y2, h2, p1, y1, h1).all()
    assert boxes_overlap_numpy(*poses).all()


@pytest.mark.parametrize("frame_yaw, origin", [(0.0, (0.0, 0.0)), (1.1, (3.0, -2.0)), (-2.7, (-40.0, 25.0))])
def test_boxes_1_mm_apart_are_no_contact_at_every_relative_yaw(frame_yaw, origin):
    """Box 2's nearest corner 1 mm beyond box 1's front face: no contact, whatever the relative yaw."""
    poses = _corner_poses(1e-3, YAWS, frame_yaw, np.array(origin))
    assert not boxes_overlap_batch(*poses).any()
    p1, y1, h1, p2, y2, h2 = poses
    assert not boxes_overlap_batch(p2, y2, h2, p1, y1, h1).any()
    assert not boxes_overlap_numpy(*poses).any()


def test_side_by_side_boxes_1_mm_apart_and_overlapping():
    """Two parallel cars side by side: 1 mm between their flanks is no contact, 1 mm overlap is."""
    for gap, expected in ((1e-3, False), (-1e-3, True)):
        p2 = np.array([[0.1, 2 * RC10[1] + gap]])
        hit = boxes_overlap_batch(np.zeros((1, 2)), [0.0], [RC10], p2, [0.0], [RC10])
        assert hit[0] == expected


def _margin(p1, y1, h1, p2, y2, h2) -> float:
    """The largest separation over the four axes (> 0: apart) in float64."""
    f1 = np.array([np.cos(y1), np.sin(y1)])
    f2 = np.array([np.cos(y2), np.sin(y2)])
    l1, l2 = np.array([-f1[1], f1[0]]), np.array([-f2[1], f2[0]])
    d = np.asarray(p2) - np.asarray(p1)

    def r(f, left, h, a):
        return h[0] * abs(f @ a) + h[1] * abs(left @ a)

    return max(abs(d @ a) - r(f1, l1, h1, a) - r(f2, l2, h2, a) for a in (f1, l1, f2, l2))


coord = st.floats(-3.0, 3.0, allow_nan=False)
angle = st.floats(-10.0, 10.0, allow_nan=False)
half = st.floats(0.05, 1.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(coord, coord, angle, half, half, coord, coord, angle, half, half), min_size=1, max_size=32))
def test_kernel_equals_numpy_reference(pairs):
    """The Warp kernel and the NumPy reference agree on drawn poses (but within float32 of touching)."""
    a = np.array(pairs, dtype=np.float64)
    # as float32, which the kernel computes in
    a = a.astype(np.float32).astype(np.float64)
    p1, y1, h1 = a[:, 0:2], a[:, 2], a[:, 3:5]
    p2, y2, h2 = a[:, 5:7], a[:, 7], a[:, 8:10]
    clear = np.array([abs(_margin(p1[i], y1[i], h1[i], p2[i], y2[i], h2[i])) > 1e-4 for i in range(len(a))])
    kernel = boxes_overlap_batch(p1, y1, h1, p2, y2, h2)
    reference = boxes_overlap_numpy(p1, y1, h1, p2, y2, h2)
    np.testing.assert_array_equal(kernel[clear], reference[clear])
    # and the reference says what the margin says
    margins = np.array([_margin(p1[i], y1[i], h1[i], p2[i], y2[i], h2[i]) for i in range(len(a))])
    np.testing.assert_array_equal(reference[clear], (margins <= 0.0)[clear])
