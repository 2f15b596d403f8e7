"""Memory per env (per part) and first-use latency (cold and warm kernel cache) of both envs.

Usage::

    python benchmarks/bench_memory_startup.py [--device cpu] [--num-envs 4096] [--latency-envs 64]
                                              [--no-latency] [--json PATH]

Memory: ``memory_estimate(num_envs)`` of TrackGen-Track-v0 (:class:`TrackVectorEnv`) and
TrackGen-Gates-v0 (:class:`GatesVectorEnv`) at default capacities, the env's own measurement
(two small constructions measured per part with ``memory_usage()`` and extrapolated,
:mod:`trackgen_env.course.memory`), divided by ``num_envs``: bytes per env of the generator,
each course component, the course's masks, the body state, the env buffers and (CPU, NumPy
outputs) the host copies of the outputs. The issue's target (<= 16 KiB per env for
TrackGen-Track-v0, excluding user buffers) is compared with the total without the output
copies (on a GPU those are host memory; on the CPU they are the arrays the user receives).

First use: a fresh Python subprocess times ``import trackgen_env``, construction
(``gymnasium.make_vec(id, num_envs)``) and the first step (``reset`` + one ``step``), with
Warp's kernel cache pointed at a new temporary folder (``WARP_CACHE_PATH``, which warp reads
at ``wp.init()``): "cold" compiles every kernel; a second subprocess on the same folder is
"warm". Prints Markdown tables and writes JSON (default ``benchmarks/results/latest/``, untracked).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import warp as wp

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env.envs.gates import GatesVectorEnv
from trackgen_env.envs.track import TrackVectorEnv

ENVS = {"TrackGen-Track-v0": TrackVectorEnv, "TrackGen-Gates-v0": GatesVectorEnv}
#: the issue's target for TrackGen-Track-v0 at default capacities, excluding user buffers
TARGET_BYTES_PER_ENV = 16 * 1024
#: the issue's target for import + construction + first step with a cold kernel cache [s]
TARGET_COLD_S = 4.0
#: parts that are copies of the outputs handed to the user (not the env's device memory)
OUTPUT_PARTS = ("numpy outputs",)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def memory_per_env(env_cls, num_envs: int, device: str) -> dict:
    """Bytes of each part of ``env_cls.memory_estimate(num_envs, device=device)``, in all and per env.

    Returns ``{"num_envs", "parts": {name: bytes}, "per_env": {name: bytes / num_envs},
    "total", "total_per_env", "device_total_per_env" (without :data:`OUTPUT_PARTS`),
    "marginal_per_env" (bytes each further env adds)}``; ``parts`` sum to ``total``.
    """
    est = env_cls.memory_estimate(num_envs, device=device)
    parts = dict(est.parts)
    device_total = sum(b for name, b in parts.items() if name not in OUTPUT_PARTS)
    return {"num_envs": num_envs, "parts": parts, "per_env": {k: b / num_envs for k, b in parts.items()},
            "total": est.total, "total_per_env": est.total / num_envs,
            "device_total_per_env": device_total / num_envs, "marginal_per_env": est.per_env}


# run in a fresh interpreter: each phase timed from the child's own start of work
_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import gymnasium, numpy as np, warp as wp
wp.config.quiet = True
import trackgen_env
t1 = time.perf_counter()
env = gymnasium.make_vec(sys.argv[1], num_envs=int(sys.argv[2]), device=sys.argv[3])
t2 = time.perf_counter()
env.reset(seed=0)
env.step(np.zeros(env.action_space.shape, np.float32))
wp.synchronize()
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "construction_s": t2 - t1, "first_step_s": t3 - t2,
                  "total_s": t3 - t0, "cache": wp.config.kernel_cache_dir}))
"""


