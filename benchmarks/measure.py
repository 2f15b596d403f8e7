"""The measurements of ``benchmarks/run.py`` on this package's envs (each a function returning a dict).

* :class:`Timer`, :func:`steps_per_second`, :func:`in_turns`: env-steps/s and transitions/s of a
  step function driven by a policy (several steppers timed in turns, so their ratios see the same load);
* :func:`env_timer`: that for TrackGen-Track-v0 / TrackGen-Gates-v0 (graph replay or eager,
  NumPy or torch outputs);
* :func:`courses_per_second`: checked, valid courses per second of a generator (retries included);
* :func:`reset_cost`: a step's time with a given share of envs auto-resetting;
* :func:`regeneration_cost`: a recorded masked regeneration alone, and what one that regenerates
  nothing adds to a recorded step;
* :func:`breakdown`: where an eager step's time goes;
* :func:`memory_per_env`, :func:`first_use`: device memory per env per part, and import +
  construction + first step in a fresh interpreter on a cold / warm kernel cache, from the
  sources (every kernel compiled) or from the package as installed (the kernels prebuilt).

Only the step is timed, never the policy. Warp runs CPU kernels on one thread: CPU numbers are per core.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np
import warp as wp

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env import GateGenConfig, GateGenerator, TrackGenConfig, TrackGenerator
from trackgen_env.envs.controllers import CourseLinePilot, PurePursuit
from trackgen_env.envs.gates import GatesVectorEnv
from trackgen_env.envs.track import TrackVectorEnv
from trackgen_env.core.kernel_cache import PREBUILT_DIR

ENVS = {"TrackGen-Track-v0": TrackVectorEnv, "TrackGen-Gates-v0": GatesVectorEnv}
#: the target for TrackGen-Track-v0 at default capacities, excluding user buffers
TARGET_BYTES_PER_ENV = 16 * 1024
#: parts of a memory estimate that are host copies of the outputs (not the env's device memory)
OUTPUT_PARTS = ("numpy outputs",)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Timer:
    """Times ``step(policy(obs))`` (only ``step``, up to a synchronisation of ``device``: torch outputs
    on CUDA return before the work is done), in as many :meth:`run` slices as wanted, so that
    several steppers can be timed in turns (their ratios then see the same machine load).

    ``step(action) -> (obs, reward, terminated, truncated, ...)``, NEXT_STEP semantics: the
    step after an env ends only resets it, so transitions leave those reset steps out
    (``same_step=True``: SAME_STEP, where every step is a transition of every env).
    """

    def __init__(self, step, obs, policy, num_envs: int, device: str = "cpu", *, same_step: bool = False):
        self.step, self.obs, self.policy, self.num_envs, self.device = step, obs, policy, num_envs, device
        self.same_step = same_step
        self.last = np.zeros(num_envs, dtype=bool)
        self.n, self.elapsed, self.ended, self.reset_steps = 0, 0.0, 0, 0

    def _one(self) -> float:
        action = self.policy(self.obs)
        self.reset_steps += 0 if self.same_step else int(self.last.sum())
        t0 = time.perf_counter()
        out = self.step(action)
        wp.synchronize_device(self.device)
        dt = time.perf_counter() - t0
        self.obs = out[0]
        self.last = _host(out[2]) | _host(out[3])
        self.ended += int(self.last.sum())
        self.n += 1
        return dt

    def warm_up(self, steps: int = 10) -> Timer:
        """``steps`` untimed steps (not counted)."""
        for _ in range(steps):
            self._one()
        self.n, self.ended, self.reset_steps = 0, 0, 0
        return self

    def run(self, seconds: float, min_steps: int = 1) -> Timer:
        """Timed steps for ``seconds`` of step time (at least ``min_steps``)."""
        spent, steps = 0.0, 0
        while spent < seconds or steps < min_steps:
            dt = self._one()
            spent += dt
            self.elapsed += dt
            steps += 1
        return self

    def result(self) -> dict:
        """``{"steps", "seconds", "env_steps_per_s", "transitions_per_s", "reset_steps", "step_us",
        "resets_per_step"}`` of the timed steps so far."""
        n, E, t = self.n, self.num_envs, self.elapsed
        return {"steps": n, "seconds": t, "env_steps_per_s": n * E / t,
                "transitions_per_s": (n * E - self.reset_steps) / t, "reset_steps": self.reset_steps,
                "step_us": 1e6 * t / n, "resets_per_step": self.ended / n}


def steps_per_second(step, obs, policy, num_envs: int, seconds: float, min_steps: int = 5, warm_steps: int = 10,
                     device: str = "cpu") -> dict:
    """:class:`Timer`'s result of ``seconds`` of timed steps after ``warm_steps`` untimed ones."""
    return Timer(step, obs, policy, num_envs, device).warm_up(warm_steps).run(seconds, min_steps).result()


