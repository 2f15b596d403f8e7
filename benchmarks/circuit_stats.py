"""Generated tracks vs real circuits: the circuit statistics of :mod:`trackgen_env.core.stats`, side by side.

Usage::

    python benchmarks/circuit_stats.py --circuits DIR [--family default --family circuit] \\
        [--num-envs 256] [--seed 0] [--png docs/images/circuit_stats.png] [--json FILE]

Prints, per generated family (default: both ``default`` and ``circuit``), one row per
measure: the batch's 5th percentile / median / 95th percentile, the real circuits' min /
median / max, and the share of generated tracks inside the real range, and the share with
every measure inside; then the real circuits one by one. Plots the distributions overlaid
(one panel per measure, and the pooled distribution of |curvature| x width) into ``--png``.
Every measure is scale-free (lengths in track widths), so a 1:10 generated track and a
full-size circuit compare directly.
"""

from __future__ import annotations

import argparse
import glob
import json
import os

import numpy as np
import warp as wp

from trackgen_env import TrackGenConfig, TrackGenerator
from trackgen_env.pipeline import build, presets
from trackgen_env.generators.centerline_io import load_centerline_csv
from trackgen_env.core.stats import MEASURES, STRAIGHT_KAPPA_WIDTH, CircuitStats, centerline_stats, track_result_stats

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Generated families to compare: name -> (num_envs, device, seed) -> a generated TrackResult.
FAMILIES = {
    # TrackGenConfig(): ~19 m loops in a 10 m square, 0.8 m wide
    "default": lambda n, device, seed: TrackGenerator(TrackGenConfig(num_envs=n, device=device), seeds=seed).generate(),
    # presets.circuit(): circuit-like loops, 1.2 m wide (the statistics are scale-free)
    "circuit": lambda n, device, seed: build(presets.circuit(num_envs=n, device=device), seeds=seed).result,
}
COLORS = {"default": "tab:blue", "circuit": "tab:green"}
#: measures plotted on a log axis
LOG_MEASURES = ("tightest_radius_over_width",)


def real_circuits(folder: str) -> dict[str, CircuitStats]:
    """The stats of every ``*.csv`` circuit in ``folder`` (name -> stats), sorted by name."""
    paths = sorted(glob.glob(os.path.join(folder, "*.csv")))
    if not paths:
        raise FileNotFoundError(f"no circuit CSVs in {folder!r}")
    return {os.path.splitext(os.path.basename(p))[0]: centerline_stats(load_centerline_csv(p)) for p in paths}


def generated(family: str, num_envs: int, seed: int, device: str = "cpu") -> list[CircuitStats]:
    """The stats of the valid tracks of one generated batch of ``family``."""
    return track_result_stats(FAMILIES[family](num_envs, device, seed))


def all_inside(gen: list[CircuitStats], real: dict[str, CircuitStats]) -> float:
    """The share of generated tracks with every measure inside the real circuits' range."""
    rows = [s.row() for s in real.values()]
    ranges = {k: (min(r[k] for r in rows), max(r[k] for r in rows)) for k in MEASURES}
    return float(np.mean([all(lo <= s.row()[k] <= hi for k, (lo, hi) in ranges.items()) for s in gen]))


def compare(gen: list[CircuitStats], real: dict[str, CircuitStats]) -> dict[str, dict[str, float]]:
    """Per measure: generated p5 / median / p95, real min / median / max, share of generated in the real range."""
    out = {}
    for key in MEASURES:
        g = np.array([s.row()[key] for s in gen])
        r = np.array([s.row()[key] for s in real.values()])
        out[key] = {
            "generated_p5": float(np.percentile(g, 5)), "generated_median": float(np.median(g)),
            "generated_p95": float(np.percentile(g, 95)),
            "real_min": float(r.min()), "real_median": float(np.median(r)), "real_max": float(r.max()),
            "generated_in_real_range": float(np.mean((g >= r.min()) & (g <= r.max()))),
        }
    return out


def _cell(text: str) -> str:
    """``text`` as a Markdown table cell (a measure's name holds ``|curvature|``)."""
    return text.replace("|", "\\|")


def format_table(table: dict[str, dict[str, float]], family: str, num_generated: int, num_real: int) -> str:
    head = (f"| measure | generated `{family}` p5 / median / p95 ({num_generated} tracks) | "
            f"real min / median / max ({num_real} circuits) | generated in real range |")
    rows = [head, "|---|---|---|---|"]
    for key, t in table.items():
        rows.append(f"| {_cell(MEASURES[key])} | {t['generated_p5']:.3g} / {t['generated_median']:.3g} / "
                    f"{t['generated_p95']:.3g} | "
                    f"{t['real_min']:.3g} / {t['real_median']:.3g} / {t['real_max']:.3g} | "
                    f"{t['generated_in_real_range']:.0%} |")
    return "\n".join(rows)


