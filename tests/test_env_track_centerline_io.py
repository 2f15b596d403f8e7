"""Loading real-circuit centrelines (trackgen_env.generators.centerline_io)."""

import math

import numpy as np
import pytest

from trackgen_env.generators.centerline_io import centerline_length, check_centerline, load_centerline_csv

HEADER = "# x_m,y_m,w_tr_right_m,w_tr_left_m\n"


def _circle(n=40, radius=50.0, wr=5.0, wl=6.0):
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.stack([radius * np.cos(a), radius * np.sin(a), np.full(n, wr), np.full(n, wl)], axis=1)


def _write(path, rows, header=HEADER):
    path.write_text(header + "\n".join(",".join(f"{v:.6f}" for v in r) for r in rows) + "\n")
    return path


def test_csv_loads_as_n_by_4(tmp_path):
    rows = _circle()
    data = load_centerline_csv(_write(tmp_path / "c.csv", rows))
    assert data.shape == (40, 4)
    np.testing.assert_allclose(data, rows, atol=1e-6)


def test_repeated_closing_point_is_dropped(tmp_path):
    rows = _circle()
    data = load_centerline_csv(_write(tmp_path / "c.csv", np.vstack([rows, rows[:1]])))
    assert data.shape == (40, 4)


def test_length_of_a_closed_polygon():
    n, r = 400, 50.0
    assert centerline_length(_circle(n, r)) == pytest.approx(2 * n * r * math.sin(math.pi / n), rel=1e-9)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no centreline CSV"):
        load_centerline_csv(tmp_path / "nope.csv")


def test_wrong_column_count_names_the_layout(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(HEADER + "1,2,3\n4,5,6\n7,8,9\n")
    with pytest.raises(ValueError, match="x_m, y_m, w_tr_right_m, w_tr_left_m"):
        load_centerline_csv(path)


def test_text_in_a_row_is_refused(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text(HEADER + "1,2,3,4\n4,five,6,7\n")
    with pytest.raises(ValueError, match="4 numeric"):
        load_centerline_csv(path)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.__setitem__((3, 0), np.nan), "non-finite value in row 3"),
        (lambda d: d.__setitem__((5, 2), 0.0), "widths must be > 0 m, row 5"),
        (lambda d: d.__setitem__((6, slice(0, 2)), d[7, :2]), "rows 6 and 7 are the same point"),
    ],
)
def test_bad_rows_are_named(change, message):
    data = _circle()
    change(data)
    with pytest.raises(ValueError, match=message):
        check_centerline(data)


def test_fewer_than_three_points_is_refused():
    with pytest.raises(ValueError, match=">= 3 distinct points"):
        check_centerline(_circle()[:2])


def test_write_centerline_fills_the_generator_input_of_the_masked_envs():
    from trackgen_env import TrackGenConfig, TrackGenerator
    from trackgen_env.generators.centerline_io import write_centerline

    circle = _circle(n=60, radius=20.0, wr=2.0, wl=2.0)
    cfg = TrackGenConfig(num_envs=3, device="cpu", source="centerline", max_input_points=80, point_spacing=0.5,
                         max_loop_length=200.0)
    gen = TrackGenerator(cfg, seeds=0, prepare=False)
    write_centerline(gen, circle, mask=[True, False, True])
    assert gen.inputs["centerline.count"].numpy().tolist() == [60, 0, 60]
    gen.generate()
    valid = gen.result.valid.numpy()
    assert valid.tolist() == [1, 0, 1]
    length = gen.result.loop_length.numpy()[0]
    assert length == pytest.approx(2 * np.pi * 20.0, rel=0.01)


def test_write_centerline_refuses_too_many_points_and_a_procedural_generator():
    from trackgen_env import TrackGenConfig, TrackGenerator
    from trackgen_env.generators.centerline_io import write_centerline

    cfg = TrackGenConfig(num_envs=1, device="cpu", source="centerline", max_input_points=10, point_spacing=0.5)
    with pytest.raises(ValueError, match="over the input capacity max_input_points=10"):
        write_centerline(TrackGenerator(cfg, prepare=False), _circle(n=40))
    with pytest.raises(KeyError, match="centerline.xy"):
        write_centerline(TrackGenerator(TrackGenConfig(num_envs=1, device="cpu"), prepare=False), _circle())


def _out_and_back(n=50, length=100.0, w=5.0):
    """Out along the x axis to ``length`` and back along the same points: no area enclosed."""
    x = np.linspace(0.0, length, n)
    x = np.concatenate([x, x[-2:0:-1]])
    return np.stack([x, np.zeros_like(x), np.full_like(x, w), np.full_like(x, w)], axis=1)


