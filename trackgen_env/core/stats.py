"""Circuit statistics: the scale-free measures that describe a closed racing circuit (NumPy, host).

The same measures, computed the same way, for a real circuit (a centreline ``[N, 4]``: x,
y, width right, width left [m], as :func:`~trackgen_env.generators.centerline_io.load_centerline_csv`
returns) and for a generated batch (a :class:`~trackgen_env.core.types.TrackResult`, read back to
the host), so a generated distribution can be compared with real circuits.

Every length is measured in track widths ``w`` (the full width of the band, right + left),
so a 1:10 RC track and a full-size circuit of the same shape give the same numbers:

* ``length_over_width``: loop length / mean width (real circuits: ~300-500).
* ``kappa_width``: the signed curvature x width along the loop (per sample; the curvature of
  a circle of radius ``R`` times ``w`` is ``w / R``), summarised by the median and the 95th
  percentile of ``|kappa| w``.
* ``straight_fraction``: the fraction of the loop where ``|kappa| w < STRAIGHT_KAPPA_WIDTH``.
* ``corners_per_100_widths``: corners per 100 widths of loop length (a corner: a maximal stretch
  that is not straight and turns one way, turning by at least ``CORNER_MIN_ANGLE``; the sign
  change of a chicane starts a new corner).
* ``tightest_radius_over_width``: the smallest turn radius / width.
* ``longest_straight_over_width``: the longest straight / width.

How: the loop is resampled uniformly in arc length every ``w / SAMPLES_PER_WIDTH`` and the
curvature at each sample is that of the circle through the samples ``w / 2`` before and
after it and itself (the circumcircle, exact on a circular arc; the chord of one width
smooths the 5 m point spacing of surveyed centrelines and the kinks of a linear resampling).
Sources: the data and the curvature profiles these measures summarise are those of the
TUMFTM racetrack database and Heilmeier et al., "Minimum curvature trajectory planning and
control for an autonomous race car", *Vehicle System Dynamics* 58(10), 2020; the
circumcircle (Menger) curvature of three points is standard discrete geometry. The
thresholds (``STRAIGHT_KAPPA_WIDTH``, ``CORNER_MIN_ANGLE``) are this module's choices,
documented where they are defined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "STRAIGHT_KAPPA_WIDTH", "CORNER_MIN_ANGLE", "SAMPLES_PER_WIDTH", "CircuitStats",
    "resample_closed", "closed_curvature", "circuit_stats", "centerline_stats", "track_result_stats",
    "MEASURES",
]

#: ``|kappa| * w`` below this is a straight: a radius of more than 50 track widths (600 m
#: on a 12 m wide circuit, 40 m on a 0.8 m RC track), where a car at racing speed needs no
#: steering to speak of.
STRAIGHT_KAPPA_WIDTH = 0.02
#: [rad] a stretch that is not straight counts as a corner only if it turns by at least
#: this much (20 deg): a kink of the centreline is not a corner.
CORNER_MIN_ANGLE = math.radians(20.0)
#: Samples per track width of the uniform resampling.
SAMPLES_PER_WIDTH = 8

#: The scalar measures of :class:`CircuitStats`, in table order, with their labels.
MEASURES = {
    "length_over_width": "loop length / width",
    "straight_fraction": "fraction on straights",
    "corners_per_100_widths": "corners per 100 widths",
    "tightest_radius_over_width": "tightest radius / width",
    "longest_straight_over_width": "longest straight / width",
    "median_abs_kappa_width": "median |curvature| x width",
    "p95_abs_kappa_width": "95th pct |curvature| x width",
}


@dataclass(frozen=True)
class CircuitStats:
    """The measures of one closed circuit (see the module docstring; lengths in widths).

    Attributes:
        loop_length: [m] length of the closed centreline.
        mean_width: [m] mean full width of the band (arc-length weighted).
        length_over_width, straight_fraction, corners_per_100_widths, tightest_radius_over_width,
            longest_straight_over_width, median_abs_kappa_width, p95_abs_kappa_width: dimensionless.
        num_corners: corners on the loop.
        kappa_width: ``[M]`` float64 signed curvature x width at the uniform samples (left turn > 0).
    """

    loop_length: float
    mean_width: float
    length_over_width: float
    straight_fraction: float
    num_corners: int
    corners_per_100_widths: float
    tightest_radius_over_width: float
    longest_straight_over_width: float
    median_abs_kappa_width: float
    p95_abs_kappa_width: float
    kappa_width: np.ndarray

    def row(self) -> dict[str, float]:
        """The scalar measures (:data:`MEASURES`) as a dict."""
        return {k: float(getattr(self, k)) for k in MEASURES}


def _check_xy(xy, name: str) -> np.ndarray:
    xy = np.asarray(xy, dtype=np.float64)
    if xy.ndim != 2 or xy.shape[1] < 2 or xy.shape[0] < 3:
        raise ValueError(f"{name} must be [N >= 3, 2+] points, got shape {xy.shape}")
    if not np.all(np.isfinite(xy[:, :2])):
        raise ValueError(f"{name} holds non-finite values")
    return xy


def resample_closed(xy, spacing: float, values=None):
    """Resample a closed polyline uniformly in arc length.

    Args:
        xy: ``[N, 2]`` points [m] of a closed loop (the last point is not a copy of the first).
        spacing: [m] the target spacing (> 0); the loop gets ``max(3, round(L / spacing))``
            samples, so the spacing is ``L / M``.
        values: optional ``[N]`` or ``[N, C]`` per-point values, interpolated linearly.

    Returns:
        ``(xy [M, 2], ds, values [M(, C)] or None)`` with ``ds = L / M`` [m].

    Raises:
        ValueError: fewer than 3 points, non-finite points, a loop of zero length, spacing <= 0.
    """
    xy = _check_xy(xy, "xy")[:, :2]
    if not spacing > 0:
        raise ValueError(f"spacing must be > 0, got {spacing}")
    closed = np.vstack([xy, xy[:1]])
    seg = np.linalg.norm(np.diff(closed, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    length = s[-1]
    if not length > 0:
        raise ValueError("the loop has zero length")
    m = max(3, int(round(length / spacing)))
    t = np.arange(m) * (length / m)
    out = np.stack([np.interp(t, s, closed[:, 0]), np.interp(t, s, closed[:, 1])], axis=1)
    vals = None
    if values is not None:
        v = np.asarray(values, dtype=np.float64)
        vc = np.concatenate([v, v[:1]], axis=0)
        vals = (np.interp(t, s, vc) if v.ndim == 1
                else np.stack([np.interp(t, s, vc[:, c]) for c in range(v.shape[1])], 1))
    return out, length / m, vals


def closed_curvature(xy: np.ndarray, half_chord: int) -> np.ndarray:
    """Signed curvature [1/m] at each point of a uniformly sampled closed loop.

    The curvature of the circle through points ``i - k``, ``i``, ``i + k`` (``k =
    half_chord``): ``kappa = 2 cross(b - a, c - a) / (|b - a| |c - b| |c - a|)``, left turn > 0
    (the Menger curvature).

    Args:
        xy: ``[M, 2]`` uniformly spaced points [m] of a closed loop.
        half_chord: samples ``k >= 1`` on each side.

    Returns:
        ``[M]`` float64.
    """
    k = max(1, int(half_chord))
    a, b, c = np.roll(xy, k, axis=0), xy, np.roll(xy, -k, axis=0)
    ab, bc, ac = b - a, c - b, c - a
    cross = ab[:, 0] * bc[:, 1] - ab[:, 1] * bc[:, 0]
    den = np.linalg.norm(ab, axis=1) * np.linalg.norm(bc, axis=1) * np.linalg.norm(ac, axis=1)
    return 2.0 * cross / np.maximum(den, 1e-300)


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of the maximal runs of True in a cyclic boolean array."""
    n = mask.size
    if mask.all():
        return [(0, n)]
    if not mask.any():
        return []
    start = int(np.flatnonzero(~mask)[0])  # a False: no run crosses this index
    rolled = np.roll(mask, -start)
    edges = np.diff(np.concatenate([[0], rolled.astype(np.int8), [0]]))
    begins, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [((int(b) + start) % n, int(e - b)) for b, e in zip(begins, ends)]


