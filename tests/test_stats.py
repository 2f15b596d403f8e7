"""Circuit statistics (trackgen_env.core.stats) on a stadium equal their closed forms; real and generated inputs."""

import math

import numpy as np
import pytest

from trackgen_env import TrackGenConfig, TrackGenerator
from trackgen_env.core.stats import (CORNER_MIN_ANGLE, SAMPLES_PER_WIDTH, STRAIGHT_KAPPA_WIDTH, centerline_stats,
                                     circuit_stats, track_result_stats)

from stadium import stadium

# a stadium of 12 m wide track: 600 m straights, 60 m radius semicircles (w / R = 0.2)
W, LS, R = 12.0, 600.0, 60.0
LOOP = 2 * LS + 2 * math.pi * R
# the curvature is estimated over a chord of one width: where a straight meets an arc, up to
# half a width each side reads neither as straight nor as arc
BLUR = 1.0  # [widths] on a straight's length


@pytest.fixture(scope="module")
def st():
    return circuit_stats(stadium(LS, R, 0.5), W)


def test_stadium_length_and_width(st):
    assert st.loop_length == pytest.approx(LOOP, rel=1e-4)
    assert st.mean_width == pytest.approx(W)
    assert st.length_over_width == pytest.approx(LOOP / W, rel=1e-4)


def test_stadium_straights(st):
    assert st.straight_fraction == pytest.approx(2 * LS / LOOP, abs=2 * BLUR * W / LOOP)
    assert st.longest_straight_over_width == pytest.approx(LS / W, abs=BLUR)


def test_stadium_corners(st):
    assert st.num_corners == 2
    assert st.corners_per_100_widths == pytest.approx(100 * 2 / (LOOP / W), rel=1e-4)


def test_stadium_curvature_times_width(st):
    assert st.tightest_radius_over_width == pytest.approx(R / W, rel=1e-3)
    assert st.p95_abs_kappa_width == pytest.approx(W / R, rel=1e-3)  # the arcs are 39% of the loop
    assert st.median_abs_kappa_width == pytest.approx(0.0, abs=1e-6)  # the straights 61%
    on_arc = np.abs(st.kappa_width) > STRAIGHT_KAPPA_WIDTH
    assert np.all(st.kappa_width[on_arc] > 0)  # counter-clockwise: left turns


def test_measures_are_scale_free(st):
    small = circuit_stats(stadium(LS / 15, R / 15, 0.5 / 15), W / 15)
    for k, v in st.row().items():
        assert small.row()[k] == pytest.approx(v, rel=1e-3, abs=1e-9), k


def test_small_kinks_are_not_corners():
    """A bump of +5, -10, +5 deg (each < CORNER_MIN_ANGLE) on a straight adds no corner."""
    assert math.radians(10) < CORNER_MIN_ANGLE
    kinked = stadium(LS, R, 0.5)
    bottom = kinked[:, 1] < -R + 1e-9
    x = kinked[bottom, 0]
    kinked[bottom, 1] += math.tan(math.radians(5)) * np.maximum(0.0, np.minimum(x - LS / 4, 3 * LS / 4 - x))
    st = circuit_stats(kinked, W)
    assert st.num_corners == 2
    assert st.straight_fraction < circuit_stats(stadium(LS, R, 0.5), W).straight_fraction  # they do bend it


def test_centerline_rows_and_widths():
    xy = stadium(LS, R, 2.0)
    pts = np.column_stack([xy, np.full(len(xy), 5.0), np.full(len(xy), 7.0)])  # 12 m in all
    assert centerline_stats(pts).mean_width == pytest.approx(W)
    with pytest.raises(ValueError, match=r"\[N, 4\]"):
        centerline_stats(xy)
    with pytest.raises(ValueError, match="width"):
        circuit_stats(xy, -1.0)


def test_generated_batch_stats_cover_every_valid_env():
    r = TrackGenerator(TrackGenConfig(num_envs=8, device="cpu"), seeds=0).generate()
    stats = track_result_stats(r)
    assert len(stats) == int(r.valid.numpy().sum())
    s = stats[0]
    assert s.mean_width == pytest.approx(TrackGenConfig().width, rel=1e-4)
    assert s.kappa_width.size == pytest.approx(s.loop_length / s.mean_width * SAMPLES_PER_WIDTH, abs=1)