def test_an_out_and_back_centreline_is_refused():
    with pytest.raises(ValueError, match=r"folds back on itself at row 0 .*180.0 deg, expected < 177 deg"):
        check_centerline(_out_and_back())


def test_an_out_and_back_along_a_curve_with_other_points_back_is_refused():
    # out along a half circle, back along the same arc through the midpoints: it never turns
    # back at a shared vertex but for the two ends, and encloses nothing
    a = np.linspace(0.0, np.pi, 30)
    out = np.stack([50 * np.cos(a), 50 * np.sin(a)], axis=1)
    mid = 0.5 * (out[1:] + out[:-1])
    back = mid[::-1][:-1] * (1.0 + 1e-12)
    xy = np.vstack([out, back])
    data = np.hstack([xy, np.full((len(xy), 2), 4.0)])
    with pytest.raises(ValueError, match="folds back on itself|encloses no area"):
        check_centerline(data)


def test_a_centreline_that_runs_along_itself_is_refused():
    # a lollipop: round a loop, out along a stick, a small turn at its end (no vertex turning
    # back by 177 deg), back along the same stick through other points: it overlaps itself
    a = np.pi - np.linspace(0.0, 2 * np.pi, 40, endpoint=False)
    loop = np.stack([60 + 10 * np.cos(a), 10 * np.sin(a)], axis=1)
    out = np.stack([np.arange(40.0, -1.0, -5.0), np.zeros(9)], axis=1)
    back = np.stack([np.arange(3.0, 40.0, 5.0), np.zeros(8)], axis=1)
    xy = np.vstack([loop, out, [[-2.0, 2.0]], back])
    data = np.hstack([xy, np.full((len(xy), 2), 2.0)])
    with pytest.raises(ValueError, match=r"segments \d+-\d+ and \d+-\d+ overlap \(the centreline retraces itself"):
        check_centerline(data)
    square = np.array([[0, 0, 1, 1], [10, 0, 1, 1], [10, 10, 1, 1], [0, 10, 1, 1]], float)
    assert check_centerline(square).shape == (4, 4)


def test_fewer_than_three_distinct_points_is_refused():
    tri = np.array([[0, 0, 1, 1], [10, 0, 1, 1], [0, 0, 1, 1], [10, 0, 1, 1]], float)
    with pytest.raises(ValueError, match=r">= 3 distinct points, got 2 in 4 rows"):
        check_centerline(tri)


def test_a_figure_eight_with_a_bridge_is_accepted():
    t = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    xy = np.stack([100 * np.sin(t), 60 * np.sin(t) * np.cos(t) + 10 * np.sin(t) ** 2], axis=1)
    data = np.hstack([xy, np.full((200, 2), 4.0)])
    assert check_centerline(data).shape == (200, 4)


def test_every_real_circuit_passes_without_a_warning():
    import glob
    import warnings

    paths = sorted(glob.glob("/work/shared/real-courses/circuits/*.csv"))
    if not paths:
        pytest.skip("no real circuits on this machine")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in paths:
            load_centerline_csv(path)


def test_the_generator_refuses_an_out_and_back_centreline():
    from trackgen_env import TrackGenerator

    with pytest.raises(ValueError, match="folds back on itself"):
        TrackGenerator.from_centerline(_out_and_back(), device="cpu")


@pytest.mark.parametrize("value, message", [
    (np.nan, r"points: non-finite value in row 7: \[.*nan"),
    (-1.0, r"points: track widths must be > 0 m, row 7 has \[-1.0, 6.0\]"),
    (0.0, r"points: track widths must be > 0 m, row 7 has \[0.0, 6.0\]"),  # the same rule: > 0
])
def test_the_env_names_the_first_bad_centreline_row_and_its_value(value, message):
    from trackgen_env.envs.track import TrackVectorEnv

    data = _circle()
    data[7, 2] = value
    data[9, 2] = -2.0  # a later bad row is not the one named
    with pytest.raises(ValueError, match=message):
        TrackVectorEnv(2, "cpu", centerline=data)


def test_an_open_polyline_warns_that_it_is_closed_by_a_chord(tmp_path):
    a = np.linspace(0, 1.5 * np.pi, 60)  # three quarters of a circle: a 70 m gap for ~2 m spacing
    rows = np.stack([50 * np.cos(a), 50 * np.sin(a), np.full(60, 4.0), np.full(60, 4.0)], axis=1)
    with pytest.warns(UserWarning, match=r"the last row is 70.7\d* m from the first, .* times the median spacing"):
        load_centerline_csv(_write(tmp_path / "open.csv", rows))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_centerline(_circle())


