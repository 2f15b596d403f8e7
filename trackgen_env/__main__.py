"""Command line: ``python -m trackgen_env demo|train|eval [options]``.

``demo`` drives an env with a built-in controller, prints transitions/s and episode
statistics, and writes pictures: ``--env track`` (default) a pure-pursuit car on
generated tracks (or a real circuit with ``--track-csv``), ``--env gates`` a quadrotor
through generated gates (or a real race layout with ``--gates-file``), ``--env race``
``--num-agents`` pure-pursuit cars of different speed limits racing on one generated track.

``train`` trains PPO on an env (TensorBoard logs; saves the policy): ``--trainer rsl_rl`` (the
default) is rsl_rl's PPO on thousands of envs fed by the env's torch outputs
(:mod:`trackgen_env.integrations.train_rsl_rl`), ``--trainer sb3`` Stable-Baselines3's PPO on a few
(:mod:`trackgen_env.integrations.train`). ``eval`` runs a saved policy of either on held-out
courses against a random policy (lap completion, lap time; :mod:`trackgen_env.integrations.evaluation`).
``train --preset circuit`` trains on the recipe that transfers to real circuits (circuit-like
tracks with their width, hairpins and the car's grip randomised; ``TRAIN_PRESETS``); each recipe
carries its trainer, env count and step budget.
They need ``pip install -e ".[rsl_rl,sb3]"`` (in a source checkout, as the README installs).
``eval [MODEL] --layouts DIR`` flies every race layout of a folder (:mod:`trackgen_env.integrations.layouts`).
``eval [MODEL] --circuits DIR`` drives a model or a built-in controller (``--controller pure_pursuit``)
once round every circuit CSV of a folder and tabulates lap, lap time, ratio to the reference lap time and off-tracks
(:mod:`trackgen_env.integrations.circuits`).
``train --preset race`` trains one policy for every car of TrackGen-Race-v0 (self-play); ``eval MODEL --race``
races it against pure-pursuit cars on held-out tracks (:mod:`trackgen_env.integrations.race_eval`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import shutil
import sys

import warp as wp

from .core.checks import check_seed, resolve_device
from .demos import CIRCUIT_LAPS, CIRCUIT_SPEED
from .envs.car import CAR_MODELS, CAR_PRESETS
from .generators.gate_layouts import load_gate_layout
from .integrations.circuits import CONTROLLERS, circuits_json, evaluate_circuits, format_circuits_table
from .integrations.evaluation import EVAL_SEED, eval_results_json, evaluate, format_eval_table
from .integrations.layouts import evaluate_layouts, write_tables
from .integrations.race_eval import RACE_ENV_ID, evaluate_race, format_race_table, race_results_json
from .integrations.runs import model_file, read_train_record
from .integrations.train import ENV_IDS, SPEC_ENVS, TRAIN_PRESETS
from .integrations.train_rsl_rl import TRAINERS, check_run_folder, default_steps, resolve_trainer, run_trainer
from .pipeline import PipelineSpec

DEMO_ENVS = ("track", "gates", "race")


def plain(text: str) -> str:
    """``text`` with its reStructuredText markup (``literals``, :role:`targets`) as plain text,
    for the terminal."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
    return text.replace("``", "")


def _prog() -> str | None:
    """The program name in usage lines: ``python -m trackgen_env`` when run so (argv[0] is then this
    file), else argparse's own (the ``trackgen-env`` console script's name)."""
    return "python -m trackgen_env" if os.path.basename(sys.argv[0]) == "__main__.py" else None


