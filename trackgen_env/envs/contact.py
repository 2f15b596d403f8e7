"""Car-car contact: the overlap of two oriented boxes in the ground plane (separating axis test).

Two convex polygons are disjoint if and only if some edge normal of either separates their
projections (the separating axis theorem; Gottschalk, Lin and Manocha, "OBBTree", SIGGRAPH
1996; Ericson, *Real-Time Collision Detection*, 2005, section 4.4.1). A car's body seen from
above is a rectangle, so four axes decide: each box's forward and left unit vectors. Along an
axis ``a`` the boxes overlap when the distance of their centres projected on ``a`` is at most
the sum of their projected half extents, ``|d . a| <= r1(a) + r2(a)`` with
``r(a) = hx |f . a| + hy |l . a|``; touching counts as contact.

:func:`boxes_overlap` is the ``wp.func`` the race env's step calls for every pair of cars of
a course; :func:`boxes_overlap_numpy` is the same test in NumPy (the reference the tests
compare the kernel with), and :func:`boxes_overlap_batch` runs the Warp function over arrays
of pairs.
"""

from __future__ import annotations

import numpy as np
import warp as wp

__all__ = ["boxes_overlap", "boxes_overlap_numpy", "boxes_overlap_batch"]

wp.set_module_options({"enable_backward": False})


@wp.func
def _projected_radius(axis: wp.vec2, forward: wp.vec2, left: wp.vec2, half: wp.vec2) -> float:
    """[m] half the length of a box's shadow on the unit ``axis``."""
    return half[0] * wp.abs(wp.dot(forward, axis)) + half[1] * wp.abs(wp.dot(left, axis))


@wp.func
def boxes_overlap(p1: wp.vec2, yaw1: float, half1: wp.vec2, p2: wp.vec2, yaw2: float, half2: wp.vec2) -> int:
    """1 when box 1 (centre ``p1`` [m], heading ``yaw1`` [rad], half length and half width
    ``half1`` [m]) and box 2 overlap or touch, else 0: the separating axis test on the four
    edge normals."""
    f1 = wp.vec2(wp.cos(yaw1), wp.sin(yaw1))
    l1 = wp.vec2(-f1[1], f1[0])
    f2 = wp.vec2(wp.cos(yaw2), wp.sin(yaw2))
    l2 = wp.vec2(-f2[1], f2[0])
    d = p2 - p1
    # box 1's own radius on its own axes is its half extent (no cosines needed)
    if wp.abs(wp.dot(d, f1)) > half1[0] + _projected_radius(f1, f2, l2, half2):
        return 0
    if wp.abs(wp.dot(d, l1)) > half1[1] + _projected_radius(l1, f2, l2, half2):
        return 0
    if wp.abs(wp.dot(d, f2)) > half2[0] + _projected_radius(f2, f1, l1, half1):
        return 0
    if wp.abs(wp.dot(d, l2)) > half2[1] + _projected_radius(l2, f1, l1, half1):
        return 0
    return 1


@wp.kernel
def _overlap_pairs(
    p1: wp.array(dtype=wp.vec2),
    yaw1: wp.array(dtype=float),
    half1: wp.array(dtype=wp.vec2),
    p2: wp.array(dtype=wp.vec2),
    yaw2: wp.array(dtype=float),
    half2: wp.array(dtype=wp.vec2),
    # outputs
    hit: wp.array(dtype=wp.int32),
):
    i = wp.tid()
    hit[i] = boxes_overlap(p1[i], yaw1[i], half1[i], p2[i], yaw2[i], half2[i])


def boxes_overlap_numpy(p1, yaw1, half1, p2, yaw2, half2) -> np.ndarray:
    """The separating axis test of :func:`boxes_overlap` in NumPy (float64), over pairs.

    Args:
        p1, p2: ``[M, 2]`` box centres [m]. yaw1, yaw2: ``[M]`` headings [rad].
        half1, half2: ``[M, 2]`` (half length, half width) [m].

    Returns:
        ``[M]`` bool: the boxes of pair ``i`` overlap or touch.
    """
    p1, p2, half1, half2 = (np.asarray(a, dtype=np.float64).reshape(-1, 2) for a in (p1, p2, half1, half2))
    yaw1, yaw2 = np.asarray(yaw1, dtype=np.float64).ravel(), np.asarray(yaw2, dtype=np.float64).ravel()
    f1 = np.stack([np.cos(yaw1), np.sin(yaw1)], axis=1)
    f2 = np.stack([np.cos(yaw2), np.sin(yaw2)], axis=1)
    l1 = np.stack([-f1[:, 1], f1[:, 0]], axis=1)
    l2 = np.stack([-f2[:, 1], f2[:, 0]], axis=1)
    d = p2 - p1
    separated = np.zeros(len(d), dtype=bool)
    for axis in (f1, l1, f2, l2):
        def radius(f, left, half, axis=axis):
            return half[:, 0] * np.abs((f * axis).sum(1)) + half[:, 1] * np.abs((left * axis).sum(1))

        separated |= np.abs((d * axis).sum(1)) > radius(f1, l1, half1) + radius(f2, l2, half2)
    return ~separated


def boxes_overlap_batch(p1, yaw1, half1, p2, yaw2, half2, *, device: str = "cpu") -> np.ndarray:
    """:func:`boxes_overlap` over ``M`` pairs on ``device`` (arguments as :func:`boxes_overlap_numpy`,
    converted to float32) -> ``[M]`` bool."""
    def vec2(a):
        return wp.array(np.asarray(a, dtype=np.float32).reshape(-1, 2), dtype=wp.vec2, device=device)

    def scalar(a):
        return wp.array(np.asarray(a, dtype=np.float32).ravel(), dtype=float, device=device)

    a = [vec2(p1), scalar(yaw1), vec2(half1), vec2(p2), scalar(yaw2), vec2(half2)]
    hit = wp.zeros(a[0].shape[0], dtype=wp.int32, device=device)
    wp.launch(_overlap_pairs, a[0].shape[0], inputs=a, outputs=[hit], device=device)
    return hit.numpy().astype(bool)
