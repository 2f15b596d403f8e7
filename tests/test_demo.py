"""``python -m trackgen_env demo``: runs end to end and writes its pictures."""

import subprocess
import sys

import numpy as np
import pytest

from trackgen_env.__main__ import main


def _stadium_csv(path, straight=200.0, radius=60.0, spacing=5.0, wr=6.0, wl=7.0):
    """A closed stadium-shaped circuit in the racetrack-database CSV layout."""
    pts = []
    n_straight = int(straight / spacing)
    n_arc = int(np.pi * radius / spacing)
    for i in range(n_straight):
        pts.append((-straight / 2 + i * spacing, -radius))
    for i in range(n_arc):
        a = -np.pi / 2 + np.pi * i / n_arc
        pts.append((straight / 2 + radius * np.cos(a), radius * np.sin(a)))
    for i in range(n_straight):
        pts.append((straight / 2 - i * spacing, radius))
    for i in range(n_arc):
        a = np.pi / 2 + np.pi * i / n_arc
        pts.append((-straight / 2 + radius * np.cos(a), radius * np.sin(a)))
    rows = "\n".join(f"{x:.4f},{y:.4f},{wr},{wl}" for x, y in pts)
    path.write_text("# x_m,y_m,w_tr_right_m,w_tr_left_m\n" + rows + "\n")
    return path


def test_demo_runs_end_to_end_and_writes_the_track_grid(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "trackgen_env", "demo", "--num-envs", "4", "--steps", "40", "--device", "cpu",
         "--out", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    for line in ("throughput:", "laps completed:", "off-track rate:", "picture:"):
        assert line in proc.stdout
    png = out / "tracks.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_drives_a_circuit_from_a_csv(tmp_path, capsys):
    csv = _stadium_csv(tmp_path / "Stadium.csv")
    out = tmp_path / "out"
    assert main(["demo", "--track-csv", str(csv), "--device", "cpu", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "circuit Stadium" in printed
    assert "laps completed: 1" in printed  # the default steps cover one lap, and pure pursuit makes it
    assert (out / "circuit_Stadium.png").read_bytes()[:4] == b"\x89PNG"


def test_demo_refuses_bad_options(tmp_path, capsys):
    assert main(["demo", "--steps", "0", "--out", str(tmp_path)]) == 2
    assert "--steps must be >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["demo", "--env", "boat"])
    assert main(["demo", "--track-csv", str(tmp_path / "missing.csv"), "--out", str(tmp_path)]) == 2
    assert "no centreline CSV" in capsys.readouterr().err


class _Recording:
    """An env proxy that records each step's terminated | truncated."""

    def __init__(self, env):
        self._env, self.ended = env, []

    def __getattr__(self, name):
        return getattr(self._env, name)

    def step(self, action):
        out = self._env.step(action)
        self.ended.append(out[2] | out[3])
        return out


def test_drive_counts_transitions_not_the_next_step_reset_steps():
    from trackgen_env.demos.track import drive
    from trackgen_env.envs.track import TrackVectorEnv

    env = _Recording(TrackVectorEnv(4, "cpu", seed=0))
    steer_hard = lambda obs: np.tile(np.array([[1.0, 1.0]], np.float32), (4, 1))  # noqa: E731  (off the band soon)
    out = drive(env, steer_hard, 120, progress=False)
    ended = np.array(env.ended)
    resets = int(ended[:-1].sum())  # an env that ended at step t spends step t + 1 being reset
    assert resets > 0
    assert out["reset_steps"] == resets
    assert out["transitions"] == 120 * 4 - resets


def test_demo_prints_transitions_and_reset_steps(tmp_path, capsys):
    assert main(["demo", "--num-envs", "4", "--steps", "300", "--device", "cpu", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    import re

    m = re.search(r"env steps: +1200 \(300 steps x 4 envs\) = (\d+) transitions \+ (\d+) reset steps \(NEXT_STEP",
                  printed)
    assert m and int(m[1]) + int(m[2]) == 1200 and int(m[2]) > 0, printed
    assert re.search(r"throughput: +[\d,]+ transitions/s \(reset steps not counted", printed)


def test_gates_demo_prints_transitions_and_reset_steps(tmp_path, capsys):
    assert main(["demo", "--env", "gates", "--num-envs", "4", "--steps", "200", "--device", "cpu", "--out",
                 str(tmp_path), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    import re

    m = re.search(r"= (\d+) transitions \+ (\d+) reset steps \(NEXT_STEP", printed)
    assert m and int(m[1]) + int(m[2]) == 800, printed
    assert "transitions/s (reset steps not counted" in printed
