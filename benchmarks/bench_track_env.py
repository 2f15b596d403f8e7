"""Throughput of TrackGen-Track-v0: env-steps/s (graph replay vs eager) and tracks/s of generation.

Usage::

    python benchmarks/bench_track_env.py [--device cpu] [--num-envs 1 64 1024 4096]
                                         [--seconds 2] [--json PATH]

Each measurement steps the env for about ``--seconds`` of ``env.step`` time after a
warm-up, with the pure-pursuit controller (cars lap; an env auto-resets onto a new track
after each lap) and with random actions (cars crash within a few dozen steps, so tracks
regenerate far more often, as early in RL training). Only ``env.step`` is timed: action
checks and copy in, the recorded step, outputs copied out; not the policy.
Warp runs CPU kernels on one thread, so CPU numbers are per core. Prints a Markdown
table and writes the numbers as JSON (default ``benchmarks/results/latest/``, untracked;
the reference results beside it are the README's).

Env-steps/s count every env of every ``env.step``; transitions/s leave out the reset steps
(under the default NEXT_STEP autoreset, the step after an env's episode ends only resets
it: its action is ignored and nothing moves). Both are in the JSON; the table shows both
for random actions, where resets are frequent (with pure pursuit they are ~0.5 % of steps).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import warp as wp

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env import TrackGenConfig, TrackGenerator
from trackgen_env.envs.controllers import PurePursuit
from trackgen_env.envs.track import TrackVectorEnv


def count_launches(env) -> tuple[int, int]:
    """Kernel launches of one eager step: (car + course.step() + observations, the regeneration body).

    The regeneration body runs only on steps where some env auto-resets (an ``any(mask)``
    conditional in the recorded step).
    """
    calls = 0
    launch = wp.launch

    def counting(*args, **kwargs):
        nonlocal calls
        calls += 1
        return launch(*args, **kwargs)

    one = wp.zeros(env.num_envs, dtype=wp.int32, device=env.device)
    one.fill_(1)
    wp.launch = counting
    try:
        env._advance(env._autoreset)
        step = calls
        calls = 0
        env.course.enqueue_generate(mask=one, advance=True)
        regen = calls
    finally:
        wp.launch = launch
    return step, regen


def steps_per_second(num_envs: int, device: str, capture: bool, policy: str, seconds: float, seed: int = 0) -> dict:
    """env-steps/s of ``env.step`` alone (the policy's time is not counted)."""
    env = TrackVectorEnv(num_envs, device, seed=seed, capture=capture)
    rng = np.random.default_rng(seed)
    pool = [rng.uniform(-1, 1, (num_envs, 2)).astype(np.float32) for _ in range(16)]
    for a in pool:
        a[:, 1] = np.abs(a[:, 1])  # mostly forward
    pursuit = PurePursuit(env.car)
    obs, _ = env.reset(seed=seed)
    last = np.zeros(num_envs, dtype=bool)  # the envs that ended on the previous step
    for warm_up in (True, False):
        n, env_time, ended, reset_steps = 0, 0.0, 0, 0
        while (n < 20) if warm_up else (env_time < seconds):
            action = pursuit(obs) if policy == "pursuit" else pool[n % 16]
            reset_steps += int(last.sum())  # NEXT_STEP (the default): those envs only reset now
            t0 = time.perf_counter()
            obs, _, term, trunc, _ = env.step(action)
            env_time += time.perf_counter() - t0
            last = term | trunc
            ended += int(last.sum())
            n += 1
    env.close()
    return {"policy": policy, "capture": capture, "steps": n, "seconds": env_time,
            "env_steps_per_s": n * num_envs / env_time, "transitions_per_s": (n * num_envs - reset_steps) / env_time,
            "reset_steps": reset_steps, "step_us": 1e6 * env_time / n, "resets_per_step": ended / n}


def breakdown(num_envs: int, device: str, steps: int = 200, seed: int = 0) -> dict:
    """Microseconds per step of each part of an eager step, timed inside a pure-pursuit run.

    Each part is wrapped with a device synchronisation so its time is its own:
    ``regeneration`` (the masked regeneration of the envs that ended on the previous
    step; skipped on device when none did), ``car``, ``course.step()`` (progress, collision,
    localizer), ``observations`` (reward, termination, observations), ``outputs copy out``.
    """
    env = TrackVectorEnv(num_envs, device, seed=seed, capture=False)
    pursuit = PurePursuit(env.car)
    totals: dict[str, float] = {}

    def timed(name, fn):
        def run(*args, **kwargs):
            wp.synchronize_device(device)
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
            wp.synchronize_device(device)
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - t0
            return out

        return run

    env.course.regenerate = timed("regeneration", env.course.regenerate)
    # CarState is read-only after construction (a recorded graph holds it); an eager timing probe may wrap it
    object.__setattr__(env.state, "step", timed("car", env.state.step))
    env.course.step = timed("course.step()", env.course.step)
    env._advance = timed("advance", env._advance)
    env._io.outputs = timed("outputs copy out", env._io.outputs)
    obs, _ = env.reset(seed=seed)
    for _ in range(20):
        obs, *_ = env.step(pursuit(obs))
    totals.clear()
    ended = 0
    for _ in range(steps):
        obs, _, term, trunc, _ = env.step(pursuit(obs))
        ended += int((term | trunc).sum())
    out = {name: 1e6 * t / steps for name, t in totals.items()}
    out["observations"] = out.pop("advance") - out["car"] - out["course.step()"]
    out["resets_per_step"] = ended / steps
    env.close()
    return out


def tracks_per_second(num_envs: int, device: str, seconds: float) -> dict:
    gen = TrackGenerator(TrackGenConfig(num_envs=num_envs, device=device), seeds=0)
    gen.enqueue(advance=True)
    wp.synchronize_device(device)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        gen.enqueue(advance=True)
        wp.synchronize_device(device)
        n += 1
    elapsed = time.perf_counter() - t0
    valid = float(gen.result.valid.numpy().mean())
    return {"generations": n, "seconds": elapsed, "tracks_per_s": n * num_envs / elapsed, "valid_rate": valid}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[1, 64, 1024, 4096])
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    parser.add_argument("--json", default=None,
                        help="output JSON (default: benchmarks/results/latest/track_env_<device>.json, untracked)")
    args = parser.parse_args(argv)
    device = str(wp.get_device(args.device))

    rows = []
    for E in args.num_envs:
        row = {"num_envs": E}
        for key, capture, policy in (("replay", True, "pursuit"), ("eager", False, "pursuit"), ("random", True, "random")):
            row[key] = steps_per_second(E, device, capture, policy, args.seconds)
        row["generation"] = tracks_per_second(E, device, args.seconds)
        rows.append(row)
        print(f"  num_envs={E}: replay {row['replay']['env_steps_per_s']:,.0f} env-steps/s, "
              f"eager {row['eager']['env_steps_per_s']:,.0f}, random actions {row['random']['env_steps_per_s']:,.0f}, "
              f"generation {row['generation']['tracks_per_s']:,.0f} tracks/s", flush=True)
    env = TrackVectorEnv(args.num_envs[0], device, seed=0, capture=False)
    env.reset()
    launches = count_launches(env)
    parts = breakdown(args.num_envs[-1], device)

    print(f"\nTrackGen-Track-v0 on {device} ({platform.machine()}, warp {wp.__version__}); "
          f"env-steps/s of env.step alone (action checks and copy in, the step, outputs copied out), "
          f"reset steps included; transitions/s without them\n")
    print("| num_envs | graph replay, pure pursuit | step [us] | eager, pure pursuit | replay / eager "
          "| graph replay, random actions | transitions/s (random) | auto-resets / step (random) "
          "| tracks/s (generation) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        rp, eg, rn, g = r["replay"], r["eager"], r["random"], r["generation"]
        print(f"| {r['num_envs']} | {rp['env_steps_per_s']:,.0f} | {rp['step_us']:,.0f} | {eg['env_steps_per_s']:,.0f} | "
              f"{rp['env_steps_per_s'] / eg['env_steps_per_s']:.2f}x | {rn['env_steps_per_s']:,.0f} | "
              f"{rn['transitions_per_s']:,.0f} | {rn['resets_per_step']:.1f} | {g['tracks_per_s']:,.0f} |")
    print(f"\nKernel launches per step: {launches[0]} (car, course.step(), observations), "
          f"+{launches[1]} in the regeneration body on steps where an env auto-resets.")
    print(f"\nWhere a step's time goes at num_envs={args.num_envs[-1]} (eager, pure pursuit, "
          f"{parts['resets_per_step']:.1f} auto-resets per step):\n")
    print("| part | us per step |")
    print("|---|---:|")
    for name in ("regeneration", "car", "course.step()", "observations", "outputs copy out"):
        print(f"| {name} | {parts[name]:,.0f} |")

    result = {"device": device, "warp": wp.__version__, "machine": platform.machine(),
              "date": time.strftime("%Y-%m-%d"), "launches_per_step": launches[0],
              "launches_per_regeneration": launches[1], "breakdown_us": parts, "rows": rows}
    path = args.json or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "latest",
                                     f"track_env_{device.replace(':', '')}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"\nwrote {path}")
    return result


if __name__ == "__main__":
    main()
