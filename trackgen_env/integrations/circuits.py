"""Evaluation on a folder of real circuits (``python -m trackgen_env eval [MODEL] --circuits DIR``).

Each circuit CSV of the folder (``x_m, y_m, w_tr_right_m, w_tr_left_m``; TUMFTM's layout) is
driven once from a standing start by a driver: a saved PPO policy (deterministic: an SB3 run's
``model.zip`` with its ``vecnormalize.pkl`` statistics, or an rsl_rl run's ``policy.pt``) or a built-in controller
(:data:`CONTROLLERS`). A circuit is scaled so that its mean width equals the training
tracks' width (the policy knows that scale only), or kept at true scale for the full-size
car (``car="full"``), or scaled by a given factor.

The env is ``TrackGen-Track-v0`` with the circuit as its centreline and auto-reset disabled:
leaving the band does not end the run; the driver goes on (an off-track is counted each
time the car's body comes to touch an edge) until it completes the lap or the time limit
(``time_factor`` times the reference lap time) runs out.

Per circuit: lap completed, lap time [s] (standing start to the finish line), the reference
lap time [s] (:func:`trackgen_env.integrations.laptime.reference_lap_time` for the same car on the
circuit's race line ``DIR/racelines/<name>.csv`` when there is one, as TUMFTM's
minimum-curvature race lines are, else on the centreline), their ratio, and the off-track
count. :func:`format_circuits_table` writes the table as Markdown, :func:`circuits_json` as JSON.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from gymnasium.vector import AutoresetMode

from ..core.checks import check_float
from ..envs.car import CAR_PRESETS, car_params, check_car_model
from ..envs.controllers import PurePursuit
from ..envs.track import TrackVectorEnv
from ..generators.centerline_io import load_centerline_csv
from .laptime import reference_lap_time
from ..generators import TrackGenConfig
from .evaluation import check_circuit_env, check_circuit_scale
from .runs import (load_run_policy, model_file, observation_stats, policy_torch_device, read_train_record,
                   run_trainer_of, torch_threads_for, using_torch_threads)
from .sb3 import require_sb3
from .train import TRAINING_ONLY_TRACK_KWARGS

__all__ = ["CONTROLLERS", "CircuitResult", "evaluate_circuits", "format_circuits_table", "circuits_json"]

#: Built-in drivers: name -> a factory ``f(car params) -> controller(obs) -> actions``.
CONTROLLERS: dict[str, Callable[[Any], Callable[[np.ndarray], np.ndarray]]] = {
    "pure_pursuit": PurePursuit,
}
#: Env arguments of a training run that the circuit env does not take over (it sets its own;
#: the circuits are driven with the car's own friction, not a training run's randomised one).
_NOT_CARRIED = ("track", "centerline", "max_episode_steps", "laps", "autoreset_mode", "seed", "friction_range",
                *TRAINING_ONLY_TRACK_KWARGS)


@dataclass
class CircuitResult:
    """One circuit's run (SI units; ``nan`` where a lap was not completed)."""

    circuit: str
    scale: float  # the circuit's scale factor (1 = true scale)
    length_m: float  # [m] centreline length at that scale
    lap_completed: bool
    lap_time_s: float  # [s] from the standing start to the finish line
    reference_lap_time_s: float  # [s] the quasi-steady-state limit of the same car
    reference_line: str  # "raceline" or "centerline"
    ratio: float  # lap_time_s / reference_lap_time_s
    off_track_count: int  # times the body came to touch a band edge
    lap_fraction: float  # of the lap covered when the run ended (1 if completed)


def _circuits(folder) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no circuit folder at {str(folder)!r}")
    paths = sorted(folder.glob("*.csv"))
    if not paths:
        raise FileNotFoundError(f"no circuit CSVs (*.csv) in {str(folder)!r}")
    return paths


def _training_width(env_kwargs: dict, spec: dict | None = None) -> float:
    """[m] the band width a policy was trained on: its spec's ``"band.width"`` (the middle of the
    drawn range when the spec randomises it), its track config's width, else the default config's."""
    if spec is not None:
        drawn = spec.get("randomize", {}).get("band.width")
        if drawn is not None:
            return 0.5 * (float(drawn[0]) + float(drawn[1]))
        if "band.width" in spec.get("params", {}):
            return float(spec["params"]["band.width"])
    track = env_kwargs.get("track")
    if isinstance(track, TrackGenConfig):
        return float(track.width)
    if isinstance(track, dict) and "width" in track:
        return float(track["width"])
    return float(TrackGenConfig().width)


