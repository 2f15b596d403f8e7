"""tools.Lidar: ranges against a NumPy ray cast, closed forms on a straight, noise, NaN poses, the contract."""

import glob
import math
from pathlib import Path

import numpy as np
import pytest
import warp as wp
from stadium import stadium

from trackgen_env import TrackGenConfig, tools
from trackgen_env.course import Course
from trackgen_env.generators.centerline_io import load_centerline_csv
from trackgen_env.generators.track import TrackGenerator

DEV = "cpu"
# The shared folder of real circuits: beside the repository in CI, /work/shared here (never copied in).
_CANDIDATES = [Path(__file__).resolve().parents[2] / "shared" / "real-courses" / "circuits",
               Path("/work/shared/real-courses/circuits")]
REAL = next((p for p in _CANDIDATES if p.is_dir() and glob.glob(str(p / "*.csv"))), None)


# -- the NumPy reference ------------------------------------------------------------------------
def reference_ranges(centerline, normal, half_width, origin, yaw, angles, max_range):
    """[B] float64 ranges: every beam against every segment of both band edges (float64)."""
    c, nrm, hw = (np.asarray(a, np.float64) for a in (centerline, normal, half_width))
    segments = []
    for edge in (c + nrm * hw[:, None], c - nrm * hw[:, None]):
        segments.append(np.concatenate([edge, np.roll(edge, -1, 0)], 1))
    s = np.concatenate(segments)
    a, e = s[:, :2], s[:, 2:] - s[:, :2]
    theta = float(yaw) + np.asarray(angles, np.float64)
    d = np.stack([np.cos(theta), np.sin(theta)], 1)
    w = a[None] - np.asarray(origin, np.float64)[None, None]
    den = d[:, None, 0] * e[None, :, 1] - d[:, None, 1] * e[None, :, 0]
    t_num = w[..., 0] * e[None, :, 1] - w[..., 1] * e[None, :, 0]
    u_num = w[..., 0] * d[:, None, 1] - w[..., 1] * d[:, None, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        t, u = t_num / den, u_num / den
    hit = (den != 0) & (t >= 0) & (u >= 0) & (u <= 1)
    return np.minimum(np.where(hit, t, np.inf).min(1), max_range)


def yaw_quats(yaw):
    yaw = np.asarray(yaw, np.float64)
    q = np.stack([np.zeros_like(yaw), np.zeros_like(yaw), np.sin(0.5 * yaw), np.cos(0.5 * yaw)], 1)
    return wp.array(q.astype(np.float32), dtype=wp.quat, device=DEV)


def scan(course, lidar, position, yaw):
    """Bind the poses ([E, 3], [E]), step the course, return the ranges."""
    course.bind(position=wp.array(np.asarray(position, np.float32), dtype=wp.vec3, device=DEV),
                orientation=yaw_quats(yaw))
    course.step()
    return lidar.result.ranges.numpy().copy()


def random_poses(result, rng, margin):
    """A pose on each env's band: a random point, a lateral offset within ``hw - margin``, any heading."""
    c, nrm, hw, n = (getattr(result, f).numpy() for f in ("centerline", "normal", "half_width", "num_points"))
    E = len(n)
    pos = np.zeros((E, 3), np.float32)
    for e in range(E):
        j = rng.integers(n[e])
        pos[e] = c[e, j] + nrm[e, j] * rng.uniform(-1, 1) * max(hw[e, j] - margin, 0.0)
    return pos, rng.uniform(-math.pi, math.pi, E).astype(np.float32)


def check_against_reference(course, lidar, rng, margin, rounds=2):
    r = course.result
    c, nrm, hw, n = (getattr(r, f).numpy() for f in ("centerline", "normal", "half_width", "num_points"))
    for _ in range(rounds):
        pos, yaw = random_poses(r, rng, margin)
        got = scan(course, lidar, pos, yaw)
        for e in range(len(n)):
            k = n[e]
            ref = reference_ranges(c[e, :k, :2], nrm[e, :k, :2], hw[e, :k], pos[e, :2], yaw[e], lidar.beam_angles,
                                   lidar.max_range)
            np.testing.assert_allclose(got[e], ref, rtol=1e-4, atol=0, err_msg=f"env {e}")


def circuit_course(points, lidar, car_width=2.0, num_envs=1):
    gen = TrackGenerator.from_centerline(points, num_envs=num_envs, device=DEV, point_spacing=0.9, seeds=1)
    return Course.track(gen, checkpoint_spacing=5.0, extra=[lidar])


def stadium_course(lidar, straight=40.0, radius=10.0, width=4.0):
    pts = stadium(straight, radius, 0.5)
    points = np.concatenate([pts, np.full((len(pts), 2), 0.5 * width)], 1)
    gen = TrackGenerator.from_centerline(points, num_envs=1, device=DEV, point_spacing=0.5, seeds=1)
    return Course.track(gen, checkpoint_spacing=2.0, extra=[lidar])


# -- geometry -----------------------------------------------------------------------------------
def test_mirrored_beams_on_a_straight_sum_to_the_width_over_sin_theta():
    # a car on the bottom straight (y = -10, along +x), 1.2 m left of the middle, facing +x: the
    # beam at +theta hits the left edge at (hw - y) / sin theta, the one at -theta the right edge
    lidar = tools.Lidar(181, fov=math.pi, max_range=60.0)
    course = stadium_course(lidar)
    width, y = 4.0, 1.2
    ranges = scan(course, lidar, [[20.0, -10.0 + y, 0.0]], [0.0])[0]
    theta = lidar.beam_angles.astype(np.float64)
    # the beams whose hits lie on the straight (|x| within 18 m of the car)
    on_straight = (np.abs(np.sin(theta)) > 0.2) & (np.abs(np.cos(theta) * ranges) < 18.0)
    mirrored = ranges + ranges[::-1]
    sel = on_straight & on_straight[::-1] & (theta > 0)
    assert sel.sum() > 40
    np.testing.assert_allclose(mirrored[sel], width / np.abs(np.sin(theta[sel])), rtol=1e-5)
    np.testing.assert_allclose(ranges[sel], (0.5 * width - y) / np.sin(theta[sel]), rtol=1e-5)


@pytest.mark.parametrize("kwargs", [{}, {"resolution": 1}, {"cell_capacity": 0}],
                         ids=["grid", "one-cell", "every-segment"])
def test_a_beam_hits_the_nearer_edge_only(kwargs):
    # a car 1 m outside the band's right edge, looking left across it: the right edge is hit
    # first (1 m), the left one (5 m) lies behind it (in one cell, or testing every segment, too)
    lidar = tools.Lidar(1, max_range=60.0, **kwargs)
    course = stadium_course(lidar)
    ranges = scan(course, lidar, [[20.0, -13.0, 0.0]], [0.5 * math.pi])
    np.testing.assert_allclose(ranges[0, 0], 1.0, rtol=1e-5)
    # from the band's middle, straight left: the left edge at the half width
    ranges = scan(course, lidar, [[20.0, -10.0, 0.0]], [0.5 * math.pi])
    np.testing.assert_allclose(ranges[0, 0], 2.0, rtol=1e-5)


def test_max_range_where_nothing_is_hit():
    lidar = tools.Lidar(360, fov=2 * math.pi, max_range=1.5)
    course = stadium_course(lidar)
    ranges = scan(course, lidar, [[20.0, -10.0, 0.0]], [0.3])
    assert np.all(ranges[0, np.abs(np.sin(lidar.beam_angles + 0.3)) < 2.0 / 1.5 - 1e-3] == np.float32(1.5))
    # the beams along the straight see nothing within 1.5 m
    along = np.abs(np.sin(lidar.beam_angles + 0.3)) < 0.5
    assert along.sum() > 50 and np.all(ranges[0, along] == np.float32(1.5))
    # beyond the grid, looking away from the course: nothing
    lidar = tools.Lidar(8, fov=0.5, max_range=30.0)
    course = stadium_course(lidar)
    ranges = scan(course, lidar, [[20.0, -100.0, 0.0]], [-0.5 * math.pi])
    assert np.all(ranges == np.float32(30.0))
    # ... and looking at it from 5 m beyond the right edge: the right edge, entering the grid
    ranges = scan(course, lidar, [[20.0, -17.0, 0.0]], [0.5 * math.pi])
    np.testing.assert_allclose(ranges[0, 4], 5.0 / math.cos(lidar.beam_angles[4]), rtol=1e-5)


# -- against the reference ------------------------------------------------------------------------
@pytest.mark.parametrize("resolution", [8, 32, 100])
def test_generated_tracks_match_a_numpy_ray_cast(resolution):
    lidar = tools.Lidar(360, fov=2 * math.pi, resolution=resolution)
    course = Course.track(TrackGenConfig(num_envs=12, device=DEV), checkpoint_spacing=0.6, extra=[lidar], seeds=3)
    assert lidar.overflow.numpy().sum() == 0
    check_against_reference(course, lidar, np.random.default_rng(resolution), margin=0.1)


def test_a_small_max_range_and_overflowing_cell_lists_match_the_reference():
    lidar = tools.Lidar(200, max_range=2.5, cell_capacity=0)
    course = Course.track(TrackGenConfig(num_envs=6, device=DEV), checkpoint_spacing=0.6, extra=[lidar], seeds=4)
    assert np.all(lidar.overflow.numpy() == 1)  # every env tests every segment
    check_against_reference(course, lidar, np.random.default_rng(1), margin=0.1)
    assert np.any(lidar.result.ranges.numpy() == np.float32(2.5))


def test_an_env_that_overflows_reads_the_same_as_one_that_does_not():
    grid, brute = tools.Lidar(500, name="a"), tools.Lidar(500, cell_capacity=0, name="b")
    course = Course.track(TrackGenConfig(num_envs=4, device=DEV), checkpoint_spacing=0.6, extra=[grid, brute], seeds=5)
    pos, yaw = random_poses(course.result, np.random.default_rng(0), 0.1)
    scan(course, grid, pos, yaw)
    np.testing.assert_allclose(grid.result.ranges.numpy(), brute.result.ranges.numpy(), rtol=1e-6)


@pytest.mark.skipif(REAL is None, reason="the shared real-courses/circuits folder is not present")
@pytest.mark.parametrize("name", ["Spielberg", "Catalunya", "Melbourne", "Sakhir"])
def test_real_circuits_match_a_numpy_ray_cast(name):
    path = REAL / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"{name}.csv is not in the folder")
    lidar = tools.Lidar(540, resolution=96)
    course = circuit_course(load_centerline_csv(path), lidar, num_envs=3)
    check_against_reference(course, lidar, np.random.default_rng(7), margin=1.0)


