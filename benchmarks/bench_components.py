"""Cost of each track-course component of TrackGen-Track-v0: per step and per masked regeneration.

Usage::

    python benchmarks/bench_components.py [--device cpu] [--num-envs 64 1024 4096]
                                          [--replays 50] [--repeats 7] [--steps 100] [--json PATH]

For each ``num_envs``, a ``TrackVectorEnv`` is built and driven with the pure-pursuit
controller for ``--warm-steps`` steps, so the cars sit where a run puts them (on the
band, warm segments set). Two measurements:

* isolated: each operation below is recorded alone as a graph and replayed
  ``--replays`` times, ``--repeats`` times over; median microseconds per call (the
  positions do not move between replays: a step's warm start finds the car where it
  was). Per step: ``progress``, ``collision``, ``localizer``, ``course.step()`` (all
  three). Per masked regeneration of ONE env (a mask with a single 1) and of ``E / 128``
  envs (about the auto-resets per step of the pure-pursuit run): the generator's
  enqueue, each component's ``on_generate`` and ``reset``, and the whole body
  (``course.enqueue_generate``).
* in situ: mean microseconds per env step of each component's ``step`` over ``--steps``
  pure-pursuit steps (cars move, envs auto-reset, the car and the observations share the
  caches), each component's ``step`` replaying its own graph between synchronisations.

Warp runs CPU kernels on one thread: CPU numbers are per core. Prints a Markdown table
and writes JSON (default ``benchmarks/results/latest/components_<device>.json``, untracked; the
reference results: ``benchmarks/results/components_cpu.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np
import warp as wp

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env.envs.controllers import PurePursuit
from trackgen_env.envs.track import TrackVectorEnv

_clock = time.perf_counter


def _record(device, fn):
    fn()  # load modules outside the capture
    wp.synchronize_device(device)
    with wp.ScopedCapture(device=device) as cap:
        fn()
    return cap.graph


def _time_graph(device, graph, replays: int, repeats: int, before=None) -> float:
    """Median microseconds per replay of ``graph`` (``before`` runs untimed before each batch)."""
    samples = []
    for _ in range(repeats):
        if before is not None:
            before()
        wp.synchronize_device(device)
        t0 = _clock()
        for _ in range(replays):
            wp.capture_launch(graph)
        wp.synchronize_device(device)
        samples.append((_clock() - t0) / replays)
    return 1e6 * statistics.median(samples)


def _drive(num_envs: int, device: str, warm_steps: int, seed: int, capture: bool = True):
    env = TrackVectorEnv(num_envs, device, seed=seed, capture=capture)
    pursuit = PurePursuit(env.car)
    obs, _ = env.reset(seed=seed)
    for _ in range(warm_steps):
        obs, *_ = env.step(pursuit(obs))
    return env, pursuit, obs


def isolated(num_envs: int, device: str, replays: int, repeats: int, warm_steps: int, seed: int = 0) -> dict:
    """Median us per call of each operation recorded alone and replayed on a frozen state."""
    env, _, _ = _drive(num_envs, device, warm_steps, seed)
    course = env.course
    ctx = course._ctx
    comps = course.components
    ops = {
        "step: progress": lambda: comps["progress"].step(ctx),
        "step: collision": lambda: comps["collision"].step(ctx),
        "step: localizer": lambda: comps["localizer"].step(ctx),
        "step: course.step()": lambda: course.step(),
    }
    rng = np.random.default_rng(seed)
    for label, count in (("1 env", 1), ("E/128 envs", max(1, num_envs // 128))):
        chosen = np.zeros(num_envs, np.int32)
        chosen[rng.choice(num_envs, count, replace=False)] = 1
        mask = wp.array(chosen, dtype=wp.int32, device=device)
        ops[f"regen({label}): generator.enqueue"] = lambda m=mask: course.generator.enqueue(ctx, advance=False, mask=m)
        for name, c in comps.items():
            ops[f"regen({label}): {name}.on_generate"] = lambda c=c, m=mask: c.on_generate(ctx, m)
        for name, c in comps.items():
            ops[f"regen({label}): {name}.reset"] = lambda c=c, m=mask: c.reset(ctx, m)
        ops[f"regen({label}): whole body"] = lambda m=mask: course.enqueue_generate(mask=m, advance=False)
    out = {name: _time_graph(device, _record(device, fn), replays, repeats) for name, fn in ops.items()}
    env.close()
    return out


def in_situ(num_envs: int, device: str, steps: int, warm_steps: int, seed: int = 0) -> dict:
    """Mean us per env step of each component's ``step`` while the pure-pursuit controller
    drives (cars move, envs auto-reset): the env runs eagerly, each component's ``step``
    replays its own recorded graph, timed between device synchronisations."""
    env, pursuit, obs = _drive(num_envs, device, 0, seed, capture=False)
    ctx = env.course._ctx
    totals = {}
    for name in ("progress", "collision", "localizer"):
        comp = env.course.components[name]
        graph = _record(device, lambda comp=comp: comp.step(ctx))

        def timed(ctx_, graph=graph, key=f"in situ step: {name}"):
            wp.synchronize_device(device)
            t0 = _clock()
            wp.capture_launch(graph)
            wp.synchronize_device(device)
            totals[key] = totals.get(key, 0.0) + _clock() - t0

        comp.step = timed
    for i in range(warm_steps + steps):
        if i == warm_steps:
            totals.clear()
        obs, *_ = env.step(pursuit(obs))
    env.close()
    return {k: 1e6 * v / steps for k, v in totals.items()}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--num-envs", type=int, nargs="+", default=[64, 1024, 4096])
    parser.add_argument("--replays", type=int, default=50, help="graph replays per timed batch")
    parser.add_argument("--repeats", type=int, default=7, help="timed batches (the median is reported)")
    parser.add_argument("--steps", type=int, default=100, help="pure-pursuit steps of the in-situ timing")
    parser.add_argument("--warm-steps", type=int, default=100, help="pure-pursuit steps before timing")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: perf_counter; cpu: this process's CPU time (steadier on shared cores)")
    parser.add_argument("--json", default=None,
                        help="output JSON (default: benchmarks/results/latest/components_<device>.json, untracked)")
    args = parser.parse_args(argv)
    device = str(wp.get_device(args.device))
    global _clock
    _clock = time.perf_counter if args.clock == "wall" else time.process_time

    cols = {}
    for E in args.num_envs:
        cols[E] = isolated(E, device, args.replays, args.repeats, args.warm_steps)
        cols[E].update(in_situ(E, device, args.steps, args.warm_steps))
    names = list(next(iter(cols.values())))
    print(f"\nTrackGen-Track-v0 components on {device} ({platform.machine()}, warp {wp.__version__}): "
          f"median us per call (graph replay)\n")
    print("| operation | " + " | ".join(f"E={E}" for E in args.num_envs) + " |")
    print("|---|" + "---:|" * len(args.num_envs))
    for n in names:
        print(f"| {n} | " + " | ".join(f"{cols[E][n]:,.1f}" for E in args.num_envs) + " |")
    result = {"device": device, "warp": wp.__version__, "machine": platform.machine(),
              "date": time.strftime("%Y-%m-%d"), "clock": args.clock, "replays": args.replays, "repeats": args.repeats,
              "us_per_call": {str(E): v for E, v in cols.items()}}
    path = args.json or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "latest",
                                     f"components_{device.replace(':', '')}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"\nwrote {path}")
    return result


if __name__ == "__main__":
    main()
