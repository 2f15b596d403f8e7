"""trackgen_env.demos.viz: track pictures carry a metre scale; every figure colours speed in one unit."""

import numpy as np
import pytest

from trackgen_env.demos import viz

pytest.importorskip("matplotlib")


def _circle_track(radius=4.0, n=120):
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return {"centerline": np.stack([radius * np.cos(a), radius * np.sin(a)], axis=1),
            "half_width": np.full(n, 0.4), "valid": True}


@pytest.fixture
def figures(monkeypatch):
    """Captures the figures instead of writing them."""
    saved = []

    def keep(fig, path, dpi=130):
        saved.append(fig)
        return str(path)

    monkeypatch.setattr(viz, "save_figure", keep)
    return saved


def _texts(fig):
    import matplotlib.text

    return [t.get_text() for t in fig.findobj(matplotlib.text.Text)]


@pytest.mark.parametrize("span, length", [(8.8, 1.0), (12.0, 2.0), (30.0, 5.0), (4300.0, 500.0), (0.3, 0.05)])
def test_scale_bar_is_a_round_fifth_of_the_span(span, length):
    assert viz.scale_bar_length(span) == pytest.approx(length)


def test_track_grid_has_a_metre_scale_bar_in_each_panel_and_speed_in_m_per_s(figures):
    from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar

    tracks = [_circle_track(), _circle_track(radius=20.0)]
    traces = [t["centerline"][:50] for t in tracks]
    speeds = [np.linspace(0, 3, 50)] * 2
    viz.plot_track_grid(tracks, traces, "x.png", speeds=speeds)
    (fig,) = figures
    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>" and ax.get_aspect() == 1.0]
    bars = [[a for a in ax.artists if isinstance(a, AnchoredSizeBar)] for ax in panels]
    assert [len(b) for b in bars] == [1, 1]
    texts = _texts(fig)
    assert "1 m" in texts and "5 m" in texts  # 8.8 m and 40.8 m across
    assert viz.SPEED_LABEL == "speed [m/s]" and "speed [m/s]" in texts


def test_circuit_plot_colours_speed_in_m_per_s_like_the_grid(figures):
    track = _circle_track(radius=300.0, n=400)
    speed = np.linspace(0, 80, 200)
    viz.plot_circuit(track, track["centerline"][:200], "c.png", speed=speed)
    (fig,) = figures
    texts = _texts(fig)
    assert "speed [m/s]" in texts and not any("km/h" in t for t in texts)
    colorbar = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert colorbar and colorbar[0].get_ylim()[1] == pytest.approx(80.0)



def test_figures_refuse_what_they_cannot_draw_and_return_the_path_written(tmp_path):
    from trackgen_env.demos.gates import plot_courses

    track = {"centerline": np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]), "half_width": np.full(3, 0.2),
             "valid": True}
    gate_course = {"gate_position": np.zeros((3, 3)), "course_line": np.zeros((5, 3))}
    for call, error, message in (
        (lambda: viz.plot_track_grid([], None, tmp_path / "a.png"), ValueError, "needs a non-empty list"),
        (lambda: viz.plot_track_grid([gate_course], None, tmp_path / "a.png"), TypeError,
         "item 0 must be tracks as TrackVectorEnv.tracks.*got a dict with keys \\['course_line', 'gate_position'\\]"),
        (lambda: viz.plot_track_grid([track, track], [np.zeros((4, 2))], tmp_path / "a.png"), ValueError,
         "2 items and 1 traces"),
        (lambda: viz.plot_track_grid([track], [np.zeros(4)], tmp_path / "a.png"), ValueError,
         "trace 0 must be a \\[T, 2\\]"),
        (lambda: viz.plot_track_grid([track], None, tmp_path / "a.png", labels=[]), ValueError, "1 items and 0 labels"),
        (lambda: plot_courses([], [], tmp_path / "g.png"), ValueError, "plot_courses needs a non-empty list"),
        (lambda: plot_courses([gate_course], [np.zeros((4, 2))], tmp_path / "g.png"), ValueError, "\\[T, 3\\]"),
        (lambda: viz.plot_progress({"a": ([0, 1], [0, 1])}, tmp_path / "p.png", smooth=2.5), ValueError,
         "smooth must be an int >= 1, got 2.5"),
        (lambda: viz.plot_progress([([0, 1], [0, 1])], tmp_path / "p.png"), TypeError, "curves must be a dict"),
    ):
        with pytest.raises(error, match=message):
            call()
    written = viz.plot_track_grid([track], [np.array([[0.0, 0.0], [1.0, 0.0]])], tmp_path / "grid")
    assert written == str(tmp_path / "grid.png") and (tmp_path / "grid.png").is_file()
