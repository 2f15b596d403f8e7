"""Command line: ``python -m trackgen_env demo [--env track|gates] [options]``.

``demo`` drives an env with a built-in controller, prints env-steps/s and episode
statistics, and writes pictures: ``--env track`` (default) a pure-pursuit car on
generated tracks (or a real circuit with ``--track-csv``), ``--env gates`` a quadrotor
through generated gates.
"""

from __future__ import annotations

import argparse
import importlib
import sys

DEMO_ENVS = ("track", "gates")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trackgen_env", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="drive an env with a built-in controller and write pictures")
    demo.add_argument("--env", choices=DEMO_ENVS, default="track", help="which env to drive (default: track)")
    demo.add_argument("--num-envs", type=int, default=None, help="parallel envs (default: 64; 1 with --track-csv)")
    demo.add_argument("--steps", type=int, default=None, help="env steps (default: 600; one lap with --track-csv)")
    demo.add_argument("--device", default=None, help='Warp device, e.g. "cpu" or "cuda:0" (default: cuda:0 if present, else cpu)')
    demo.add_argument("--seed", type=int, default=0, help="seed of the generated courses (default: 0)")
    demo.add_argument("--out", default="out/demo", help="folder for the pictures (default: out/demo)")
    demo.add_argument("--track-csv", default=None, metavar="FILE",
                      help="track env: drive this real circuit (CSV x_m, y_m, w_tr_right_m, w_tr_left_m) instead")
    demo.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    import warp as wp

    args = build_parser().parse_args(argv)
    wp.config.log_level = wp.LOG_WARNING  # keep Warp's module-load log out of the demo's report
    for name in ("num_envs", "steps"):
        value = getattr(args, name)
        if value is not None and value < 1:
            print(f"error: --{name.replace('_', '-')} must be >= 1, got {value}", file=sys.stderr)
            return 2
    demo = importlib.import_module(f"trackgen_env.demos.{args.env}")
    return int(demo.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