def _int(text: str) -> int:
    """An int flag's value: an int (``100000``, ``100_000``) or a whole number written in scientific
    notation (``1e5``), as step counts often are.

    Raises:
        argparse.ArgumentTypeError: anything else (argparse names the flag).
    """
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int, got {text!r}") from None
    if not math.isfinite(value) or not value.is_integer():
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")
    return int(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_prog(), description=plain(__doc__.split("\n\n", 1)[1]).strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="drive an env with a built-in controller and write pictures")
    demo.add_argument("--env", choices=DEMO_ENVS, default="track", help="which env to drive (default: track)")
    demo.add_argument("--num-envs", type=_int, default=None,
                      help="parallel envs (default: 64; 1 with --track-csv or --gates-file)")
    demo.add_argument("--steps", type=_int, default=None,
                      help=f"env steps (default: 600; with --track-csv the time of {CIRCUIT_LAPS:g} laps at a "
                           f"{CIRCUIT_SPEED:g} m/s average, so a faster car drives more than one lap; the env's time "
                           "limit with --gates-file)")
    demo.add_argument("--device", default=None,
                      help='Warp device, e.g. "cpu" or "cuda:0" (default: cuda:0 if present, else cpu)')
    demo.add_argument("--seed", type=_int, default=0, help="seed of the generated courses (default: 0)")
    demo.add_argument("--out", default="out/demo", help="folder for the pictures (default: out/demo)")
    demo.add_argument("--track-csv", default=None, metavar="FILE",
                      help="track env: drive this real circuit (CSV x_m, y_m, w_tr_right_m, w_tr_left_m) instead")
    demo.add_argument("--gates-file", nargs="+", default=None, metavar="FILE",
                      help="gates env: fly this race layout (YAML/TOML gate poses; FlightGoggles: the gate locations "
                           "and the challenge file) instead of generated courses")
    demo.add_argument("--without-obstacles", action="store_true",
                      help="gates env: fly a --gates-file layout's gates without its obstacles (poles), which the env "
                           "does not collide with (a layout with obstacles is refused otherwise)")
    demo.add_argument("--num-agents", type=_int, default=None, help="race env: cars per course (default: 4)")
    demo.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    train = sub.add_parser("train", help="train PPO (rsl_rl or SB3) on an env and save the policy")
    train.add_argument("--trainer", choices=TRAINERS, default=None,
                       help="rsl_rl: rsl_rl's PPO on thousands of envs, on the env's device (the default); sb3: "
                            "Stable-Baselines3's PPO on a few envs (default: the preset's own, else rsl_rl)")
    train.add_argument("--env", choices=sorted(ENV_IDS), default=None,
                       help="env id (default: the --spec's family's, else TrackGen-Track-v0)")
    train.add_argument("--steps", type=_int, default=None,
                       help="env steps to train for, all envs together (default: the recipe's budget)")
    train.add_argument("--num-envs", type=_int, default=None,
                       help="parallel envs (default: the recipe's; rsl_rl 1024 track / 2048 gates, sb3 16 / 64)")
    train.add_argument("--seed", type=_int, default=0,
                       help="seed of the training courses, torch and numpy (default: 0)")
    train.add_argument("--device", default=None, help='Warp device of the env (default: cuda:0 if present, else cpu)')
    train.add_argument("--out", default=None, help="folder for the run: policy.pt, model.pt (rsl_rl) or model.zip, "
                                                   "vecnormalize.pkl (sb3); monitor.csv, train.json "
                                                   "(default: out/<trainer>_<env>_s<seed>)")
    train.add_argument("--logdir", default=None, help="TensorBoard log folder (default: OUT/tb)")
    train.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    train.add_argument("--torch-threads", type=_int, default=None, metavar="N",
                       help="torch's threads (default: 1 with the policy on the CPU, torch's default on CUDA)")
    train.add_argument("--spec", default=None, metavar="FILE.json",
                       help="generate the courses from this pipeline spec (PipelineSpec.to_dict as JSON, e.g. a run's "
                            "spec.json); its num_envs is the default of --num-envs, --device replaces its device")
    train.add_argument(
        "--preset",
        choices=sorted(TRAIN_PRESETS),
        default=None,
        help="train on a recipe's courses, env, trainer and PPO settings (circuit: circuit-like tracks "
        "0.9-1.5 m wide (1:10), friction x 0.85-1.15, 2500-step episodes; the recipe that transfers "
        "to real circuits, docs/training.md; rsl_rl, 2048 envs, 8M steps, or --trainer sb3: 16 envs, "
        "4M steps, the learning rate falling linearly to 0; SB3 only: circuit_random_start: the "
        "same, each episode starting anywhere on the lap, cut after 5 s without progress; "
        "circuit_car_dr: the same as circuit, with the motor and brakes x 0.8-1.2 and the steering "
        "lock x 0.95-1.05)",
    )
    train.add_argument("--plugin", default=None, metavar="MODULE:ATTR",
                       help="the pipeline.Registry of the spec's plugin stages: an attribute of an importable module "
                            "(e.g. plugin_stage:REGISTRY with examples/ on PYTHONPATH)")

    ev = sub.add_parser("eval", help="run a saved model on held-out courses against a random policy")
    ev.add_argument("model", metavar="MODEL", nargs="?", default=None,
                    help="a run's policy: policy.pt (rsl_rl) or model.zip (sb3) written by train, or its run's "
                         "folder (train's --out; optional with --circuits --controller)")
    ev.add_argument("--env", choices=sorted(ENV_IDS), default=None,
                    help="env id (default: the model's, from train.json)")
    ev.add_argument("--episodes", type=_int, default=None,
                    help="episodes per policy, one per env (default: 100; 1 with --track-csv: one circuit, a "
                         "deterministic policy)")
    ev.add_argument("--seed", type=_int, default=None,
                    help=f"seed of the held-out courses; must not overlap the training seeds (default: {EVAL_SEED}; "
                         "not with --circuits, whose runs draw nothing)")
    ev.add_argument("--device", default=None, help="Warp device of the env")
    ev.add_argument("--track-csv", default=None, metavar="FILE",
                    help="drive this real circuit (CSV x_m, y_m, w_tr_right_m, w_tr_left_m), scaled to the training "
                         "width")
    ev.add_argument("--track-scale", type=float, default=None,
                    help="scale factor of the --track-csv circuit or of every "
                                                                     "--circuits circuit (e.g. 0.1: true 1:10; "
                                                                     "default: "
                                                                     "each circuit's mean width -> the training track "
                                                                     "width)")
    ev.add_argument("--gates-file", nargs="+", default=None, metavar="FILE",
                    help="gates env: fly this race layout (YAML/TOML gate poses) instead of generated courses")
    ev.add_argument("--without-obstacles", action="store_true",
                    help="with --gates-file: fly the layout's gates without its obstacles (poles), which the env does "
                         "not collide with (a layout with obstacles is refused otherwise)")
    ev.add_argument("--layouts", default=None, metavar="DIR",
                    help="gates env: fly every race layout of DIR once (MODEL, or without it the reference "
                         "controller), one row per layout beside the reference controller's lap")
    ev.add_argument("--circuits", default=None, metavar="DIR",
                    help="drive every circuit CSV of DIR once (scaled to the training width; true scale for the "
                         "full-size car); the reference lap times use DIR/racelines/<name>.csv where present")
    ev.add_argument("--race", action="store_true",
                    help="race MODEL (a TrackGen-Race-v0 run, e.g. train --preset race) in car 0 against pure-pursuit "
                         "cars on --episodes held-out tracks: win rate, mean position, overtakes and contacts caused "
                         "per lap, laps completed")
    ev.add_argument("--controller", choices=sorted(CONTROLLERS), default=None,
                    help="with --circuits: drive with this built-in controller instead of a model")
    ev.add_argument("--car", choices=sorted(CAR_PRESETS), default=None,
                    help="with --circuits: the car (default: the model's, else rc10)")
    ev.add_argument("--car-model", choices=CAR_MODELS, default=None,
                    help="with --circuits: the car model (default: the model's, else kinematic)")
    ev.add_argument("--json", default=None, metavar="FILE", help="also write the results as JSON")
    ev.add_argument("--md", default=None, metavar="FILE",
                    help="with --circuits or --race: also write the table as Markdown")
    ev.add_argument("--torch-threads", type=_int, default=None, metavar="N",
                    help="torch's threads (default: 1 with the policy on the CPU, torch's default on CUDA)")
    ev.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def _read_spec(path: str) -> PipelineSpec:
    """The spec of the JSON file ``path`` (``PipelineSpec.to_dict()``'s dict).

    Raises:
        OSError: the file cannot be read. ValueError: not JSON, or not a spec's dict (naming the file).
    """
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise OSError(f"--spec {path}: cannot read the file ({exc.strerror or exc})") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"--spec {path}: expected a JSON spec (PipelineSpec.to_dict() written with json.dump), "
                         f"but the file is not JSON ({exc})") from None
    try:
        return PipelineSpec.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--spec {path}: expected a JSON spec (PipelineSpec.to_dict() written with json.dump): "
                         f"{exc}") from None


