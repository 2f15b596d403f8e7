"""``TrackGenerator``: batches of closed race tracks, generated in Warp kernels.

A thin public wrapper of :class:`~trackgen_env.pipeline.Program`: a
:class:`TrackGenConfig` (or a track spec) compiled to a spec and built. The stages and
their kernels are ``pipeline.stages.track`` (procedural) and ``pipeline.stages.given``
(a given centreline, :meth:`TrackGenerator.from_centerline`).
"""

from __future__ import annotations

import math

import numpy as np

from ..pipeline import PipelineSpec, Program
from ..pipeline.stages.track_family import MAX_POINTS
from .centerline_io import check_centerline, spline_rows
from .track_config import TrackGenConfig

__all__ = ["TrackGenConfig", "TrackGenerator", "centerline_scale_limit"]


def centerline_scale_limit(points, point_spacing: float) -> float:
    """The largest factor by which the closed centreline ``points`` (``[N, 4]``: x, y, width right,
    width left [m]) can be scaled, widths too, and still be resampled every ``point_spacing`` [m]
    within the ``MAX_POINTS`` a track holds (:meth:`TrackGenerator.from_centerline`'s bound, which
    grows with the scale: its length plus the lengthening a shifted mid-line may add)."""
    pts = np.asarray(points, dtype=np.float64)
    seg = np.linalg.norm(np.diff(np.vstack([pts[:, :2], pts[:1, :2]]), axis=0), axis=1)
    length = float(seg.sum() + 2.0 * np.abs(pts[:, 2:]).max() * math.pi)
    return (MAX_POINTS - 2) * float(point_spacing) / (1.25 * length)


