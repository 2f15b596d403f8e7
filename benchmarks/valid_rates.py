"""Valid-course rate of each TrackGenConfig / GateGenConfig field over (and past) its documented range.

Usage::

    python benchmarks/valid_rates.py [--family track|gates] [--num-envs 64] [--seed 0]

Each line sets one field (the others at their defaults) and prints the share of envs that
hold a valid course after the first generation, or the error that refuses the value.
``tests/test_documented_values.py`` asserts >= 99 % at the ends of the documented ranges.
"""

from __future__ import annotations

import argparse
import warnings

import warp as wp

from trackgen_env import GateGenConfig, GateGenerator, TrackGenConfig, TrackGenerator

TRACK = dict(
    size=[3.0, 4.0, 10.0, 100.0], width=[0.01, 0.8, 1.3, 2.0, 3.0],
    point_spacing=[0.01, 0.1, 3.0, 10.0], num_control_points=[5, 12, 20, 64],
    radius_jitter=[0.0, 0.7, 0.9], angle_jitter=[0.0, 0.3, 0.45], elevation=[0.0, 2.0, 10.0],
    max_loop_length=[20.0, 31.5, 40.0], min_turn_radius_factor=[1.0, 3.0, 5.75, 10.0], max_retries=[0, 8, 12, 64],
)
GATES = dict(  # the ends of the ranges with the other fields at their defaults, and past them
    size=[4.0, 7.2, 7.3, 8.0, 100.0], num_gates=[3, 4, 5, 6, 7, 8, 9, 12], radius_jitter=[0.0, 0.5, 0.9],
    angle_jitter=[0.0, 0.55, 0.7, 0.9], altitude_min=[0.01, 2.5], altitude_max=[0.5, 2.5, 3.6, 5.0],
    gate_width=[0.0, 0.5, 0.66, 1.0], gate_height=[0.01, 0.93, 1.0, 2.0], min_gate_spacing=[0.1, 1.87, 2.0, 2.5],
    max_turn=[1.0, 1.5, 1.685, 3.1], max_climb=[0.3, 0.5, 0.65, 5.0], start_clearance=[0.05, 1.1, 1.5, 2.0],
    ground_clearance=[0.0, 2.0], max_retries=[0, 2, 64],
)


def rate(family: str, num_envs: int, seed: int, **kwargs) -> str:
    cls, cfg = (TrackGenerator, TrackGenConfig) if family == "track" else (GateGenerator, GateGenConfig)
    try:
        config = cfg(num_envs=num_envs, device="cpu", **kwargs)
    except (TypeError, ValueError) as exc:
        return f"refused: {exc}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the rate is printed instead
        gen = cls(config, seeds=seed)
    return f"{100.0 * gen.result.valid.numpy().mean():.1f}% valid"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=("track", "gates"), nargs="+", default=["track", "gates"])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    wp.config.log_level = wp.LOG_WARNING
    for family in args.family:
        for field, values in (TRACK if family == "track" else GATES).items():
            for v in values:
                print(f"{family} {field}={v}: {rate(family, args.num_envs, args.seed, **{field: v})}", flush=True)


if __name__ == "__main__":
    main()