def circuit_stats(xy, width) -> CircuitStats:
    """The measures of one closed circuit.

    Args:
        xy: ``[N, 2]`` centreline points [m] of a closed loop (the last point is not a copy of the first).
        width: ``[N]`` full track width [m] at each point (right + left), or one float.

    Returns:
        :class:`CircuitStats`.

    Raises:
        ValueError: bad shapes, non-finite values, a width <= 0, a loop of zero length.
    """
    xy = _check_xy(xy, "xy")[:, :2]
    w = np.broadcast_to(np.asarray(width, dtype=np.float64), (xy.shape[0],))
    if not np.all(np.isfinite(w)) or not np.all(w > 0):
        raise ValueError("width must be finite and > 0 at every point")
    coarse = np.linalg.norm(np.diff(np.vstack([xy, xy[:1]]), axis=0), axis=1)
    w_mean0 = float(np.sum(w * coarse) / np.sum(coarse)) if coarse.sum() > 0 else float(w.mean())
    pts, ds, ws = resample_closed(xy, w_mean0 / SAMPLES_PER_WIDTH, w)
    length = ds * pts.shape[0]
    w_mean = float(ws.mean())
    kappa = closed_curvature(pts, round(0.5 * w_mean / ds))
    kw = kappa * ws
    straight = np.abs(kw) < STRAIGHT_KAPPA_WIDTH
    straights = _runs(straight)
    longest = max((n for _, n in straights), default=0) * ds
    # corners: runs that are not straight, split where the curvature changes sign
    corners = 0
    for sign in (1.0, -1.0):
        for b, n in _runs(~straight & (np.sign(kappa) == sign)):
            idx = (b + np.arange(n)) % kappa.size
            if abs(kappa[idx].sum() * ds) >= CORNER_MIN_ANGLE:
                corners += 1
    akw = np.abs(kw)
    radius = np.abs(1.0 / np.where(kappa == 0.0, np.nan, kappa)) / ws
    tightest = float(np.nanmin(radius)) if np.isfinite(radius).any() else math.inf
    return CircuitStats(
        loop_length=float(length), mean_width=w_mean, length_over_width=float(length / w_mean),
        straight_fraction=float(straight.mean()), num_corners=corners,
        corners_per_100_widths=float(100.0 * corners / (length / w_mean)),
        tightest_radius_over_width=tightest, longest_straight_over_width=float(longest / w_mean),
        median_abs_kappa_width=float(np.median(akw)), p95_abs_kappa_width=float(np.percentile(akw, 95)),
        kappa_width=kw,
    )


def centerline_stats(points) -> CircuitStats:
    """:func:`circuit_stats` of a centreline ``[N, 4]`` (x, y, width right, width left) [m]."""
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] != 4:
        raise ValueError(f"a centreline must be [N, 4] (x, y, w_right, w_left), got shape {p.shape}")
    return circuit_stats(p[:, :2], p[:, 2] + p[:, 3])


def track_result_stats(result) -> list[CircuitStats]:
    """:func:`circuit_stats` of every valid env of a generated batch.

    Args:
        result: a :class:`~trackgen_env.core.types.TrackResult` (``centerline [E, P]`` vec3,
            ``half_width [E, P]``, ``num_points [E]``, ``valid [E]``), read back to the host.

    Returns:
        one :class:`CircuitStats` per env with ``valid == 1``, in env order.
    """
    c, hw = result.centerline.numpy(), result.half_width.numpy()
    n, valid = result.num_points.numpy(), result.valid.numpy()
    return [circuit_stats(c[e, : n[e], :2], 2.0 * hw[e, : n[e]]) for e in range(c.shape[0]) if valid[e]]