def cpu_times() -> tuple[int, int] | None:
    """``(steal, total)`` jiffies of every CPU since boot (``/proc/stat``, Linux), None elsewhere.

    Steal is time a vCPU of this VM was ready to run while the hypervisor ran something else:
    the load average does not show it, and a parallel section suffers it first."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: inside user and nice]
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_percent(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of the CPUs' time stolen between two :func:`cpu_times` [%], None if unknown."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])


def in_turns(timers: dict, seconds: float, rounds: int = 5, min_steps: int = 2) -> dict:
    """Time every :class:`Timer` of ``timers`` for ``seconds`` in all, in ``rounds`` turns each
    (round robin), after a warm-up: ``{name: result}``."""
    for t in timers.values():
        t.warm_up()
    for _ in range(rounds):
        for t in timers.values():
            t.run(seconds / rounds, min_steps)
    return {name: t.result() for name, t in timers.items()}


def _host(x) -> np.ndarray:
    return x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)


def make_env(env_id: str, num_envs: int, device: str, *, capture: bool = True, output: str = "numpy", seed: int = 0,
             autoreset_mode: str = "NextStep"):
    """The env and its reference policy (``obs -> action``, host NumPy in, the env's output kind out)."""
    env = ENVS[env_id](num_envs, device, seed=seed, capture=capture, output=output, autoreset_mode=autoreset_mode)
    controller = PurePursuit(env.car) if env_id == "TrackGen-Track-v0" else CourseLinePilot(env)
    if output == "torch":
        import torch

        dev = torch.device("cuda",
                           wp.get_device(device).ordinal) if wp.get_device(device).is_cuda else torch.device("cpu")
        return env, lambda obs: torch.from_numpy(controller(_host(obs))).to(dev)
    return env, controller


def env_timer(env_id: str, num_envs: int, device: str, *, capture: bool = True, output: str = "numpy",
              seed: int = 0, autoreset_mode: str = "NextStep") -> tuple:
    """``(env, Timer)`` of ``env.step`` with the reference controller (pure pursuit / CourseLinePilot)."""
    env, policy = make_env(env_id, num_envs, device, capture=capture, output=output, seed=seed,
                           autoreset_mode=autoreset_mode)
    obs, _ = env.reset(seed=seed)
    return env, Timer(env.step, obs, policy, num_envs, device, same_step=autoreset_mode == "SameStep")


class ShadowPursuit:
    """A policy for an env whose observation pure pursuit cannot read (``obs_type="lidar"``): a
    ``"state"`` twin of it (the same seed and settings) driven by pure pursuit; each call steps the
    twin and returns the action it took, which the timed env, stepped with the same actions from the
    same reset, takes on the same courses: its cars drive the reference controller's lines."""

    def __init__(self, num_envs: int, device: str, seed: int = 0, **kwargs):
        self.env = TrackVectorEnv(num_envs, device, seed=seed, **kwargs)
        self.pursuit = PurePursuit(self.env.car)
        self.obs, _ = self.env.reset(seed=seed)

    def __call__(self, _obs) -> np.ndarray:
        action = self.pursuit(self.obs)
        self.obs = self.env.step(action)[0]
        return action

    def close(self) -> None:
        self.env.close()


def lidar_rates(num_envs: int, device: str, seconds: float, beams=(64, 1080), rounds: int = 5, seed: int = 0) -> dict:
    """env-steps/s of TrackGen-Track-v0 with ``obs_type="state"`` (pure pursuit) and ``"lidar"`` at
    each count of ``beams`` (pure pursuit's lines, :class:`ShadowPursuit`), timed in turns (graph
    replay, NumPy outputs), with the rays per second and the time a ray adds to a step [ns]."""
    env, policy = make_env("TrackGen-Track-v0", num_envs, device, seed=seed)
    obs, _ = env.reset(seed=seed)
    timers, envs = {"state": Timer(env.step, obs, policy, num_envs, device)}, [env]
    for b in beams:
        lidar = TrackVectorEnv(num_envs, device, seed=seed, obs_type="lidar", num_beams=b)
        shadow = ShadowPursuit(num_envs, device, seed=seed)
        obs, _ = lidar.reset(seed=seed)
        timers[f"lidar_{b}"] = Timer(lidar.step, obs, shadow, num_envs, device)
        envs += [lidar, shadow]
    result = in_turns(timers, seconds, rounds=rounds)
    state = result["state"]["env_steps_per_s"]
    for b in beams:
        r = result[f"lidar_{b}"]
        r["num_beams"] = b
        r["over_state"] = r["env_steps_per_s"] / state
        r["rays_per_s"] = r["env_steps_per_s"] * b
        r["ns_per_ray_added"] = 1e9 * (1.0 / r["env_steps_per_s"] - 1.0 / state) / b
    for e in envs:
        e.close()
    return {"num_envs": num_envs, **result}


def courses_per_second(family: str, num_envs: int, device: str, seconds: float, min_runs: int = 2) -> dict:
    """Valid, checked courses per second of a full generation of every env (``enqueue(advance=True)``:
    layout, resampling, the checks and their retries), counting only the envs left valid."""
    gen = (TrackGenerator(TrackGenConfig(num_envs=num_envs, device=device), seeds=0) if family == "track"
           else GateGenerator(GateGenConfig(num_envs=num_envs, device=device), seeds=0))
    gen.enqueue(advance=True)
    wp.synchronize_device(device)
    n, valid, t0 = 0, 0.0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < min_runs:
        gen.enqueue(advance=True)
        wp.synchronize_device(device)
        n += 1
    elapsed = time.perf_counter() - t0
    valid = float(gen.result.valid.numpy().mean())  # the last batch's share (the batches are alike)
    return {"generations": n, "seconds": elapsed, "valid_rate": valid,
            "courses_per_s": n * num_envs * valid / elapsed, "us_per_generation": 1e6 * elapsed / n}


def reset_cost(env_id: str, num_envs: int, device: str, fractions=(0.0, 0.01, 1.0), steps: int = 20,
               seed: int = 0) -> dict:
    """Microseconds per ``env.step`` (graph replay, NumPy outputs) with a share of the envs auto-resetting.

    Before each timed step the env's auto-reset mask (what the previous step ended; NEXT_STEP)
    is overwritten with a fixed mask holding ``round(f * num_envs)`` ones, so exactly those envs
    regenerate their course and restart in the step. The fractions take turns, one step each per
    round (``steps`` rounds after 3 untimed ones), so that they see the same load; each figure is
    the median of its steps. Returns ``{str(f): {"envs", "step_us"}}`` and
    ``"regeneration_us_per_env"`` ((t(1) - t(0)) / num_envs).
    """
    env, policy = make_env(env_id, num_envs, device, seed=seed)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    masks, times = {}, {}
    for f in fractions:
        k = int(round(f * num_envs))
        mask = np.zeros(num_envs, np.int32)
        mask[rng.choice(num_envs, k, replace=False)] = 1
        masks[f], times[f] = (k, wp.array(mask, dtype=wp.int32, device=device)), []
    for i in range(steps + 3):
        for f in fractions:
            action = policy(obs)
            wp.copy(env._autoreset, masks[f][1])  # the recorded step reads this mask
            t0 = time.perf_counter()
            obs, *_ = env.step(action)
            if i >= 3:
                times[f].append(time.perf_counter() - t0)
    env.close()
    out = {str(f): {"envs": masks[f][0], "step_us": 1e6 * float(np.median(times[f]))} for f in fractions}
    if "0.0" in out and "1.0" in out:
        out["regeneration_us_per_env"] = (out["1.0"]["step_us"] - out["0.0"]["step_us"]) / num_envs
    return out


def _replay_us(graph, device: str, before=None) -> float:
    """Microseconds of one replay of ``graph``, between device synchronisations (``before()`` runs first, untimed)."""
    if before is not None:
        before()
    wp.synchronize_device(device)
    t0 = time.perf_counter()
    wp.capture_launch(graph)
    wp.synchronize_device(device)
    return 1e6 * (time.perf_counter() - t0)


def regeneration_cost(env_id: str, num_envs: int, device: str, replays: int = 50, seed: int = 0) -> dict:
    """Microseconds of recorded graph replays (each between device synchronisations; the variants
    take turns, a replay each, and each figure is the median of its ``replays``):

    * ``"step_with_regeneration"``: the env's step graph (``autoreset_mode=NEXT_STEP``: the masked
      regeneration, then the step), its auto-reset mask cleared before each replay, so that no env
      regenerates; ``"step_without_regeneration"``: the same step recorded on the same env without
      the regeneration; ``"idle_regeneration_us"``: their difference, what a step in which no env
      ends pays for the regeneration it carries (the ``any(mask)`` test and the skipped conditional
      node). Zero actions.
    * ``"masked"``: ``{str(k): us}`` of a recorded ``course.regenerate(mask, advance=True)`` alone,
      with ``k`` envs masked (0, 1 and 1 % of ``num_envs``, random envs), each replay drawing those
      envs' next courses (retry rounds included); ``"masked_1pct_us"``: the 1 % figure. A second env
      regenerates, so that the stepped one keeps its courses (a car whose course changed under it
      is off its band, and its step searches the whole line).
    """
    stepped, regenerated = (ENVS[env_id](num_envs, device, seed=seed) for _ in range(2))
    for env in (stepped, regenerated):
        env.reset(seed=seed)
    with wp.ScopedCapture(device=device) as cap:
        stepped._advance(stepped._autoreset)  # the NEXT_STEP step body less its first line, the regeneration
    without = cap.graph
    rng = np.random.default_rng(seed)
    one_pct = max(1, int(round(0.01 * num_envs)))
    masked = {}
    for k in dict.fromkeys((0, 1, one_pct)):
        mask = np.zeros(num_envs, np.int32)
        mask[rng.choice(num_envs, k, replace=False)] = 1
        mask = wp.array(mask, dtype=wp.int32, device=device)
        with wp.ScopedCapture(device=device) as cap:
            regenerated.course.regenerate(mask=mask, advance=True)
        masked[k] = (mask, cap.graph)  # the graph holds the mask's pointer: keep the array alive
    variants = {"step_with_regeneration": (stepped.graph, stepped._autoreset.zero_),
                "step_without_regeneration": (without, stepped._autoreset.zero_)}
    variants.update({f"masked_{k}": (graph, None) for k, (_, graph) in masked.items()})
    times = {name: [] for name in variants}
    order = list(variants)
    for i in range(replays + 3):
        # the two steps swap places every round: each follows the other (and the regenerations,
        # which take some of its rows out of the caches) as often
        order[0], order[1] = order[1], order[0]
        for name in order:
            graph, before = variants[name]
            dt = _replay_us(graph, device, before)
            if i >= 3:
                times[name].append(dt)
    for env in (stepped, regenerated):
        env.close()
    med = {name: float(np.median(t)) for name, t in times.items()}
    out = {"num_envs": num_envs, "replays": replays,
           "step_with_regeneration": med["step_with_regeneration"],
           "step_without_regeneration": med["step_without_regeneration"],
           "masked": {str(k): med[f"masked_{k}"] for k in masked}}
    out["idle_regeneration_us"] = out["step_with_regeneration"] - out["step_without_regeneration"]
    out["masked_1pct_envs"] = one_pct
    out["masked_1pct_us"] = out["masked"][str(one_pct)]
    return out


def breakdown(num_envs: int, device: str, steps: int = 100, seed: int = 0) -> dict:
    """Microseconds per step of each part of an eager TrackGen-Track-v0 step (pure pursuit), each
    part wrapped with a device synchronisation: ``regeneration``, ``car``, ``course.step()``,
    ``observations`` (reward, termination, observations), ``outputs copy out``."""
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
    for _ in range(10):
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


def memory_per_env(env_id: str, num_envs: int, device: str) -> dict:
    """Bytes of each part of the env's ``memory_estimate(num_envs, device=device)``, in all and per env.

    Returns ``{"num_envs", "parts": {name: bytes}, "per_env": {name: bytes / num_envs}, "total",
    "total_per_env", "device_total_per_env" (without :data:`OUTPUT_PARTS`), "marginal_per_env"}``.
    """
    est = ENVS[env_id].memory_estimate(num_envs, device=device)
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
wp.config.log_level = wp.LOG_WARNING
import trackgen_env
t1 = time.perf_counter()
env = gymnasium.make_vec(sys.argv[1], num_envs=int(sys.argv[2]), device=sys.argv[3])
t2 = time.perf_counter()
env.reset(seed=0)
env.step(np.zeros(env.action_space.shape, np.float32))
wp.synchronize()
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "construction_s": t2 - t1, "first_step_s": t3 - t2,
                  "total_s": t3 - t0, "cache": wp.config.kernel_cache_dir, "package": trackgen_env.__file__}))
