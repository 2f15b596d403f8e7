"""A hand-built stadium circuit (two straights, two semicircles) for the closed-form tests."""

import numpy as np


def stadium(straight: float, radius: float, spacing: float) -> np.ndarray:
    """``[N, 2]`` points of a closed stadium, counter-clockwise: a straight of ``straight``
    along +x at y = -radius, a semicircle, the straight back at y = +radius, a semicircle."""
    n_s = int(round(straight / spacing))
    n_a = int(round(np.pi * radius / spacing))
    x = np.arange(n_s) * (straight / n_s)
    t = np.arange(n_a) * (np.pi / n_a) - 0.5 * np.pi
    bottom = np.stack([x, np.full(n_s, -radius)], 1)
    right = np.stack([straight + radius * np.cos(t), radius * np.sin(t)], 1)
    top = np.stack([straight - x, np.full(n_s, radius)], 1)
    left = np.stack([-radius * np.cos(t), -radius * np.sin(t)], 1)
    return np.concatenate([bottom, right, top, left])