# -- noise, bad poses, invalid envs -------------------------------------------------------------
def noisy_ranges(seed, std, num_envs=3, steps=2):
    lidar = tools.Lidar(100, noise_std=std)
    course = Course.track(TrackGenConfig(num_envs=num_envs, device=DEV), checkpoint_spacing=0.6, extra=[lidar],
                          seeds=seed)
    r = course.result
    course.bind(position=wp.array(r.start_position.numpy(), dtype=wp.vec3, device=DEV),
                orientation=wp.array(r.start_orientation.numpy(), dtype=wp.quat, device=DEV))
    out = []
    for _ in range(steps):
        course.step()
        out.append(lidar.result.ranges.numpy().copy())
    course.reset()
    course.step()
    out.append(lidar.result.ranges.numpy().copy())
    return np.stack(out)


def test_noise_is_deterministic_per_seed_and_gaussian():
    a, b, c = noisy_ranges(11, 0.05), noisy_ranges(11, 0.05), noisy_ranges(12, 0.05)
    np.testing.assert_array_equal(a, b)
    clean = noisy_ranges(11, 0.0)
    assert not np.array_equal(a[:, :1], c[:, :1])
    assert not np.array_equal(a[0], a[1])  # a new draw every scan ...
    np.testing.assert_array_equal(a[0], a[2])  # ... counted from the reset
    residual = (a - clean)[clean < 29.0]
    assert abs(residual.mean()) < 0.01 and 0.045 < residual.std() < 0.055
    assert a.min() >= 0.0 and a.max() <= 30.0
    # an env's noise does not depend on num_envs (env i's course and stream depend on its seed only)
    wide = noisy_ranges(11, 0.05, num_envs=5)
    np.testing.assert_array_equal(wide[:, :3], a)