def _train(args) -> int:
    spec = None
    if args.spec is not None:
        spec = _read_spec(args.spec)
    if args.preset is not None and args.spec is not None:
        raise ValueError("--preset sets the courses: pass --preset or --spec, not both")
    trainer = resolve_trainer(args.trainer, args.preset)  # an unknown one, or a preset without its recipe
    env = args.env or (SPEC_ENVS[spec.family][0] if spec is not None else
                       TRAIN_PRESETS[args.preset]["env_id"] if args.preset is not None else "TrackGen-Track-v0")
    prefix = "ppo" if trainer == "sb3" else trainer
    out = args.out or f"out/{prefix}_{env.split('-')[1].lower()}_s{args.seed}"
    if os.path.exists(out) and not os.path.isdir(out):
        raise OSError(f"--out {out}: expected a folder for the run (model.zip, train.json, ...), but it is a file")
    check_run_folder(out, trainer)
    rank = int(os.environ.get("RANK", "0"))
    if rank == 0:  # only rank 0 writes the run; ranks probing one folder at once would remove it under each other
        _make_folder(out, keep=False)  # refused before training; train() makes it once its env is built
    steps = args.steps if args.steps is not None else default_steps(trainer, env, args.preset)
    path = run_trainer(trainer, env, steps, num_envs=args.num_envs, seed=args.seed, device=args.device, out=out,
                       logdir=args.logdir, progress=not args.no_progress, torch_threads=args.torch_threads, spec=spec,
                       plugin=args.plugin, preset=args.preset)
    if rank != 0:
        return 0  # one of several torchrun processes: rank 0 reports the run
    record = json.loads(path.with_name("train.json").read_text())
    if record["steps"] != record["steps_requested"]:
        per = record["ppo"]["n_steps"] if trainer == "sb3" else record["rsl_rl"]["num_steps_per_env"]
        cars = record["env_kwargs"].get("num_agents") if env == "TrackGen-Race-v0" else None
        batch = _count(record['num_envs'], 'env') if cars is None else (
            f"{_count(record['num_envs'], 'course')} x {_count(cars, 'car')}")
        print(f"trained {record['steps']} env steps: --steps {record['steps_requested']} rounded up to whole rollouts "
              f"of {record['rollout_steps']} ({batch} x {per} steps)")
    print(
        f"{trainer}: {record['steps']} env steps in {record['wall_time_s']} s "
        f"({record['env_steps_per_s']:,} env-steps/s)"
    )
    print(f"saved {path} (TensorBoard: tensorboard --logdir {args.logdir or os.path.join(out, 'tb')})")
    return 0