"""


def first_use(env_id: str, num_envs: int, device: str, cache: str | None, package_root: str = ROOT) -> dict:
    """Seconds of import / construction (``make_vec``) / reset + first step in a fresh subprocess,
    with Warp's kernel cache at ``cache`` (``WARP_CACHE_PATH``, read at ``wp.init()``; None: the user's)
    and ``trackgen_env`` imported from the folder ``package_root``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    if cache is not None:
        env["WARP_CACHE_PATH"] = cache
    # run in package_root: ``python -c`` imports from its working folder before PYTHONPATH
    run = subprocess.run([sys.executable, "-c", _CHILD, env_id, str(num_envs), device], env=env, cwd=package_root,
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"the first-use run of {env_id} failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
    result = json.loads(run.stdout.strip().splitlines()[-1])
    used, package = result.pop("cache"), result.pop("package")
    if not os.path.realpath(package).startswith(os.path.realpath(package_root)):
        raise RuntimeError(f"the first-use run imported {package!r}, not the package in {package_root!r}")
    if cache is not None and not os.path.realpath(used).startswith(os.path.realpath(cache)):
        raise RuntimeError(f"warp did not use the kernel cache {cache!r} (WARP_CACHE_PATH)")
    return result


def source_without_prebuilt(folder: str) -> str:
    """A copy of the package's sources in ``folder`` without the install's compiled kernels
    (``trackgen_env/_prebuilt``, present after an editable install): a first use from it compiles
    every module. Returns the folder to put on ``PYTHONPATH``."""
    shutil.copytree(os.path.join(ROOT, "trackgen_env"), os.path.join(folder, "trackgen_env"),
                    ignore=shutil.ignore_patterns(os.path.basename(PREBUILT_DIR), "__pycache__"))
    return folder


def installed_package(folder: str) -> str:
    """The package as ``pip install`` gives it: a wheel built from the sources by the project's own
    ``setup.py`` (``pip wheel --no-build-isolation --no-deps``: its ``build_py`` compiles the envs' CPU
    kernels into ``trackgen_env/_prebuilt``), unpacked into ``folder/site``. Returns that folder."""
    wheels, site = os.path.join(folder, "wheel"), os.path.join(folder, "site")
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
                          "-w", wheels, ROOT], capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"building the wheel failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
    (wheel,) = [f for f in os.listdir(wheels) if f.endswith(".whl")]
    with zipfile.ZipFile(os.path.join(wheels, wheel)) as z:
        z.extractall(site)
    if not os.path.isdir(os.path.join(site, "trackgen_env", os.path.basename(PREBUILT_DIR))):
        raise RuntimeError(f"the wheel {wheel} holds no prebuilt kernels (its build_py did not store them)")
    return site


def latency(env_id: str, num_envs: int, device: str, source: str | None = None, installed: str | None = None) -> dict:
    """:func:`first_use` in fresh interpreters: ``{"num_envs", "cold", "warm", "installed"}``.

    ``cold``: from ``source`` (:func:`source_without_prebuilt`) on a new, empty kernel cache folder
    (every module compiled), ``warm``: the same folder again; ``installed``: from ``installed``
    (:func:`installed_package`) on another new, empty folder (the prebuilt kernels copied in, none
    compiled). ``source=None``: no cold run, warm on the user's cache from this tree;
    ``installed=None``: no installed run (None in the result).
    """
    if source is None:
        first_use(env_id, num_envs, device, None)  # make sure the user's cache holds the kernels
        c, w = None, first_use(env_id, num_envs, device, None)
    else:
        with tempfile.TemporaryDirectory(prefix="warp-cache-") as cache:
            c = first_use(env_id, num_envs, device, cache, source)
            w = first_use(env_id, num_envs, device, cache, source)
    i = None
    if installed is not None:
        with tempfile.TemporaryDirectory(prefix="warp-cache-") as cache:
            i = first_use(env_id, num_envs, device, cache, installed)
    return {"num_envs": num_envs, "cold": c, "warm": w, "installed": i}