def test_an_open_polyline_warns_once_from_the_csv_to_the_env(tmp_path):
    """The loader, the env and the generator all check a loaded CSV: one warning, not three."""
    import warnings

    from trackgen_env.envs.track import TrackVectorEnv

    a = np.linspace(0, 1.4 * np.pi, 70)  # another polyline than the test above (one warning per polyline)
    rows = np.stack([50 * np.cos(a), 50 * np.sin(a), np.full(70, 4.0), np.full(70, 4.0)], axis=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = load_centerline_csv(_write(tmp_path / "open2.csv", rows))
        TrackVectorEnv(1, "cpu", centerline=data, car="full", capture=False).close()
    assert sum("closed by a straight chord" in str(w.message) for w in caught) == 1


@pytest.mark.parametrize("as_spec", [False, True])
def test_the_env_refuses_a_centerline_source_config_pointing_at_centerline(as_spec):
    """Nothing writes a source="centerline" config's inputs in the env: it would run on no course."""
    from trackgen_env import TrackGenConfig
    from trackgen_env.envs.track import TrackVectorEnv

    cfg = TrackGenConfig(source="centerline", max_input_points=64)
    with pytest.raises(ValueError, match=r'source="centerline".*valid = 0.*centerline='):
        TrackVectorEnv(num_envs=2, device="cpu", track=cfg.to_spec() if as_spec else cfg)
    env = TrackVectorEnv(num_envs=2, device="cpu", centerline=_circle(n=60, radius=5.0, wr=0.5, wl=0.5))
    try:
        env.reset(seed=0)
        assert env.course.result.valid.numpy().all()
    finally:
        env.close()


def test_a_circuit_narrower_than_the_car_is_refused_naming_the_row():
    """A given circuit skipped the car-fits check: a full car on a 1 m band ended at every step."""
    from trackgen_env.envs.track import TrackVectorEnv

    rows = _circle(n=60, radius=50.0, wr=2.0, wl=2.0)
    rows[17, 2:] = 0.5  # 1 m wide there; the full car is 2 m wide
    with pytest.raises(ValueError,
                       match=r"the car is 2 m wide and this circuit's band is 1 m wide at row 17 .*car='rc10'"):
        TrackVectorEnv(1, "cpu", car="full", centerline=rows)
    TrackVectorEnv(1, "cpu", car="rc10", centerline=rows)  # 0.2 m wide: it fits


def _stadium(straight=200.0, radius=30.0, step_deg=5.0, width=6.0):
    """A stadium whose straights are given by their two ends only, its corners every step_deg."""
    a = np.radians(np.arange(-90.0, 90.0, step_deg))[1:]
    right = np.stack([straight + radius * np.cos(a), radius * np.sin(a)], 1)
    left = np.stack([-radius * np.cos(a), -radius * np.sin(a)], 1)
    xy = np.concatenate([[[0.0, -radius], [straight, -radius]], right, [[straight, radius], [0.0, radius]], left])
    return np.concatenate([xy, np.full((len(xy), 2), width / 2)], 1)


def test_long_segments_among_short_ones_are_split_so_the_spline_does_not_overshoot():
    """The spline ran 14 m past a corner on a straight given by its ends, then turned back by 179 deg
    (and the car left the track there); split evenly, the line keeps to the polyline."""
    from trackgen_env.generators.centerline_io import split_long_segments
    from trackgen_env.generators.track import TrackGenerator

    rows = _stadium()
    split = split_long_segments(check_centerline(rows))
    seg = np.linalg.norm(np.roll(split[:, :2], -1, 0) - split[:, :2], axis=1)
    assert len(split) > len(rows) and seg.max() <= 1.5 * np.median(seg)
    assert np.isclose(seg.sum(), centerline_length(rows))
    gen = TrackGenerator.from_centerline(rows, num_envs=1, device="cpu", point_spacing=0.5, seeds=0)
    n = int(gen.result.num_points.numpy()[0])
    line = gen.result.centerline.numpy()[0, :n, :2]
    assert line[:, 0].max() < 200.0 + 30.0 + 0.05  # never past the corner's outermost point
    assert abs(float(gen.result.loop_length.numpy()[0]) - centerline_length(rows)) < 0.5
    even = _circle(n=90)  # evenly spaced rows are given as they are
    assert len(split_long_segments(check_centerline(even))) == 90


def test_coordinates_far_from_the_origin_warn_that_float32_loses_them():
    """A UTM-referenced circuit (northing 5.3e6 m) was 88 m longer and undrivable, silently."""
    from trackgen_env.generators.gate_layouts import RaceLayout

    rows = _circle(n=37)
    rows[:, 0] += 5.0e5
    rows[:, 1] += 5.3e6
    with pytest.warns(UserWarning,
                      match=r"a coordinate lies 5.3\d*e\+06 m from the origin, where float32 .* steps by 0.5 m"):
        check_centerline(rows)
    with pytest.warns(UserWarning, match="subtract an origin near the course first"):
        RaceLayout(position=[[5e5, 5.3e6, 1.5], [5e5 + 10, 5.3e6, 1.5], [5e5 + 10, 5.3e6 + 10, 1.5]],
                   orientation=[[0, 0, 0, 1]] * 3, width=[1.0] * 3, height=[1.0] * 3)


def test_rows_much_denser_than_the_resampling_are_sampled_evenly_first():
    """A circle given every centimetre observed curvatures of -0.47 to 0.47 1/m (0.02 is right):
    the spline's second derivative through rows that close is float32 rounding."""
    from trackgen_env.envs.track import TrackVectorEnv
    from trackgen_env.generators.centerline_io import thin_dense_rows

    n = 31416  # every 1 cm round a 50 m circle
    t = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    rows = np.stack([50.0 * np.cos(t), 50.0 * np.sin(t), np.full(n, 5.0), np.full(n, 5.0)], 1)
    thinned = thin_dense_rows(check_centerline(rows), 0.45)
    seg = np.linalg.norm(np.roll(thinned[:, :2], -1, 0) - thinned[:, :2], axis=1)
    assert len(thinned) == 698 and np.ptp(seg) < 1e-3 and abs(seg.sum() / centerline_length(rows) - 1.0) < 1e-5
    env = TrackVectorEnv(1, "cpu", car="full", centerline=rows)
    result = env.course.result
    curvature = result.curvature.numpy()[0, : int(result.num_points.numpy()[0])]
    assert np.all(np.abs(curvature - 0.02) < 0.001)
    even = _circle(n=90)
    assert thin_dense_rows(even, 0.45) is even  # rows far enough apart are given as they are


def test_a_spreadsheets_byte_order_mark_and_blank_lines_are_read_and_an_empty_file_is_named(tmp_path):
    """A UTF-8 BOM (an Excel export) and a whitespace-only line were refused with numpy's messages; an
    empty file said "got shape (0, 1)"."""
    rows = _circle(n=12)
    text = HEADER + "\n" + "\n".join(",".join(f"{v:.6f}" for v in r) for r in rows[:6]) + "\n   \n" + \
        "\n".join(",".join(f"{v:.6f}" for v in r) for r in rows[6:]) + "\n"
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load_centerline_csv(path).shape == (12, 4)
    (tmp_path / "empty.csv").write_text(HEADER + "\n")
    with pytest.raises(ValueError, match=r"empty.csv: no rows: expected 4 numeric comma-separated columns"):
        load_centerline_csv(tmp_path / "empty.csv")


def test_a_given_centreline_that_yields_no_valid_course_is_refused_at_construction():
    """Every env holds the same given course: one that the device rejects would end every step."""
    import warnings

    from trackgen_env import TrackGenerator

    far = _circle(n=60) + np.array([1.0e8, 0.0, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the far-coordinates warning comes first
        with pytest.raises(ValueError, match="yields no valid course on the device .*float32 steps by 8 m"):
            TrackGenerator.from_centerline(far, device="cpu")
    wide = _circle(n=60)
    wide[:, 2:] = 1.0e5
    with pytest.raises(ValueError, match=r"its widths \(up to 100,000 m\) can lengthen the band's middle line"):
        TrackGenerator.from_centerline(wide, device="cpu")
    assert TrackGenerator.from_centerline(_circle(n=60), device="cpu").result.valid.numpy().all()


def test_a_path_as_centerline_says_to_load_it_first(tmp_path):
    from trackgen_env.envs.track import TrackVectorEnv

    with pytest.raises(TypeError, match="centerline= takes the circuit's \\[N, 4\\] points, got the path .*"
                                        "load_centerline_csv"):
        TrackVectorEnv(2, "cpu", centerline=str(tmp_path / "Spielberg.csv"))
