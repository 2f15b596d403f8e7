"""One benchmark run: TrackGen-Track-v0 and TrackGen-Gates-v0 side by side with their floor and peers.

Usage::

    python benchmarks/run.py [--device cpu|cuda:0] [--quick] [--out DIR] [--seconds S]
                             [--only SECTION ...]

Sections (``--only`` runs a subset; every section's figures come from the same run otherwise):

* ``throughput``: env-steps/s (transitions: the NEXT_STEP reset steps left out) of ``env.step``
  for num_envs in {1, 64, 1024, 4096, 16384, 65536, 131072, 262144}, those whose envs fit the memory
  (the CPU: up to 65536, :data:`CPU_MAX_ENVS`, for the run's time), graph replay and eager with
  NumPy outputs, graph replay with torch outputs; for TrackGen-Track-v0 also the floor (one
  fused plain-Warp kernel, :class:`benchmarks.floor.FusedWarpStep`) and a NumPy-vectorised
  step (:class:`benchmarks.floor.NumpyStep`) on the same tracks, with the same controller;
* ``generation``: valid, checked courses per second (retries included);
* ``resets``: a step's time with 0 %, 1 % and 100 % of the envs auto-resetting;
* ``regeneration``: a recorded masked regeneration of 0, 1 and 1 % of the envs alone, and what a
  recorded one that regenerates nothing adds to a replayed step (against the step recorded without it);
* ``breakdown``: where an eager TrackGen-Track-v0 step's time goes;
* ``lidar``: TrackGen-Track-v0's env-steps/s with ``obs_type="lidar"`` (64 and 1080 beams) against
  ``"state"``, timed in turns at the work size, and the rays per second;
* ``pixels``: TrackGen-Track-v0's env-steps/s with ``obs_type="pixels"`` (CarRacing-v3's 96x96x3
  frames, drawn on the device) at :data:`PIXELS_ENVS` envs, NumPy and torch outputs, timed in
  turns with Gymnasium's CarRacing-v3 (one env, as users run it; skipped without ``gymnasium[box2d]``);
* ``memory``: device memory per env, per part (the envs' ``memory_estimate``);
* ``first_use``: import + construction + first step in a fresh interpreter on a new empty Warp
  kernel cache, from the installed package (a wheel of these sources: its kernels prebuilt) and
  from the sources (cold: every module compiled), and warm (``--quick``: warm only, on the user's cache);
* ``carracing``: Gymnasium's CarRacing-v3 (pixels, physics only, ``make_vec`` sync, track
  generation); skipped with the reason when ``gymnasium[box2d]`` is missing;
* ``race``: car-steps/s of TrackGen-Race-v0 (``work_envs / 4`` courses x 4 cars, the demo's
  overtaking pure pursuit) timed in turns with TrackGen-Track-v0 at ``work_envs`` envs;
* ``training`` (only with ``--only training``): env-steps/s of training, the env alone, the SB3 recipe,
  the fast path (rsl_rl) and the CleanRL example at the fast path's env count, and ``training.png``,
  laps against wall-clock seconds for SB3 and the fast path (:mod:`benchmarks.training`);
* ``sharding``: :class:`trackgen_env.envs.sharded.ShardedVectorEnv` with 1 and 2 shards
  (threads), its step split into the shards' replays (wall-clock and CPU time) and the host part,
  a GIL-free control, whether its outputs equal one env's, and whether a graph replay releases the GIL.

Writes ``results.json``, ``results.md`` (the tables, each with its command) and
``throughput.png`` into ``--out`` (default ``benchmarks/results/latest/``, untracked) and prints
the tables. Only the env's step is timed, never the policy; torch runs on one thread
(``torch.set_num_threads(1)``); Warp runs a CPU kernel on one thread, so CPU figures are per core.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import sys
import tempfile
import threading
import time

import numpy as np
import warp as wp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # `benchmarks` as a package

from benchmarks import carracing, measure, training  # noqa: E402
from benchmarks.floor import FusedWarpStep, NumpyStep  # noqa: E402
from trackgen_env.core.checks import resolve_device  # noqa: E402
from trackgen_env.envs.controllers import PurePursuit  # noqa: E402
from trackgen_env.envs.io import check_actions  # noqa: E402
from trackgen_env.course.memory import available_bytes  # noqa: E402
from trackgen_env.envs.sharded import ShardedVectorEnv  # noqa: E402
from trackgen_env.envs.race import RaceVectorEnv  # noqa: E402
from trackgen_env.envs.track import TrackVectorEnv  # noqa: E402
from trackgen_env.demos.race import RacePursuit, speed_margins  # noqa: E402

NUM_ENVS = (1, 64, 1024, 4096, 16384, 65536, 131072, 262144)
#: the largest num_envs on the CPU, for the run's time (131072 would fit in 24 GB): the table builds
#: 9 envs a size, each generating every track, and times ~20 steps of each; 65536 took 85 s of a
#: quiet VM (a step ~70 ms a core), 131072 would take twice that
CPU_MAX_ENVS = 65536
QUICK_NUM_ENVS = (1, 64)
#: the num_envs of the per-size sections (generation, resets, regeneration, breakdown, memory, the
#: ratios): the targets are set at 4096 envs on one CPU core and at 131072 on a GPU
WORK_ENVS = {"cpu": 4096, "cuda": 131072}
ENV_IDS = tuple(measure.ENVS)
#: in the order they run: the per-size sections first, so that a run cut short (a GPU lease's time
#: limit) keeps them; the throughput table, the longest, after them
SECTIONS = ("generation", "resets", "regeneration", "breakdown", "memory", "lidar", "pixels", "race", "throughput",
            "first_use", "carracing", "sharding", "training")
#: sections only ``--only`` runs, and why
OPT_IN = {"training": "it trains two policies for minutes each: run it alone with --only training"}
#: sections a default run leaves out on a GPU, and why (``--only`` still runs them)
CPU_ONLY = {
    "first_use": "its target is the CPU's first use, and it builds a wheel whose install compiles the CPU kernels",
    "sharding": "it spreads the envs over CPU cores (threads); one GPU runs every env already",
}
#: the issue's targets (ratios measured in one run); see benchmarks/NOTES.md
TARGETS = {
    "cpu": {
        "track_step_time_over_floor_4096": ("<=", 3.0),
        "track_over_carracing_physics": (">=", 200.0),
        "sharding_speedup_2": (">=", 1.8),
        "track_courses_per_s_4096": (">=", 50_000.0),
        "track_cold_first_use_s": ("<=", 4.0),
        "track_device_bytes_per_env": ("<=", measure.TARGET_BYTES_PER_ENV),
        "lidar_64_over_state_4096": (">=", 1 / 3),
        "lidar_1080_over_state_4096": (">=", 1 / 20),
        "pixels_1024_over_carracing": (">=", 100.0),
        "race_car_steps_over_track_4096": (">=", 0.5),
    },
    "cuda": {
        "track_torch_transitions_per_s_131072": (">=", 600_000_000.0),
        "track_torch_step_time_over_floor_131072": ("<=", 3.0),
        "track_idle_regeneration_us_131072": ("<=", 10.0),
        "track_courses_per_s_131072": (">=", 10_000_000.0),
        "track_masked_regeneration_1pct_us_131072": ("<=", 200.0),
        "track_device_bytes_per_env": ("<=", measure.TARGET_BYTES_PER_ENV),
        "race_car_steps_over_track_131072": (">=", 0.5),
        "pixels_1024_over_carracing": (">=", 100.0),
    },
}
#: num_envs of the pixels section (a frame is 27,648 B: 28 MB of observations a step)
PIXELS_ENVS = 1024
#: cars per course of the race section
RACE_AGENTS = 4


def _kind(device: str) -> str:
    """``"cpu"`` or ``"cuda"``: which targets and sizes a device gets."""
    return "cpu" if device == "cpu" else "cuda"


def default_sections(device: str) -> list[str]:
    """The sections a run without ``--only`` makes on ``device``: all of them, less :data:`CPU_ONLY` on a GPU."""
    return [s for s in SECTIONS if (_kind(device) == "cpu" or s not in CPU_ONLY) and s not in OPT_IN]


def _torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


#: envs of one num_envs that the throughput table holds at once: the four timed columns, and for the
#: Track env the references' env (the floors' packed tracks, 4 KB per env each, are in the margin)
ENVS_AT_ONCE = {"TrackGen-Track-v0": 5, "TrackGen-Gates-v0": 4}


def _fits(env_id: str, num_envs: int, device: str) -> bool:
    """Whether the throughput table's envs of ``num_envs`` are worth building here: while the envs
    built at once (:data:`ENVS_AT_ONCE`, by the memory estimate, plus 25 %) stay under 60 % of the
    memory available, and on the CPU up to :data:`CPU_MAX_ENVS` (the run's time)."""
    if wp.get_device(device).is_cpu and num_envs > CPU_MAX_ENVS:
        return False
    return 1.25 * _bytes_at_once(env_id, num_envs, device) < 0.6 * available_bytes(device)


def _bytes_at_once(env_id: str, num_envs: int, device: str) -> int:
    """Bytes of the :data:`ENVS_AT_ONCE` envs of ``num_envs`` that the throughput table builds for
    ``env_id``, by the memory estimate (for TrackGen-Track-v0, the most any section holds at once)."""
    return ENVS_AT_ONCE[env_id] * measure.ENVS[env_id].memory_estimate(num_envs, device=device).total


# -- the sections ------------------------------------------------------------------------------
def run_throughput(cfg) -> dict:
    out = {"num_envs_skipped": {}, "rows": {}}
    torch = _torch()
    for env_id in ENV_IDS:
        rows = []
        for E in cfg.num_envs:
            if not _fits(env_id, E, cfg.device):
                out["num_envs_skipped"].setdefault(env_id, []).append(E)
                continue
            envs, timers = [], {}
            for key, kw in (("replay_numpy", {}), ("eager_numpy", {"capture": False}),
                            ("replay_torch", {"output": "torch"}),
                            ("same_step", {"autoreset_mode": "SameStep"})):
                if key == "replay_torch" and torch is None:
                    continue
                env, timers[key] = measure.env_timer(env_id, E, cfg.device, **kw)
                envs.append(env)
            if env_id == "TrackGen-Track-v0":
                timers.update(_references(E, cfg, envs, torch))
            # in turns: the ratios between the columns see the same load on shared cores
            row = {"num_envs": E, **measure.in_turns(timers, cfg.seconds, rounds=2 if cfg.quick else 5)}
            for env in envs:
                env.close()
            rows.append(row)
            _say(f"{env_id} num_envs={E}: " + ", ".join(
                f"{k} {v['transitions_per_s']:,.0f}" for k, v in row.items() if isinstance(v, dict)))
        out["rows"][env_id] = rows
    if torch is None:
        out["torch"] = "skipped: torch is not installed (pip install -e .[torch])"
    return out


def _references(E: int, cfg, envs: list, torch=None) -> dict:
    """Timers of the floor (NumPy outputs, and with ``torch`` torch outputs) and the NumPy step on the
    tracks of a TrackGen-Track-v0 of ``E`` envs (seed 0, the timed envs' first tracks), which is never
    stepped (appended to ``envs`` to be closed)."""
    env, pursuit = measure.make_env("TrackGen-Track-v0", E, cfg.device, capture=False)
    envs.append(env)
    env.reset(seed=0)
    fused = FusedWarpStep(env)
    timers = {"floor": measure.Timer(fused.step, fused.reset(), pursuit, E, cfg.device)}
    if torch is not None:  # the floor of the env's torch outputs: device views out, actions copied on the device
        fused_torch = FusedWarpStep(env, output="torch")
        timers["floor_torch"] = measure.Timer(fused_torch.step, fused_torch.reset(),
                                              lambda obs: torch.from_numpy(pursuit(obs.cpu().numpy())).to(obs.device),
                                              E, cfg.device)
    # the NumPy step has no lookahead to pursue: replay the actions pure pursuit took on the floor
    recorded, obs = [], fused.reset()
    for _ in range(64):
        recorded.append(pursuit(obs))
        obs = fused.step(recorded[-1])[0]
    numpy_step, count = NumpyStep(env), iter(range(10**12))
    timers["numpy_step"] = measure.Timer(numpy_step.step, numpy_step.reset(), lambda _: recorded[next(count) % 64],
                                         E, cfg.device)
    fused.reset()
    return timers


def run_generation(cfg) -> dict:
    E = cfg.work_envs
    return {family: {"num_envs": E, **measure.courses_per_second(family, E, cfg.device, cfg.seconds)}
            for family in ("track", "gates")}


def run_resets(cfg) -> dict:
    return {env_id: {"num_envs": cfg.work_envs, **measure.reset_cost(env_id, cfg.work_envs, cfg.device,
                                                                        steps=5 if cfg.quick else 20)}
            for env_id in ENV_IDS}


def run_regeneration(cfg) -> dict:
    return {env_id: measure.regeneration_cost(env_id, cfg.work_envs, cfg.device, replays=5 if cfg.quick else 50)
            for env_id in ENV_IDS}


def run_breakdown(cfg) -> dict:
    return {"num_envs": cfg.work_envs, "us_per_step": measure.breakdown(cfg.work_envs, cfg.device,
                                                                         steps=10 if cfg.quick else 100)}


def run_lidar(cfg) -> dict:
    return measure.lidar_rates(cfg.work_envs, cfg.device, cfg.seconds, rounds=2 if cfg.quick else 5)


def run_pixels(cfg) -> dict:
    """TrackGen-Track-v0 with ``obs_type="pixels"`` at :data:`PIXELS_ENVS` envs (graph replay, NumPy and
    torch outputs; its cars on pure pursuit's lines, :class:`measure.ShadowPursuit`) timed in turns
    with CarRacing-v3 (one env, pixels, random actions), so that the ratio sees the same load."""
    E, device, torch = (64 if cfg.quick else PIXELS_ENVS), cfg.device, _torch()
    timers, closing = {}, []
    for output in ("numpy", "torch") if torch is not None else ("numpy",):
        env = TrackVectorEnv(E, device, seed=0, obs_type="pixels", output=output)
        shadow = measure.ShadowPursuit(E, device, seed=0)
        policy = shadow
        if output == "torch":
            dev = torch.device("cuda", wp.get_device(device).ordinal) if device != "cpu" else torch.device("cpu")
            policy = lambda obs, shadow=shadow, dev=dev: torch.from_numpy(shadow(obs)).to(dev)  # noqa: E731
        obs, _ = env.reset(seed=0)
        timers[f"pixels_{output}"] = measure.Timer(env.step, obs, policy, E, device)
        closing += [env, shadow]
    reason = carracing.available()
    if reason is None:
        timers["carracing_pixels"] = carracing.pixels_runner()
        closing.append(timers["carracing_pixels"].env)
    out = measure.in_turns(timers, cfg.seconds * (1 if cfg.quick else 5), rounds=2 if cfg.quick else 5)
    for x in closing:
        x.close()
    out["num_envs"] = E
    if reason is not None:
        out["carracing_skipped"] = (f"CarRacing-v3 unavailable ({reason}); install it with pip install -e .[bench] "
                                    "(gymnasium[box2d])")
    return out


def run_memory(cfg) -> dict:
    return {env_id: measure.memory_per_env(env_id, cfg.work_envs, cfg.device) for env_id in ENV_IDS}


def run_first_use(cfg) -> dict:
    # --quick: TrackGen-Track-v0 only, warm only (a cold compile alone takes ~10 s, the wheel ~20 s)
    if cfg.quick:
        return {env_id: measure.latency(env_id, 64, cfg.device) for env_id in ENV_IDS[:1]}
    with tempfile.TemporaryDirectory(prefix="trackgen-first-use-") as folder:
        source = measure.source_without_prebuilt(os.path.join(folder, "source"))
        installed = measure.installed_package(os.path.join(folder, "installed"))
        return {env_id: measure.latency(env_id, 64, cfg.device, source=source, installed=installed)
                for env_id in ENV_IDS}


def run_carracing(cfg) -> dict:
    reason = carracing.available()
    if reason is not None:
        return {"skipped": f"CarRacing-v3 unavailable ({reason}); install it with pip install -e .[bench] "
                           "(gymnasium[box2d])"}
    # TrackGen-Track-v0 at work_envs timed in turns with CarRacing: the ratios see the same load
    env, timer = measure.env_timer("TrackGen-Track-v0", cfg.work_envs, cfg.device)
    out = carracing.measure(seconds=cfg.seconds, num_vector_envs=2 if cfg.quick else 8, tracks=2 if cfg.quick else 10,
                            min_steps=5 if cfg.quick else 20, others={"track_in_turns": timer.warm_up()},
                            rounds=2 if cfg.quick else 5)
    env.close()
    return out


def run_race(cfg) -> dict:
    """TrackGen-Race-v0 of ``work_envs / RACE_AGENTS`` courses against TrackGen-Track-v0 of ``work_envs``
    envs, the same number of cars, timed in turns (graph replay, NumPy outputs, NEXT_STEP)."""
    cars, N = cfg.work_envs, RACE_AGENTS
    courses = max(cars // N, 1)
    track, track_timer = measure.env_timer("TrackGen-Track-v0", cars, cfg.device)
    race = RaceVectorEnv(courses, cfg.device, num_agents=N, seed=0)
    obs, _ = race.reset(seed=0)
    race_timer = measure.Timer(race.step, obs, RacePursuit(race, speed_margins(N)), race.num_envs, cfg.device)
    out = measure.in_turns({"track": track_timer, "race": race_timer}, cfg.seconds, rounds=2 if cfg.quick else 5)
    track.close()
    race.close()
    return {"courses": courses, "num_agents": N, "track_envs": cars, **out,
            "car_steps_over_track": out["race"]["transitions_per_s"] / out["track"]["transitions_per_s"]}


def run_sharding(cfg) -> dict:
    E, env_id = cfg.work_envs, "TrackGen-Track-v0"
    out = {"num_envs": E, "cpu_cores": len(os.sched_getaffinity(0)), "load_average_before": os.getloadavg()[0]}
    envs, timers, clocks = {}, {}, {}
    # timed in turns: the speedup sees the same load; "2_serial": 2 shards stepped one after the
    # other in the caller's thread, so each replay runs alone (the contention-free reference)
    for shards in (1, 2, "2_serial"):
        env = envs[shards] = ShardedVectorEnv(env_id, E, 2 if shards == "2_serial" else shards, seed=0,
                                              device=cfg.device)
        obs, _ = env.reset(seed=0)
        clocks[shards] = _ReplayClock(env, serial=shards == "2_serial")
        timers[f"shards_{shards}"] = measure.Timer(clocks[shards].step, obs, PurePursuit(env.shards[0].car), E,
                                                   cfg.device)
    before = measure.cpu_times()
    out.update(measure.in_turns(timers, cfg.seconds, rounds=2 if cfg.quick else 5))
    out["steal_percent"] = measure.steal_percent(before, measure.cpu_times())
    for env in envs.values():
        env.close()
    out["speedup_2"] = out["shards_2"]["transitions_per_s"] / out["shards_1"]["transitions_per_s"]
    for shards in (1, 2):
        out[f"replay_us_{shards}"], out[f"replay_cpu_us_{shards}"] = clocks[shards].replay_us()
        # what a step adds to its shards' replays: the host part (checks, action in, outputs out)
        out[f"host_us_{shards}"] = out[f"shards_{shards}"]["step_us"] - out[f"replay_us_{shards}"]
    out["replay_speedup_2"] = out["replay_us_1"] / out["replay_us_2"]
    out["replay_cpu_speedup_2"] = out["replay_cpu_us_1"] / out["replay_cpu_us_2"]
    # the longest shard's replay alone (in turn) against in parallel: > 1 where two replays
    # running at the same moment slow each other (shared cache, memory bandwidth)
    out["replay_cpu_us_2_alone"] = clocks["2_serial"].replay_us()[1]
    out["replay_contention_2"] = out["replay_cpu_us_2"] / out["replay_cpu_us_2_alone"]
    out["equal_to_one_env"] = _shards_equal(env_id, min(E, 256), cfg.device)
    out["gil"] = _gil_probe("cpu", 2_000_000 if cfg.quick else 20_000_000)
    out["two_threads"] = _two_threads(2_000_000 if cfg.quick else 10_000_000)
    out["load_average_after"] = os.getloadavg()[0]
    return out


class _ReplayClock:
    """``env.step`` that also times its shards' graph replays, so that a step's time splits into
    the replays and the host part around them, on the same steps: per step, the span from the
    first replay's start to the last one's end (wall-clock: the parallel section, or the replays
    in turn where one thread ran several), and the longest shard's replay in its thread's CPU time
    (what a replay takes while it runs: the ceiling of the sharded step on free cores)."""

    def __init__(self, env: ShardedVectorEnv, serial: bool = False):
        self.env, self.last = env, [(0.0, 0.0, 0.0)] * env.num_shards
        self.serial = serial
        self.total = self.total_cpu = 0.0
        self.steps = 0
        for k, shard in enumerate(env.shards):
            shard._replay_step = self._timed(k, shard._replay_step)

    def _timed(self, k: int, replay):
        def run():
            t0, c0 = time.perf_counter(), time.thread_time()
            replay()
            self.last[k] = (t0, time.perf_counter(), time.thread_time() - c0)

        return run

    def step(self, action):
        out = self._step_in_turn(action) if self.serial else self.env.step(action)
        self.total += max(t[1] for t in self.last) - min(t[0] for t in self.last)
        self.total_cpu += max(t[2] for t in self.last)
        self.steps += 1
        return out

    def _step_in_turn(self, action):
        """``ShardedVectorEnv.step`` with every shard stepped in the caller's thread, one after the other."""
        env = self.env
        first = env.shards[0]
        action = check_actions(action, env.num_envs, env.single_action_space.shape[0], first.action_labels)
        out = first.new_outputs(env.num_envs)
        for shard, rows in zip(env.shards, env._rows):
            shard.step_into(action, out, rows)
        return out.step_tuple()

    def replay_us(self) -> tuple[float, float]:
        """[us] per step, over every step (the untimed warm-up ones too): the replays' wall-clock
        span and the longest replay's CPU time."""
        return 1e6 * self.total / self.steps, 1e6 * self.total_cpu / self.steps


def _shards_equal(env_id: str, E: int, device: str, steps: int = 50) -> bool:
    """Outputs of a 2-shard env equal one env's, step for step (random actions: many auto-resets)."""
    import gymnasium

    one = gymnasium.make_vec(env_id, num_envs=E, seed=7, device=device)
    two = ShardedVectorEnv(env_id, E, 2, seed=7, device=device)
    rng = np.random.default_rng(0)
    same = np.array_equal(one.reset(seed=7)[0], two.reset(seed=7)[0])
    for _ in range(steps):
        a = rng.uniform(-1, 1, one.action_space.shape).astype(np.float32)
        r1, r2 = one.step(a), two.step(a)
        same &= all(np.array_equal(x, y) for x, y in zip(r1[:4], r2[:4]))
        same &= all(np.array_equal(r1[4][k], r2[4][k]) for k in r1[4])
    one.close()
    two.close()
    return bool(same)


@wp.kernel
def _burn(x: wp.array(dtype=float), iterations: int):
    i = wp.tid()
    v = x[i]
    for _ in range(iterations):
        v = wp.sin(v) + 1.0
    x[i] = v


def _gil_probe(device: str, iterations: int) -> dict:
    """Does Warp hold the GIL during a CPU graph replay / kernel launch? A Python thread ticks
    (``time.sleep(0.001)`` between ticks) while the main thread (a) replays a recorded graph of a
    one-thread kernel that computes for ~1 s, (b) launches that kernel, (c) spins in Python. A call
    holding the GIL would leave no tick during it (the switch interval cannot interrupt a C call);
    the load of other jobs only stretches the gaps between ticks."""
    x = wp.zeros(1, dtype=float, device=device)
    wp.launch(_burn, 1, inputs=[x, 1], device=device)  # load the module outside the capture
    with wp.ScopedCapture(device=device) as cap:
        wp.launch(_burn, 1, inputs=[x, iterations], device=device)

    def ticks(main):
        stop, stamps = [False], []

        def tick():
            while not stop[0]:
                stamps.append(time.perf_counter())
                time.sleep(0.001)

        th = threading.Thread(target=tick)
        th.start()
        time.sleep(0.02)
        t0 = time.perf_counter()
        main()
        t1 = time.perf_counter()
        stop[0] = True
        th.join()
        inside = [t for t in stamps if t0 <= t <= t1]
        points = [t0, *inside, t1]
        return {"seconds": t1 - t0, "ticks_per_s": len(inside) / (t1 - t0),
                "longest_gap_s": max(b - a for a, b in zip(points, points[1:]))}

    replay = ticks(lambda: wp.capture_launch(cap.graph))

    def spin():
        t = time.perf_counter()
        while time.perf_counter() - t < replay["seconds"]:
            pass

    out = {"replay": replay, "launch": ticks(lambda: wp.launch(_burn, 1, inputs=[x, iterations], device=device)),
           "python": ticks(spin)}
    # a held GIL would make the longest gap the whole call
    out["released"] = bool(out["replay"]["longest_gap_s"] < 0.5 * replay["seconds"]
                           and out["launch"]["longest_gap_s"] < 0.5 * out["launch"]["seconds"])
    return out


def _two_threads(iterations: int) -> dict:
    """What 2 threads give on this machine now: two jobs in turn against the same two in 2 threads,
    for two Warp CPU graph replays (separate graphs) and, as the control, two SHA-256 hashes of a
    20 MB buffer (C code that releases the GIL): ``{kind: serial wall / threaded wall}``. Near 2 where
    two cores are free; near 1 for both while other jobs hold a core (then no sharding can scale)."""
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    xs = [wp.zeros(1, dtype=float, device="cpu") for _ in range(2)]
    wp.launch(_burn, 1, inputs=[xs[0], 1], device="cpu")
    graphs = []
    for x in xs:
        with wp.ScopedCapture(device="cpu") as cap:
            wp.launch(_burn, 1, inputs=[x, iterations], device="cpu")
        graphs.append(cap.graph)
    data = os.urandom(20_000_000)
    reps = max(1, iterations // 1_000_000)
    jobs = {"warp_graph_replay": lambda k: wp.capture_launch(graphs[k]),
            "sha256_control": lambda k: [hashlib.sha256(data).digest() for _ in range(reps)]}
    out = {}
    with ThreadPoolExecutor(2) as pool:
        for name, job in jobs.items():
            t0 = time.perf_counter()
            job(0)
            job(1)
            serial = time.perf_counter() - t0
            t0 = time.perf_counter()
            list(pool.map(job, (0, 1)))
            out[name] = serial / (time.perf_counter() - t0)
    return out


RUNNERS = {"throughput": run_throughput, "generation": run_generation, "resets": run_resets,
           "regeneration": run_regeneration, "breakdown": run_breakdown, "memory": run_memory, "lidar": run_lidar,
           "pixels": run_pixels,
           "first_use": run_first_use, "race": run_race, "carracing": run_carracing, "sharding": run_sharding,
           "training": training.run_training}


# -- the ratios, the tables, the plot ----------------------------------------------------------
def _row(result, env_id, E):
    for r in result.get("throughput", {}).get("rows", {}).get(env_id, []):
        if r["num_envs"] == E:
            return r
    return None


def ratios(result: dict, work_envs: int) -> dict:
    """The ratios measured side by side (absent where a section did not run or was skipped)."""
    out = {}
    tp = lambda d: d["transitions_per_s"]  # noqa: E731
    track = _row(result, "TrackGen-Track-v0", work_envs)
    if track is not None:
        out[f"track_step_time_over_floor_{work_envs}"] = tp(track["floor"]) / tp(track["replay_numpy"])
        out[f"track_over_numpy_step_{work_envs}"] = tp(track["replay_numpy"]) / tp(track["numpy_step"])
        out[f"track_replay_over_eager_{work_envs}"] = tp(track["replay_numpy"]) / tp(track["eager_numpy"])
        if "replay_torch" in track and "floor_torch" in track:
            out[f"track_torch_transitions_per_s_{work_envs}"] = tp(track["replay_torch"])
            out[f"track_torch_step_time_over_floor_{work_envs}"] = tp(track["floor_torch"]) / tp(track["replay_torch"])
    cr = result.get("carracing", {})
    if "pixels" in cr:  # against the Track env timed in turns with CarRacing
        for kind in ("pixels", "physics", "sync_vector"):
            out[f"track_over_carracing_{kind}"] = tp(cr["track_in_turns"]) / cr[kind]["env_steps_per_s"]
    gen = result.get("generation")
    if gen is not None:
        out[f"track_courses_per_s_{work_envs}"] = gen["track"]["courses_per_s"]
        if "track_generation" in cr:
            out["track_generation_over_carracing"] = (gen["track"]["courses_per_s"]
                                                      / cr["track_generation"]["tracks_per_s"])
    regen = result.get("regeneration", {}).get("TrackGen-Track-v0")
    if regen is not None:
        out[f"track_idle_regeneration_us_{work_envs}"] = regen["idle_regeneration_us"]
        out[f"track_masked_regeneration_1pct_us_{work_envs}"] = regen["masked_1pct_us"]
    if "race" in result:  # at the same number of cars: work_envs
        out[f"race_car_steps_over_track_{work_envs}"] = result["race"]["car_steps_over_track"]
    if "sharding" in result:
        out["sharding_speedup_2"] = result["sharding"]["speedup_2"]
        out["sharding_control_2"] = result["sharding"]["two_threads"]["sha256_control"]
    fu = result.get("first_use", {}).get("TrackGen-Track-v0")
    if fu is not None and fu["installed"] is not None:  # what a user gets: installed, an empty kernel cache
        out["track_cold_first_use_s"] = fu["installed"]["total_s"]
    lidar = result.get("lidar")
    if lidar is not None:
        for key, r in lidar.items():
            if key.startswith("lidar_"):
                out[f"{key}_over_state_{lidar['num_envs']}"] = r["over_state"]
    px = result.get("pixels", {})
    if "carracing_pixels" in px:
        carracing_rate = px["carracing_pixels"]["env_steps_per_s"]
        for output in ("numpy", "torch"):
            if f"pixels_{output}" in px:
                out[f"pixels_{output}_{px['num_envs']}_over_carracing"] = (px[f"pixels_{output}"]["env_steps_per_s"]
                                                                          / carracing_rate)
        # the target's figure: the faster of the outputs (NumPy copies 28 MB a step to fresh arrays)
        out[f"pixels_{px['num_envs']}_over_carracing"] = max(
            out[f"pixels_{o}_{px['num_envs']}_over_carracing"] for o in ("numpy", "torch") if f"pixels_{o}" in px)
    if "memory" in result:
        out["track_device_bytes_per_env"] = result["memory"]["TrackGen-Track-v0"]["device_total_per_env"]
    return out


def met_target(value: float, target: tuple[str, float]) -> bool:
    """Whether ``value`` meets ``target`` (``("<=", bound)`` or ``(">=", bound)``)."""
    op, bound = target
    return value <= bound if op == "<=" else value >= bound


def _f(x, digits=0):
    return "-" if x is None else f"{x:,.{digits}f}"


def _x(ratio):
    return "-" if ratio is None else f"{ratio:,.0f}x"


def _steal_note(percent, span: str) -> str:
    """"; X % of ... stolen by the hypervisor" where known (``measure.cpu_times``)."""
    if percent is None:
        return ""
    return (f"; the hypervisor stole {percent:.1f} % of all CPUs' time (idle included) {span}, running other guests "
            "on these vCPUs")


def markdown(result: dict, command: str) -> str:
    cfg, lines = result["config"], []
    add = lines.append
    add(f"# Benchmarks: {result['device']}, {result['machine']}, warp {result['warp']}, {result['date']}\n")
    add(f"All figures from one run: `{command}` (load average {result['load_average_before']:.2f} before, "
        f"{result['load_average_after']:.2f} after, on {os.cpu_count()} "
        f"cores{_steal_note(result.get('steal_percent'), 'over the run')})."
        " Transitions/s: env-steps/s "
        "of the step alone, without the NEXT_STEP reset steps; CPU figures are one core. "
        "Rerun one table with `--only SECTION`.\n")
    if "ratios" in result:
        add("## Ratios (measured side by side)\n")
        if cfg["quick"]:
            add(f"`--quick`: at most {max(cfg['num_envs'])} envs in the throughput table and {cfg['work_envs']} in the "
                f"others, {cfg['seconds']:g} s per figure, to check that the command runs (no verdicts). These are "
                "not the targets' measurements, which a full run makes (4096 envs and 1 s per figure on the CPU, "
                "131072 envs and 0.5 s on a GPU).\n")
        add("| ratio | value | target | met |")
        add("|---|---:|---:|---|")
        targets = TARGETS[_kind(result["device"])]
        for name, value in result["ratios"].items():
            target = targets.get(name)
            met = "" if target is None or cfg["quick"] else ("yes" if met_target(value, target) else "no")
            add(f"| {name} | {value:,.2f} | {'' if target is None else f'{target[0]} {target[1]:,g}'} | {met} |")
        missing = [name for name in targets if name not in result["ratios"]]
        if missing:
            add(f"\nNot measured in this run (a section not run or skipped, or another num_envs): "
                f"{', '.join(missing)}.")
        add("")
    if result.get("not_run"):
        add("Sections not run on this device: " + "; ".join(f"`{k}` ({v})" for k, v in result["not_run"].items())
            + ".\n")
    tp = result.get("throughput")
    if tp is not None:
        add(f"## Throughput [transitions/s] (`{command} --only throughput`)\n")
        add("Graph replay and eager with NumPy outputs, replay with torch outputs, driven by the reference "
            "controller (pure pursuit / CourseLinePilot). Floor: the same step as one plain-Warp kernel on "
            "the same tracks (no regeneration: a car that ends restarts on its track); floor / ours: its "
            "throughput over ours (our step time over its). NumPy step: bicycle model, windowed "
            "localisation and progress in NumPy over all envs (no lookahead). SAME_STEP: graph replay, NumPy "
            "outputs, `autoreset_mode=SAME_STEP` (what the SB3 adapter uses; an env that ends restarts in the "
            "same step, so every step is a transition). Floor torch: the floor with the torch outputs' work (device "
            "views out, the actions copied on the device), against Track torch.\n")
        add("| num_envs | Track replay | Track eager | Track torch | Track SAME_STEP | floor | floor / ours | floor "
            "torch "
            "| floor torch / ours | NumPy step | Gates replay | Gates eager | Gates torch | Gates SAME_STEP |")
        add("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for E in cfg["num_envs"]:
            t, g = _row(result, "TrackGen-Track-v0", E), _row(result, "TrackGen-Gates-v0", E)
            if t is None and g is None:
                continue
            v = lambda r, k: r[k]["transitions_per_s"] if r is not None and k in r else None  # noqa: E731
            ratio = v(t, "floor") / v(t, "replay_numpy") if t is not None else None
            torch_ratio = (v(t, "floor_torch") / v(t, "replay_torch")
                           if t is not None and "floor_torch" in t and "replay_torch" in t else None)
            add(f"| {E} | {_f(v(t, 'replay_numpy'))} | {_f(v(t, 'eager_numpy'))} | {_f(v(t, 'replay_torch'))} | "
                f"{_f(v(t, 'same_step'))} | {_f(v(t, 'floor'))} | {'-' if ratio is None else f'{ratio:.2f}x'} | "
                f"{_f(v(t, 'floor_torch'))} | {'-' if torch_ratio is None else f'{torch_ratio:.2f}x'} | "
                f"{_f(v(t, 'numpy_step'))} | {_f(v(g, 'replay_numpy'))} | {_f(v(g, 'eager_numpy'))} | "
                f"{_f(v(g, 'replay_torch'))} | {_f(v(g, 'same_step'))} |")
        for env_id, skipped in tp["num_envs_skipped"].items():
            add(f"\n{env_id}: num_envs {skipped} not run on {result['device']} "
                f"(over the CPU's cap of {CPU_MAX_ENVS}, for the run's time, or its envs built at once over 60 % of "
                f"the "
                "available memory).")
        if "torch" in tp:
            add(f"\nTorch outputs {tp['torch']}.")
        add("")
    if "generation" in result:
        add(f"## Generation (`{command} --only generation`)\n")
        add("A full generation of every env (`enqueue(advance=True)`: layout, resampling, the checks and "
            "their retries), counting the valid courses.\n")
        add("| family | num_envs | courses/s | us per generation | valid |")
        add("|---|---:|---:|---:|---:|")
        for fam, g in result["generation"].items():
            add(f"| {fam} | {g['num_envs']} | {_f(g['courses_per_s'])} | {_f(g['us_per_generation'])} | "
                f"{100 * g['valid_rate']:.1f}% |")
        add("")
    if "resets" in result:
        add(f"## Auto-reset cost (`{command} --only resets`)\n")
        add("us per graph-replayed step (the median) with a fixed share of the envs auto-resetting (the "
            "auto-reset mask is overwritten before each step; those envs get a new course and restart); the "
            "shares take turns, a step each, so that they see the same load.\n")
        add("| env | num_envs | 0 % | 1 % | 100 % | regeneration us per env |")
        add("|---|---:|---:|---:|---:|---:|")
        for env_id, r in result["resets"].items():
            add(f"| {env_id} | {r['num_envs']} | {_f(r['0.0']['step_us'])} | {_f(r['0.01']['step_us'])} | "
                f"{_f(r['1.0']['step_us'])} | {_f(r.get('regeneration_us_per_env'), 2)} |")
        add("")
    if "regeneration" in result:
        add(f"## A recorded masked regeneration (`{command} --only regeneration`)\n")
        add("us per graph replay between device synchronisations, the median of the replays (the variants take "
            "turns). Masked k: a recorded `course.regenerate(mask, advance=True)` alone with k envs masked (random "
            "envs; each replay draws their next courses, retry rounds included). Step with / without: the env's "
            "step graph with the masked regeneration (NEXT_STEP, its auto-reset mask cleared before each replay, so "
            "nothing regenerates) and the same step recorded on the same env without it, zero actions (another env "
            "regenerates); idle: their difference, what a step in which no env ends pays for the regeneration it "
            "carries.\n")
        first = next(iter(result["regeneration"].values()))
        counts = list(first["masked"])
        add("| env | num_envs | " + " | ".join(f"masked {k}" for k in counts) + " | step with | step without | idle |")
        add("|---|---:|" + "---:|" * (len(counts) + 3))
        for env_id, r in result["regeneration"].items():
            add(f"| {env_id} | {r['num_envs']} | " + " | ".join(_f(r["masked"].get(k)) for k in counts)
                + f" | {_f(r['step_with_regeneration'])} | {_f(r['step_without_regeneration'])} | "
                f"{_f(r['idle_regeneration_us'], 1)} |")
        add("")
    if "breakdown" in result:
        b = result["breakdown"]
        add(f"## Where an eager TrackGen-Track-v0 step's time goes (`{command} --only breakdown`)\n")
        add(f"num_envs={b['num_envs']}, pure pursuit, {b['us_per_step']['resets_per_step']:.1f} auto-resets per "
            "step; each part between device synchronisations.\n")
        add("| part | us per step |")
        add("|---|---:|")
        for name in ("regeneration", "car", "course.step()", "observations", "outputs copy out"):
            add(f"| {name} | {_f(b['us_per_step'].get(name))} |")
        add("")
    if "lidar" in result:
        lid = result["lidar"]
        add(f"## LiDAR observation (`{command} --only lidar`)\n")
        add(f"TrackGen-Track-v0 at num_envs={lid['num_envs']}, graph replay, NumPy outputs, timed in turns: "
            "`obs_type=\"state\"` driven by pure pursuit, `obs_type=\"lidar\"` (f1tenth_gym's 4.71 rad, 30 m) "
            "driven along the same lines (a state twin's pure-pursuit actions). ns per ray: the step time the "
            "beams add over the state step, per ray.\n")
        add("| obs_type | num_beams | env-steps/s | over state | rays/s | ns per ray |")
        add("|---|---:|---:|---:|---:|---:|")
        add(f"| state | - | {_f(lid['state']['env_steps_per_s'])} | 1.00 | - | - |")
        for key, r in lid.items():
            if key.startswith("lidar_"):
                add(f"| lidar | {r['num_beams']} | {_f(r['env_steps_per_s'])} | {r['over_state']:.3f} | "
                    f"{_f(r['rays_per_s'])} | {_f(r['ns_per_ray_added'], 1)} |")
        add("")
    if "pixels" in result:
        px, r = result["pixels"], result.get("ratios", {})
        add(f"## Pixel observation (`{command} --only pixels`)\n")
        add(f"TrackGen-Track-v0 with `obs_type=\"pixels\"` (96x96x3 uint8 egocentric frames drawn on the device) at "
            f"num_envs={px['num_envs']}, graph replay, its cars on pure pursuit's lines, timed in turns with "
            "Gymnasium's CarRacing-v3 (one env, `gymnasium.make(\"CarRacing-v3\")`, random actions).\n")
        if "carracing_skipped" in px:
            add(f"CarRacing-v3 skipped: {px['carracing_skipped']}\n")
        add("| env | outputs | env-steps/s | over CarRacing-v3 |")
        add("|---|---|---:|---:|")
        E = px["num_envs"]
        for output in ("numpy", "torch"):
            if f"pixels_{output}" in px:
                add(f"| TrackGen-Track-v0, {E} envs | {output} | {_f(px[f'pixels_{output}']['env_steps_per_s'])} | "
                    f"{_x(r.get(f'pixels_{output}_{E}_over_carracing'))} |")
        if "carracing_pixels" in px:
            add(f"| CarRacing-v3, one env | numpy | {_f(px['carracing_pixels']['env_steps_per_s'], 1)} | 1x |")
        add("")
    if "memory" in result:
        mem = result["memory"]
        add(f"## Memory per env (`{command} --only memory`)\n")
        add(f"Bytes per env of each part of `memory_estimate(num_envs={cfg['work_envs']})`, default capacities; "
            f"target for TrackGen-Track-v0: <= {measure.TARGET_BYTES_PER_ENV:,} B without the output copies.\n")
        add("| part | " + " | ".join(mem) + " |")
        add("|---|" + "---:|" * len(mem))
        for name in dict.fromkeys(n for m in mem.values() for n in m["parts"]):
            add(f"| {name} | " + " | ".join(_f(m["per_env"].get(name)) for m in mem.values()) + " |")
        add("| **total** | " + " | ".join(f"**{_f(m['total_per_env'])}**" for m in mem.values()) + " |")
        add("| device total (no output copies) | " + " | ".join(_f(m["device_total_per_env"]) for m in mem.values())
            + " |")
        add("")
    if "first_use" in result:
        add(f"## First use [s] (`{command} --only first_use`)\n")
        add("A fresh interpreter: import, `gymnasium.make_vec(id, 64)`, reset + one step. installed: the package "
            "from a wheel of these sources (`pip wheel --no-build-isolation`: its `setup.py` compiles the envs' CPU "
            "kernels into it), on a new empty Warp kernel cache (`WARP_CACHE_PATH`); cold: the sources without "
            "those kernels (every module compiled), on a new empty cache; warm: that cache again.\n")
        add("| env | package, cache | import | construction | first step | total |")
        add("|---|---|---:|---:|---:|---:|")
        for env_id, r in result["first_use"].items():
            for kind in ("installed", "cold", "warm"):
                t = r.get(kind)
                if t is None:
                    add(f"| {env_id} | {kind} | not run (--quick) | | | |")
                else:
                    add(f"| {env_id} | {kind} | {t['import_s']:.2f} | {t['construction_s']:.2f} | "
                        f"{t['first_step_s']:.2f} | {t['total_s']:.2f} |")
        add("")
    if "carracing" in result:
        cr = result["carracing"]
        add(f"## Gymnasium CarRacing-v3 (`{command} --only carracing`)\n")
        if "skipped" in cr:
            add(f"Skipped: {cr['skipped']}\n")
        else:
            add("Random actions; pixels: `gymnasium.make(\"CarRacing-v3\")` as users run it; physics: its pixel "
                "drawing stubbed out; sync vector: `make_vec(..., vectorization_mode=\"sync\")`; track generation: "
                "a `reset()` of the physics-only env (new track with its retries, the car).\n")
            add(f"TrackGen-Track-v0 (graph replay, NumPy outputs, {cfg['work_envs']} envs) timed in turns with them: "
                f"{cr['track_in_turns']['transitions_per_s']:,.0f} transitions/s.\n")
            add("| CarRacing-v3 | env-steps/s (tracks/s) | TrackGen-Track-v0 over it |")
            add("|---|---:|---:|")
            r = result.get("ratios", {})
            for kind, label in (("pixels", "one env, pixels"), ("physics", "one env, physics only"),
                                ("sync_vector", f"make_vec sync, {cr['sync_vector']['num_envs']} envs")):
                add(f"| {label} | {_f(cr[kind]['env_steps_per_s'], 1)} | {_x(r.get('track_over_carracing_' + kind))} |")
            add(f"| track generation | {_f(cr['track_generation']['tracks_per_s'], 1)} | "
                f"{_x(r.get('track_generation_over_carracing'))} |")
        add("")
    if "race" in result:
        rc = result["race"]
        add(f"## Head to head (`{command} --only race`)\n")
        add(f"TrackGen-Race-v0 of {rc['courses']} courses x {rc['num_agents']} cars (the demo's overtaking pure "
            f"pursuit) timed in turns with TrackGen-Track-v0 of {rc['track_envs']} envs (pure pursuit); graph "
            "replay, NumPy outputs; car-steps/s without the NEXT_STEP reset steps.\n")
        add("| env | car-steps/s | step [us] | resets per step |")
        add("|---|---:|---:|---:|")
        for key, label in (("track", f"TrackGen-Track-v0, {rc['track_envs']} envs"),
                           ("race", f"TrackGen-Race-v0, {rc['courses']} x {rc['num_agents']}")):
            add(f"| {label} | {_f(rc[key]['transitions_per_s'])} | {rc[key]['step_us']:,.0f} | "
                f"{rc[key]['resets_per_step']:.2f} |")
        add(f"\nRace over track: {rc['car_steps_over_track']:.2f}.\n")
    if "sharding" in result:
        s = result["sharding"]
        add(f"## Sharding over threads (`{command} --only sharding`)\n")
        add(f"`ShardedVectorEnv(\"TrackGen-Track-v0\", {s['num_envs']}, num_shards)`: each shard its own env and "
            f"graph, stepped in its own persistent thread; {s['cpu_cores']} cores, load average "
            f"{s['load_average_before']:.2f} / {s['load_average_after']:.2f} (other jobs share the cores)"
            f"{_steal_note(s.get('steal_percent'), 'while the shards were timed')}. "
            "Replays: the shards' graph replays in a step, wall-clock from the first one's start to the last "
            "one's end, and the longest one's CPU time in its thread (what it takes on a free core: its ratio is "
            "the ceiling on free cores, less sensitive to the load); host part: the rest of the step (checks, "
            "actions in, outputs out, threads starting).\n")
        add("| shards | transitions/s (timed in turns) | step [us] | replays [us] | replays, CPU [us] | host part "
            "[us] |")
        add("|---:|---:|---:|---:|---:|---:|")
        for k in (1, 2):
            x = lambda key: f" ({s[key]:.2f}x)" if k == 2 else ""  # noqa: E731
            add(f"| {k} | {_f(s[f'shards_{k}']['transitions_per_s'])}{x('speedup_2')} | "
                f"{s[f'shards_{k}']['step_us']:,.0f} | {s[f'replay_us_{k}']:,.0f}{x('replay_speedup_2')} | "
                f"{s[f'replay_cpu_us_{k}']:,.0f}{x('replay_cpu_speedup_2')} | {s[f'host_us_{k}']:,.0f} |")
        if "replay_cpu_us_2_alone" in s:
            add(f"\nThe same 2 shards stepped in turn in one thread: the longest replay takes "
                f"{s['replay_cpu_us_2_alone']:,.0f} us of CPU alone, {s['replay_cpu_us_2']:,.0f} us beside the other "
                f"({s['replay_contention_2']:.2f}x: above 1, two replays at the same moment slow each other through "
                "the shared cache and memory; the ceiling on free cores is then the in-turn ratio over this).")
        tt = s["two_threads"]
        add(f"\nTwo jobs in 2 threads against in turn, same run: two Warp CPU graph replays "
            f"{tt['warp_graph_replay']:.2f}x, two SHA-256 hashes (C code without the GIL, the control) "
            f"{tt['sha256_control']:.2f}x: where the control is near 1, other jobs hold the second core and "
            "no sharding can scale.")
        g = s["gil"]
        add(f"\nOutputs of 2 shards equal one env's (same seeds, 50 random-action steps): {s['equal_to_one_env']}.\n")
        add("GIL: a Python thread ticks (1 ms sleeps) while the main thread replays a recorded CPU graph of a "
            "long one-thread kernel, launches it, or spins in Python; a call holding the GIL would leave no tick "
            f"during it. Released: {g['released']}.\n")
        add("| main thread | seconds | ticks/s | longest gap [s] |")
        add("|---|---:|---:|---:|")
        for kind in ("replay", "launch", "python"):
            add(f"| {kind} | {g[kind]['seconds']:.2f} | {g[kind]['ticks_per_s']:,.0f} | "
                f"{g[kind]['longest_gap_s']:.3f} |")
        add("")
    if "training" in result:
        lines += training.markdown(result["training"], command)
    return "\n".join(lines)


def plot(result: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    series = [("TrackGen-Track-v0", "replay_numpy", "Track, replay"),
              ("TrackGen-Track-v0", "eager_numpy", "Track, eager"),
              ("TrackGen-Track-v0", "replay_torch", "Track, replay, torch"),
              ("TrackGen-Track-v0", "floor", "floor (one kernel)"),
              ("TrackGen-Track-v0", "floor_torch", "floor, torch outputs"),
              ("TrackGen-Track-v0", "numpy_step", "NumPy step"), ("TrackGen-Gates-v0", "replay_numpy", "Gates, replay"),
              ("TrackGen-Gates-v0", "eager_numpy", "Gates, eager"),
              ("TrackGen-Gates-v0", "replay_torch", "Gates, replay, torch")]
    for env_id, key, label in series:
        rows = [r for r in result["throughput"]["rows"].get(env_id, []) if key in r]
        if rows:
            ax.loglog([r["num_envs"] for r in rows], [r[key]["transitions_per_s"] for r in rows], "o-", label=label)
    cr = result.get("carracing", {})
    if "physics" in cr:
        ax.axhline(cr["physics"]["env_steps_per_s"], color="grey", ls="--", label="CarRacing-v3, physics only")
        ax.axhline(cr["pixels"]["env_steps_per_s"], color="grey", ls=":", label="CarRacing-v3, pixels")
    ax.set_xlabel("num_envs")
    ax.set_ylabel("transitions/s")
    ax.set_title(f"{result['device']} ({'one core' if result['device'] == 'cpu' else result['device']}), "
                 f"warp {result['warp']}, {result['date']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _say(msg: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def write(result: dict, out: str, command: str) -> str:
    """Write ``results.json``, ``results.md`` (and ``throughput.png`` once that section ran) into ``out``;
    returns the Markdown. Called after every section, so that a run cut short keeps what it measured."""
    os.makedirs(out, exist_ok=True)
    result["ratios"] = ratios(result, result["config"]["work_envs"])
    text = markdown(result, command)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(result, f, indent=2, default=lambda x: None if isinstance(x, float) and math.isnan(x) else str(x))
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(text + "\n")
    if "throughput" in result:
        plot(result, os.path.join(out, "throughput.png"))
    if "training" in result:
        training.plot(result["training"], os.path.join(out, "training.png"))
    return text


def _positive(kind):
    """An argparse type: ``kind(text)``, refused unless finite and > 0."""
    what = "an int > 0" if kind is int else "a finite number > 0"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not 0 < value < math.inf:  # also NaN
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and times (seconds; for tests)")
    parser.add_argument("--out", default=None, help="output folder (default benchmarks/results/latest/, untracked)")
    parser.add_argument("--seconds", type=_positive(float), default=None,
                        help="time per measurement (default 1 on the CPU, 0.5 on a GPU, --quick 0.05)")
    parser.add_argument("--work-envs", type=_positive(int), default=None,
                        help="num_envs of the per-size sections and the ratios (default 4096 on the CPU, 131072 on a "
                             "GPU: the targets' size; --quick 64)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=None,
                        help="sections to run (default: all; on a GPU all but first_use and sharding)")
    args = parser.parse_args(argv)
    wp.config.log_level = wp.LOG_WARNING
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        parser.error(f"--device: {exc}")
    kind = _kind(device)
    work_envs = args.work_envs if args.work_envs is not None else (64 if args.quick else WORK_ENVS[kind])
    seconds = args.seconds if args.seconds is not None else (0.05 if args.quick else 1.0 if kind == "cpu" else 0.5)
    cfg = argparse.Namespace(
        device=device, quick=args.quick, seconds=seconds,
        num_envs=list(QUICK_NUM_ENVS if args.quick else NUM_ENVS), work_envs=work_envs)
    command = ("python benchmarks/run.py" + (f" --device {device}" if device != "cpu" else "")
               + (" --quick" if args.quick else "")
               + (f" --work-envs {work_envs}" if args.work_envs is not None else "")
               + (f" --seconds {seconds:g}" if args.seconds is not None else ""))
    sections = args.only if args.only is not None else default_sections(device)
    if "sharding" in sections and work_envs < 2:
        parser.error(f"--work-envs {work_envs}: the sharding section splits the envs over 2 shards, so it needs "
                     "at least 2 (or leave it out with --only)")
    need, available = _bytes_at_once("TrackGen-Track-v0", work_envs, device), available_bytes(device)
    if need > available:
        parser.error(f"--work-envs {work_envs}: the per-size sections hold up to {ENVS_AT_ONCE['TrackGen-Track-v0']} "
                     f"Track envs of {work_envs} at once, ~{need / 2**30:.1f} GiB by their memory estimate, and "
                     f"{device} has {available / 2**30:.1f} GiB available")
    if args.out == "":
        parser.error("--out: expected a folder, got an empty string")
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "latest")
    try:  # before any measuring: a folder that cannot be written is found now, not after the first section
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        parser.error(f"--out {out}: cannot write there ({exc})")
    _torch()
    result = {"device": device, "warp": wp.__version__, "machine": platform.machine(),
              "date": time.strftime("%Y-%m-%d"),
              "command": command,
              "argv": " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])),
              "config": {k: v for k, v in vars(cfg).items()}, "load_average_before": os.getloadavg()[0],
              "not_run": {s: {**CPU_ONLY, **OPT_IN}[s] for s in SECTIONS if args.only is None and s not in sections}}
    cfg.out = out
    started = measure.cpu_times()
    for section in SECTIONS:
        if section in sections:
            t0 = time.perf_counter()
            result[section] = RUNNERS[section](cfg)
            _say(f"{section}: {time.perf_counter() - t0:.1f} s")
            result["load_average_after"] = os.getloadavg()[0]
            result["steal_percent"] = measure.steal_percent(started, measure.cpu_times())
            text = write(result, out, command)  # the last section's write is the run's
    print("\n" + text)
    print(f"\nwrote {os.path.join(out, 'results.json')}, results.md"
          + (", throughput.png" if "throughput" in result else ""))
    return result


if __name__ == "__main__":
    main()
