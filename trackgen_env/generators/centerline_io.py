"""Real circuits as closed centrelines: load, check, write into a generator's input.

The layout is the common one of public racetrack databases (e.g. TUMFTM
racetrack-database): a CSV with a ``#`` header and the columns ``x_m, y_m,
w_tr_right_m, w_tr_left_m`` — a closed centreline [m] and the track width to its right
and left [m]. The first point is not repeated at the end (a repeated one is dropped).
A real circuit may cross itself on a bridge, so a 2-D self-crossing is not an error.

A track generator built with ``TrackGenConfig(source="centerline", max_input_points=N)``
reads the input ``"centerline.xy"`` (``[E, N]`` vec4: x, y, width right, width left)
and ``"centerline.count"`` (``[E]`` int32); :func:`write_centerline` writes both in place.
"""

from __future__ import annotations

import hashlib
import os
import warnings

import numpy as np
import warp as wp

__all__ = ["load_centerline_csv", "check_centerline", "band_folds", "spline_rows", "thin_dense_rows",
           "split_long_segments", "warn_far_coordinates", "centerline_length", "write_centerline"]

# A vertex where the path turns back by more than ~177 deg (cos < this) retraces its last
# segment: an out-and-back's turnaround (real circuits' sharpest vertex: cos 0.73).
FOLD_COS = -0.999
# The closing chord (last row -> first) warns when longer than this many median spacings.
OPEN_GAP_RATIO = 5.0
# [m] from this distance from the origin on, float32 steps by 1/64 m or more: a warning (warn_far_coordinates).
FAR_COORDINATE = 131072.0
# A segment longer than this many median spacings is split evenly (split_long_segments).
LONG_SEGMENT_RATIO = 1.5


def load_centerline_csv(path: str | os.PathLike) -> np.ndarray:
    """Load a closed centreline from a CSV file.

    Args:
        path: a CSV with 4 comma-separated columns ``x_m, y_m, w_tr_right_m, w_tr_left_m``;
            lines starting with ``#`` are comments, and a first row of column names (with or
            without the ``#``) is a header.

    Returns:
        ``[N, 4]`` float64: x [m], y [m], width right [m], width left [m], checked by
        :func:`check_centerline`.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file does not parse as 4 numeric columns, or fails the checks.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no centreline CSV at {path!r}")
    with open(path, encoding="utf-8-sig") as f:  # "-sig": a spreadsheet's byte-order mark is no value
        lines = [line for line in f if line.strip()]  # blank lines, whitespace included, carry nothing
    rows = [k for k, line in enumerate(lines) if not line.lstrip().startswith("#")]
    if rows and _is_header(lines[rows[0]]):  # a header row written without the "#" (x_m,y_m,...)
        del lines[rows[0]]
    if not any(not line.lstrip().startswith("#") for line in lines):
        raise ValueError(f"{path}: no rows: expected 4 numeric comma-separated columns x_m, y_m, w_tr_right_m, "
                         f"w_tr_left_m")
    try:
        data = np.loadtxt(lines, delimiter=",", comments="#", dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise ValueError(
            f"{path}: expected 4 numeric comma-separated columns x_m, y_m, w_tr_right_m, w_tr_left_m ({exc})"
        ) from exc
    return check_centerline(data, name=path)


def _is_header(line: str) -> bool:
    """Whether a CSV's first row names its columns: none of its fields is a number."""
    for field in line.split(","):
        try:
            float(field)
            return False
        except ValueError:
            pass
    return True


_WARNED_OPEN: set[bytes] = set()


def _first_time(data: np.ndarray, kind: str = "open") -> bool:
    """Whether this polyline's warning of ``kind`` is new: a loaded CSV is checked again by
    the env and by the generator it builds, and one warning per polyline is enough."""
    key = kind.encode() + hashlib.sha1(np.ascontiguousarray(data).tobytes()).digest()
    if key in _WARNED_OPEN:
        return False
    _WARNED_OPEN.add(key)
    return True


