"""Learning evidence for TrackGen-Gates-v0: PPO (``train``'s defaults) evaluated from the standard start.

Usage::

    python benchmarks/gates_learning.py [--steps 5000000] [--every 500000] [--episodes 100]
                                        [--out out/gates_learning] [--png docs/images/learning_curve_gates.png]
                                        [--json benchmarks/results/gates_learning_cpu.json]

Trains ``trackgen_env.integrations.train.train("TrackGen-Gates-v0", steps)`` (the same
run as ``python -m trackgen_env train --env TrackGen-Gates-v0 --steps STEPS``: the
checkpoints are saved by an SB3 ``CheckpointCallback``, which changes nothing in the
training), then evaluates every checkpoint with ``evaluate`` (deterministic policy, one
episode per env, from the **standard start**, on ``--episodes`` held-out courses),
next to a uniform random policy and the reference controller (``CourseLinePilot``) on
the same courses. Prints a Markdown table, writes the numbers as JSON and plots gates
passed per episode (the evaluations, and the training episodes, which mix random-gate
and standard starts) against env steps.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import time
from pathlib import Path

import numpy as np


def pilot_eval(episodes: int, seed: int) -> dict:
    """The reference controller, one episode per env from the standard start, on the eval courses."""
    from trackgen_env.envs.controllers import CourseLinePilot
    from trackgen_env.envs.gates import GatesVectorEnv

    env = GatesVectorEnv(episodes, "cpu", seed=seed, start="first_gate")
    pilot = CourseLinePilot(env)
    obs, _ = env.reset(seed=seed)
    done = np.zeros(episodes, bool)
    gates, laps, length = np.zeros(episodes), np.zeros(episodes), np.zeros(episodes)
    while not done.all():
        obs, _, terminated, truncated, info = env.step(pilot(obs))
        length[~done] += 1
        end = (terminated | truncated) & ~done
        gates[end], laps[end] = info["gates_passed"][end], info["laps"][end]
        done |= end
    lapped = laps >= env.laps
    return {"policy": "reference controller", "mean_gates_passed": float(gates.mean()),
            "lap_completion_rate": float(lapped.mean()),
            "mean_lap_time_s": float((length[lapped] * env.quadrotor.dt).mean()) if lapped.any() else math.nan}


def plot(points: list[dict], monitor_csv: Path, pilot: dict, png: Path) -> None:
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(monitor_csv) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    steps = np.cumsum([int(r["l"]) for r in rows])
    gates = np.array([float(r["gates_passed"]) for r in rows])
    k = np.ones(min(500, len(rows))) / min(500, len(rows))
    fig, axes = plt.subplots(3, 1, figsize=(7, 7.2), sharex=True)
    ax = axes[0]
    ax.plot(steps[k.size - 1:], np.convolve(gates, k, "valid"), color="tab:gray",
            label=f"training episodes (half from random gates; mean of {k.size})")
    x = [p["steps"] for p in points]
    ax.plot(x, [p["mean_gates_passed"] for p in points], "o-", color="tab:blue",
            label="PPO, standard start, held-out courses")
    ax.axhline(pilot["mean_gates_passed"], ls="--", color="tab:green", label="reference controller")
    ax.axhline(points[0]["random_gates_passed"], ls=":", color="tab:red", label="random policy")
    ax.set_ylabel("gates passed per episode")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    ax.set_title("PPO on TrackGen-Gates-v0 (train defaults)")
    ax = axes[1]
    ax.plot(x, [p["lap_completion_rate"] for p in points], "o-", color="tab:blue")
    ax.axhline(pilot["lap_completion_rate"], ls="--", color="tab:green")
    ax.set_ylabel("lap completion")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax = axes[2]
    ax.plot(x, [p["mean_lap_time_s"] for p in points], "o-", color="tab:blue")
    ax.axhline(pilot["mean_lap_time_s"], ls="--", color="tab:green")
    ax.set_ylabel("mean lap time [s]")
    ax.set_xlabel("env steps")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5_000_000)
    parser.add_argument("--every", type=int, default=500_000, help="env steps between evaluated checkpoints")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out/gates_learning")
    parser.add_argument("--png", default="docs/images/learning_curve_gates.png")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    import torch
    from stable_baselines3.common.callbacks import CheckpointCallback

    from trackgen_env.integrations.train import ENV_DEFAULTS, train
    from trackgen_env.integrations.evaluation import EVAL_SEED, evaluate

    torch.set_num_threads(1)
    out = Path(args.out)
    num_envs = ENV_DEFAULTS["TrackGen-Gates-v0"]["num_envs"]
    ckpt = CheckpointCallback(save_freq=max(args.every // num_envs, 1), save_path=str(out / "checkpoints"),
                              save_vecnormalize=True)
    start = time.perf_counter()
    train("TrackGen-Gates-v0", args.steps, seed=args.seed, out=out, progress=False, callbacks=[ckpt])
    wall = time.perf_counter() - start

    points = []
    for zip_path in sorted((out / "checkpoints").glob("rl_model_*_steps.zip"), key=lambda p: int(p.stem.split("_")[2])):
        n = int(zip_path.stem.split("_")[2])
        folder = out / f"eval_{n}"
        folder.mkdir(exist_ok=True)
        shutil.copy(zip_path, folder / "model.zip")
        shutil.copy(zip_path.with_name(f"rl_model_vecnormalize_{n}_steps.pkl"), folder / "vecnormalize.pkl")
        shutil.copy(out / "train.json", folder / "train.json")
        trained, rnd = evaluate(folder / "model.zip", episodes=args.episodes, seed=EVAL_SEED)
        points.append({"steps": n, "mean_gates_passed": trained.mean_gates_passed,
                       "lap_completion_rate": trained.lap_completion_rate, "mean_lap_time_s": trained.mean_lap_time_s,
                       "random_gates_passed": rnd.mean_gates_passed,
                       "random_lap_completion_rate": rnd.lap_completion_rate})
        print(f"{n:>9d} steps: gates {trained.mean_gates_passed:.2f}, laps {trained.lap_completion_rate:.0%}",
              flush=True)
    pilot = pilot_eval(args.episodes, EVAL_SEED)
    print("\n| env steps | mean gates passed | lap completion | mean lap time [s] |\n|---|---|---|---|")
    for p in points:
        lap_time = "-" if math.isnan(p["mean_lap_time_s"]) else f"{p['mean_lap_time_s']:.2f}"
        print(f"| {p['steps']:,} | {p['mean_gates_passed']:.2f} | {p['lap_completion_rate']:.0%} | {lap_time} |")
    print(f"| random policy | {points[0]['random_gates_passed']:.2f} | {points[0]['random_lap_completion_rate']:.0%} "
          f"| - |")
    print(f"| reference controller | {pilot['mean_gates_passed']:.2f} | {pilot['lap_completion_rate']:.0%} | "
          f"{pilot['mean_lap_time_s']:.2f} |")
    print(f"training wall time {wall:.0f} s")
    plot(points, out / "monitor.csv", pilot, Path(args.png))
    if args.json:
        Path(args.json).write_text(json.dumps({"steps": args.steps, "episodes": args.episodes,
                                               "train_wall_time_s": round(wall, 1),
                                               "checkpoints": points, "reference_controller": pilot}, indent=2) + "\n")
    return points


if __name__ == "__main__":
    main()
