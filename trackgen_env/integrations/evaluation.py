"""Evaluate a trained policy of either trainer on held-out courses (``python -m trackgen_env eval``).

``eval`` runs the saved policy deterministically, one episode per env, on **held-out
courses**: the vector env is seeded with ``--seed`` (default :data:`EVAL_SEED`), env ``i``
drives the courses of ``hash(seed, i)``; ``eval`` refuses a seed whose per-env seeds
intersect the training run's (``train.json``), so no evaluated course comes from a training
env's stream. It reports, for the trained policy and for a uniform random policy on the
same courses: the lap completion rate (episodes that finished their laps), the mean lap
time [s] of the completed ones (from the standing start: episode steps x dt), the mean
return (for the track env: the metres of centreline covered, minus the off-track
penalty), the mean track length, and for gates the mean number of gates passed.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.checks import check_float, check_int, check_seed
from ..demos import progress_disabled
from ..envs.car import CarParams, car_params
from ..generators.centerline_io import centerline_length, load_centerline_csv
from ..generators.gate_layouts import RaceLayout, load_gate_layout
from ..generators.track import centerline_scale_limit
from ..generators.track_config import TrackGenConfig
from ..pipeline import PipelineSpec
from ..core.seeding import env_seeds
from .runs import (load_run_policy, model_file, observation_stats, policy_torch_device,
                   read_train_record, run_trainer_of, torch_threads_for, using_torch_threads)
from .sb3 import make_sb3_vec_env, require_sb3
from .train import ENV_IDS, TRAINING_ONLY_TRACK_KWARGS, check_env_id, spec_env_kwargs


__all__ = ["EVAL_SEED", "check_held_out", "check_circuit_env", "check_circuit_scale", "EvalResult", "evaluate",
           "format_eval_table", "eval_results_json"]

#: Default seed of ``eval``'s courses. Training runs use small seeds (default 0); the per-env
#: seeds of the two never intersect for the defaults (``eval`` checks it for any pair).
EVAL_SEED = 1_000_003

def check_held_out(meta: dict[str, Any], seed: int, num_envs: int) -> None:
    """Refuse an eval ``seed`` whose ``num_envs`` per-env course seeds meet those of the training run
    (``meta``: its ``train.json``; nothing to check without its ``seed``).

    Raises:
        ValueError: the seeds meet (naming both seeds).
    """
    if "seed" not in meta:
        return
    train_seeds = set(env_seeds(int(meta["seed"]), int(meta["num_envs"])).tolist())
    if seed == meta["seed"] or train_seeds.intersection(env_seeds(int(seed), num_envs).tolist()):
        raise ValueError(f"eval seed {seed} shares per-env course seeds with the training run (seed {meta['seed']}): "
                         f"pick another --seed (default {EVAL_SEED})")


def check_circuit_env(env_id: str, flag: str) -> None:
    """Refuse, before anything is built, an env other than the car's for a real circuit (``flag``: the
    CLI option that asked for one, ``--track-csv`` or ``--circuits``).

    Raises:
        ValueError: ``env_id`` is not ``"TrackGen-Track-v0"``.
    """
    if env_id != "TrackGen-Track-v0":
        raise ValueError(f"{flag} drives a real circuit with the car: env must be TrackGen-Track-v0, got {env_id}")


def _digits(x: float, up: bool) -> float:
    """``x`` to three significant digits, rounded up or down (so that a shown bound holds)."""
    d = 2 - math.floor(math.log10(x))
    return (math.ceil if up else math.floor)(x * 10**d) / 10**d


def check_circuit_scale(circuits: dict[str, np.ndarray], scale: float, car: CarParams, given: bool) -> None:
    """Refuse a scale that makes a circuit (``circuits``: name -> ``[N, 4]`` points at true scale)
    too small for the car (narrower than its body) or too long for a track at the env's point
    spacing (``wheelbase / 3``, :class:`~trackgen_env.envs.track.TrackVectorEnv`), naming the
    flag to change and the bound that holds for every circuit given (``--track-scale``; ``given``:
    the user passed it, else the scale is eval's default).

    Raises:
        ValueError: a scaled circuit does not fit (the scale, its length and width, the bound).
    """
    at = f"--track-scale {scale:g}" if given else f"eval's default scale ({scale:g})"
    every = " for every circuit" if len(circuits) > 1 else ""
    points = {name: np.asarray(p, dtype=np.float64) for name, p in circuits.items()}
    # the least scale at which each is as wide as the car, the largest at which it fits a track
    least = {name: car.width / float(np.mean(p[:, 2] + p[:, 3])) for name, p in points.items()}
    most = {name: centerline_scale_limit(p, car.wheelbase / 3.0) for name, p in points.items()}
    narrow, long = max(least, key=least.get), min(most, key=most.get)
    if scale < least[narrow]:
        p = points[narrow] * scale
        raise ValueError(f"{at} makes {narrow} {centerline_length(p):.3g} m long and "
                         f"{float(np.mean(p[:, 2] + p[:, 3])):.3g} m "
                         f"wide, narrower than the car ({car.width:g} m): pass a larger --track-scale (at least "
                         f"{_digits(least[narrow], up=True):g}{every})")
    if scale > most[long]:
        raise ValueError(f"{at} makes {long} {centerline_length(points[long] * scale):,.0f} m long, over what a track "
                         f"holds at the car's point spacing ({car.wheelbase / 3.0:.3g} m): pass a smaller "
                         f"--track-scale "
                         f"(at most {_digits(most[long], up=False):g}{every})")


@dataclass
class EvalResult:
    """One policy's results over ``episodes`` episodes (one per env, each on its own course)."""

    policy: str
    episodes: int
    lap_completion_rate: float  # fraction of episodes that finished their laps
    mean_lap_time_s: float  # [s] episode length x dt of the completed episodes (nan if none)
    mean_return: float
    mean_laps: float
    mean_gates_passed: float | None = None  # gates only
    mean_course_length_m: float | None = None  # [m] loop length of the driven tracks (track env only)


def _env_dt(env) -> float:
    base = getattr(env, "unwrapped", env)
    params = getattr(base, "car", None) or getattr(base, "quadrotor", None)
    return float(params.dt)


def _run_episodes(venv, act, dt: float, target_laps: int, keys: tuple[str, ...], name: str,
                  progress: bool = True) -> EvalResult:
    """Step ``venv`` until every env finished its first episode; ``act(obs) -> actions``; ``progress``: a
    tqdm bar of the finished episodes (on a terminal only)."""
    from tqdm.auto import tqdm

    E = venv.num_envs
    obs = venv.reset()
    result = getattr(getattr(venv.unwrapped.env.unwrapped, "course", None), "result", None)
    loop_length = getattr(result, "loop_length", None)
    course_length = None if loop_length is None else float(loop_length.numpy().mean())
    done_once = np.zeros(E, dtype=bool)
    ret, length = np.zeros(E), np.zeros(E, dtype=np.int64)
    finals: list[dict[str, Any] | None] = [None] * E
    bar = tqdm(total=E, desc=name, unit="episode", disable=progress_disabled(progress), leave=False, dynamic_ncols=True)
    while not done_once.all():
        obs, reward, dones, infos = venv.step(act(obs))
        live = ~done_once
        ret[live] += reward[live]
        length[live] += 1
        for i in np.flatnonzero(dones & live):
            finals[i] = infos[i]
        bar.update(int(np.count_nonzero(dones & live)))
        done_once |= dones
    bar.close()
    laps = np.array([f.get("laps", 0) for f in finals], dtype=np.float64)
    completed = laps >= target_laps
    lap_time = float(np.mean(length[completed] * dt / target_laps)) if completed.any() else math.nan
    gates = np.mean([f["gates_passed"] for f in finals]) if "gates_passed" in keys else None
    return EvalResult(name, E, float(completed.mean()), lap_time, float(ret.mean()), float(laps.mean()),
                      None if gates is None else float(gates), course_length)


def evaluate(
    model_path: str | os.PathLike,
    *,
    env_id: str | None = None,
    episodes: int = 100,
    seed: int = EVAL_SEED,
    device: str | None = None,
    track_csv: str | os.PathLike | None = None,
    track_scale: float | None = None,
    random_policy: bool = True,
    torch_threads: int | None = None,
    gates_file: str | os.PathLike | Sequence[str | os.PathLike] | RaceLayout | None = None,
    progress: bool = True,
) -> list[EvalResult]:
    """Run a saved PPO policy (deterministic) and a uniform random policy on held-out courses.

    Each of ``episodes`` envs drives one episode on its own course (env ``i`` of the
    vector env seeded ``seed``: ``hash(seed, i)``), so every episode counts the same
    whatever its length. A run trained on a spec (``train.json``'s ``spec`` and ``plugin``)
    is evaluated on courses of the same spec. With ``track_csv``, every env drives that real circuit instead,
    scaled by ``track_scale`` (default: so that its mean width equals the training
    tracks' width; the policy knows the training car's scale only) with the training car.

    Args:
        model_path: a ``model.zip`` written by :func:`train`, or the folder of its run
            (``vecnormalize.pkl`` and ``train.json`` beside it are used when present).
        env_id: the env (default: the training env from ``train.json``; required without it).
        episodes: episodes (= envs) per policy (>= 1).
        seed: seed of the evaluation courses, in [0, 2**64); must not share per-env
            seeds with the training run.
        device: the env's Warp device.
        track_csv: a circuit CSV (``x_m, y_m, w_tr_right_m, w_tr_left_m``), track env only.
        track_scale: scale factor of the circuit (> 0).
        random_policy: also evaluate a uniform random policy on the same courses.
        torch_threads: torch's thread count while evaluating (:func:`torch_threads_for`: default
            1 with the policy on the CPU, torch's own on CUDA); the caller's count is restored after.
        gates_file: a gate layout file (or the files of one layout, or a loaded ``RaceLayout``), gates env only: every
            env flies that race layout (:func:`~trackgen_env.generators.gate_layouts.load_gate_layout`)
            with its own gate sizes, and the env's default time limit for it.

    Returns:
        ``[trained, random]`` (or ``[trained]``) :class:`EvalResult`.

    Raises:
        FileNotFoundError: no model (or CSV) at the path, or no ``vecnormalize.pkl`` beside a model whose
            ``train.json`` records normalised observations (:func:`observation_stats`; without that
            record a missing file only warns).
        ValueError: an unknown env, bad ``episodes``/``seed``/``track_scale``, a seed that
            overlaps the training seeds, a CSV with the gates env, a circuit the scale makes too
            small or too long (:func:`check_circuit_scale`), a ``train.json`` that is not JSON, or
            an env that differs from the model's spaces.
        TypeError: an ``episodes``/``track_scale``/``torch_threads`` of the wrong type.
        ImportError: the module of the run's plugin registry (``train.json``'s ``plugin``) is not importable.
    """
    model_path = model_file(model_path)
    meta = read_train_record(model_path)
    env_id = env_id or meta.get("env_id")
    if env_id is None:
        raise ValueError(f"no train.json beside {model_path}: pass env_id (--env)")
    check_env_id(env_id)
    if track_csv is not None:
        check_circuit_env(env_id, "--track-csv")
    elif track_scale is not None:
        raise ValueError("track_scale applies to track_csv only")
    if track_scale is not None:
        track_scale = check_float("track_scale", track_scale, lo=0.0, lo_open=True)
    check_int("episodes", episodes, lo=1)
    check_seed(seed, name="seed", none=False)
    if track_csv is None and gates_file is None:
        check_held_out(meta, seed, episodes)
    env_kwargs = dict(meta.get("env_kwargs", {})) if meta.get("env_id") == env_id else {}
    if meta.get("spec") is not None and meta.get("env_id") == env_id and track_csv is None and gates_file is None:
        # the training run's pipeline (and its plugins), on held-out seeds
        try:
            env_kwargs.update(spec_env_kwargs(env_id, PipelineSpec.from_dict(meta["spec"]), meta.get("plugin")))
        except ImportError as exc:
            raise ImportError(f"the run's train.json names the plugin registry --plugin {meta['plugin']}: its module "
                              f"must be importable (e.g. its folder on PYTHONPATH): {exc}") from exc
    if env_id == "TrackGen-Gates-v0":
        env_kwargs["start"] = "first_gate"  # evaluation flies from the race start, whatever training started from
    else:
        env_kwargs = {k: v for k, v in env_kwargs.items() if k not in TRAINING_ONLY_TRACK_KWARGS}
    if track_csv is not None:
        env_kwargs.update(_circuit_kwargs(track_csv, track_scale, env_kwargs))
    if gates_file is not None:
        if env_id != "TrackGen-Gates-v0":
            raise ValueError(f"--gates-file flies a race layout with the quadrotor: env must be TrackGen-Gates-v0, "
                             f"got {env_id}")
        # the layout replaces the generated courses, and its length sets the time limit
        env_kwargs = {k: v for k, v in env_kwargs.items() if k not in ("gates", "max_episode_steps")}
        env_kwargs["layout"] = gates_file if isinstance(gates_file, RaceLayout) else load_gate_layout(gates_file)
    trainer = run_trainer_of(model_path, meta)
    stats = observation_stats(model_path, meta) if trainer == "sb3" else None
    require_sb3()  # the evaluation drives the env through the SB3 adapter, whichever trainer's policy it runs
    policy_device = policy_torch_device(device)
    with using_torch_threads(torch_threads_for(policy_device, torch_threads)):
        act, obs_shape = load_run_policy(model_path, meta, policy_device, stats)
        return _evaluate(model_path, act, obs_shape, env_id, episodes, seed, device, env_kwargs, random_policy,
                         progress)


def _evaluate(model_path: Path, act, obs_shape: tuple[int, ...], env_id: str, episodes: int, seed: int,
              device: str | None, env_kwargs: dict[str, Any], random_policy: bool,
              progress: bool) -> list[EvalResult]:
    keys = ENV_IDS[env_id]

    def make():
        try:
            venv = make_sb3_vec_env(env_id, episodes, device=device, seed=seed, **env_kwargs)
        except TypeError as exc:  # an argument of the record's env_kwargs the env does not take
            raise ValueError(f"{env_id} refuses the env arguments of {model_path.with_name('train.json')} "
                             f"({sorted(env_kwargs)}): {exc}") from exc
        if venv.observation_space.shape != tuple(obs_shape):
            venv.close()
            raise ValueError(f"the model's observations {tuple(obs_shape)} differ from {env_id}'s "
                             f"{venv.observation_space.shape}")
        venv.seed(seed)
        return venv

    venv = make()
    dt, laps = _env_dt(venv.env), int(venv.get_attr("laps")[0])
    results = [_run_episodes(venv, act, dt, laps, keys, "trained PPO", progress)]
    venv.close()
    if random_policy:
        rng = np.random.default_rng(seed)
        venv = make()
        shape = (venv.num_envs, *venv.action_space.shape)
        low, high = venv.action_space.low, venv.action_space.high
        results.append(_run_episodes(venv, lambda o: rng.uniform(low, high, shape).astype(np.float32), dt, laps, keys,
                                     "random", progress))
        venv.close()
    return results


def _circuit_kwargs(track_csv, track_scale, env_kwargs) -> dict[str, Any]:
    """Env arguments to drive the circuit in ``track_csv`` with the training car, scaled to the training width."""
    points = load_centerline_csv(track_csv)
    given = track_scale is not None
    if not given:
        track = env_kwargs.get("track") or TrackGenConfig()
        track_scale = track.width / float(np.mean(points[:, 2] + points[:, 3]))
    car = car_params(env_kwargs.get("car", "rc10"))
    check_circuit_scale({Path(track_csv).stem: points}, track_scale, car, given)
    points = points * track_scale
    # ten times the lap at top speed: a cautious policy still finishes before truncation
    steps = math.ceil(10.0 * centerline_length(points) / (car.max_speed * car.dt))
    return {"centerline": points, "max_episode_steps": max(int(env_kwargs.get("max_episode_steps", 1000)), steps)}


def format_eval_table(results: list[EvalResult]) -> str:
    """A Markdown table of :func:`evaluate`'s results."""
    gates = any(r.mean_gates_passed is not None for r in results)
    head = ["policy", "episodes", "lap completion", "mean lap time [s]", "mean return", "mean laps"]
    head += ["mean gates passed"] if gates else []
    lengths = all(r.mean_course_length_m is not None for r in results)
    head += ["mean track length [m]"] if lengths else []
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [r.policy, str(r.episodes), f"{r.lap_completion_rate:.1%}",
                 "-" if math.isnan(r.mean_lap_time_s) else f"{r.mean_lap_time_s:.2f}",
                 f"{r.mean_return:.2f}", f"{r.mean_laps:.2f}"]
        cells += [f"{r.mean_gates_passed:.2f}"] if gates else []
        cells += [f"{r.mean_course_length_m:.1f}"] if lengths else []
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def eval_results_json(results: list[EvalResult]) -> str:
    """:func:`evaluate`'s results as JSON (``nan`` as null)."""
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(r).items()} for r in results]
    return json.dumps(rows, indent=2)