def _count(n: int, noun: str) -> str:
    """``"1 env"``, ``"3 envs"``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _make_folder(path: str, *, keep: bool = True) -> None:
    """Make the ``--out`` folder ``path`` (and its parents); ``keep=False``: only check that it can
    be made, removing what this made.

    Raises:
        OSError: it cannot be made (naming the flag, the folder and why).
    """
    top = os.path.abspath(path)
    while not os.path.exists(os.path.dirname(top)):
        top = os.path.dirname(top)  # the outermost folder this makes
    made = not os.path.exists(path)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise OSError(f"--out {path}: cannot make the folder ({exc.strerror or exc})") from None
    if made and not keep:
        shutil.rmtree(top)


def _check_writable(path: str | None, flag: str) -> None:
    """Refuse an output file that cannot be written before the evaluation runs (not after it):
    open it for appending (which changes no content) and remove it again if it was not there.

    Raises:
        OSError: the file cannot be opened for writing (naming the flag and the file).
    """
    if path is None:
        return
    existed = os.path.lexists(path)
    try:
        with open(path, "a"):
            pass
    except OSError as exc:
        raise OSError(f"{flag} {path}: cannot write the file ({exc.strerror or exc})") from None
    if not existed:
        os.remove(path)


def _eval_circuits(args) -> int:
    for name in ("track_csv", "gates_file", "episodes", "seed"):
        if getattr(args, name) is not None:
            raise ValueError(f"--{name.replace('_', '-')} does not apply to --circuits (one run per circuit of the "
                             "folder, from the start line, by a deterministic driver)")
    if args.env not in (None, "TrackGen-Track-v0"):
        raise ValueError(f"--circuits drives the car: env must be TrackGen-Track-v0, got {args.env}")
    _check_writable(args.md, "--md")
    _check_writable(args.json, "--json")
    results = evaluate_circuits(args.circuits, model=args.model, controller=args.controller, car=args.car,
                                car_model=args.car_model, scale=args.track_scale, device=args.device,
                                torch_threads=args.torch_threads)
    driver = args.model or args.controller
    table = format_circuits_table(results, title=f"{driver} on the circuits of {args.circuits}")
    print(table)
    if args.md:
        with open(args.md, "w") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w") as f:
            f.write(circuits_json(results) + "\n")
    return 0


def _eval_race(args) -> int:
    for name in ("track_csv", "track_scale", "gates_file", "layouts", "circuits", "controller", "car", "car_model"):
        if getattr(args, name) is not None:
            raise ValueError(f"--{name.replace('_', '-')} does not apply to --race (MODEL races on generated tracks)")
    if args.model is None:
        raise ValueError("eval --race needs MODEL (a TrackGen-Race-v0 run's policy.pt or folder, train --preset race)")
    if args.env not in (None, RACE_ENV_ID):
        raise ValueError(f"--race races on {RACE_ENV_ID}, got --env {args.env}")
    _check_writable(args.md, "--md")
    _check_writable(args.json, "--json")
    seed = EVAL_SEED if args.seed is None else args.seed
    results = evaluate_race(args.model, races=args.episodes or 100, seed=seed, device=args.device,
                            torch_threads=args.torch_threads, progress=not args.no_progress)
    print(f"{results[0].races} races on held-out tracks (seed {seed}), car 0 against {results[0].opponents}\n")
    table = format_race_table(results)
    print(table)
    if args.md:
        with open(args.md, "w") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w") as f:
            f.write(race_results_json(results) + "\n")
    return 0


def _eval(args) -> int:
    if args.race:
        return _eval_race(args)
    if args.circuits:
        return _eval_circuits(args)
    if args.layouts:  # trackgen_env.integrations.layouts holds the logic
        for name in ("track_csv", "track_scale", "gates_file", "episodes", "seed", "controller", "car", "car_model"):
            if getattr(args, name) is not None:
                raise ValueError(f"--{name.replace('_', '-')} does not apply to --layouts (one flight per layout "
                                 "of the folder by MODEL, or by the reference controller without it)")
        if args.model is not None:
            env_id = read_train_record(model_file(args.model)).get("env_id", "TrackGen-Gates-v0")
            if env_id != "TrackGen-Gates-v0":
                raise ValueError(f"--layouts flies race layouts with the quadrotor: MODEL must be a TrackGen-Gates-v0 "
                                 f"policy, got one of {env_id}")
        _check_writable(args.md, "--md")
        _check_writable(args.json, "--json")
        write_tables(evaluate_layouts(args.layouts, model=args.model, device=args.device or "cpu"), args.json, args.md)
        return 0
    for name in ("controller", "car", "car_model", "md"):
        if getattr(args, name) is not None:
            raise ValueError(f"--{name.replace('_', '-')} applies to --circuits only")
    if args.model is None:
        raise ValueError(
            "eval needs MODEL (a policy.pt or model.zip written by train), or --circuits DIR --controller NAME"
        )
    if args.track_scale is not None and args.track_csv is None:
        raise ValueError("--track-scale scales the --track-csv circuit or the --circuits circuits: pass one of them")
    _check_writable(args.json, "--json")
    episodes = args.episodes or (1 if args.track_csv or args.gates_file else 100)
    seed = EVAL_SEED if args.seed is None else args.seed
    gates_file = args.gates_file
    if gates_file and args.without_obstacles:
        gates_file = load_gate_layout(gates_file).without_obstacles()
    results = evaluate(args.model, env_id=args.env, episodes=episodes, seed=seed, device=args.device,
                       track_csv=args.track_csv, track_scale=args.track_scale, gates_file=gates_file,
                       torch_threads=args.torch_threads, progress=not args.no_progress)
    where = args.track_csv or (" + ".join(args.gates_file) if args.gates_file else f"held-out courses (seed {seed})")
    n = results[0].episodes
    print(f"{n} episode{'' if n == 1 else 's'} per policy on {where}\n")
    print(format_eval_table(results))
    if args.json:
        with open(args.json, "w") as f:
            f.write(eval_results_json(results) + "\n")
    return 0


#: the largest count a flag takes (--steps, --num-envs, --episodes, --torch-threads)
_MOST = 2**53


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("num_envs", "steps", "episodes", "torch_threads"):
        value = getattr(args, name, None)
        if value is not None and value < 1:
            print(f"error: --{name.replace('_', '-')} must be >= 1, got {value}", file=sys.stderr)
            return 2
        if value is not None and value > _MOST:  # a count no run reaches (and past int64 for the progress bar)
            print(f"error: --{name.replace('_', '-')} must be <= 2**53, got {value}", file=sys.stderr)
            return 2
    scale = getattr(args, "track_scale", None)  # the one check of the flag, for --track-csv and --circuits alike
    if scale is not None and not (math.isfinite(scale) and scale > 0.0):
        print(f"error: --track-scale must be a finite number > 0, got {scale}", file=sys.stderr)
        return 2
    if getattr(args, "seed", None) is not None:  # the library's one seed rule, for every command
        try:
            check_seed(args.seed, name="--seed", none=False)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    device = getattr(args, "device", None)  # the one check of the flag, for every command
    if device is not None:
        try:
            resolve_device(device)
        except ValueError:
            print(f"error: --device must be one of {[str(d) for d in wp.get_devices()]}, got {device!r}",
                  file=sys.stderr)
            return 2
    if args.command == "demo" and args.env == "gates" and args.track_csv:
        print("error: --track-csv drives a real circuit with the track env; it does not apply to --env gates",
              file=sys.stderr)
        return 2
    if args.command == "demo" and args.env == "race" and (args.track_csv or args.gates_file):
        print("error: --env race races on generated tracks; --track-csv and --gates-file do not apply",
              file=sys.stderr)
        return 2
    if args.command == "demo" and args.env != "race" and args.num_agents is not None:
        print("error: --num-agents sets the cars per course of --env race", file=sys.stderr)
        return 2
    if getattr(args, "without_obstacles", False) and not args.gates_file:
        print("error: --without-obstacles applies to a --gates-file layout", file=sys.stderr)
        return 2
    if args.command == "demo" and args.env == "track" and args.gates_file:
        print("error: --gates-file flies a race layout with the gates env; add --env gates", file=sys.stderr)
        return 2
    # bad values (a device, a seed, a CSV file, an output folder, a num_envs too large for the
    # memory) get one line, not a traceback
    try:
        if args.command == "train":
            return _train(args)
        if args.command == "eval":
            return _eval(args)
        _make_folder(args.out)  # before the simulation, not after it
        demo = importlib.import_module(f"trackgen_env.demos.{args.env}")
        return int(demo.run(args) or 0)
    except (ValueError, OSError, ImportError, MemoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    code = main()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # one of several torchrun processes, its run saved and the process group left: end without the
        # interpreter's teardown, where a gloo rank aborted now and then ("terminate called without an
        # active exception"; examples/ppo_multigpu.py says more)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