def format_circuits(real: dict[str, CircuitStats]) -> str:
    keys = list(MEASURES)
    rows = ["| circuit | length [m] | mean width [m] | corners | " + " | ".join(_cell(MEASURES[k]) for k in keys)
            + " |",
            "|---|---|---|---|" + "---|" * len(keys)]
    for name, s in real.items():
        r = s.row()
        rows.append(f"| {name} | {s.loop_length:.0f} | {s.mean_width:.1f} | {s.num_corners} | "
                    + " | ".join(f"{r[k]:.3g}" for k in keys) + " |")
    return "\n".join(rows)


def plot(gens: dict[str, list[CircuitStats]], real: dict[str, CircuitStats], png: str) -> None:
    """One panel per measure (each generated family's histogram vs the real circuits) and the pooled |kappa| w."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(MEASURES)
    fig, axes = plt.subplots(2, 4, figsize=(15, 6.5))
    for ax, key in zip(axes.flat, keys):
        r = np.array([s.row()[key] for s in real.values()])
        values = {name: np.array([s.row()[key] for s in gen]) for name, gen in gens.items()}
        lo = min([r.min()] + [g.min() for g in values.values()])
        hi = max([r.max()] + [g.max() for g in values.values()])
        bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 30)
        if key in LOG_MEASURES and lo > 0:  # spans decades (the IMS oval's 11 beside hairpins of 0.5)
            bins = np.geomspace(lo, hi if hi > lo else 10.0 * lo, 30)
            ax.set_xscale("log")
        for name, g in values.items():
            ax.hist(g, bins=bins, density=True, alpha=0.45, color=COLORS.get(name), label=f"generated ({name})")
        ax.hist(r, bins=bins, density=True, alpha=0.55, color="tab:orange", label="real circuits")
        ax.set_title(MEASURES[key], fontsize=10)
        ax.tick_params(labelsize=8)
    ax = axes.flat[len(keys)]
    bins = np.logspace(-3, 1, 50)
    curves = [(gen, COLORS.get(name), f"generated ({name})") for name, gen in gens.items()]
    for stats, color, label in curves + [(list(real.values()), "tab:orange", "real circuits")]:
        # the ends: the outer bins
        kw = np.clip(np.abs(np.concatenate([s.kappa_width for s in stats])), bins[0], bins[-1])
        ax.hist(kw, bins=bins, weights=np.full(kw.size, 1.0 / kw.size), histtype="step", lw=1.5, color=color,
                label=label)
    ax.set_ylabel("fraction of the loop", fontsize=8)
    ax.axvline(STRAIGHT_KAPPA_WIDTH, color="k", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_title("|curvature| x width along the loop (pooled)", fontsize=10)
    ax.tick_params(labelsize=8)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("Circuit statistics: generated tracks vs real circuits (lengths in track widths)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(png)), exist_ok=True)
    fig.savefig(png, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--circuits", default=os.path.join(ROOT, "..", "shared", "real-courses", "circuits"),
                        help="folder of circuit CSVs (x_m, y_m, w_tr_right_m, w_tr_left_m)")
    parser.add_argument("--family", choices=sorted(FAMILIES), action="append", default=None,
                        help="generated family (repeat for several; default: all)")
    parser.add_argument("--num-envs", type=int, default=256, help="generated tracks per family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--png", default=os.path.join(ROOT, "docs", "images", "circuit_stats.png"))
    parser.add_argument("--json", default=None, help="also write the comparison as JSON")
    args = parser.parse_args(argv)
    wp.config.log_level = wp.LOG_WARNING
    if not os.path.isdir(args.circuits):
        parser.error(f"--circuits: no folder {args.circuits!r} (expected a folder of circuit CSVs)")
    try:
        real = real_circuits(args.circuits)
    except FileNotFoundError as exc:
        parser.error(f"--circuits: {exc}")
    families = args.family or list(FAMILIES)
    gens = {name: generated(name, args.num_envs, args.seed, args.device) for name in families}
    result = {"num_real": len(real), "families": {}}
    for name, gen in gens.items():
        table = compare(gen, real)
        inside = all_inside(gen, real)
        print(format_table(table, name, len(gen), len(real)))
        print(f"\nevery measure inside the real range: {inside:.0%} of the `{name}` tracks\n")
        result["families"][name] = {"num_generated": len(gen), "all_inside": inside, "measures": table}
    print(format_circuits(real))
    plot(gens, real, args.png)
    print(f"\nplot: {args.png}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()