def test_a_nan_or_infinite_pose_reads_max_range_never_nan():
    lidar = tools.Lidar(64, max_range=30.0, noise_std=0.01)
    course = Course.track(TrackGenConfig(num_envs=4, device=DEV), checkpoint_spacing=0.6, extra=[lidar], seeds=2)
    r = course.result
    pos = r.start_position.numpy().copy()
    pos[0, 0] = np.nan
    pos[1, 1] = np.inf
    q = r.start_orientation.numpy().copy()
    q[2] = np.nan
    course.bind(position=wp.array(pos, dtype=wp.vec3, device=DEV), orientation=wp.array(q, dtype=wp.quat, device=DEV))
    course.step()
    ranges = lidar.result.ranges.numpy()
    assert np.all(np.isfinite(ranges))
    np.testing.assert_allclose(ranges[:3], 30.0, atol=0.1)  # max range, plus the noise, clipped
    assert ranges[3].min() < 1.0  # a finite pose still sees its band


def test_an_invalid_env_reads_max_range():
    lidar = tools.Lidar(16, max_range=7.0)
    course = Course.track(TrackGenConfig(num_envs=2, device=DEV), checkpoint_spacing=0.6, extra=[lidar], seeds=2)
    course.result.valid.assign(np.array([0, 1], np.int32))
    lidar.on_generate(lidar.context, None)  # the bake reads valid
    pos, yaw = random_poses(course.result, np.random.default_rng(0), 0.1)
    ranges = scan(course, lidar, pos, yaw)
    assert np.all(ranges[0] == np.float32(7.0)) and ranges[1].min() < 7.0


