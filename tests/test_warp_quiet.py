"""Warp's banner, module-load log and no-driver warning stay out of the user's terminal, unless asked for."""

import os
import subprocess
import sys

SCRIPT = """
import gymnasium as gym
import numpy as np
import trackgen_env
env = gym.make_vec("TrackGen-Track-v0", num_envs=2, device=None, seed=0)
env.reset()
env.step(np.zeros((2, 2), np.float32))
gates = gym.make_vec("TrackGen-Gates-v0", num_envs=2, seed=0)
gates.reset()
print("ran")
"""


def _run(code: str, **env_vars) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRACKGEN_WARP_VERBOSE"}
    env.update(env_vars)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)


def test_the_python_api_prints_nothing_of_warps_own():
    proc = _run(SCRIPT)
    assert proc.returncode == 0 and proc.stdout.strip() == "ran", proc.stderr
    assert proc.stderr == ""  # no banner, no "Module ... load", no CUDA driver warning


def test_trackgen_warp_verbose_brings_warps_output_back():
    proc = _run(SCRIPT, TRACKGEN_WARP_VERBOSE="1")
    assert proc.returncode == 0, proc.stderr
    assert "Warp " in proc.stdout + proc.stderr and "Module trackgen_env." in proc.stdout + proc.stderr


def test_a_log_level_set_before_the_import_is_kept():
    proc = _run("import warp as wp; wp.config.log_level = wp.LOG_DEBUG; import trackgen_env; "
                "print(wp.config.log_level)")
    assert proc.stdout.strip() == "10", proc.stderr


def test_the_cli_prints_nothing_of_warps_own(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "trackgen_env", "demo", "--num-envs", "2", "--steps", "5",
                           "--out", str(tmp_path), "--no-progress"], capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "TRACKGEN_WARP_VERBOSE"})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "Module" not in proc.stdout and "Warp " not in proc.stdout