class TrackGenerator(Program):
    """A batch of closed race tracks, regenerated per env on the device.

    Args:
        source: a :class:`TrackGenConfig` or a ``PipelineSpec`` of the track family
            (``presets.track(...)``).
        seeds: None (seed 0), an int (env ``i`` gets ``hash(seed, i)``), an ``[E] int32``
            ``wp.array`` bound by pointer (never written), a ``PerEnvSeededRNG``, or a
            ``SeedState``.
        stream: the ``wp.Stream`` to launch on (default: the device's current stream).
        prepare: run the first generation now (loads the Warp module: do it before any
            capture) and read ``result.valid`` back once: a ``UserWarning`` names the valid
            rate if under 90 % of the envs hold a course. With False, ``result`` is all
            zeros until the first ``generate``.

    Attributes:
        result: :class:`~trackgen_env.core.types.TrackResult`, stable arrays ``[E, P]`` / ``[E]``.
        layout: :class:`~trackgen_env.core.types.TrackLayout` (capacities).
        params: live dynamic parameters (``"layout.size"``, ``"band.width"``, ...).
        config: the :class:`TrackGenConfig` it was built from (of its spec when built from one).
        seeds: the :class:`~trackgen_env.seeding.SeedState`.
        inputs / input_info: generator inputs (``"centerline.xy"``, ``"centerline.count"``
            for a config with ``source="centerline"``), written in place by the user.

    Raises:
        TypeError: ``source`` is not a TrackGenConfig or a track PipelineSpec, or a bad ``seeds``.
        ValueError: a seeds array of the wrong shape, dtype or device.
    """

    def __init__(self, source, *, seeds=None, stream=None, prepare: bool = True):
        self._config = source if isinstance(source, TrackGenConfig) else None
        if self._config is not None:
            source = source.to_spec()
        elif not (isinstance(source, PipelineSpec) and source.family == "track"):
            got = f"a {source.family} PipelineSpec" if isinstance(source, PipelineSpec) else type(source).__name__
            raise TypeError(f"TrackGenerator takes a TrackGenConfig or a track PipelineSpec, got {got}")
        super().__init__(source, seeds=seeds, stream=stream, prepare=prepare)

    @property
    def config(self) -> TrackGenConfig:
        """The config it was built from (``TrackGenConfig.from_spec(spec)`` when built from a spec)."""
        if self._config is None:
            self._config = TrackGenConfig.from_spec(self.spec)
        return self._config

    # --- construction from a given centreline ---------------------------------------------
    @classmethod
    def from_centerline(cls, points, *, num_envs: int = 1, device=None, point_spacing: float | None = None,
                        seeds=None, stream=None) -> "TrackGenerator":
        """A generator whose every env drives the closed centreline ``points``.

        Args:
            points: ``[N, 4]`` array-like: x [m], y [m], width right [m], width left [m]
                (the layout of public racetrack databases), a closed loop (a last point that
                repeats the first is dropped); ``N >= 3``. Rows closer than ``point_spacing / 2``
                are thinned first (:func:`~trackgen_env.generators.centerline_io.thin_dense_rows`:
                their curvature is float32 rounding), and a segment over 1.5 median spacings is
                split evenly (:func:`~trackgen_env.generators.centerline_io.split_long_segments`:
                the spline through the points overshoots where a long segment meets short ones).
            point_spacing: [m] resampling spacing (default: the median input spacing).

        Raises:
            ValueError: ``points`` is not ``[N >= 3, 4]`` finite numbers with widths > 0, or
                fails :func:`~trackgen_env.generators.centerline_io.check_centerline` (an
                out-and-back or otherwise degenerate loop, repeated consecutive points), or
                resampled every ``point_spacing`` it needs over 65536 points, or yields no valid
                course on the device (e.g. coordinates so far from the origin that float32 loses
                its shape).
        """
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[1] != 4 or pts.shape[0] < 3:
            raise ValueError(f"a centreline must be [N >= 3, 4] (x, y, w_right, w_left) [m], got shape {pts.shape}")
        pts = check_centerline(pts, name="points")  # the one check of a closed centreline (names the bad row)
        seg = np.linalg.norm(np.diff(np.vstack([pts[:, :2], pts[:1, :2]]), axis=0), axis=1)
        spacing = float(np.median(seg)) if point_spacing is None else float(point_spacing)
        pts = spline_rows(pts, spacing)  # rows much denser than the spacing thinned, long segments split
        seg = np.linalg.norm(np.diff(np.vstack([pts[:, :2], pts[:1, :2]]), axis=0), axis=1)
        length = float(seg.sum() + 2.0 * np.abs(pts[:, 2:]).max() * math.pi)  # the mid-line shift can lengthen it
        needed = math.ceil(1.25 * length / spacing) + 2
        if needed > MAX_POINTS:
            most = centerline_scale_limit(pts, spacing)
            widest = float(np.abs(pts[:, 2:]).max())
            cause = (f"its widths (up to {widest:,.6g} m) can lengthen the band's middle line by up to 2 pi times "
                     f"them: check the widths" if 2.0 * math.pi * widest > seg.sum() else
                     f"expected a circuit up to {most * seg.sum():,.0f} m long at this spacing (this one scaled by at "
                     f"most {most:.3g}; from_centerline takes a coarser point_spacing)")
            raise ValueError(
                f"a centreline {seg.sum():,.0f} m long, resampled every {spacing:g} m, needs up to {needed} points, "
                f"over the {MAX_POINTS} a track holds: {cause}"
            )
        cfg = TrackGenConfig(num_envs=num_envs, device=device, source="centerline", max_input_points=len(pts),
                             point_spacing=spacing, max_loop_length=1.25 * length, size=float(np.ptp(pts[:, :2]) + 1.0))
        gen = cls(cfg, seeds=seeds, stream=stream, prepare=False)
        gen.inputs["centerline.xy"].assign(np.broadcast_to(pts.astype(np.float32), (num_envs, len(pts), 4)).copy())
        gen.inputs["centerline.count"].fill_(len(pts))
        gen.first_generation()
        if not gen.result.valid.numpy()[0]:  # every env holds the same course: none would be driven
            far = float(np.abs(pts[:, :2]).max())
            step = float(np.spacing(np.float32(far)))
            why = (f"its coordinates reach {far:,.6g} m from the origin, where float32 steps by {step:.3g} m, and "
                   f"the loop loses its shape: subtract its mean position" if step > 0.05 * spacing else
                   "the device's spline or resampling rejects it (a non-finite value, or a loop longer than its "
                   "capacity): check its widths against its size")
            raise ValueError(f"the given centreline yields no valid course on the device (every env would end at "
                             f"each step): {why}")
        return gen

    def __repr__(self) -> str:
        return f"TrackGenerator(num_envs={self.num_envs}, device={self.device}, max_points={self.layout.max_points})"
