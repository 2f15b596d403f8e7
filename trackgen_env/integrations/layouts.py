"""Fly every race layout of a folder: one row per layout, against the reference controller's lap.

Usage::

    python -m trackgen_env eval [MODEL] --layouts DIR [--json FILE] [--md FILE]
    python -m trackgen_env.integrations.layouts DIR [--controller | --model out/run]
        [--racing] [--lateral-accel A] [--json FILE] [--md FILE]

Each layout of the folder (:func:`~trackgen_env.generators.gate_layouts.layout_files`: a
layout in two files loads when both are there) is flown once from the standard start, by the
reference controller (``--controller``, the default) or a trained policy (``--model``,
deterministic, through ``evaluation.evaluate``), and once by the reference controller for its
reference lap. Obstacles a layout holds (lsy's or safe-control-gym's poles) are not collision
objects of the gates env: the gates are flown alone, and the row says how many obstacles were
left out. Columns: ``layout``, ``lap_completed``, ``collisions`` (episodes ended by a
collision: 0 or 1; not reported for a policy), ``gates_passed``, ``num_gates``, ``lap_time``
[s], ``reference_lap_time`` [s], ``ratio`` (lap time / reference), ``obstacles_left_out``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import warnings
from dataclasses import asdict, dataclass

from ..envs import GatesVectorEnv
from ..envs.controllers import ControllerGains, CourseLinePilot
from ..envs.quadrotor import QuadrotorParams
from ..generators.gate_layouts import RaceLayout, layout_files, load_gate_layout
from .evaluation import evaluate

__all__ = ["LayoutResult", "fly_reference", "evaluate_layouts", "layouts_markdown", "layouts_json", "write_tables",
           "main"]


@dataclass(frozen=True)
class LayoutResult:
    """One layout's row (see the module docstring)."""

    layout: str
    lap_completed: bool
    collisions: int | None
    gates_passed: int
    num_gates: int
    lap_time: float | None  # [s] None: no lap
    reference_lap_time: float | None  # [s] the reference controller's; None: it completed no lap
    obstacles_left_out: int = 0

    @property
    def ratio(self) -> float | None:
        """Lap time / reference lap time (None unless both completed the lap)."""
        if self.lap_time is None or self.reference_lap_time is None:
            return None
        return self.lap_time / self.reference_lap_time

    def row(self) -> dict:
        """The row as a dict (the JSON's), the ratio included."""
        return {**asdict(self), "ratio": self.ratio}


def fly_reference(layout: RaceLayout, *, quadrotor: QuadrotorParams | None = None,
                  gains: ControllerGains | None = None, device: str = "cpu") -> tuple[bool, int, int, float | None]:
    """Fly one episode of ``layout`` (without its obstacles) with the reference controller.

    Returns:
        ``(lap_completed, collisions, gates_passed, lap_time [s] or None)``.
    """
    env = GatesVectorEnv(1, device, layout=layout.without_obstacles(), quadrotor=quadrotor)
    try:
        pilot = CourseLinePilot(env, gains)
        obs, _ = env.reset(seed=0)
        steps = 0
        while True:
            obs, _, terminated, truncated, info = env.step(pilot(obs))
            steps += 1
            if terminated[0] or truncated[0]:
                break
        lap = bool(info["laps"][0] >= env.laps)
        lap_time = steps * env.quadrotor.dt / env.laps if lap else None
        return lap, int(info["collision"][0]), int(info["gates_passed"][0]), lap_time
    finally:
        env.close()


def _fly_policy(model, layout: RaceLayout, device: str | None) -> tuple[bool, None, int, float | None]:
    result = evaluate(model, gates_file=layout.without_obstacles(), episodes=1, random_policy=False,
                      device=device)[0]
    lap = result.lap_completion_rate >= 1.0
    gates = 0 if result.mean_gates_passed is None else int(round(result.mean_gates_passed))
    return lap, None, gates, result.mean_lap_time_s if lap else None