def band_folds(data: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Where the band of a checked centreline folds over itself: per side (``"left"``, ``"right"``),
    the rows where that edge runs backwards (its width is more than the radius of the corner it
    is inside of, so the edge turns back on itself). Real circuits at their scale have none; a
    circuit whose x, y were scaled without its widths has many."""
    xy = data[:, :2] - data[:, :2].mean(axis=0)
    tangent = np.roll(xy, -1, axis=0) - np.roll(xy, 1, axis=0)
    tangent /= np.linalg.norm(tangent, axis=1, keepdims=True)
    normal = np.stack([-tangent[:, 1], tangent[:, 0]], axis=1)  # to the left
    step = np.roll(xy, -1, axis=0) - xy
    folds = []
    for side, width, sign in (("left", data[:, 3], 1.0), ("right", data[:, 2], -1.0)):
        edge = xy + sign * width[:, None] * normal
        folds.append((side, np.flatnonzero(((np.roll(edge, -1, axis=0) - edge) * step).sum(axis=1) < 0.0)))
    return folds


def _warn_band_folds(data: np.ndarray, name: str) -> None:
    """Warn (once per polyline and process) where the band folds over itself (:func:`band_folds`)."""
    folds = [(side, rows) for side, rows in band_folds(data) if rows.size]
    if not folds or not _first_time(data, "fold"):
        return
    side, rows = min(folds, key=lambda f: f[1][0])
    i = int(rows[0])
    xy = data[:, :2]
    j = (i + 1) % len(xy)
    # the centreline's turn from row i to row i + 1 (its tangents there, as band_folds takes them)
    a, b = xy[j] - xy[i - 1], xy[(j + 1) % len(xy)] - xy[i]
    turn = abs(float(np.arctan2(a[0] * b[1] - a[1] * b[0], a @ b)))
    radius = f"{float(np.linalg.norm(xy[j] - xy[i])) / turn:.3g} m" if turn > 0.0 else "less than the width"
    count = sum(int(r.size) for _, r in folds)
    width = data[i, 3] if side == "left" else data[i, 2]
    warnings.warn(
        f"{name}: the band folds over itself at row {i} (x {data[i, 0]:.6g} m, y {data[i, 1]:.6g} m) and at "
        f"{count - 1} more rows: its {side} width there ({width:.6g} m) is more than the radius of the corner "
        f"({radius}), so its {side} edge turns back on itself and the band overlaps itself. Check the widths "
        f"(their unit) and the scale: x, y and the widths scale together",
        UserWarning,
        stacklevel=3,
    )


def check_centerline(points, *, name: str = "centerline") -> np.ndarray:
    """Check a closed centreline and return it as ``[N, 4]`` float64.

    Checks: shape ``[N, 4]`` with ``N >= 3`` (after dropping a last point that repeats the
    first), finite values, widths > 0, no two consecutive points closer than 1e-6 m, at
    least 3 distinct points, and a loop that goes round once: it never folds back on itself
    (no vertex turning back by more than ~177 deg) and no two of its segments overlap (run
    along each other), so an out-and-back polyline, whose enclosed area is zero, is refused.
    A self-crossing (a bridge; a figure eight, whose signed area may be zero too) is allowed.

    Warns:
        UserWarning: the closing chord from the last row to the first is over 5 times the
            median spacing of the points (an open polyline, closed here by a straight chord);
            a coordinate 131 km or more from the origin (float32 steps by 1.6 cm or more there:
            :func:`warn_far_coordinates`); a band that folds over itself (an edge that turns
            back where a width exceeds the corner's radius: :func:`band_folds`), naming the
            first such row and its coordinates; each once per polyline and process.

    Raises:
        ValueError: a failed check, naming the row and what was expected.
    """
    data = np.array(points, dtype=np.float64, copy=True)
    if data.ndim != 2 or data.shape[1] != 4:
        raise ValueError(
            f"{name}: expected rows of 4 columns (x_m, y_m, w_tr_right_m, w_tr_left_m), got shape {data.shape}"
        )
    if len(data) >= 2 and np.allclose(data[0, :2], data[-1, :2], rtol=0.0, atol=1e-9):
        data = data[:-1]
    if len(data) < 3:
        raise ValueError(f"{name}: a closed centreline needs >= 3 distinct points, got {len(data)}")
    bad = np.flatnonzero(~np.isfinite(data).all(axis=1))
    if bad.size:
        raise ValueError(f"{name}: non-finite value in row {bad[0]}: {data[bad[0]].tolist()}")
    bad = np.flatnonzero((data[:, 2] <= 0) | (data[:, 3] <= 0))
    if bad.size:
        raise ValueError(f"{name}: track widths must be > 0 m, row {bad[0]} has {data[bad[0], 2:].tolist()}")
    seg = np.linalg.norm(np.roll(data[:, :2], -1, axis=0) - data[:, :2], axis=1)
    bad = np.flatnonzero(seg < 1e-6)
    if bad.size:
        raise ValueError(f"{name}: rows {bad[0]} and {(bad[0] + 1) % len(data)} are the same point")
    distinct = len(np.unique(data[:, :2], axis=0))
    if distinct < 3:
        raise ValueError(f"{name}: a closed centreline needs >= 3 distinct points, got {distinct} in {len(data)} rows")
    xy = data[:, :2] - data[:, :2].mean(axis=0)
    d_out = np.roll(xy, -1, axis=0) - xy  # segment i: row i -> row i + 1
    d_in = np.roll(d_out, 1, axis=0)
    cos = (d_in * d_out).sum(axis=1) / (seg * np.roll(seg, 1))
    bad = np.flatnonzero(cos < FOLD_COS)
    if bad.size:
        i = bad[0]
        raise ValueError(
            f"{name}: the centreline folds back on itself at row {i} (it turns by "
            f"{np.degrees(np.arccos(np.clip(cos[i], -1.0, 1.0))):.1f} deg, expected < 177 deg): an "
            f"out-and-back polyline retraces its segments and is no closed track"
        )
    i, j = _overlapping_segments(xy, seg)
    if i >= 0:
        raise ValueError(
            f"{name}: segments {i}-{(i + 1) % len(data)} and {j}-{(j + 1) % len(data)} overlap (the centreline "
            f"retraces itself, expected a loop that goes round once: a bridge may cross, not run along)"
        )
    warn_far_coordinates(data[:, :2], name)
    _warn_band_folds(data, name)
    spacing = float(np.median(seg[:-1]))
    if seg[-1] > OPEN_GAP_RATIO * spacing and _first_time(data):
        warnings.warn(
            f"{name}: the last row is {seg[-1]:.6g} m from the first, {seg[-1] / spacing:.1f} times the median "
            f"spacing of the points ({spacing:.6g} m): an open polyline? It is closed by a straight chord",
            UserWarning,
            stacklevel=2,
        )
    return data


def thin_dense_rows(data: np.ndarray, min_spacing: float) -> np.ndarray:
    """The rows of a checked centreline (:func:`check_centerline`) as given when no two
    consecutive rows are closer than ``min_spacing`` [m]; else the closed polyline through them
    sampled evenly at ``floor(length / min_spacing)`` rows (widths interpolated): what a
    generator resampling every ``2 * min_spacing`` is given.

    Rows much closer together than the resampling carry no shape it can hold, and the
    spline's second derivative through them is float32 rounding: a circle of 50 m radius
    given every centimetre observed curvatures of -0.47 to 0.47 1/m where 0.02 is right.
    Evenly sampled (on the polyline: its length is kept but for the new chords' sagitta), the
    rows' spacing is the same all round (a row dropped here and there would leave an uneven
    gap, where the spline bends).
    """
    xy = data[:, :2]
    seg = np.linalg.norm(np.roll(xy, -1, axis=0) - xy, axis=1)
    if seg.min() >= min_spacing:
        return data
    along = np.concatenate([[0.0], np.cumsum(seg)])
    count = max(3, int(along[-1] // min_spacing))
    at = np.arange(count) * (along[-1] / count)
    closed = np.vstack([data, data[:1]])
    return np.stack([np.interp(at, along, closed[:, c]) for c in range(4)], axis=1)


def split_long_segments(data: np.ndarray) -> np.ndarray:
    """The rows of a checked centreline (:func:`check_centerline`) with every segment over
    ``LONG_SEGMENT_RATIO`` median spacings split into ``ceil(length / median)`` equal pieces
    (the new rows on the chord, widths interpolated): what a generator is given.

    The spline through the rows (uniform Catmull-Rom) overshoots where a long segment meets
    short ones, by a good part of the long one: a straight given by its two ends, between
    corners given point by point, ran 14 m past the corner and turned back. A polyline
    simplified where it is straight (Douglas-Peucker) has such segments; evenly spaced rows
    (the racetrack databases) have none and are returned as they are.
    """
    seg = np.linalg.norm(np.roll(data[:, :2], -1, axis=0) - data[:, :2], axis=1)
    spacing = float(np.median(seg))
    pieces = np.where(seg > LONG_SEGMENT_RATIO * spacing, np.ceil(seg / spacing), 1.0).astype(np.int64)
    if np.all(pieces == 1):
        return data
    nxt = np.roll(data, -1, axis=0)
    rows = [data[i] + (nxt[i] - data[i]) * (k / pieces[i]) for i in range(len(data)) for k in range(pieces[i])]
    return np.array(rows)


def spline_rows(data: np.ndarray, point_spacing: float) -> np.ndarray:
    """What a generator resampling every ``point_spacing`` [m] is given of a checked centreline
    (:func:`check_centerline`): its rows closer than half the spacing sampled evenly
    (:func:`thin_dense_rows`), then its long segments split (:func:`split_long_segments`)."""
    return split_long_segments(thin_dense_rows(data, 0.5 * point_spacing))


def warn_far_coordinates(xyz: np.ndarray, name: str) -> None:
    """Warn (once per set of points and process) when a coordinate lies ``FAR_COORDINATE`` (131 km)
    or more from the origin: the courses are float32, whose step there is 1.6 cm or more (0.5 m
    at a UTM northing of 5e6 m), and the spline, the band and the car's position lose it."""
    far = float(np.abs(xyz).max())
    if far >= FAR_COORDINATE and _first_time(np.ascontiguousarray(xyz)):
        warnings.warn(
            f"{name}: a coordinate lies {far:.6g} m from the origin, where float32 (the courses' type) steps by "
            f"{float(np.spacing(np.float32(far))):.3g} m: subtract an origin near the course first (e.g. its first "
            f"point or its centroid)",
            UserWarning,
            stacklevel=3,
        )


def _overlapping_segments(xy: np.ndarray, seg: np.ndarray) -> tuple[int, int]:
    """A pair (i, j) of distinct segments that are parallel and where the midpoint of
    segment i lies on segment j (a run of the polyline traversed twice), else (-1, -1).
    Segment i runs from row i to row i + 1 (closing: the last to the first).

    A uniform grid of cells as wide as the longest segment finds the candidates: a segment
    holding a point starts within one cell of it, so each midpoint is tested against the
    segments starting in its 3 x 3 cells only (about linear in N for a real circuit).
    """
    n = len(xy)
    d = np.roll(xy, -1, axis=0) - xy
    u = d / seg[:, None]
    mid = xy + 0.5 * d
    tol = 1e-9 * max(1.0, float(np.abs(xy).max()))
    cell = float(seg.max())
    start = np.floor((xy - xy.min(axis=0)) / cell).astype(np.int64)
    at = np.floor((mid - xy.min(axis=0)) / cell).astype(np.int64)
    rows = int(start[:, 1].max()) + 3
    key = lambda c: (c[:, 0] + 1) * rows + (c[:, 1] + 1)  # noqa: E731  (cells -1 .. max + 1 stay distinct)
    order = np.argsort(key(start), kind="stable")
    sorted_keys = key(start)[order]
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            k = key(at + np.array([dx, dy]))
            lo = np.searchsorted(sorted_keys, k, "left")
            counts = np.searchsorted(sorted_keys, k, "right") - lo
            total = int(counts.sum())
            if total == 0:
                continue
            i = np.repeat(np.arange(n), counts)
            offset = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            j = order[np.repeat(lo, counts) + offset]
            t = np.clip(((mid[i] - xy[j]) * d[j]).sum(axis=1) / (seg[j] * seg[j]), 0.0, 1.0)
            dist = np.linalg.norm(xy[j] + t[:, None] * d[j] - mid[i], axis=1)
            sin = np.abs(u[i, 0] * u[j, 1] - u[i, 1] * u[j, 0])
            hit = np.flatnonzero((dist <= tol) & (sin <= 1e-6) & (i != j))
            if hit.size:
                first = hit[np.lexsort((j[hit], i[hit]))[0]]
                return int(i[first]), int(j[first])
    return -1, -1


def centerline_length(points: np.ndarray) -> float:
    """[m] length of the closed polyline through the ``[N, >=2]`` points."""
    xy = np.asarray(points, dtype=np.float64)[:, :2]
    return float(np.linalg.norm(np.roll(xy, -1, axis=0) - xy, axis=1).sum())


def write_centerline(generator, points: np.ndarray, mask: np.ndarray | None = None) -> None:
    """Write one centreline into the generator inputs of every env (or the ``mask``ed envs).

    Writes ``generator.inputs["centerline.xy"]`` and ``["centerline.count"]`` in place
    (stable arrays that every regeneration and recorded graph reads); regenerate afterwards.

    Args:
        generator: a track generator built with ``source="centerline"``.
        points: ``[N, 4]`` (x, y, width right, width left) [m], checked by :func:`check_centerline`,
            then made :func:`spline_rows` at the generator's ``point_spacing``.
        mask: ``[E]`` bools selecting the envs to write (default: all).

    Raises:
        KeyError: the generator has no ``"centerline.xy"`` input.
        ValueError: a failed check, or ``N`` over the input capacity ``max_input_points``.
    """
    if "centerline.xy" not in generator.inputs:
        raise KeyError('this generator has no "centerline.xy" input: build it with TrackGenConfig(source="centerline")')
    data = spline_rows(check_centerline(points), generator.spec.settings["point_spacing"])
    xy, count = generator.inputs["centerline.xy"], generator.inputs["centerline.count"]
    num_envs, capacity = xy.shape
    if len(data) > capacity:
        raise ValueError(f"the centreline has {len(data)} points (as spline_rows gives them), over the input capacity "
                         f"max_input_points={capacity}")
    rows = np.zeros((num_envs, capacity, 4), dtype=np.float32)
    counts = count.numpy().copy()
    sel = np.ones(num_envs, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    old = xy.numpy().reshape(num_envs, capacity, 4)
    rows[~sel] = old[~sel]
    rows[sel, : len(data)] = data.astype(np.float32)
    counts[sel] = len(data)
    xy.assign(wp.array(rows, dtype=wp.vec4, device="cpu"))
    count.assign(counts.astype(np.int32))
