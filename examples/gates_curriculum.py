"""A difficulty curriculum for ``TrackGen-Gates-v0``: wide, gentle courses first, the full race later.

Between rollouts of Stable-Baselines3 PPO (``trackgen_env.integrations.train.train``), a
callback reads the training episodes that ended and moves one difficulty level:

* **success rate** = the mean, over those episodes, of ``gates passed / gates in a lap``
  (capped at 1): the share of the race flown;
* up one level at ``>= up`` (70 %), down one level below ``down`` (60 %), else stay (the
  gap between the two keeps it from oscillating; Song et al., IROS 2021, grow their track
  difficulty the same way);
* level ``k`` of ``levels`` sets, by linear interpolation from easy to hard, the gate
  opening (``gate_frames.gate_width`` / ``gate_height``: 1.0 -> 0.6 m), the turn angle
  (``layout.max_turn``: 1.2 -> 1.75 rad, with ``layout.angle_jitter`` 0.1 -> 0.4 and
  ``layout.radius_jitter`` 0.1 -> 0.45, which make the turns uneven) and the course size
  (``layout.size``: 10 -> 8 m).

The parameters are the generator's live ``course.generator.params[...]`` arrays: the
recorded step graph reads them by pointer, so each env's *next* course (its auto-reset
regeneration) has the new difficulty, without re-recording anything and without
touching an episode in flight.

Run (CPU)::

    python examples/gates_curriculum.py --steps 2000000 [--out out/gates_curriculum]

It prints one line per level change and writes ``curriculum.csv`` (env steps, success
rate, level) beside the model; ``python -m trackgen_env eval OUT/model.zip`` evaluates it
on the full-difficulty courses (the env's defaults).
"""

from __future__ import annotations

import argparse
import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import warp as wp

#: (easy, hard) values of the generator parameters the curriculum moves.
DIFFICULTY = {
    "gate_frames.gate_width": (1.0, 0.6),
    "gate_frames.gate_height": (1.0, 0.6),
    "layout.max_turn": (1.2, 1.75),
    "layout.angle_jitter": (0.1, 0.4),
    "layout.radius_jitter": (0.1, 0.45),
    "layout.size": (10.0, 8.0),
}


@dataclass
class Curriculum:
    """The level rule: ``levels`` levels (0 = easy, ``levels - 1`` = the env's full difficulty)."""

    levels: int = 5
    up: float = 0.7
    down: float = 0.6
    level: int = 0

    def params(self, level: int | None = None) -> dict[str, float]:
        """The generator parameter values of ``level`` (default: the current one)."""
        t = (self.level if level is None else level) / max(self.levels - 1, 1)
        return {name: easy + t * (hard - easy) for name, (easy, hard) in DIFFICULTY.items()}

    def update(self, success: float) -> int:
        """Move one level for a success rate in [0, 1]; returns the new level."""
        if success >= self.up:
            self.level = min(self.level + 1, self.levels - 1)
        elif success < self.down:
            self.level = max(self.level - 1, 0)
        return self.level


def apply(course, values: dict[str, float]) -> None:
    """Write ``values`` into the course generator's live parameters (every env's next course)."""
    for name, value in values.items():
        course.generator.params[name] = value


def curriculum_callback(curriculum: Curriculum, log: list):
    """An SB3 callback: after each rollout, the success rate of its ended episodes moves the level."""
    from stable_baselines3.common.callbacks import BaseCallback

    class CurriculumCallback(BaseCallback):
        def _on_training_start(self) -> None:
            self.course = self.training_env.get_attr("course")[0]
            self.gates = int(self.training_env.get_attr("gates_config")[0].num_gates)
            # the env was built (and reset by SB3) on the full-difficulty courses: start on level 0's
            apply(self.course, curriculum.params())
            self.model._last_obs = self.training_env.reset()

        def _on_rollout_start(self) -> None:
            self.flown = []

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"]):
                if done:
                    self.flown.append(min(float(info["gates_passed"]) / self.gates, 1.0))
            return True

        def _on_rollout_end(self) -> None:
            if not self.flown:
                return
            success = float(np.mean(self.flown))
            before = curriculum.level
            level = curriculum.update(success)
            if level != before:
                apply(self.course, curriculum.params())
                print(f"{self.num_timesteps:>9d} steps: success {success:.0%} -> level {level}/{curriculum.levels - 1} "
                      + ", ".join(f"{k.split('.')[1]}={v:.2f}" for k, v in curriculum.params().items()))
            self.logger.record("curriculum/success", success)
            self.logger.record("curriculum/level", level)
            log.append((self.num_timesteps, success, level))

    return CurriculumCallback()


def main(argv=None) -> dict:
    """Train with the curriculum; returns ``{"model": path, "log": [(steps, success, level), ...]}``."""
    wp.config.log_level = wp.LOG_WARNING  # as the CLI: no "Module ... load" line per Warp module
    from trackgen_env.integrations.train import train

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2_000_000, help="env steps (default 2000000)")
    parser.add_argument("--num-envs", type=int, default=None, help="envs (default: train's gates default, 64)")
    parser.add_argument("--n-steps", type=int, default=None, help="rollout length per env (default: train's, 256)")
    parser.add_argument("--levels", type=int, default=5, help="difficulty levels (default 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None)
    parser.add_argument("--out", default="out/gates_curriculum")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    curriculum = Curriculum(levels=args.levels)
    log: list = []
    ppo = {} if args.n_steps is None else {"n_steps": args.n_steps,
                                           "batch_size": min(2048, args.n_steps * (args.num_envs or 64))}
    model = train("TrackGen-Gates-v0", args.steps, num_envs=args.num_envs, seed=args.seed, device=args.device,
                  out=args.out, progress=not args.no_progress, ppo_kwargs=ppo,
                  callbacks=[curriculum_callback(curriculum, log)])
    with open(Path(args.out) / "curriculum.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["steps", "success", "level"])
        writer.writerows(log)
    print(f"saved {model}; final level {curriculum.level}/{curriculum.levels - 1}")
    return {"model": model, "log": log, "curriculum": curriculum}


if __name__ == "__main__":
    main()
