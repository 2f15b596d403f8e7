"""Generated gate courses vs real race layouts: the statistics of :mod:`trackgen_env.core.gate_stats`, side by side.

Usage::

    python benchmarks/gate_stats.py --layouts DIR [--family default --family race] [--num-envs 256] [--seed 0] \\
        [--png docs/images/gate_stats.png] [--json FILE]

Prints, per generated family, one row per measure: the batch's 5th percentile / median /
95th percentile, the real layouts' min / median / max, and the share of generated courses
inside the real range, and the share with every measure inside; then the real layouts one
by one. Plots the distributions overlaid (one panel per measure, and the pooled turn angles
at the gates) into ``--png``. Lengths are in gate sizes, so a 0.4 m course and a 1.5 m
course of the same shape compare directly; the gate size itself is the one absolute measure.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings

import numpy as np
import warp as wp

from trackgen_env.core.gate_stats import GATE_MEASURES, GateLayoutStats, gate_result_stats, race_layout_stats
from trackgen_env.generators.gate_layouts import load_layout_folder
from trackgen_env.generators.gates import GateGenerator
from trackgen_env.generators.gates_config import GateGenConfig
from trackgen_env.pipeline import build, presets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Generated families to compare: name -> (num_envs, device, seed) -> a generated GateResult.
FAMILIES = {
    # the gates env's default courses: 7 gates, 0.6 m openings
    "default": lambda n, device, seed: GateGenerator(GateGenConfig(num_envs=n, device=device, gate_width=0.6),
                                                     seeds=seed).generate(),
    # presets.race_gates(): race-like courses, every length in gate sizes
    "race": lambda n, device, seed: build(presets.race_gates(num_envs=n, device=device), seeds=seed).result,
}
COLORS = {"default": "tab:blue", "race": "tab:green"}
#: measures with a handful of integer values: bar-like bins
COUNT_MEASURES = ("num_gates", "reversals", "stacked")


def real_layouts(folder: str) -> dict[str, GateLayoutStats]:
    """The stats of every layout in ``folder`` (name -> stats), sorted by name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # close gates (the split-S pair) warn: expected here
        layouts = load_layout_folder(folder)
    return {name: race_layout_stats(layout) for name, layout in layouts.items()}


def generated(family: str, num_envs: int, seed: int, device: str = "cpu") -> list[GateLayoutStats]:
    """The stats of the valid courses of one generated batch of ``family``."""
    return gate_result_stats(FAMILIES[family](num_envs, device, seed))


def all_inside(gen: list[GateLayoutStats], real: dict[str, GateLayoutStats]) -> float:
    """The share of generated courses with every measure inside the real layouts' range."""
    rows = [s.row() for s in real.values()]
    ranges = {k: (min(r[k] for r in rows), max(r[k] for r in rows)) for k in GATE_MEASURES}
    return float(np.mean([all(lo <= s.row()[k] <= hi for k, (lo, hi) in ranges.items()) for s in gen]))


def compare(gen: list[GateLayoutStats], real: dict[str, GateLayoutStats]) -> dict[str, dict[str, float]]:
    """Per measure: generated p5 / median / p95, real min / median / max, share of generated in the real range."""
    out = {}
    for key in GATE_MEASURES:
        g = np.array([s.row()[key] for s in gen])
        r = np.array([s.row()[key] for s in real.values()])
        out[key] = {
            "generated_p5": float(np.percentile(g, 5)), "generated_median": float(np.median(g)),
            "generated_p95": float(np.percentile(g, 95)),
            "real_min": float(r.min()), "real_median": float(np.median(r)), "real_max": float(r.max()),
            "generated_in_real_range": float(np.mean((g >= r.min()) & (g <= r.max()))),
        }
    return out


def format_table(table: dict[str, dict[str, float]], family: str, num_generated: int, num_real: int) -> str:
    rows = [f"| measure | generated `{family}` p5 / median / p95 ({num_generated} courses) | "
            f"real min / median / max ({num_real} layouts) | generated in real range |", "|---|---|---|---|"]
    for key, t in table.items():
        rows.append(f"| {GATE_MEASURES[key]} | {t['generated_p5']:.3g} / {t['generated_median']:.3g} / "
                    f"{t['generated_p95']:.3g} | {t['real_min']:.3g} / {t['real_median']:.3g} / {t['real_max']:.3g} | "
                    f"{t['generated_in_real_range']:.0%} |")
    return "\n".join(rows)


