"""examples/track_env_quickstart.py: runs, and says so plainly when no episode ended."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", "track_env_quickstart.py"), *args],
                          capture_output=True, text=True, timeout=300, env=env)


def test_quickstart_with_no_episode_ended_prints_no_nan_and_no_warning():
    proc = _run("--num-envs", "4", "--steps", "10", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert "nan" not in proc.stdout.lower()
    assert "Warning" not in proc.stderr, proc.stderr
    assert "0 episodes ended in 10 steps" in proc.stdout


def test_quickstart_reports_the_episodes_that_ended():
    proc = _run("--num-envs", "4", "--steps", "200", "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert "episodes: mean return" in proc.stdout and "nan" not in proc.stdout.lower()
