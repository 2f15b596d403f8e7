"""A course curriculum for ``TrackGen-Track-v0``: small, simple tracks first, the full size and all turns later.

The course grows with training progress ``p`` (env steps done / env steps requested)
through the generator's live parameters ``course.generator.params[...]``, by linear
interpolation from :data:`START` to :data:`FINAL`:

* ``"layout.size"``: the side of the square the track is drawn in, 6 -> 10 m;
* ``"layout.num_turns"``: the active control points, 5 -> 12 (floored: each bends the
  loop once, so a track of 5 is a rounded pentagon, one of 12 winds through 12 lobes).

Between PPO rollouts (Stable-Baselines3 through ``trackgen_env.integrations.train.train``)
a callback writes the values of the current progress into the live ``[E] float32``
arrays. The recorded step graph reads them by pointer, so every env's *next* course (its
auto-reset regeneration) has them, without re-recording anything and without touching an
episode in flight.

What is sized at construction is sized for the final course: the env's spec is
``presets.track(size=10, num_control_points=12)`` (:func:`make_spec`: the settings
``max_loop_length = 40 m`` and ``max_points`` of a 10 m track, so the checkpoint ring's
capacity, the spline's loop-length bound and the centreline's capacity hold the largest
course, and 12 control points of capacity). The run saves it as ``spec.json``, so ``python
-m trackgen_env eval OUT/model.zip`` drives the full courses; the callback sets
:data:`START` and resets the env once before the first rollout. A course with grids
(``BandCollision("sdf")``, ``HeightFieldBake``) for a simulation of your own, built at the
start values, passes ``size_hi=FINAL["layout.size"]`` to ``Course.track``
(:func:`grid_course`), so its grids cover the final size and the resolution check
measures them against it.

Run (CPU)::

    python examples/course_curriculum.py --steps 300000 [--out out/course_curriculum]

It prints the course at each tenth of the training and writes ``curriculum.csv`` (env
steps, size, turns, mean loop length of the valid courses at that time, and whether the env
still replays the graph it recorded first) beside the model.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np
import warp as wp

from trackgen_env.course import Course
from trackgen_env.pipeline import PipelineSpec, build, presets

#: the course at progress 0 and at progress 1 (``"stage.param"`` -> value)
START = {"layout.size": 6.0, "layout.num_turns": 5.0}
FINAL = {"layout.size": 10.0, "layout.num_turns": 12.0}


def make_spec(num_envs: int = 16, device: str | None = None) -> PipelineSpec:
    """The track pipeline of :data:`FINAL`: its capacities and construction values."""
    return presets.track(num_envs=num_envs, device=device, size=FINAL["layout.size"],
                         num_control_points=int(FINAL["layout.num_turns"]))


def params_at(progress: float) -> dict[str, float]:
    """The parameter values at ``progress`` in [0, 1] (clipped): linear from START to FINAL."""
    t = float(np.clip(progress, 0.0, 1.0))
    return {name: START[name] + t * (FINAL[name] - START[name]) for name in START}


def apply(course, values: dict[str, float]) -> None:
    """Write ``values`` into the course generator's live parameters (every env's next course)."""
    for name, value in values.items():
        course.generator.params[name] = value


def grid_course(num_envs: int = 16, device: str | None = None, seeds=0) -> Course:
    """A course with an SDF band collision and a height field over the curriculum's spec, its grids
    sized for the final course (``size_hi``), for a simulation of your own."""
    program = build(make_spec(num_envs, device).with_params(START), seeds=seeds)
    return Course.track(program, checkpoint_spacing=0.6, collision="sdf", heightfield=64,
                        size_hi=FINAL["layout.size"])


def curriculum_callback(total_steps: int, log: list):
    """An SB3 callback: before each rollout, the course of the training progress so far."""
    from stable_baselines3.common.callbacks import BaseCallback

    class CourseCurriculum(BaseCallback):
        def _on_training_start(self) -> None:
            self.course = self.training_env.get_attr("course")[0]
            self.graph = self.training_env.get_attr("graph")[0]
            self.printed = -1
            # the env was built (and reset by SB3) on the final courses: start on START's
            apply(self.course, params_at(0.0))
            self.model._last_obs = self.training_env.reset()

        def _on_rollout_start(self) -> None:
            values = params_at(self.num_timesteps / total_steps)
            apply(self.course, values)
            r = self.course.result
            valid = r.valid.numpy().astype(bool)
            length = float(r.loop_length.numpy()[valid].mean()) if valid.any() else float("nan")
            same_graph = self.training_env.get_attr("graph")[0] is self.graph
            log.append((self.num_timesteps, values["layout.size"], int(values["layout.num_turns"]), length, same_graph))
            tenth = int(10 * self.num_timesteps / total_steps)
            if tenth != self.printed:
                self.printed = tenth
                print(f"{self.num_timesteps:>9d} steps: size {values['layout.size']:.2f} m, "
                      f"{int(values['layout.num_turns'])} turns; courses now {length:.1f} m long")
            self.logger.record("curriculum/size", values["layout.size"])
            self.logger.record("curriculum/turns", int(values["layout.num_turns"]))

        def _on_step(self) -> bool:
            return True

    return CourseCurriculum()


def main(argv=None) -> dict:
    """Train with the curriculum; returns ``{"model": path, "log": [(steps, size, turns, length, same_graph)]}``."""
    wp.config.log_level = wp.LOG_WARNING  # as the CLI: no "Module ... load" line per Warp module
    from trackgen_env.integrations.train import train

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=300_000, help="env steps (default 300000)")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--n-steps", type=int, default=None, help="rollout length per env (default: train's, 256)")
    parser.add_argument("--max-episode-steps", type=int, default=None, help="the env's time limit (default: its own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None)
    parser.add_argument("--out", default="out/course_curriculum")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    log: list = []
    ppo = {} if args.n_steps is None else {"n_steps": args.n_steps,
                                           "batch_size": min(512, args.n_steps * args.num_envs)}
    env = {} if args.max_episode_steps is None else {"max_episode_steps": args.max_episode_steps}
    model = train("TrackGen-Track-v0", args.steps, num_envs=args.num_envs, seed=args.seed, device=args.device,
                  out=args.out, progress=not args.no_progress, ppo_kwargs=ppo, env_kwargs=env,
                  spec=make_spec(args.num_envs, args.device), callbacks=[curriculum_callback(args.steps, log)])
    with open(Path(args.out) / "curriculum.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["steps", "size", "turns", "mean_loop_length", "same_graph"])
        writer.writerows(log)
    print(f"saved {model}")
    return {"model": model, "log": log}


if __name__ == "__main__":
    main()