def format_layouts(real: dict[str, GateLayoutStats]) -> str:
    keys = list(GATE_MEASURES)
    rows = ["| layout | " + " | ".join(GATE_MEASURES[k] for k in keys) + " |", "|---|" + "---|" * len(keys)]
    for name, s in real.items():
        r = s.row()
        rows.append(f"| {name} | " + " | ".join(f"{r[k]:.3g}" for k in keys) + " |")
    return "\n".join(rows)


def plot(gens: dict[str, list[GateLayoutStats]], real: dict[str, GateLayoutStats], png: str) -> None:
    """One panel per measure (each generated family's histogram, each real layout a vertical line)
    and the pooled turn angles at the gates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(GATE_MEASURES)
    fig, axes = plt.subplots(3, 5, figsize=(18, 9.5))
    for ax, key in zip(axes.flat, keys):
        r = np.array([s.row()[key] for s in real.values()])
        values = {name: np.array([s.row()[key] for s in gen]) for name, gen in gens.items()}
        lo = min([r.min()] + [g.min() for g in values.values()])
        hi = max([r.max()] + [g.max() for g in values.values()])
        if key in COUNT_MEASURES:
            bins = np.arange(np.floor(lo) - 0.5, np.ceil(hi) + 1.5)
        else:
            bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 30)
        for name, g in values.items():
            ax.hist(g, bins=bins, density=True, alpha=0.45, color=COLORS.get(name), label=f"generated ({name})")
        for i, v in enumerate(r):
            ax.axvline(v, color="tab:orange", lw=2, alpha=0.8, label="real layouts" if i == 0 else None)
        ax.set_title(GATE_MEASURES[key], fontsize=10)
        ax.tick_params(labelsize=8)
    ax = axes.flat[len(keys)]
    bins = np.linspace(0.0, 180.0, 37)
    curves = [(gen, COLORS.get(name), f"generated ({name})") for name, gen in gens.items()]
    for stats, color, label in curves + [(list(real.values()), "tab:orange", "real layouts")]:
        turns = np.concatenate([s.turns for s in stats])
        ax.hist(turns, bins=bins, weights=np.full(turns.size, 1.0 / turns.size), histtype="step", lw=1.5,
                color=color, label=label)
    ax.set_title("turn at a gate [deg] (pooled)", fontsize=10)
    ax.set_ylabel("fraction of the gates", fontsize=8)
    ax.tick_params(labelsize=8)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("Gate-layout statistics: generated courses vs real race layouts (lengths in gate sizes)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", default=os.path.join(ROOT, "..", "shared", "real-courses", "gates"),
                        help="folder of gate layout files (.yaml, .yml, .toml)")
    parser.add_argument("--family", choices=sorted(FAMILIES), action="append", default=None,
                        help="generated family (repeat for several; default: all)")
    parser.add_argument("--num-envs", type=int, default=256, help="generated courses per family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--png", default=os.path.join(ROOT, "docs", "images", "gate_stats.png"))
    parser.add_argument("--json", default=None, help="also write the comparison as JSON")
    args = parser.parse_args(argv)
    wp.config.log_level = wp.LOG_WARNING
    if not os.path.isdir(args.layouts):
        parser.error(f"--layouts: no folder {args.layouts!r} (expected a folder of gate layout files)")
    try:
        real = real_layouts(args.layouts)
    except (FileNotFoundError, ValueError) as exc:
        parser.error(f"--layouts: {exc}")
    families = args.family or list(FAMILIES)
    gens = {name: generated(name, args.num_envs, args.seed, args.device) for name in families}
    result = {"num_real": len(real), "real": {name: s.row() for name, s in real.items()}, "families": {}}
    for name, gen in gens.items():
        table = compare(gen, real)
        inside = all_inside(gen, real)
        print(format_table(table, name, len(gen), len(real)))
        print(f"\nevery measure inside the real range: {inside:.0%} of the `{name}` courses\n")
        result["families"][name] = {"num_generated": len(gen), "all_inside": inside, "measures": table}
    print(format_layouts(real))
    plot(gens, real, args.png)
    print(f"\nplot: {args.png}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()