def _reference_line(path: Path, points: np.ndarray, scale: float) -> tuple[np.ndarray, str]:
    raceline = path.parent / "racelines" / path.name
    if raceline.is_file():
        try:
            line = np.loadtxt(raceline, delimiter=",", comments="#", dtype=np.float64, ndmin=2)
        except ValueError as exc:
            raise ValueError(f"{raceline}: expected comma-separated columns x_m, y_m ({exc})") from None
        if line.shape[1] < 2 or line.shape[0] < 3:
            raise ValueError(f"{raceline}: expected >= 3 rows of x_m, y_m")
        if not np.isfinite(line[:, :2]).all():
            raise ValueError(f"{raceline}: non-finite value in row "
                             f"{int(np.flatnonzero(~np.isfinite(line[:, :2]).all(1))[0])}")
        return line[:, :2] * scale, "raceline"
    return points[:, :2], "centerline"


def _drive(env: TrackVectorEnv, policy, max_steps: int) -> tuple[bool, int, int, float]:
    """One run from the start: (lap completed, steps, off-track count, lap fraction)."""
    obs, _ = env.reset()
    touching = False
    count = 0
    for step in range(1, max_steps + 1):
        obs, _, _, _, info = env.step(policy(obs))
        off = bool(info["off_track"][0])
        count += int(off and not touching)
        touching = off
        if info["laps"][0] >= 1:
            return True, step, count, 1.0
    return False, max_steps, count, float(obs[0, 7])


def evaluate_circuits(
    circuits: str | os.PathLike,
    *,
    model: str | os.PathLike | None = None,
    controller: str | None = None,
    car: str | None = None,
    car_model: str | None = None,
    scale: float | None = None,
    device: str | None = None,
    time_factor: float = 4.0,
    torch_threads: int | None = None,
) -> list[CircuitResult]:
    """Drive every circuit CSV of the folder ``circuits`` once with a saved model or a controller.

    Args:
        circuits: a folder of circuit CSVs (``x_m, y_m, w_tr_right_m, w_tr_left_m``), optionally
            with ``racelines/<same name>.csv`` (``x_m, y_m``) beside them.
        model: a ``model.zip`` (SB3) or ``policy.pt`` (rsl_rl) written by ``train``, or its run's folder (its
            ``train.json`` gives the car, the car
            model, the other env arguments and the training width).
        controller: a :data:`CONTROLLERS` name instead of a model.
        car: the car preset (or :class:`~trackgen_env.envs.car.CarParams`); default the model's,
            else ``"rc10"``.
        car_model: ``"kinematic"`` or ``"dynamic"``; default the model's, else ``"kinematic"``.
        scale: the circuits' scale factor (> 0); default: true scale for the ``"full"`` car,
            else each circuit scaled so its mean width is the training width (a spec run's
            ``"band.width"``, the middle of its range when the spec draws it).
        device: the env's Warp device.
        time_factor: a run ends unfinished after this many reference lap times (> 1).
        torch_threads: torch's threads while a model drives (as ``eval``).

    Returns:
        one :class:`CircuitResult` per CSV, sorted by name.

    Raises:
        FileNotFoundError: no such folder, no CSV in it, no model at ``model``, or no
            ``vecnormalize.pkl`` beside a model whose ``train.json`` records normalised observations.
        ValueError: neither or both of ``model`` and ``controller``, an unknown controller, a
            bad scale, a model trained on another env than ``TrackGen-Track-v0`` (``train.json``),
            a ``train.json`` that is not JSON, a circuit the scale makes too small or too long
            (:func:`~trackgen_env.integrations.evaluation.check_circuit_scale`), a CSV that fails
            :func:`~trackgen_env.generators.centerline_io.check_centerline`, a model whose
            observations differ from the env's.
    """
    if (model is None) == (controller is None):
        raise ValueError("pass a model (MODEL) or a controller (--controller), one of the two")
    if controller is not None and controller not in CONTROLLERS:
        raise ValueError(f"controller must be one of {sorted(CONTROLLERS)}, got {controller!r}")
    time_factor = check_float("time_factor", time_factor, lo=1.0, lo_open=True)
    if scale is not None:
        scale = check_float("scale", scale, lo=0.0, lo_open=True)
    paths = _circuits(circuits)
    meta: dict[str, Any] = {}
    if model is not None:
        model_path = model_file(model)
        meta = read_train_record(model_path)
        trainer = run_trainer_of(model_path, meta)  # a policy file of the run's own trainer, before anything is built
        check_circuit_env(meta.get("env_id", "TrackGen-Track-v0"), "--circuits")  # before anything is built
    # every circuit loads and fits its scale, and the statistics are found, before a model loads or drives
    env_kwargs = dict(meta.get("env_kwargs", {}))
    params = car_params(car or env_kwargs.get("car", "rc10"))
    model_kind = check_car_model(car_model or env_kwargs.get("car_model", "kinematic"), params)
    width = _training_width(env_kwargs, meta.get("spec"))
    true_scale = params == CAR_PRESETS["full"]
    raws = {path.stem: load_centerline_csv(path) for path in paths}
    if scale is not None:  # one scale for all: the bound it must keep is every circuit's
        check_circuit_scale(raws, scale, params, True)
    scaled = []
    for path in paths:
        raw = raws[path.stem]
        k = scale if scale is not None else (1.0 if true_scale else width / float(np.mean(raw[:, 2] + raw[:, 3])))
        if scale is None:
            check_circuit_scale({path.stem: raw}, k, params, False)
        scaled.append((path, raw * k, k))
    carried = {k: v for k, v in env_kwargs.items() if k not in _NOT_CARRIED and k not in ("car", "car_model")}
    run = (params, model_kind, carried, device, time_factor)
    if model is None:
        return _run(scaled, CONTROLLERS[controller](params), None, *run)
    stats = None
    if trainer == "sb3":
        stats = observation_stats(model_path, meta)
        require_sb3()
    policy_device = policy_torch_device(device)
    with using_torch_threads(torch_threads_for(policy_device, torch_threads)):
        policy, obs_shape = load_run_policy(model_path, meta, policy_device, stats)
        return _run(scaled, policy, obs_shape, *run)


