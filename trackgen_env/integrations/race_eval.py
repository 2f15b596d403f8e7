"""Race a trained policy against pure-pursuit opponents on held-out tracks (``python -m trackgen_env eval RUN --race``).

Each of ``races`` courses of ``TrackGen-Race-v0`` (held-out seeds: course ``e`` races on
``hash(seed, e)``, default :data:`~trackgen_env.integrations.evaluation.EVAL_SEED`) holds one race of the
run's ``num_agents`` cars: car 0 is driven by the run's policy (deterministic), the others by
:class:`~trackgen_env.demos.race.RacePursuit` (pure pursuit at ``opponent_margin`` of the car's speed
limits, passing the opponents it sees). The grid order is drawn per race, so car 0 starts from every
slot over the races. A second row races a pure-pursuit car of the opponents' margin in car 0 on the
same tracks: the reference of an equal car.

Per driver of car 0, over the first race of every course:

* win rate: the races car 0 finished first (it finished, ranked 1);
* mean position: car 0's rank when the race ended (1 = first; finished cars ahead of the others);
* overtakes per lap: car 0 moving ahead of a car that is still racing, per lap of race distance car 0 drove
  (its race progress at the end over the track's length, summed over the races);
* contacts caused per lap: contacts of car 0 with an opponent in which car 0 was behind (or level) in race
  progress, the env's rule for who caused a contact, per lap driven as above;
* laps completed: car 0's mean completed laps.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from ..core.checks import check_seed
from ..demos import progress_disabled
from ..demos.race import RacePursuit
from ..envs.race import RaceVectorEnv
from .evaluation import EVAL_SEED, check_held_out
from .runs import (load_run_policy, model_file, observation_stats, policy_torch_device,
                   read_train_record, run_trainer_of, torch_threads_for, using_torch_threads)
from ..core.checks import check_float, check_int

__all__ = ["RACE_ENV_ID", "OPPONENT_MARGIN", "RaceEvalResult", "race_against_pursuit", "evaluate_race",
           "format_race_table", "race_results_json"]

#: The env of ``eval --race``.
RACE_ENV_ID = "TrackGen-Race-v0"
#: The opponents' speed margin (their speed limit is this fraction of the car's limits): the middle of the
#: race demo's 0.45-0.75.
OPPONENT_MARGIN = 0.6


@dataclass
class RaceEvalResult:
    """One driver of car 0 over ``races`` races (one per course) against ``opponents``."""

    policy: str
    opponents: str
    races: int
    win_rate: float  # races car 0 finished first
    mean_position: float  # car 0's mean rank at the race's end (1 = first)
    overtakes_per_lap: float  # per lap of race distance car 0 drove
    contacts_caused_per_lap: float
    mean_laps: float  # car 0's mean completed laps
    laps_driven: float  # car 0's race distance over all races, in laps (the per-lap denominator)


def race_against_pursuit(env: RaceVectorEnv, act: Callable[[np.ndarray], np.ndarray] | None, seed,
                         opponent_margin: float = OPPONENT_MARGIN, *, name: str = "policy",
                         progress: bool = False) -> RaceEvalResult:
    """Race ``act`` (``obs [E, D] -> actions [E, 2]``; None: a pure-pursuit car of ``opponent_margin``) in car 0
    of every course of ``env`` (a :class:`RaceVectorEnv` in NEXT_STEP autoreset with NumPy outputs) against
    pure-pursuit opponents, one race per course from ``env.reset(seed=seed)`` (the module docstring)."""
    from tqdm.auto import tqdm

    E, N = env.num_courses, env.num_agents
    opponents = RacePursuit(env, np.full(N, opponent_margin))
    obs, info = env.reset(seed=seed)
    rows = np.arange(E)
    loop_length = env.course.result.loop_length.numpy()[::N].astype(np.float64)  # this episode's tracks
    rank = info["rank"].reshape(E, N)
    live = np.ones(E, dtype=bool)
    overtakes, caused = np.zeros(E), np.zeros(E)
    final_rank, finished, laps, driven = np.zeros(E), np.zeros(E, bool), np.zeros(E), np.zeros(E)
    bar = tqdm(total=E, desc=name, unit="race", disable=progress_disabled(progress), leave=False, dynamic_ncols=True)
    while live.any():
        action = np.array(opponents(obs), dtype=np.float32)
        if act is not None:
            action[::N] = act(obs[::N])
        obs, _, terminated, truncated, info = env.step(action)
        now, out = info["rank"].reshape(E, N), info["out"].reshape(E, N)
        passed = (rank[:, :1] > rank) & (now[:, :1] < now) & ~out
        overtakes[live] += passed[live, 1:].sum(axis=1)
        progress_m = info["race_progress"].reshape(E, N)
        contact = info["car_contact"].reshape(E, N)[:, 0]
        other = np.maximum(info["opponent"].reshape(E, N)[:, 0], 0)
        caused[live] += (contact & (progress_m[:, 0] <= progress_m[rows, other]))[live]
        ended = live & (terminated | truncated).reshape(E, N)[:, 0]
        final_rank[ended] = now[ended, 0]
        finished[ended] = info["finished"].reshape(E, N)[ended, 0]
        laps[ended] = info["laps"].reshape(E, N)[ended, 0]
        driven[ended] = np.maximum(progress_m[ended, 0], 0.0) / loop_length[ended]
        live &= ~ended
        rank = now
        bar.update(int(ended.sum()))
    bar.close()
    total = float(driven.sum())
    per_lap = (lambda n: float(n.sum()) / total) if total > 0 else (lambda n: math.nan)
    return RaceEvalResult(
        name, f"{N - 1} x pure pursuit (margin {opponent_margin:g})", E, float(np.mean(finished & (final_rank == 1))),
        float(final_rank.mean()), per_lap(overtakes), per_lap(caused), float(laps.mean()), total)


def evaluate_race(model_path: str | os.PathLike, *, races: int = 100, seed: int = EVAL_SEED,
                  device: str | None = None, opponent_margin: float = OPPONENT_MARGIN, reference: bool = True,
                  torch_threads: int | None = None, progress: bool = True) -> list[RaceEvalResult]:
    """Race a ``TrackGen-Race-v0`` run's policy in car 0 against pure-pursuit opponents on ``races`` held-out
    tracks (the module docstring), with the run's env arguments (its ``num_agents``).

    Args:
        model_path: the run's policy (``policy.pt``, ``model.pt`` or ``model.zip``) or its folder.
        races: courses, one race each (>= 1). seed: seed of the courses; must not share per-course seeds
            with the training run. device: the env's Warp device.
        opponent_margin: the opponents' speed margin, in (0, 1].
        reference: also race a pure-pursuit car of ``opponent_margin`` in car 0 on the same tracks.
        torch_threads: torch's threads while racing (default 1 with the policy on the CPU).

    Returns:
        ``[policy]`` or ``[policy, reference]`` :class:`RaceEvalResult`.

    Raises:
        ValueError: the run is not of ``TrackGen-Race-v0`` (or has one car per course), bad ``races`` / ``seed`` /
            ``opponent_margin``, a seed that overlaps the training seeds, observations that differ from the env's.
        FileNotFoundError: no policy at ``model_path``.
    """
    model_path = model_file(model_path)
    meta = read_train_record(model_path)
    env_id = meta.get("env_id")
    if env_id != RACE_ENV_ID:
        got = f"a {env_id} run" if env_id else f"a policy without its run's train.json ({model_path.parent})"
        raise ValueError(f"eval --race races the policy against pure-pursuit cars on {RACE_ENV_ID}: MODEL must be "
                         f"a {RACE_ENV_ID} run (train --preset race), got {got}")
    check_int("races", races, lo=1)
    check_seed(seed, name="seed", none=False)
    opponent_margin = check_float("opponent_margin", opponent_margin, lo=0.0, hi=1.0, lo_open=True)
    check_held_out(meta, seed, races)
    env_kwargs = dict(meta.get("env_kwargs", {}))
    if int(env_kwargs.get("num_agents", 2)) < 2:
        raise ValueError(f"eval --race needs opponents: the run raced {env_kwargs['num_agents']} car per course")
    stats = observation_stats(model_path, meta) if run_trainer_of(model_path, meta) == "sb3" else None
    policy_device = policy_torch_device(device)
    with using_torch_threads(torch_threads_for(policy_device, torch_threads)):
        act, obs_shape = load_run_policy(model_path, meta, policy_device, stats)
        results = []
        for name, driver in [("trained policy", act)] + ([("pure pursuit", None)] if reference else []):
            env = RaceVectorEnv(races, device, seed=seed, **env_kwargs)
            try:
                if env.single_observation_space.shape != tuple(obs_shape):
                    raise ValueError(f"the policy's observations {tuple(obs_shape)} differ from {RACE_ENV_ID}'s "
                                     f"{env.single_observation_space.shape} with the run's arguments {env_kwargs}")
                results.append(race_against_pursuit(env, driver, seed, opponent_margin, name=name, progress=progress))
            finally:
                env.close()
    return results


def format_race_table(results: list[RaceEvalResult]) -> str:
    """A Markdown table of :func:`evaluate_race`'s results."""
    head = ["car 0", "opponents", "races", "win rate", "mean position", "overtakes / lap", "contacts caused / lap",
            "laps completed"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def number(x: float, digits: int = 3) -> str:
        return "-" if math.isnan(x) else f"{x:.{digits}f}"

    for r in results:
        cells = [r.policy, r.opponents, str(r.races), f"{r.win_rate:.1%}", number(r.mean_position, 2),
                 number(r.overtakes_per_lap), number(r.contacts_caused_per_lap), number(r.mean_laps, 2)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def race_results_json(results: list[RaceEvalResult]) -> str:
    """:func:`evaluate_race`'s results as JSON (``nan`` as null)."""
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(r).items()} for r in results]
    return json.dumps(rows, indent=2)
