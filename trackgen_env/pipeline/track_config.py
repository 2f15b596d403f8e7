"""``TrackGenConfig``: the validated configuration of the closed-track family."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..checks import check_float, check_int, resolve_device
from .spec import PipelineSpec

__all__ = ["TrackGenConfig", "TRACK_STAGES"]

# Stage names in execution order (``"stage.param"`` parameters are addressed by them).
TRACK_STAGES = ("layout", "spline", "band", "checks", "start")
CENTERLINE_STAGES = ("centerline", "spline", "band", "start")


@dataclass(frozen=True)
class TrackGenConfig:
    """Configuration of a batch of procedurally generated closed tracks.

    A track is a periodic cubic B-spline through ``num_control_points`` control points placed
    around the centre of a square of side ``size`` at jittered angles; their radii follow a
    random mix of the angular modes 2-4 (elongated, triangular, square lobes; bean and
    kidney shapes) plus a little noise, ``radius_jitter`` deep. The loop is resampled by
    arc length every ``point_spacing``; the band is the centreline +- ``width / 2``. An env
    whose band self-intersects, turns tighter than its half width, or is longer than
    ``max_loop_length`` draws again (up to ``max_retries`` times) and is marked invalid only
    if every attempt fails.

    The layout adapts to the band: where the least turn radius ``min_turn_radius_factor *
    width / 2`` is a larger share of the loop's outer radius ``size / 2 - width / 2`` than
    at the defaults, the radial profile is drawn shallower (a round loop at the widest
    bands), so every value in the documented ranges below yields >= 99 % valid envs (a
    test measures it). Values outside them are refused.

    Attributes:
        num_envs: number of envs ``E`` (>= 1).
        device: Warp device; None means ``"cuda:0"`` when Warp sees a GPU, else ``"cpu"``.
        size: [m] side of the square the track is drawn in, > 0 (dynamic: ``"layout.size"``).
        width: [m] full width of the band, in ``(0, size / (2 * min_turn_radius_factor + 1)]``
            (2 m in the default 10 m square): the loop's outer radius ``size / 2 - width / 2``
            is at least twice the least turn radius (dynamic: ``"band.width"``).
        point_spacing: [m] spacing of the resampled centreline points, > 0.
        num_control_points: control points of the loop, in [5, 20] (more draw wiggles
            tighter than the turn-radius bound).
        radius_jitter: depth in [0, 0.7] of the radial profile, as a fraction of the radius
            (``"layout.radius_jitter"``; deeper profiles pinch the loop shut).
        angle_jitter: fraction in [0, 0.3] of the angular step drawn away (``"layout.angle_jitter"``).
        elevation: [m] height amplitude of an elevated track, in [0, size / 5]; 0 is flat
            (``"layout.elevation"``). An elevated config declares no loop-length bound
            (``max_loop_length`` is then only the rejection bound of its generator, not a
            declared one).
        max_loop_length: [m] longest accepted loop, >= ``pi * size`` for a procedural track
            (the circumference of the square's inscribed circle); default ``4 * size``.
        max_points: centreline capacity ``P``, in [8, 65536]; default
            ``ceil(max_loop_length / point_spacing) + 2``.
        min_turn_radius_factor: a track is accepted where its turn radius is >= this factor
            times its half width everywhere (>= 1: below 1 the inner band edge folds over;
            its upper bound is the width's).
        max_retries: extra attempts for an env whose draw is rejected, in [12, 64] for a
            procedural track (about 44 % of first draws pass at the defaults, fewer at the
            ends of the ranges together: with 8 retries the combined extremes measure 97.5 %
            valid at 1000 envs, with 12 >= 99.7 %); any value in [0, 64] for a given centreline, which draws nothing.
        source: ``"procedural"`` (default) or ``"centerline"``: the track is the closed polyline
            written into the generator input ``"centerline.xy"`` (``[E, max_input_points]``
            vec4: x [m], y [m], width right [m], width left [m]) with ``"centerline.count"``
            (``[E]`` int32); the loop is used as given (a real circuit may cross itself on a
            bridge).
        max_input_points: capacity of ``"centerline.xy"`` per env (source ``"centerline"``).

    Raises:
        TypeError / ValueError: on construction, for a field of the wrong type or range
            (the message says what was expected and what was received).
    """

    num_envs: int = 1
    device: str | None = None
    size: float = 10.0
    width: float = 0.8
    point_spacing: float = 0.1
    num_control_points: int = 12
    radius_jitter: float = 0.7
    angle_jitter: float = 0.25
    elevation: float = 0.0
    max_loop_length: float | None = None
    max_points: int | None = None
    min_turn_radius_factor: float = 2.0
    max_retries: int = 12
    source: str = "procedural"
    max_input_points: int = 0

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        set_("num_envs", check_int("num_envs", self.num_envs, lo=1))
        set_("device", resolve_device(self.device))
        set_("size", check_float("size", self.size, lo=0.0, lo_open=True))
        set_("width", check_float("width", self.width, lo=0.0, lo_open=True))
        set_("point_spacing", check_float("point_spacing", self.point_spacing, lo=0.0, lo_open=True))
        if self.source not in ("procedural", "centerline"):
            raise ValueError(f"source must be 'procedural' or 'centerline', got {self.source!r}")
        procedural = self.source == "procedural"
        set_("num_control_points", check_int("num_control_points", self.num_control_points, lo=5, hi=20))
        set_("radius_jitter", check_float("radius_jitter", self.radius_jitter, lo=0.0, hi=0.7))
        set_("angle_jitter", check_float("angle_jitter", self.angle_jitter, lo=0.0, hi=0.3))
        set_("elevation", check_float("elevation", self.elevation, lo=0.0))
        set_("min_turn_radius_factor", check_float("min_turn_radius_factor", self.min_turn_radius_factor, lo=1.0))
        set_("max_retries", check_int("max_retries", self.max_retries, lo=12 if procedural else 0, hi=64))
        if not procedural:
            set_("max_input_points", check_int("max_input_points", self.max_input_points, lo=3))
        if procedural:
            widest = self.size / (2.0 * self.min_turn_radius_factor + 1.0)
            if self.width > widest:
                raise ValueError(
                    f"width must be <= size / (2 * min_turn_radius_factor + 1) = {widest:.6g} m (the loop's outer "
                    f"radius size / 2 - width / 2 must be >= 2 least turn radii), got {self.width}"
                )
            if self.elevation > self.size / 5.0:
                raise ValueError(f"elevation must be in [0, size / 5] = [0, {self.size / 5.0:.6g}] m, got {self.elevation}")
        mll = 4.0 * self.size if self.max_loop_length is None else self.max_loop_length
        set_("max_loop_length", check_float("max_loop_length", mll, lo=0.0, lo_open=True))
        if procedural and self.max_loop_length < math.pi * self.size:
            raise ValueError(
                f"max_loop_length must be >= pi * size = {math.pi * self.size:.6g} m (the circumference of the "
                f"square's inscribed circle: a shorter bound rejects most loops), got {self.max_loop_length}"
            )
        if self.max_points is None:
            mp = math.ceil(self.max_loop_length / self.point_spacing) + 2
            if mp < 8:
                raise ValueError(
                    f"point_spacing must be <= max_loop_length / 6 = {self.max_loop_length / 6:.6g} m (a centreline "
                    f"needs >= 8 points), got {self.point_spacing}"
                )
        else:
            mp = self.max_points
        set_("max_points", check_int("max_points", mp, lo=8))
        if self.max_points > 1 << 16:
            raise ValueError(
                f"max_points = {self.max_points} is over 65536: raise point_spacing or lower max_loop_length"
            )

    def to_spec(self) -> PipelineSpec:
        """The pipeline of this config (stage names, construction values of the dynamic params)."""
        if self.source == "centerline":
            return PipelineSpec("track", self, CENTERLINE_STAGES, {})
        params = {
            "layout.size": self.size,
            "layout.radius_jitter": self.radius_jitter,
            "layout.angle_jitter": self.angle_jitter,
            "layout.elevation": self.elevation,
            "band.width": self.width,
        }
        return PipelineSpec("track", self, TRACK_STAGES, params)

    @property
    def declared_max_loop_length(self) -> float | None:
        """The loop-length bound the generator declares: None for an elevated or given track."""
        if self.elevation > 0 or self.source == "centerline":
            return None
        return self.max_loop_length