def _run(scaled, drive, obs_shape, params, model_kind, carried, device, time_factor) -> list[CircuitResult]:
    """Drive each ``(path, points, scale)`` of ``scaled`` once with ``drive(obs) -> actions``."""
    results = []
    for path, points, k in scaled:
        line, kind = _reference_line(path, points, k)
        ref = reference_lap_time(line, params)
        max_steps = math.ceil(time_factor * ref / params.dt)
        env = TrackVectorEnv(1, device, centerline=points, car=params, car_model=model_kind, laps=1,
                             max_episode_steps=max_steps + 1, autoreset_mode=AutoresetMode.DISABLED, seed=0, **carried)
        try:
            if obs_shape is not None and env.single_observation_space.shape != tuple(obs_shape):
                raise ValueError(f"the model's observations {tuple(obs_shape)} differ from the env's "
                                 f"{env.single_observation_space.shape}")
            done, steps, off, fraction = _drive(env, drive, max_steps)
            length = float(env.course.result.loop_length.numpy()[0])
        finally:
            env.close()
        lap = steps * params.dt if done else math.nan
        results.append(CircuitResult(
            circuit=path.stem, scale=float(k), length_m=length, lap_completed=done, lap_time_s=lap,
            reference_lap_time_s=ref, reference_line=kind, ratio=lap / ref if done else math.nan,
            off_track_count=off, lap_fraction=fraction,
        ))
    return results


def _summary(results: list[CircuitResult]) -> dict[str, Any]:
    done = [r for r in results if r.lap_completed]
    clean = [r for r in done if r.off_track_count == 0]
    return {
        "circuits": len(results), "laps_completed": len(done), "clean_laps": len(clean),
        "mean_ratio": float(np.mean([r.ratio for r in done])) if done else math.nan,
        "mean_ratio_clean": float(np.mean([r.ratio for r in clean])) if clean else math.nan,
        "off_track_total": int(sum(r.off_track_count for r in results)),
    }


def format_circuits_table(results: list[CircuitResult], title: str = "") -> str:
    """A Markdown table of :func:`evaluate_circuits`' results, with a summary line."""
    def num(x, fmt):
        return "-" if isinstance(x, float) and math.isnan(x) else format(x, fmt)

    rows = [f"**{title}**\n" if title else "",
            "| circuit | scale | length [m] | lap completed | lap time [s] | reference [s] | ratio | off-track | lap "
            "fraction |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ref = f"{r.reference_lap_time_s:.2f}" + ("" if r.reference_line == "raceline" else " (centreline)")
        rows.append(f"| {r.circuit} | 1:{1.0 / r.scale:.1f} | {r.length_m:.1f} | {'yes' if r.lap_completed else 'no'} "
                    f"| {num(r.lap_time_s, '.2f')} | "
                    f"{ref} | {num(r.ratio, '.3f')} | {r.off_track_count} | {r.lap_fraction:.2f} |")
    s = _summary(results)
    rows.append(f"\n{s['laps_completed']} / {s['circuits']} laps completed, {s['clean_laps']} without leaving the "
                f"track; mean ratio to the reference {num(s['mean_ratio'], '.3f')} (clean laps: "
                f"{num(s['mean_ratio_clean'], '.3f')}); {s['off_track_total']} off-tracks in all.")
    return "\n".join(row for row in rows if row != "")


def circuits_json(results: list[CircuitResult]) -> str:
    """:func:`evaluate_circuits`' results and their summary as JSON (``nan`` as null)."""
    def clean(d):
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}

    return json.dumps({"summary": clean(_summary(results)), "circuits": [clean(asdict(r)) for r in results]}, indent=2)