# -- arguments and the contract -----------------------------------------------------------------
def test_beam_angles_are_f1tenth_gyms():
    lidar = tools.Lidar()
    assert lidar.num_beams == 1080 and lidar.fov == 4.71 and lidar.max_range == 30.0
    np.testing.assert_allclose(lidar.beam_angles, np.linspace(-2.355, 2.355, 1080), atol=1e-6)
    assert lidar.beam_angles.dtype == np.float32
    np.testing.assert_array_equal(tools.Lidar(1).beam_angles, [0.0])


@pytest.mark.parametrize("kwargs, error", [
    ({"num_beams": 0}, ValueError), ({"num_beams": 2.0}, TypeError), ({"fov": 0.0}, ValueError),
    ({"fov": 7.0}, ValueError), ({"max_range": -1.0}, ValueError), ({"max_range": "30"}, TypeError),
    ({"noise_std": -0.1}, ValueError), ({"resolution": 0}, ValueError), ({"cell_capacity": -1}, ValueError),
])
def test_bad_arguments_are_refused(kwargs, error):
    with pytest.raises(error):
        tools.Lidar(**kwargs)


def test_lidar_passes_check_component():
    E = 3
    gen = TrackGenerator(TrackGenConfig(num_envs=E, device=DEV), seeds=1)
    inputs = {"position": wp.zeros(E, dtype=wp.vec3, device=DEV),
              "orientation": wp.array(np.tile([0, 0, 0, 1.0], (E, 1)).astype(np.float32), dtype=wp.quat, device=DEV)}
    tools.check_component(tools.Lidar(32, noise_std=0.01), gen, inputs=inputs)


def test_a_band_that_crosses_itself_blocks_the_beams_as_a_wall():
    # a figure-8 (a bridge seen from above): at the crossing, the other stretch's edges are walls too
    t = np.linspace(0.0, 2.0 * np.pi, 400, endpoint=False)
    x, y = 30.0 * np.sin(t), 15.0 * np.sin(2.0 * t)
    points = np.stack([x, y, np.full_like(x, 2.0), np.full_like(x, 2.0)], 1)
    lidar = tools.Lidar(720, fov=2 * math.pi, max_range=40.0)
    course = circuit_course(points, lidar, num_envs=4)
    check_against_reference(course, lidar, np.random.default_rng(3), margin=0.3, rounds=3)
    # from the crossing's middle, heading along one stretch (straight there: an inflection): the
    # beam ahead meets the other stretch's edge, 2 m away (the stretches cross at right angles),
    # where this stretch's own edges lie far ahead
    r = course.result
    c = r.centerline.numpy()[0, : r.num_points.numpy()[0], :2]
    j = int(np.argmin(np.linalg.norm(c, axis=1)))
    tangent = c[(j + 1) % len(c)] - c[j - 1]
    yaw = math.atan2(tangent[1], tangent[0])
    ranges = scan(course, lidar, np.tile([c[j, 0], c[j, 1], 0.0], (4, 1)), np.full(4, yaw))
    ahead = int(np.argmin(np.abs(lidar.beam_angles)))
    assert 1.9 < ranges[0, ahead] < 2.2
