"""``python -m trackgen_env demo --env track``: pure pursuit on generated tracks or a real circuit."""

from __future__ import annotations

import math
import os
import time

import numpy as np

from . import viz
from ..envs.car import CAR_PRESETS
from ..envs.controllers import PurePursuit
from ..envs.track import TrackVectorEnv
from ..generators.centerline_io import centerline_length, load_centerline_csv
from . import CIRCUIT_LAPS, CIRCUIT_SPEED, RESET_STEPS_NOTE, count_reset_steps, progress_disabled, shown_envs

__all__ = ["run", "drive"]

GRID_ENVS = 16  # tracks shown in the picture


def drive(env, controller, steps: int, *, record: int = 0, progress: bool = True, desc: str = "driving"):
    """Reset ``env`` and drive it ``steps`` steps with ``controller(obs) -> actions``.

    Records the first episode of the first ``record`` envs (positions and speeds until it ends).

    Returns:
        a dict: ``env_seconds`` (time inside ``env.step``), ``transitions`` / ``reset_steps``
        (env steps that moved a body / NEXT_STEP reset steps, whose action is ignored: together
        ``steps * num_envs``), ``laps`` (laps completed, all
        episodes), ``episodes`` / ``off_track`` (episodes ended / ended off the track),
        ``tracks`` (the first episode's track of each recorded env), ``traces``, ``speeds``
        (``[T, 2]`` / ``[T]`` per recorded env), ``first_end`` (per recorded env: "lap",
        "off track", "invalid", "time" or "running").
    """
    from tqdm import tqdm

    obs, _ = env.reset()
    tracks = env.tracks()[:record]
    traces = [[env.car_pose()[e, :2].copy()] for e in range(record)]
    speeds = [[0.0] for _ in range(record)]
    first_end = ["running"] * record
    laps = episodes = off_track = 0
    ended = np.zeros(env.num_envs, dtype=bool)
    reset_steps = 0
    env_seconds = 0.0
    for _ in tqdm(range(steps), desc=desc, unit="step", disable=progress_disabled(progress), leave=False):
        reset_steps += count_reset_steps(env, ended)
        action = controller(obs)
        t0 = time.perf_counter()
        obs, _, terminated, truncated, info = env.step(action)
        env_seconds += time.perf_counter() - t0
        ended = terminated | truncated
        laps += int(info["laps"][ended].sum())
        episodes += int(ended.sum())
        off_track += int(info["off_track"][ended].sum())
        if record:
            pose = env.car_pose()
            for e in range(record):
                if first_end[e] != "running":
                    continue
                traces[e].append(pose[e, :2].copy())
                speeds[e].append(float(obs[e, 0]))
                if ended[e]:
                    first_end[e] = (
                        "lap" if info["laps"][e] >= env.laps else "off track" if info["off_track"][e]
                        else "invalid" if terminated[e] else "time"
                    )
    running = ~ended
    laps += int(info["laps"][running].sum())
    return {
        "env_seconds": env_seconds, "transitions": steps * env.num_envs - reset_steps, "reset_steps": reset_steps,
        "laps": laps, "episodes": episodes, "off_track": off_track,
        "tracks": tracks, "traces": [np.array(t) for t in traces], "speeds": [np.array(s) for s in speeds],
        "first_end": first_end,
    }


def _circuit_title(name: str, out: dict, env) -> str:
    end = out["first_end"][0]
    seconds = (len(out["traces"][0]) - 1) * env.car.dt
    first = f"lap in {seconds:.1f} s" if end == "lap" else f"first episode: {end} after {seconds:.1f} s"
    return f"{name}: full-size car, pure pursuit, {first}"


def run(args) -> int:
    """Run the track demo for the parsed command-line ``args`` (see ``trackgen_env.__main__``)."""

    t_build = time.perf_counter()
    if args.track_csv:
        points = load_centerline_csv(args.track_csv)
        num_envs = args.num_envs or 1
        length = centerline_length(points)
        steps = args.steps or math.ceil(CIRCUIT_LAPS * length / (CIRCUIT_SPEED * CAR_PRESETS["full"].dt))
        env = TrackVectorEnv(num_envs, args.device, car="full", centerline=points, seed=args.seed,
                             max_episode_steps=steps + 1)
        name = os.path.splitext(os.path.basename(args.track_csv))[0]
        what = f"circuit {name} ({length / 1000:.2f} km, full-size car)"
    else:
        num_envs = args.num_envs or 64
        steps = args.steps or 600
        env = TrackVectorEnv(num_envs, args.device, seed=args.seed)
        what = f"{num_envs} generated tracks (1:10 RC car)"
    print(f"TrackGen-Track-v0 on {env.device}: {what}; built in {time.perf_counter() - t_build:.1f} s")

    controller = PurePursuit(env.car)
    record = 1 if args.track_csv else min(num_envs, GRID_ENVS)
    out = drive(env, controller, steps, record=record, progress=not args.no_progress)

    env_steps = steps * num_envs
    rate = out["transitions"] / max(out["env_seconds"], 1e-9)
    ended = out["episodes"]
    print(f"env steps:      {env_steps} ({steps} steps x {num_envs} envs) = {out['transitions']} transitions "
          f"+ {out['reset_steps']} reset steps ({RESET_STEPS_NOTE})")
    print(f"throughput:     {rate:,.0f} transitions/s (reset steps not counted; time inside env.step; "
          f"controller excluded)")
    print(f"laps completed: {out['laps']}")
    print(f"off-track rate: {out['off_track'] / ended:.1%} of {ended} finished episodes" if ended
          else "off-track rate: - (no episode finished)")

    os.makedirs(args.out, exist_ok=True)
    if args.track_csv:
        path = viz.plot_circuit(
            out["tracks"][0], out["traces"][0], os.path.join(args.out, f"circuit_{name}.png"),
            speed=out["speeds"][0], title=_circuit_title(name, out, env),
        )
    else:
        labels = [
            f"env {e}: {end} in {(len(out['traces'][e]) - 1) * env.car.dt:.1f} s" if end != "running"
            else f"env {e}: running"
            for e, end in enumerate(out["first_end"])
        ]
        path = viz.plot_track_grid(
            out["tracks"], out["traces"], os.path.join(args.out, "tracks.png"), speeds=out["speeds"], labels=labels,
            title=f"TrackGen-Track-v0: generated tracks (seed {args.seed}), {shown_envs(record, num_envs)}, "
                  f"first episode, "
                  f"pure pursuit",
        )
    print(f"picture:        {path}" + ("" if args.track_csv else f" ({shown_envs(record, num_envs)})"))
    env.close()
    return 0
