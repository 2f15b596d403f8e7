"""Matplotlib figures of tracks, driven traces and progress curves (needs the ``viz`` extra: matplotlib).

The envs' own ``render_mode="rgb_array"`` frames are drawn on the device
(:mod:`trackgen_env.envs.render`); these figures are for reports. A *track* here is a host-side dict
as :meth:`TrackVectorEnv.tracks` returns it:
``centerline`` ``[n, 2]`` [m], ``half_width`` ``[n]`` [m], ``valid`` bool. A *trace* is an
``[T, 2]`` array of car positions [m] (NaN rows break the line, e.g. at a reset).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["band_edges", "plot_track_grid", "plot_circuit", "plot_race", "plot_progress", "scale_bar_length",
           "SPEED_LABEL", "save_figure", "check_panels"]

_BAND = "#d9d9d9"
_EDGE = "#555555"
SPEED_LABEL = "speed [m/s]"  # one speed unit for every figure (SI, as the envs' observations)


def scale_bar_length(span: float) -> float:
    """[m] a round length (1, 2 or 5 x 10^k) of about a fifth of ``span`` [m], for a scale bar."""
    if not np.isfinite(span) or span <= 0:
        return 1.0
    target = span / 5.0
    base = 10.0 ** np.floor(np.log10(target))
    return float(max((m * base for m in (1.0, 2.0, 5.0) if m * base <= target), default=base))


def _add_scale_bar(ax, span: float, *, fontsize: float = 6) -> None:
    """A metre scale bar in the lower right corner of ``ax`` (its data units are metres)."""
    from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar

    length = scale_bar_length(span)
    label = f"{length:g} m" if length < 1000 else f"{length / 1000:g} km"
    ax.add_artist(AnchoredSizeBar(ax.transData, length, label, "lower right", pad=0.3, borderpad=0.3, sep=2,
                                  frameon=False, size_vertical=span / 200.0, fontproperties={"size": fontsize}))


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def band_edges(centerline: np.ndarray, half_width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Left and right band edges ``[n, 2]`` [m] of a closed centreline (central-difference normals)."""
    c = np.asarray(centerline, dtype=np.float64)[:, :2]
    t = np.roll(c, -1, axis=0) - np.roll(c, 1, axis=0)
    t /= np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-12)
    n = np.stack([-t[:, 1], t[:, 0]], axis=1)
    hw = np.asarray(half_width, dtype=np.float64)[:, None]
    return c + hw * n, c - hw * n


