"""``TrackGenConfig``: the validated configuration of the closed-track family.

Its checks are the track family's (``pipeline.stages.track_family.check_track``), which
``presets.track`` and ``pipeline.build`` use too; ``to_spec`` compiles it to a spec.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..pipeline import PipelineSpec, presets
from ..pipeline.stages.track_family import TRACK, TRACK_DEFAULTS, check_track, spec_fields

__all__ = ["TrackGenConfig"]


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
            (``"layout.elevation"``). The height profile is smooth hills and crests along
            the loop: a random mix of the harmonics 1, 2, 3 of the control points' angle
            ``u`` around the loop (amplitudes uniform in [0, 1), [0, 1), [0, 0.5), phases
            uniform), drawn per env and attempt from its layout stream and scaled so the
            control points span ``[0, elevation]`` (the spline through them stays within
            it). An elevated config declares no loop-length bound (``max_loop_length`` is
            then only the rejection bound of its generator, not a declared one).
        banking: [rad] bank angle of the tightest corners, in [0, pi / 4]; 0 (default) is
            level and adds no stage. Above 0 the ``"banking"`` stage runs after resample
            (``"banking.max_bank"``, dynamic: a curriculum may set it, ``with_randomize``
            may draw it): at every point the ``normal`` turns about the tangent by
            ``-banking * clamp(curvature * min_turn_radius_factor * half_width, -1, 1)``,
            so the band's cross-section ``centerline + l * normal`` rises towards the
            outside of each corner, by the full angle where the turn radius is the least
            accepted one (``pipeline.stages.banking``; ``docs/elevated-tracks.md``).
        max_loop_length: [m] longest accepted loop, >= ``pi * size`` for a procedural track
            (the circumference of the square's inscribed circle); default ``4 * size``. A loop
            of more than ``max_points`` points (``round(length / point_spacing)``) draws again
            too: the generator's declared bound (``layout.max_loop_length``, which sizes the
            checkpoint ring) is ``min(max_loop_length, (max_points + 0.5) * point_spacing)``.
        max_points: centreline capacity ``P``, in [8, 65536]; default
            ``ceil(max_loop_length / point_spacing) + 2``, and for a flat procedural track at
            most ``ceil(L / point_spacing) + 2`` with ``L`` the longest loop the layout draws at
            the construction values (``pipeline.stages.track_curves.flat_loop_bound``: 24.9 m at the
            defaults, where the longest of 100,000 loops is 21.3 m; P = 251). A curriculum
            that later lowers ``radius_jitter`` (rounder loops), moves ``width`` far from it or
            grows ``size`` (longer loops) builds for its final values or passes ``max_points``.
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

    num_envs: int = TRACK_DEFAULTS["num_envs"]
    device: str | None = TRACK_DEFAULTS["device"]
    size: float = TRACK_DEFAULTS["size"]
    width: float = TRACK_DEFAULTS["width"]
    point_spacing: float = TRACK_DEFAULTS["point_spacing"]
    num_control_points: int = TRACK_DEFAULTS["num_control_points"]
    radius_jitter: float = TRACK_DEFAULTS["radius_jitter"]
    angle_jitter: float = TRACK_DEFAULTS["angle_jitter"]
    elevation: float = TRACK_DEFAULTS["elevation"]
    banking: float = TRACK_DEFAULTS["banking"]
    max_loop_length: float | None = TRACK_DEFAULTS["max_loop_length"]
    max_points: int | None = TRACK_DEFAULTS["max_points"]
    min_turn_radius_factor: float = TRACK_DEFAULTS["min_turn_radius_factor"]
    max_retries: int = TRACK_DEFAULTS["max_retries"]
    source: str = TRACK_DEFAULTS["source"]
    max_input_points: int = TRACK_DEFAULTS["max_input_points"]

    def __post_init__(self):
        for name, value in check_track({f.name: getattr(self, f.name) for f in fields(self)}).items():
            object.__setattr__(self, name, value)  # frozen dataclass

    def to_spec(self) -> PipelineSpec:
        """The pipeline of this config (stage names, settings, construction values of the params)."""
        return presets.track(**{f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_spec(cls, spec: PipelineSpec) -> "TrackGenConfig":
        """The config of a track spec's settings and construction values.

        What has no config field is left out: randomize ranges, plugin stages and their
        parameters, and ``"layout.num_turns"`` (a config uses all ``num_control_points``).

        Raises:
            ValueError: ``spec`` is not of the track family, or its values break the config's rules.
        """
        if not isinstance(spec, PipelineSpec) or spec.family != "track":
            raise ValueError(f"from_spec() takes a track PipelineSpec, got {spec!r}")
        return cls(**spec_fields(spec))

    @property
    def declared_max_loop_length(self) -> float | None:
        """The loop-length bound the generator declares: None for an elevated or given track."""
        return TRACK.layout(self.to_spec()).max_loop_length
