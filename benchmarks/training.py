"""The ``training`` section of ``benchmarks/run.py``: env-steps/s of training, one run, four ways.

* ``env``: the fast path's env alone (the circuit preset's env at its env count, torch outputs, through
  the rsl_rl adapter, random actions on the env's device): the ceiling of any trainer on it;
* ``sb3``: ``train --trainer sb3 --preset circuit --steps 1000000`` (Stable-Baselines3's PPO, 16 envs; a
  quarter of the recipe's budget);
* ``rsl_rl``: ``train --preset circuit`` (rsl_rl's PPO at the preset's env count);
* ``cleanrl``: ``examples/cleanrl_ppo_track.py`` at the fast path's env count (``--num-steps 32
  --num-minibatches 4 --update-epochs 5``, torch on one thread, NumPy outputs), its last ``SPS``.

Each trainer's figure is its run's env steps over its training wall time (``train.json``'s
``env_steps_per_s``). The two CLI runs also give ``training.png``: the lap rate of the training
episodes against wall-clock seconds, SB3 and rsl_rl side by side (each episode is on a newly
generated track: the rate at which the policy laps tracks it has not seen), and the final policies
are evaluated on the same 100 held-out generated tracks (``eval``, deterministic).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PRESET = "circuit"


def _steps_per_s(cfg, num_envs: int) -> float:
    """The preset's env alone: rsl_rl adapter steps of random torch actions for ``cfg.seconds``."""
    import torch

    from trackgen_env.integrations.rsl_rl import make_rsl_rl_vec_env
    from trackgen_env.integrations.train import train_preset

    _, spec, env_kwargs = train_preset(PRESET, num_envs, cfg.device)
    venv = make_rsl_rl_vec_env("TrackGen-Track-v0", num_envs, seed=0, device=cfg.device, track=spec, **env_kwargs)
    try:
        actions = torch.rand(num_envs, venv.num_actions, device=venv.device) * 2 - 1
        venv.step(actions)
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < cfg.seconds:
            venv.step(actions)
            steps += 1
        return steps * num_envs / (time.perf_counter() - start)
    finally:
        venv.close()


def _train(trainer: str, steps: int, num_envs: int | None, out: Path, device: str) -> dict:
    from trackgen_env.integrations.train_rsl_rl import run_trainer

    with contextlib.redirect_stdout(io.StringIO()):
        path = run_trainer(trainer, "TrackGen-Track-v0", steps, preset=PRESET, num_envs=num_envs, out=out,
                           device=device, progress=False)
    record = json.loads(path.with_name("train.json").read_text())
    return {"policy": str(path), "steps": record["steps"], "wall_time_s": record["wall_time_s"],
            "env_steps_per_s": record["env_steps_per_s"], "num_envs": record["num_envs"]}


def _cleanrl(num_envs: int, steps: int, device: str) -> dict:
    """``examples/cleanrl_ppo_track.py`` with only its flags changed; its last printed ``SPS``."""
    command = [sys.executable, str(ROOT / "examples" / "cleanrl_ppo_track.py"), "--num-envs", str(num_envs),
               "--num-steps", "32", "--num-minibatches", "4", "--update-epochs", "5", "--total-timesteps", str(steps),
               "--device", device]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    found = re.findall(r"SPS=(\d+)", proc.stdout)
    if proc.returncode != 0 or not found:
        return {"error": (proc.stderr or proc.stdout)[-500:]}
    return {"env_steps_per_s": int(found[-1]), "steps": steps, "num_envs": num_envs, "command": " ".join(command[1:])}


def _laps_vs_time(monitor: Path, window: int) -> tuple[np.ndarray, np.ndarray]:
    rows = np.genfromtxt(monitor, delimiter=",", names=True, skip_header=1)
    rows = np.atleast_1d(rows)
    if rows.size == 0:
        return np.zeros(0), np.zeros(0)
    lapped = (rows["laps"] >= 1).astype(float)
    k = min(window, lapped.size)
    return rows["t"][k - 1:], np.convolve(lapped, np.ones(k) / k, "valid")