def evaluate_layouts(folder, *, model=None, quadrotor: QuadrotorParams | None = None,
                     gains: ControllerGains | None = None, reference_gains: ControllerGains | None = None,
                     device: str = "cpu") -> list[LayoutResult]:
    """Fly every layout of ``folder``; one :class:`LayoutResult` per layout, sorted by name.

    Args:
        folder: a folder of gate layout files.
        model: a trained policy (``policy.pt`` or ``model.zip``, or its run's folder; None: the reference
            controller with ``gains``).
        quadrotor: the quadrotor flown by the controller rows and the reference (default: the env's).
        gains / reference_gains: the controller's gains for the flown row / for the reference lap.
        device: Warp device.

    Raises:
        FileNotFoundError / ValueError: no folder, no layout in it, a malformed file (naming it).
    """
    results = []
    for name, files in layout_files(folder).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # close gates (a split-S pair) warn: flown as they are
            layout = load_gate_layout(files if len(files) > 1 else files[0])
        if model is not None or gains != reference_gains:
            ref_lap, _, _, ref_time = fly_reference(layout, quadrotor=quadrotor, gains=reference_gains, device=device)
        if model is None and gains == reference_gains:
            lap, collisions, gates, lap_time = fly_reference(layout, quadrotor=quadrotor, gains=gains, device=device)
            ref_lap, ref_time = lap, lap_time  # the same flight
        elif model is None:
            lap, collisions, gates, lap_time = fly_reference(layout, quadrotor=quadrotor, gains=gains, device=device)
        else:
            lap, collisions, gates, lap_time = _fly_policy(model, layout, device)
        results.append(LayoutResult(name, lap, collisions, gates, layout.num_gates, lap_time,
                                    ref_time if ref_lap else None, len(layout.obstacles)))
    return results


def _cell(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def layouts_markdown(results: list[LayoutResult]) -> str:
    """The rows as a Markdown table."""
    rows = ["| layout | lap completed | collisions | gates passed | lap time [s] | reference lap time [s] | ratio | "
            "obstacles left out |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        rows.append(f"| {r.layout} | {_cell(r.lap_completed)} | {_cell(r.collisions)} | {r.gates_passed} / "
                    f"{r.num_gates} | {_cell(r.lap_time)} | {_cell(r.reference_lap_time)} | {_cell(r.ratio, 3)} | "
                    f"{r.obstacles_left_out} |")
    return "\n".join(rows)


def layouts_json(results: list[LayoutResult]) -> str:
    """The rows as a JSON list."""
    return json.dumps([r.row() for r in results], indent=2)


def write_tables(results: list[LayoutResult], json_path: str | None = None, md_path: str | None = None) -> str:
    """Print the Markdown table and write it (``md_path``) and the JSON rows (``json_path``); returns the table."""
    table = layouts_markdown(results)
    print(table)
    if json_path:
        with open(json_path, "w") as f:
            f.write(layouts_json(results) + "\n")
    if md_path:
        with open(md_path, "w") as f:
            f.write(table + "\n")
    return table


def main(argv: list[str] | None = None) -> list[LayoutResult]:
    parser = argparse.ArgumentParser(prog="python -m trackgen_env.integrations.layouts",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("layouts", help="folder of gate layout files (.yaml, .yml, .toml)")
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--controller", action="store_true", help="fly the reference controller (the default)")
    who.add_argument("--model", default=None, help="a trained policy: policy.pt, model.zip or its run's folder")
    parser.add_argument("--racing", action="store_true",
                        help="the racing quadrotor and its gains (QuadrotorParams.racing, ControllerGains.racing)")
    parser.add_argument("--lateral-accel", type=float, default=None,
                        help="the controller's lateral acceleration in turns [m/s^2] (flown rows and reference)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", default=None, help="write the rows as JSON")
    parser.add_argument("--md", default=None, help="write the table as Markdown")
    args = parser.parse_args(argv)
    if not os.path.isdir(args.layouts):
        parser.error(f"no folder {args.layouts!r} (expected a folder of gate layout files)")
    if args.racing and args.model:
        parser.error("--racing sets the controller's quadrotor: a policy flies the quadrotor it was trained with")
    quadrotor = QuadrotorParams.racing() if args.racing else None
    extra = {} if args.lateral_accel is None else {"lateral_accel": args.lateral_accel}
    gains = ControllerGains.racing(**extra) if args.racing else ControllerGains(**extra)
    results = evaluate_layouts(args.layouts, model=args.model, quadrotor=quadrotor, gains=gains,
                               reference_gains=gains, device=args.device)
    write_tables(results, args.json, args.md)
    return results


if __name__ == "__main__":
    main()