def first_use(env_id: str, num_envs: int, device: str, cache: str) -> dict:
    """Seconds of import / construction / first step in a fresh subprocess on kernel cache ``cache``."""
    env = {**os.environ, "WARP_CACHE_PATH": cache, "PYTHONPATH": os.pathsep.join(
        p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    run = subprocess.run([sys.executable, "-c", _CHILD, env_id, str(num_envs), device], env=env,
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"the first-use run of {env_id} failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
    result = json.loads(run.stdout.strip().splitlines()[-1])
    if not os.path.realpath(result.pop("cache")).startswith(os.path.realpath(cache)):
        raise RuntimeError(f"warp did not use the kernel cache {cache!r} (WARP_CACHE_PATH)")
    return result


def latency(env_id: str, num_envs: int, device: str) -> dict:
    """``{"cold": ..., "warm": ...}`` of :func:`first_use`: a new kernel cache folder, then the same again."""
    with tempfile.TemporaryDirectory(prefix="warp-cache-") as cache:
        cold = first_use(env_id, num_envs, device, cache)
        warm = first_use(env_id, num_envs, device, cache)
    return {"num_envs": num_envs, "cold": cold, "warm": warm}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--num-envs", type=int, default=4096, help="num_envs of the memory estimate")
    parser.add_argument("--latency-envs", type=int, default=64, help="num_envs of the first-use runs")
    parser.add_argument("--no-latency", action="store_true", help="only the memory part")
    parser.add_argument("--json", default=None,
                        help="output JSON (default: benchmarks/results/latest/memory_startup_<device>.json, untracked)")
    args = parser.parse_args(argv)
    wp.config.quiet = True  # no per-module load lines between the tables
    device = str(wp.get_device(args.device))

    memory = {env_id: memory_per_env(cls, args.num_envs, device) for env_id, cls in ENVS.items()}
    track = memory["TrackGen-Track-v0"]
    ratio = track["device_total_per_env"] / TARGET_BYTES_PER_ENV
    print(f"\nMemory per env on {device} at num_envs={args.num_envs}, default capacities "
          f"(warp {wp.__version__}; bytes = the estimate's part / num_envs):\n")
    names = list(dict.fromkeys(n for m in memory.values() for n in m["parts"]))
    print("| part | " + " | ".join(f"{e} [B/env]" for e in memory) + " |")
    print("|---|" + "---:|" * len(memory))
    for name in names:
        print(f"| {name} | " + " | ".join((f"{m['per_env'][name]:,.0f}" if name in m["parts"] else "-") for m in memory.values()) + " |")
    print("| **total** | " + " | ".join(f"**{m['total_per_env']:,.0f}**" for m in memory.values()) + " |")
    print("| total without output copies | " + " | ".join(f"{m['device_total_per_env']:,.0f}" for m in memory.values())
          + " |")
    print(f"\nTrackGen-Track-v0: {track['device_total_per_env'] / 1024:.1f} KiB per env without output copies, "
          f"{ratio:.2f}x the target of {TARGET_BYTES_PER_ENV // 1024} KiB")

    startup = {}
    if not args.no_latency:
        for env_id in ENVS:
            startup[env_id] = latency(env_id, args.latency_envs, device)
        print(f"\nFirst use at num_envs={args.latency_envs} (fresh subprocess; cold: new kernel cache folder, "
              f"warm: the same folder again) [s]:\n")
        print("| env | cache | import | construction | first step | total |")
        print("|---|---|---:|---:|---:|---:|")
        for env_id, r in startup.items():
            for kind in ("cold", "warm"):
                t = r[kind]
                print(f"| {env_id} | {kind} | {t['import_s']:.2f} | {t['construction_s']:.2f} | "
                      f"{t['first_step_s']:.2f} | {t['total_s']:.2f} |")
        cold = {env_id: r["cold"]["total_s"] / TARGET_COLD_S for env_id, r in startup.items()}
        print("\nCold first use against the target of " f"{TARGET_COLD_S:.0f} s: "
              + ", ".join(f"{env_id} {x:.2f}x" for env_id, x in cold.items()))

    result = {"device": device, "warp": wp.__version__, "machine": platform.machine(),
              "date": time.strftime("%Y-%m-%d"), "target_bytes_per_env": TARGET_BYTES_PER_ENV,
              "track_ratio_to_target": ratio, "target_cold_s": TARGET_COLD_S, "memory": memory, "first_use": startup}
    path = args.json or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "latest",
                                     f"memory_startup_{device.replace(':', '')}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print(f"\nwrote {path}")
    return result


if __name__ == "__main__":
    main()
