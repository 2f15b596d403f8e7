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
    for line in ("env-steps/s:", "laps completed:", "off-track rate:", "picture:"):
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
