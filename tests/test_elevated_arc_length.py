"""On an elevated track (``TrackGenConfig(elevation=h)``) the course measures the 3-D arc
length: the loop length, the checkpoints' spacing, ``Progress``'s lap fraction and the
``Localizer``'s ``s`` follow the centreline up and down its hills, not its x-y shadow."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from trackgen_env import TrackGenConfig, TrackGenerator, tools
from trackgen_env.course import Course

E = 4
SPACING = 0.6


@pytest.fixture
def elevated(device):
    gen = TrackGenerator(TrackGenConfig(num_envs=E, device=device, elevation=2.0), seeds=3)
    course = Course(gen, [tools.Checkpoints(SPACING), tools.Progress(), tools.Localizer()])
    assert gen.result.valid.numpy().all()
    return course


def _lengths(course):
    r = course.result
    line, n = r.centerline.numpy().astype(np.float64), r.num_points.numpy()
    out = []
    for e in range(E):
        seg = np.roll(line[e, :n[e]], -1, axis=0) - line[e, :n[e]]
        out.append((np.linalg.norm(seg, axis=1).sum(), np.linalg.norm(seg[:, :2], axis=1).sum()))
    return np.array(out)


def test_loop_length_is_the_3d_length_of_the_centreline(elevated):
    length = elevated.result.loop_length.numpy()
    both = _lengths(elevated)
    np.testing.assert_allclose(length, both[:, 0], rtol=5e-4)
    # the x-y length is measurably shorter: the check above tells them apart
    assert np.all(length - both[:, 1] > 20 * 5e-4 * length)


def test_checkpoints_are_spaced_by_3d_arc_length(elevated):
    cps = elevated.checkpoints
    num, s = cps.num_checkpoints.numpy(), cps.arc_length.numpy()
    pos = cps.position.numpy().astype(np.float64)
    length = elevated.result.loop_length.numpy()
    for e in range(E):
        n = num[e]
        assert n == max(3, int(np.floor(length[e] / SPACING)))
        np.testing.assert_allclose(np.diff(s[e, :n]), length[e] / n, rtol=1e-4)
        # consecutive checkpoints lie ~spacing apart in 3-D (the chord of a short arc),
        # farther than their x-y distance wherever the road climbs
        p = pos[e, :n]
        d3 = np.linalg.norm(np.roll(p, -1, axis=0) - p, axis=1)
        d2 = np.linalg.norm((np.roll(p, -1, axis=0) - p)[:, :2], axis=1)
        assert np.all(d3 <= length[e] / n + 1e-4) and np.median(d3) > 0.99 * length[e] / n
        assert np.any(d3 - d2 > 0.01)


def _point_at(line, s_pts, n, length, s):
    """The point of the polyline at arc length ``s`` (linear between its points)."""
    s = s % length
    j = int(np.searchsorted(s_pts[:n], s, side="right") - 1)
    s1 = s_pts[j + 1] if j + 1 < n else length
    t = (s - s_pts[j]) / (s1 - s_pts[j])
    return line[j] * (1 - t) + line[(j + 1) % n] * t


def test_progress_and_localizer_follow_3d_arc_length(elevated, device):
    """A body moved along the 3-D centreline in 5 cm steps of arc length: the lap fraction is
    the share of checkpoints behind it (checkpoints every loop_length / n of 3-D arc), a lap
    ends after one loop length, and the localizer's s is the distance travelled."""
    course = elevated
    r = course.result
    line, s_pts = r.centerline.numpy().astype(np.float64), r.arc_length.numpy().astype(np.float64)
    n_pts, length = r.num_points.numpy(), r.loop_length.numpy().astype(np.float64)
    num = course.checkpoints.num_checkpoints.numpy()
    pos = wp.zeros(E, dtype=wp.vec3, device=device)
    course.bind(position=pos)
    ds = 0.05
    steps = int(np.ceil(1.2 * length.max() / ds))
    laps_at = np.full(E, np.nan)
    checked = 0
    for i in range(steps):
        s = i * ds
        pos.assign(np.array([_point_at(line[e], s_pts[e], n_pts[e], length[e], s) for e in range(E)],
                            dtype=np.float32))
        res = course.step()
        frac, laps = res.events.lap_fraction.numpy(), res.events.laps.numpy()
        loc_s = res.frame.s.numpy()
        for e in range(E):
            if laps[e] >= 1 and np.isnan(laps_at[e]):
                laps_at[e] = s
            step = length[e] / num[e]
            ahead = (s % length[e]) / step
            if i > 0 and abs(ahead - round(ahead)) * step > 2 * ds:  # away from a checkpoint
                assert frac[e] == pytest.approx(np.floor(ahead) / num[e]), (e, s)
                checked += 1
            gap = abs(loc_s[e] - s % length[e])
            assert min(gap, length[e] - gap) < 1e-3 * length[e], (e, s, loc_s[e])
    assert checked > E * 100
    # the lap ends on the first step at or past one 3-D loop length
    np.testing.assert_array_less(laps_at - length, ds + 1e-6)
    assert np.all(laps_at >= length - 1e-3)


def test_a_body_on_the_baked_ground_reads_its_lateral_offset_and_arc_length(device):
    """docs/elevated-tracks.md, "Keep your bodies on the ground": a body beside the centreline,
    its z set from the height field, reads its x-y offset and the arc length of its point; at
    z = 0 under the hills it does not."""
    gen = TrackGenerator(TrackGenConfig(num_envs=E, device=device, elevation=2.0), seeds=3)
    course = Course(gen, [tools.Localizer(), tools.HeightFieldBake(128)])
    pos = wp.zeros(E, dtype=wp.vec3, device=device)
    ground = wp.zeros(E, dtype=float, device=device)
    course.bind(position=pos)
    r = gen.result
    line, s_pts, normal = r.centerline.numpy().copy(), r.arc_length.numpy().copy(), r.normal.numpy().copy()
    length = r.loop_length.numpy()
    offset = 0.15  # [m] to the left, across the road
    worst = {"ground": [0.0, 0.0], "z=0": [0.0, 0.0]}
    for j in range(0, 180, 3):
        p = line[:, j] + offset * normal[:, j]
        p[:, 2] = 0.0
        for mode in ("z=0", "ground"):
            if mode == "ground":
                pos.assign(p)
                course.heightfield.sample(pos, ground)
                p[:, 2] = ground.numpy()
            pos.assign(p)
            frame = course.step().frame
            ds = np.abs(frame.s.numpy() - s_pts[:, j])
            worst[mode][0] = max(worst[mode][0], np.minimum(ds, length - ds).max())
            worst[mode][1] = max(worst[mode][1], np.abs(frame.lateral_offset.numpy() - offset).max())
    assert worst["ground"][0] < 0.05 and worst["ground"][1] < 0.01, worst
    assert worst["z=0"][0] > 0.5 and worst["z=0"][1] > 0.1, worst
