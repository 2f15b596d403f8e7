"""``python -m trackgen_env demo --env gates [--gates-file FILE]``: the reference controller on generated gates
or a layout."""

from __future__ import annotations

import os
import time

import numpy as np

from ..envs.controllers import CourseLinePilot
from ..envs.gates import GatesVectorEnv
from . import RESET_STEPS_NOTE, count_reset_steps, progress_disabled, shown_envs
from ..generators.gate_layouts import load_gate_layout
from .viz import check_panels, save_figure

__all__ = ["run", "fly", "plot_courses"]

GRID_ENVS = 9  # courses shown in the picture (3 x 3)


def fly(env, pilot, steps: int, *, record: int = 0, progress: bool = True, desc: str = "flying"):
    """Reset ``env`` and fly it ``steps`` steps with ``pilot(obs) -> actions``.

    Records the first episode of the first ``record`` envs (positions until it ends).

    Returns:
        a dict: ``env_seconds`` (time inside ``env.step``), ``transitions`` / ``reset_steps``
        (env steps that moved a body / NEXT_STEP reset steps, whose action is ignored: together
        ``steps * num_envs``), ``gates`` (gates passed in order,
        all episodes), ``laps``, ``episodes`` (episodes ended), ``collisions`` / ``out_of_bounds``
        (episodes ended by a collision / by leaving the bounds), ``courses`` (the first
        episode's course of each recorded env), ``traces`` (``[T, 3]`` per recorded env),
        ``first_end`` (per recorded env: "lap", "collision", "out of bounds", "invalid",
        "time" or "flying").
    """
    from tqdm import tqdm

    obs, _ = env.reset()
    courses = env.courses()[:record]
    traces = [[env.drone_state()["position"][e].copy()] for e in range(record)]
    first_end = ["flying"] * record
    gates = laps = episodes = collisions = out_of_bounds = 0
    ended = np.zeros(env.num_envs, dtype=bool)
    reset_steps = 0
    env_seconds = 0.0
    for _ in tqdm(range(steps), desc=desc, unit="step", disable=progress_disabled(progress), leave=False):
        reset_steps += count_reset_steps(env, ended)
        action = pilot(obs)
        t0 = time.perf_counter()
        obs, _, terminated, truncated, info = env.step(action)
        env_seconds += time.perf_counter() - t0
        ended = terminated | truncated
        gates += int(info["gates_passed"][ended].sum())
        laps += int(info["laps"][ended].sum())
        episodes += int(ended.sum())
        collisions += int(info["collision"][ended].sum())
        out_of_bounds += int(info["out_of_bounds"][ended].sum())
        if record:
            position = env.drone_state()["position"]
            for e in range(record):
                if first_end[e] != "flying":
                    continue
                traces[e].append(position[e].copy())
                if ended[e]:
                    first_end[e] = (
                        "lap" if info["laps"][e] >= env.laps else "collision" if info["collision"][e]
                        else "out of bounds" if info["out_of_bounds"][e] else "invalid" if terminated[e] else "time"
                    )
    running = ~ended
    gates += int(info["gates_passed"][running].sum())
    laps += int(info["laps"][running].sum())
    return {
        "env_seconds": env_seconds, "transitions": steps * env.num_envs - reset_steps, "reset_steps": reset_steps,
        "gates": gates, "laps": laps, "episodes": episodes, "collisions": collisions,
        "out_of_bounds": out_of_bounds, "courses": courses, "traces": [np.array(t) for t in traces],
        "first_end": first_end,
    }


def _gate_outline(course: dict, g: int) -> np.ndarray:
    """``[5, 3]`` closed outline [m] of gate ``g``'s opening (local y across, z up)."""
    x, y, z, w = course["gate_orientation"][g]
    # rotation matrix of the unit quaternion (x, y, z, w)
    rot = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    hw, hh = 0.5 * course["gate_width"], 0.5 * course["gate_height"]
    local = np.array([[0, hw, hh], [0, -hw, hh], [0, -hw, -hh], [0, hw, -hh], [0, hw, hh]])
    return course["gate_position"][g] + local @ rot.T


