"""The pictures the demos and ``train`` write say what they show, and the output they print reads well in a file."""

import subprocess
import sys

import numpy as np
import pytest

from trackgen_env.demos import viz
from trackgen_env.__main__ import main
from trackgen_env.demos import gates as gates_demo
from trackgen_env.envs import GatesVectorEnv


@pytest.fixture
def figures(monkeypatch):
    """The figures the code under test saves, drawn and kept open instead of written."""
    kept = []

    def keep(fig, path, *, dpi=130):
        fig.set_dpi(dpi)
        fig.canvas.draw()
        kept.append(fig)
        return str(path)

    monkeypatch.setattr(viz, "save_figure", keep)
    monkeypatch.setattr(gates_demo, "save_figure", keep)
    return kept


def test_the_track_grid_says_which_envs_it_shows_and_what_its_marks_mean(figures, tmp_path, capsys):
    assert main(["demo", "--num-envs", "20", "--steps", "5", "--device", "cpu", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    (fig,) = figures
    assert "envs 0-15 of 20" in fig._suptitle.get_text()
    assert "(envs 0-15 of 20)" in capsys.readouterr().out
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "start and finish line" in labels and "driving direction" in labels
    # every panel draws the direction as an arrow from the start square
    panels = [ax for ax in fig.axes if ax.get_xlabel().startswith("env ")]
    assert len(panels) == 16 and all(any(type(c).__name__ == "Annotation" for c in ax.get_children()) for ax in panels)


def test_the_gates_picture_keeps_every_label_inside_and_names_gate_0(figures):
    env = GatesVectorEnv(3, "cpu", seed=0)
    courses = env.courses()
    env.close()
    gates_demo.plot_courses(courses, [np.zeros((0, 3))] * 3, "gates.png", labels=["a", "b", "c"], title="t")
    (fig,) = figures
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width
    for ax in fig.axes:
        box = ax.get_tightbbox(renderer)
        assert box.x0 >= 0.01 * width and box.x1 <= 0.99 * width, (ax.get_title(), box, width)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "gate 0 (start and finish)" in labels and any(label.startswith("gates 1") for label in labels)


def _monitor_csv(path, returns, laps):
    lines = ['#{"t_start": 0.0, "env_id": "TrackGen-Track-v0"}', "r,l,t,laps,off_track"]
    lines += [f"{r},{100},{i},{n},0" for i, (r, n) in enumerate(zip(returns, laps))]
    path.write_text("\n".join(lines) + "\n")


def test_a_short_runs_learning_curve_follows_its_latest_episodes_and_says_when_no_lap_was_completed(tmp_path,
                                                                                                   monkeypatch):
    from matplotlib.figure import Figure

    from trackgen_env.integrations.train import plot_learning_curve

    kept = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: kept.append(fig))
    monkeypatch.setattr("matplotlib.pyplot.close", lambda fig=None: None)
    returns = np.linspace(0.0, 300.0, 300)  # a run that improves steadily over 300 episodes
    _monitor_csv(tmp_path / "monitor.csv", returns, np.zeros(300, int))
    plot_learning_curve(tmp_path / "monitor.csv", tmp_path / "curve.png")
    (fig,) = kept
    axes = {ax.get_ylabel(): ax for ax in fig.axes}
    mean = axes["episode return"].get_lines()[-1].get_ydata()
    assert mean[-1] >= 0.9 * returns[-30:].mean()  # not the mean of the whole run (150)
    texts = [t.get_text() for t in axes["steps per completed lap"].texts]
    assert any("no episode completed its laps yet" in t for t in texts)


def test_demo_output_written_to_a_file_has_no_progress_bar_redraws(tmp_path):
    log = tmp_path / "log.txt"
    with open(log, "w") as f:
        proc = subprocess.run([sys.executable, "-m", "trackgen_env", "demo", "--num-envs", "2", "--steps", "30",
                               "--device", "cpu", "--out", str(tmp_path / "out")], stdout=f, stderr=f, timeout=300)
    assert proc.returncode == 0, log.read_text()
    data = log.read_bytes()  # as written: text mode would read a carriage return as a newline
    assert b"\r" not in data and b"laps completed:" in data