def _draw_track(ax, track: dict, *, lw: float = 0.6) -> None:
    from matplotlib.collections import PolyCollection

    c = np.asarray(track["centerline"])[:, :2]
    if len(c) < 3:
        ax.text(0.5, 0.5, "invalid track", transform=ax.transAxes, ha="center", va="center", color="red")
        return
    left, right = band_edges(c, track["half_width"])
    nxt = np.roll(np.arange(len(c)), -1)
    quads = np.stack([left, left[nxt], right[nxt], right], axis=1)
    ax.add_collection(PolyCollection(quads, facecolors=_BAND, edgecolors=_BAND, linewidths=0.3))
    for edge in (left, right):
        loop = np.vstack([edge, edge[:1]])
        ax.plot(loop[:, 0], loop[:, 1], color=_EDGE, lw=lw)
    ax.plot(c[:, 0], c[:, 1], color="white", lw=0.3, ls=(0, (3, 5)))
    ax.plot(c[0, 0], c[0, 1], marker="s", color="black", ms=3)
    # the driving direction: an arrow from the start along the first stretch of the lap (~4% of its points)
    ahead = c[max(1, len(c) // 25)]
    ax.annotate("", xy=ahead, xytext=c[0], zorder=4, arrowprops={"arrowstyle": "-|>", "color": "black", "lw": 0.8,
                                                                 "mutation_scale": 7, "shrinkA": 0, "shrinkB": 0})
    if not track.get("valid", True):
        ax.set_title("invalid", color="red")


def _start_legend(fig) -> None:
    """A figure legend of what every track panel marks: the start square and the driving direction."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="s", color="black", ls="", ms=4, label="start and finish line"),
               Line2D([], [], marker=r"$\rightarrow$", color="black", ls="", ms=9, label="driving direction")]
    fig.legend(handles=handles, loc="lower left", fontsize=7, frameon=False, ncols=2)


def plot_track_grid(tracks: list[dict], traces: list[np.ndarray] | None, path: str | os.PathLike, *,
                    speeds: list[np.ndarray] | None = None, ncols: int | None = None, title: str | None = None,
                    labels: list[str] | None = None) -> str:
    """A grid of tracks (band in grey, edges dark) with the driven traces on top, a metre scale
    bar in each panel, the start (a black square) and the driving direction (an arrow from it), and
    a legend saying so; writes a PNG.

    Args:
        tracks: host-side tracks (see the module docstring).
        traces: one ``[T, 2]`` trace per track, or None.
        speeds: one ``[T]`` speed [m/s] per trace: colours the traces (one colour scale).
        path: the PNG to write (its folder is created).
        ncols: columns of the grid (default ``ceil(sqrt(len(tracks)))``).
        title: a figure title.
        labels: one caption per track.

    Returns:
        The path written (``.png`` added when it has no extension).

    Raises:
        TypeError / ValueError: no tracks, a track that is not a dict as ``TrackVectorEnv.tracks()``
            gives, or traces / speeds / labels of another count or shape.
    """
    check_panels("plot_track_grid", tracks, ("centerline", "half_width"), traces, 2, labels,
                 "tracks as TrackVectorEnv.tracks() returns them (for gate courses: demos.gates.plot_courses)")
    if speeds is not None and (traces is None or len(speeds) != len(traces)):
        raise ValueError("plot_track_grid: speeds need traces, one [T] array per trace")
    plt = _pyplot()
    from matplotlib.collections import LineCollection

    k = len(tracks)
    ncols = ncols or int(np.ceil(np.sqrt(k)))
    vmax = max((float(np.max(v)) for v in speeds if len(v)), default=1.0) if speeds is not None else 1.0
    nrows = int(np.ceil(k / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.6 * ncols, 2.6 * nrows + (0.4 if title else 0)), squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        if i >= k:
            ax.axis("off")
            continue
        _draw_track(ax, tracks[i])
        if traces is not None and len(traces[i]) > 1:
            tr = np.asarray(traces[i])
            if speeds is None:
                ax.plot(tr[:, 0], tr[:, 1], color="#d62728", lw=0.9)
            else:
                lines = LineCollection(np.stack([tr[:-1], tr[1:]], axis=1), cmap="plasma", linewidths=1.2)
                lines.set_array(np.asarray(speeds[i])[1:])
                lines.set_clim(0.0, vmax)
                ax.add_collection(lines)
                colored = lines
        if labels is not None:
            ax.set_xlabel(labels[i], fontsize=7)
        ax.autoscale_view()
        c = np.asarray(tracks[i]["centerline"])[:, :2]
        if len(c) >= 3:
            _add_scale_bar(ax, float(np.ptp(c, axis=0).max() + 2.0 * np.max(tracks[i]["half_width"])))
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0.0, 0.04, 1.0, 1.0))  # the bottom strip holds the legend
    _start_legend(fig)
    if speeds is not None and traces is not None and any(len(t) > 1 for t in traces):
        fig.subplots_adjust(right=0.9)
        fig.colorbar(colored, cax=fig.add_axes([0.92, 0.3, 0.015, 0.4]), label=SPEED_LABEL)
    return save_figure(fig, path)


def plot_circuit(track: dict, trace: np.ndarray | None, path: str | os.PathLike, *, speed: np.ndarray | None = None,
                 title: str | None = None) -> str:
    """One circuit with its driven trace, coloured by ``speed`` [m/s] when given (the colour
    bar in m/s, as the track grid's), on axes in metres; writes a PNG.

    Returns:
        The path written (``.png`` added when it has no extension).
    """
    plt = _pyplot()
    c = np.asarray(track["centerline"])[:, :2]
    span = np.ptp(c, axis=0) + 1e-9 if len(c) else np.ones(2)
    width = 9.0
    fig, ax = plt.subplots(figsize=(width, float(np.clip(width * 0.85 * span[1] / span[0], 3.0, 12.0)) + 0.8))
    ax.set_aspect("equal")
    _draw_track(ax, track, lw=0.8)
    if trace is not None and len(trace):
        tr = np.asarray(trace)
        if speed is not None:
            sc = ax.scatter(tr[:, 0], tr[:, 1], c=np.asarray(speed), s=1.5, cmap="plasma", zorder=3)
            fig.colorbar(sc, ax=ax, shrink=0.7, label=SPEED_LABEL)
        else:
            ax.plot(tr[:, 0], tr[:, 1], color="#d62728", lw=1.0)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    if title:
        ax.set_title(title)
    ax.autoscale_view()
    fig.tight_layout(rect=(0.0, 0.04, 1.0, 1.0))  # the bottom strip holds the legend
    _start_legend(fig)
    return save_figure(fig, path)


def plot_race(track: dict, traces: list[np.ndarray], ranks: np.ndarray, path: str | os.PathLike, *, dt: float,
              labels: list[str] | None = None, events: list[tuple[int, str]] | None = None,
              title: str | None = None) -> str:
    """A race on one track: each car's trace in its own colour (left), and each car's position in
    the race over time (right, 1 = leader); writes a PNG.

    Args:
        track: the race's track (a host dict, as the module docstring).
        traces: per car, ``[T, 2]`` positions [m] (NaN rows break the line).
        ranks: ``[T, N]`` int, each car's position in the race per step.
        dt: [s] the step, for the time axis.
        labels: per car, the legend's text (default ``car i``).
        events: ``(step, kind)`` marks on the time axis (``"contact"``: a red line).

    Returns:
        The path written (``.png`` added when it has no extension).
    """
    plt = _pyplot()
    ranks = np.asarray(ranks)
    num_cars = ranks.shape[1]
    labels = labels or [f"car {i}" for i in range(num_cars)]
    colours = plt.get_cmap("tab10")
    fig, (ax, ax_rank) = plt.subplots(1, 2, figsize=(12.0, 5.5), gridspec_kw={"width_ratios": [1.1, 1.0]})
    ax.set_aspect("equal")
    _draw_track(ax, track, lw=0.8)
    for i, trace in enumerate(traces):
        tr = np.asarray(trace)
        ax.plot(tr[:, 0], tr[:, 1], color=colours(i % 10), lw=1.0, label=labels[i])
        ax.plot(tr[-1:, 0], tr[-1:, 1], marker="o", color=colours(i % 10), ms=4)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend(fontsize=7, loc="upper right")
    ax.autoscale_view()
    time = np.arange(len(ranks)) * dt
    for i in range(num_cars):
        ax_rank.step(time, ranks[:, i], where="post", color=colours(i % 10), lw=1.5, label=labels[i])
    for step, kind in events or []:
        ax_rank.axvline(step * dt, color="#d62728" if kind == "contact" else "#999999", lw=0.8, ls="--")
    ax_rank.set_ylim(num_cars + 0.5, 0.5)
    ax_rank.set_yticks(range(1, num_cars + 1))
    ax_rank.set_xlabel("time [s]")
    ax_rank.set_ylabel("position in the race (1 = leader)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_progress(curves: dict[str, tuple[np.ndarray, np.ndarray]], path: str | os.PathLike, *,
                  xlabel: str = "env steps", ylabel: str = "episode return", title: str | None = None,
                  smooth: int = 1) -> str:
    """Progress curves (a learning curve, laps or gates per episode, ...) on one axis; writes a PNG.

    Args:
        curves: label -> ``(x [N], y [N])``, e.g. ``{"PPO": (steps, returns), "random": (steps, returns)}``.
        path: the PNG to write (its folder is created).
        xlabel, ylabel, title: the axis labels and an optional title.
        smooth: width of a trailing moving average drawn over each curve (1: none; the raw
            curve stays, faint, underneath).

    Returns:
        The path written (``.png`` added when it has no extension).

    Raises:
        ValueError: ``smooth`` not an int >= 1, or an ``x`` and ``y`` of different lengths.
        TypeError: ``curves`` not a dict.
    """
    if isinstance(smooth, bool) or not isinstance(smooth, (int, np.integer)) or smooth < 1:
        raise ValueError(f"smooth must be an int >= 1, got {smooth!r}")
    if not isinstance(curves, dict):
        raise TypeError(f"curves must be a dict of label -> (x, y), got {type(curves).__name__}")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for label, (x, y) in curves.items():
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if x.shape != y.shape:
            raise ValueError(f"curve {label!r}: x and y must have one length, got {x.shape} and {y.shape}")
        if smooth > 1 and len(y) >= smooth:
            (raw,) = ax.plot(x, y, lw=0.8, alpha=0.3)
            mean = np.convolve(y, np.ones(smooth) / smooth, mode="valid")
            ax.plot(x[smooth - 1:], mean, lw=1.6, color=raw.get_color(), label=label)
        else:
            ax.plot(x, y, lw=1.4, label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    if curves:
        ax.legend()
    fig.tight_layout()
    return save_figure(fig, path)


def save_figure(fig, path, *, dpi: int = 130) -> str:
    """Write ``fig`` as a PNG at ``path`` (its folder created; ``.png`` added when the name has no
    extension, as matplotlib does), close it, and return the path written."""
    plt = _pyplot()
    path = os.fspath(path)
    if not os.path.splitext(path)[1]:
        path += ".png"
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def check_panels(what: str, items, keys: tuple[str, ...], traces, trace_dims: int, labels, hint: str) -> None:
    """Refuse what a grid of panels cannot draw, before any figure is made: ``items`` a non-empty
    list of dicts holding ``keys``; ``traces`` None or one ``[T, >= trace_dims]`` array per item;
    ``labels`` None or one per item.

    Raises:
        TypeError: an item that is not such a dict (``hint`` says where they come from).
        ValueError: no items; traces or labels of another count or shape.
    """
    if not isinstance(items, (list, tuple)) or not items:
        raise ValueError(f"{what} needs a non-empty list of {hint}, got {type(items).__name__} of "
                         f"{len(items) if hasattr(items, '__len__') else '?'}")
    for i, item in enumerate(items):
        missing = [k for k in keys if not isinstance(item, dict) or k not in item]
        if missing:
            got = f"a dict with keys {sorted(item)}" if isinstance(item, dict) else type(item).__name__
            raise TypeError(f"{what}: item {i} must be {hint} (a dict with {list(keys)}), got {got}")
    for name, values in (("traces", traces), ("labels", labels)):
        if values is not None and len(values) != len(items):
            raise ValueError(f"{what}: {len(items)} items and {len(values)} {name}: give one per item (or None)")
    for i, trace in enumerate(traces or ()):
        shape = np.shape(trace)
        if len(trace) and (len(shape) != 2 or shape[1] < trace_dims):
            raise ValueError(f"{what}: trace {i} must be a [T, {trace_dims}] array of positions [m], got shape {shape}")