def plot_courses(courses: list[dict], traces: list[np.ndarray], path: str | os.PathLike, *,
                 labels: list[str] | None = None, title: str = "") -> str:
    """A grid of 3-D views: each course's gates as frames, its course line, the flown path.

    Args:
        courses: dicts as :meth:`GatesVectorEnv.courses` returns them.
        traces: ``[T, 3]`` drone positions [m] per course.
        path: the PNG to write (folders are created).
        labels: a subtitle per course.
        title: the figure's title.

    Returns:
        the path written (``.png`` added when it has no extension).

    Raises:
        TypeError / ValueError: no courses, a course that is not a dict as ``GatesVectorEnv.courses()``
            gives, or traces / labels of another count or shape.
    """
    check_panels("plot_courses", courses, ("gate_position", "course_line"), traces, 3, labels,
                 "gate courses as GatesVectorEnv.courses() returns them")
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    n = len(courses)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig = plt.figure(figsize=(4.2 * cols, 4.0 * rows))
    for i, (course, trace) in enumerate(zip(courses, traces)):
        ax = fig.add_subplot(rows, cols, i + 1, projection="3d")
        line = course["course_line"]
        if len(line):
            loop = np.vstack([line, line[:1]])
            ax.plot(loop[:, 0], loop[:, 1], loop[:, 2], color="0.6", lw=0.8, ls="--", label="course line")
        for g in range(len(course["gate_position"])):
            frame = _gate_outline(course, g)
            ax.plot(frame[:, 0], frame[:, 1], frame[:, 2], color="tab:orange" if g else "tab:red", lw=2.2,
                    label=None if g > 1 else "gate 0 (start and finish)" if g == 0 else "gates 1, 2, ... (in order)")
            ax.text(*course["gate_position"][g] + [0, 0, 0.6 * course["gate_height"]], str(g), fontsize=7)
        if len(trace):
            ax.plot(trace[:, 0], trace[:, 1], trace[:, 2], color="tab:blue", lw=1.2, label="flown path")
            ax.scatter(*trace[0], color="tab:green", s=12, label="start")
        pts = np.vstack([course["gate_position"], trace]) if len(trace) else course["gate_position"]
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        centre, half = 0.5 * (lo + hi), 0.5 * max(hi[:2] - lo[:2]) + 0.5
        ax.set_xlim(centre[0] - half, centre[0] + half)
        ax.set_ylim(centre[1] - half, centre[1] + half)
        ax.set_zlim(0.0, max(hi[2] + 0.5, 1.0))
        ax.set_box_aspect((1.0, 1.0, max(hi[2] + 0.5, 1.0) / (2 * half)))
        ax.view_init(elev=28, azim=-60)
        ax.tick_params(labelsize=6)
        ax.set_xlabel("x [m]", fontsize=7)
        ax.set_ylabel("y [m]", fontsize=7)
        ax.set_zlabel("z [m]", fontsize=7)
        if labels:
            ax.set_title(labels[i], fontsize=9)
        if i == 0:
            ax.legend(fontsize=6, loc="upper left")
    if title:
        fig.suptitle(title, fontsize=11)
    # tight_layout leaves no room right of a 3-D view for its z label (it sees only the 2-D box):
    # keep a margin on the right so that the last column's label is not cut off
    fig.tight_layout(rect=(0.0, 0.0, 0.96, 1.0))
    return save_figure(fig, path, dpi=100)


def run(args) -> int:
    """Run the gates demo for the parsed command-line ``args`` (see ``trackgen_env.__main__``)."""
    files = getattr(args, "gates_file", None)
    t_build = time.perf_counter()
    if files:
        layout = load_gate_layout(files)
        if getattr(args, "without_obstacles", False):
            layout = layout.without_obstacles()
        num_envs = args.num_envs or 1
        env = GatesVectorEnv(num_envs, args.device, seed=args.seed, layout=layout)
        steps = args.steps or env.max_episode_steps  # one episode: a lap or the time limit
        name = " + ".join(os.path.basename(f) for f in files)
        what = (f"the race layout {name} ({layout.num_gates} gates, {layout.length():.1f} m gate to gate, openings "
                f"{layout.course_width:g} x {layout.course_height:g} m) in {num_envs} env{'s' * (num_envs > 1)}")
        title = f"{name}\nreference controller"
    else:
        num_envs = args.num_envs or 64
        steps = args.steps or 600
        env = GatesVectorEnv(num_envs, args.device, seed=args.seed)
        what = (f"{num_envs} generated gate courses ({env.gates_config.num_gates} gates "
                f"{env.gates_config.gate_width:g} m wide)")
        shown = shown_envs(min(num_envs, GRID_ENVS), num_envs)
        title = (f"TrackGen-Gates-v0: generated gate courses (seed {args.seed}), {shown}, "
                 f"first episode, reference controller")
    print(f"TrackGen-Gates-v0 on {env.device}: {what}, 250 g quadrotor; built in {time.perf_counter() - t_build:.1f} s")
    pilot = CourseLinePilot(env)
    record = min(num_envs, GRID_ENVS)
    out = fly(env, pilot, steps, record=record, progress=not getattr(args, "no_progress", False))

    env_steps = steps * num_envs
    ended = out["episodes"]
    print(f"env steps:      {env_steps} ({steps} steps x {num_envs} envs, {steps * env.quadrotor.dt:g} s of flight) "
          f"= {out['transitions']} transitions + {out['reset_steps']} reset steps ({RESET_STEPS_NOTE})")
    print(f"throughput:     {out['transitions'] / max(out['env_seconds'], 1e-9):,.0f} transitions/s (reset steps not "
          f"counted; time inside env.step; controller excluded)")
    print(f"gates passed:   {out['gates']}")
    print(f"laps completed: {out['laps']}")
    print(f"collisions:     {out['collisions']} of {ended} finished episodes ({out['out_of_bounds']} out of bounds)")
    if files:
        # the trace holds the start and one position per step until the episode ended
        times = [(len(t) - 1) * env.quadrotor.dt for t, end in zip(out["traces"], out["first_end"]) if end == "lap"]
        lap = f"{np.mean(times):.2f} s from the start, 1 m behind gate 0" if times else "no lap completed"
        print(f"lap time:       {lap}")

    labels = [f"env {e}: {end}" for e, end in enumerate(out["first_end"])]
    path = plot_courses(out["courses"], out["traces"], os.path.join(args.out, "gates.png"), labels=labels, title=title)
    print(f"picture:        {path} ({shown_envs(record, num_envs)})")
    env.close()
    return 0
