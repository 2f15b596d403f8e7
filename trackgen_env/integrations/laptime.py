"""Reference lap time: the quasi-steady-state lap time of a car on a closed race line (NumPy, host).

The physical limit a policy's lap time is compared with. The car is a point mass on the
line whose acceleration stays inside the friction circle ``a_long^2 + a_lat^2 <= (mu
g)^2`` with ``a_lat = v^2 |kappa|``, accelerates at most at the motor line ``max_accel (1 -
v / max_speed)`` (the env car's, :mod:`trackgen_env.envs.car`) and brakes at most at
``max_brake``. The speed profile is the classic forward-backward one (Brayshaw and Harrison,
"A quasi steady state approach to race car lap simulation in order to understand the
effects of racing line and centre of gravity location", *Proc. IMechE Part D* 219(6), 2005;
the velocity profile of TUMFTM's global race trajectory optimisation works the same way,
Heilmeier et al., *Vehicle System Dynamics* 58(10), 2020):

1. the cornering limit ``v_max(s) = min(max_speed, sqrt(mu g / |kappa(s)|))``;
2. a forward pass from the slowest point: ``v_{i+1}^2 <= v_i^2 + 2 a_acc(v_i, kappa_i) ds``;
3. a backward pass: ``v_i^2 <= v_{i+1}^2 + 2 a_brake(v_{i+1}, kappa_{i+1}) ds``;
4. the lap time ``sum ds / ((v_i + v_{i+1}) / 2)`` (exact for a constant acceleration).

The line is resampled uniformly (``spacing``) and its curvature is the circumcircle
curvature over a chord of ``2 * smoothing`` [m] (:func:`trackgen_env.core.stats.closed_curvature`),
so a surveyed line with a few metres between points gives a smooth curvature.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.polyline import GRAVITY
from ..core.stats import closed_curvature, resample_closed

__all__ = ["speed_profile", "reference_lap_time"]


def _limits(car) -> tuple[float, float, float, float]:
    try:
        values = (float(car.friction) * GRAVITY, float(car.max_accel), float(car.max_brake), float(car.max_speed))
    except AttributeError as exc:
        raise TypeError(f"car must have friction, max_accel, max_brake and max_speed (a CarParams), got "
                        f"{type(car).__name__}") from exc
    if not all(v > 0 and math.isfinite(v) for v in values):
        raise ValueError(f"car limits (mu g, max_accel, max_brake, max_speed) must be finite and > 0, got {values}")
    return values


def speed_profile(line, car, *, spacing: float | None = None, smoothing: float | None = None):
    """The quasi-steady-state speed profile of ``car`` on the closed ``line``.

    Args:
        line: ``[N, 2+]`` points [m] of the closed race line (the last point is not a copy of
            the first; columns after x, y are ignored).
        car: an object with ``friction`` (mu), ``max_accel``, ``max_brake`` [m/s^2] and
            ``max_speed`` [m/s], e.g. a :class:`~trackgen_env.envs.car.CarParams`.
        spacing: [m] the resampling step (default ``L / 4000``, at most the line's median step).
        smoothing: [m] half chord of the curvature estimate (default twice the line's median
            step, at least ``2 * spacing``).

    Returns:
        ``(s [M], v [M], kappa [M])`` float64: arc length [m] from the first point, speed
        [m/s] and signed curvature [1/m] at the uniform samples.

    Raises:
        ValueError: fewer than 3 points, non-finite points, a zero-length loop, bad limits.
        TypeError: a ``car`` without the limits.
    """
    mu_g, a_max, b_max, v_top = _limits(car)
    xy = np.asarray(line, dtype=np.float64)
    if xy.ndim != 2 or xy.shape[0] < 3 or xy.shape[1] < 2:
        raise ValueError(f"line must be [N >= 3, 2] points, got shape {xy.shape}")
    xy = xy[:, :2]
    steps = np.linalg.norm(np.diff(np.vstack([xy, xy[:1]]), axis=0), axis=1)
    length, median = float(steps.sum()), float(np.median(steps))
    if spacing is None:
        spacing = min(length / 4000.0, median) if median > 0 else length / 4000.0
    pts, ds, _ = resample_closed(xy, spacing)
    if smoothing is None:
        smoothing = max(2.0 * median, 2.0 * ds)
    kappa = closed_curvature(pts, round(smoothing / ds))
    n = kappa.size
    ak = np.abs(kappa)
    v_lim = np.minimum(v_top, np.sqrt(mu_g / np.maximum(ak, 1e-12)))

    def grip(v, k):  # longitudinal acceleration left inside the friction circle
        return math.sqrt(max(0.0, mu_g * mu_g - (v * v * k) ** 2))

    start = int(np.argmin(v_lim))
    v = v_lim.copy()
    for j in range(1, n + 1):  # forward: acceleration
        i, p = (start + j) % n, (start + j - 1) % n
        a = min(a_max * max(0.0, 1.0 - v[p] / v_top), grip(v[p], ak[p]))
        v[i] = min(v[i], math.sqrt(v[p] * v[p] + 2.0 * a * ds))
    for j in range(1, n + 1):  # backward: braking
        i, q = (start - j) % n, (start - j + 1) % n
        b = min(b_max, grip(v[q], ak[q]))
        v[i] = min(v[i], math.sqrt(v[q] * v[q] + 2.0 * b * ds))
    return np.arange(n) * ds, v, kappa


def reference_lap_time(line, car, *, spacing: float | None = None, smoothing: float | None = None) -> float:
    """[s] the quasi-steady-state lap time of ``car`` on the closed ``line`` (:func:`speed_profile`).

    Raises:
        ValueError / TypeError: as :func:`speed_profile`.
    """
    s, v, _ = speed_profile(line, car, spacing=spacing, smoothing=smoothing)
    ds = s[1] - s[0]
    v_mean = 0.5 * (v + np.roll(v, -1))
    return float(np.sum(ds / np.maximum(v_mean, 1e-9)))