def plot(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for trainer, colour in (("sb3", "tab:orange"), ("rsl_rl", "tab:blue")):
        run = result.get(trainer, {})
        if "monitor" not in run:
            continue
        t, rate = _laps_vs_time(Path(run["monitor"]), result["window"])
        label = f"{trainer} ({run['num_envs']} envs, {run['env_steps_per_s']:,} env-steps/s)"
        ax.plot(t, rate, color=colour, label=label)
    ax.set_xlabel("training wall-clock time [s]")
    ax.set_ylabel(f"lap rate (last {result['window']} episodes)")
    ax.set_title(f"train --preset {PRESET}: laps on newly generated tracks")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_training(cfg) -> dict:
    """The section (the module docstring); ``cfg.quick``: tiny budgets, for tests."""
    import torch

    from trackgen_env.integrations.evaluation import evaluate
    from trackgen_env.integrations.train_rsl_rl import RSL_RL_PRESETS, SB3_STEPS

    torch.set_num_threads(1)
    fast_envs = 64 if cfg.quick else RSL_RL_PRESETS[PRESET]["num_envs"]
    # SB3: a quarter of its recipe's budget: its speed is steady from the first rollouts, and a full
    # 4M-step run (~14 min here) would make the section four times as long
    budgets = {"sb3": 4096 if cfg.quick else SB3_STEPS[PRESET] // 4,
               "rsl_rl": 2 * 64 * 32 if cfg.quick else RSL_RL_PRESETS[PRESET]["steps"],
               "cleanrl": 2 * fast_envs * 32 if cfg.quick else 40 * fast_envs * 32}
    keep = Path(cfg.out) / "training" if getattr(cfg, "out", None) else Path(tempfile.mkdtemp(prefix="training-"))
    result = {"preset": PRESET, "num_envs": fast_envs, "window": 20 if cfg.quick else 200,
              "env": {"env_steps_per_s": _steps_per_s(cfg, fast_envs), "num_envs": fast_envs}}
    for trainer in ("sb3", "rsl_rl"):
        run = _train(trainer, budgets[trainer], fast_envs if trainer == "rsl_rl" else None, keep / trainer, cfg.device)
        run["monitor"] = str(keep / trainer / "monitor.csv")
        episodes = 4 if cfg.quick else 100
        trained = evaluate(run["policy"], episodes=episodes, device=cfg.device, random_policy=False)[0]
        run["held_out_lap_rate"] = trained.lap_completion_rate
        result[trainer] = run
    result["cleanrl"] = _cleanrl(fast_envs, budgets["cleanrl"], cfg.device)
    result["rsl_rl_over_sb3"] = result["rsl_rl"]["env_steps_per_s"] / result["sb3"]["env_steps_per_s"]
    return result


def markdown(result: dict, command: str) -> list[str]:
    rows = [
        f"## Training speed [env-steps/s of training] (`{command} --only training`)\n",
        f"`train --preset {result['preset']}`; the fast path and CleanRL at {result['num_envs']} envs. "
        "Each trainer's figure is its run's env steps over its training wall time.\n",
        "| what | envs | env steps | wall time [s] | env-steps/s | held-out tracks lapped |",
        "|---|---|---|---|---|---|",
        f"| the env alone (rsl_rl adapter, random actions) | {result['env']['num_envs']} | | | "
        f"{result['env']['env_steps_per_s']:,.0f} | |",
    ]
    for key, name in (("sb3", "SB3 (`--trainer sb3`)"), ("rsl_rl", "rsl_rl (the fast path)")):
        r = result[key]
        rows.append(f"| {name} | {r['num_envs']} | {r['steps']:,} | {r['wall_time_s']} | {r['env_steps_per_s']:,} | "
                    f"{r['held_out_lap_rate']:.0%} |")
    c = result["cleanrl"]
    rows.append(
        f"| CleanRL example | {result['num_envs']} | {c.get('steps', '')} | | {c['env_steps_per_s']:,} | |"
        if "env_steps_per_s" in c
        else f"| CleanRL example | | | | failed: {c['error'][:80]} | |"
    )
    rows.append(f"\nrsl_rl / SB3: {result['rsl_rl_over_sb3']:.1f}x (target >= 10x). ![training](training.png)")
    return rows
