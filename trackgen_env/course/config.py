"""``CourseConfig``: a whole course as flat data (``Course(CourseConfig(...))``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CourseConfig"]

_TRACK_ONLY = ("checkpoint_spacing", "collision", "max_checkpoints")
_GATES_ONLY = ("post_radius", "localize_window")


@dataclass(frozen=True)
class CourseConfig:
    """A track or gate course as flat data: the generator config plus the preset's arguments.

    ``Course(config)``, ``Course(config=config)`` and ``Course.from_config(config)`` build
    the same course as the preset of ``mode`` (``Course.track`` / ``Course.gates``) with
    these arguments, and no ``extra`` components: its ``StepResult`` entries are exactly
    the sources of the four fields.

    Attributes:
        mode: ``"track"`` or ``"gates"``.
        gen: the generator's ``TrackGenConfig`` / ``GateGenConfig`` or a ``PipelineSpec`` of
            the mode's family (None: the family's default config).
        seeds: anything ``TrackGenerator(seeds=)`` takes (an int, an ``[E] int32`` array
            bound by pointer, a ``PerEnvSeededRNG``, a ``SeedState``).
        checkpoint_spacing: [m] (track, required) spacing of the checkpoints, > 0.
        collision: (track) None, ``"segments"`` or ``"sdf"`` (``tools.BandCollision``).
        max_checkpoints: (track) checkpoint capacity, an int >= 3; None: ``"auto"``.
        post_radius: [m] (gates) radius of the gate posts for ``tools.DiscCollision``; None:
            no collision.
        samples_per_gate: (gates) course-line points per gate, >= 2.
        localize_window: (gates) warm window of the localizer, >= 1; None: its default.

    Raises:
        ValueError: an unknown ``mode``, or an argument of the other mode set.
    """

    mode: str = "track"
    gen: object = None
    seeds: object = None
    checkpoint_spacing: float | None = None
    collision: str | None = None
    max_checkpoints: int | None = None
    post_radius: float | None = None
    samples_per_gate: int = 8
    localize_window: int | None = None

    def __post_init__(self):
        if self.mode not in ("track", "gates"):
            raise ValueError(f"mode must be 'track' or 'gates', got {self.mode!r}")
        other = _GATES_ONLY if self.mode == "track" else _TRACK_ONLY
        for name in other:
            if getattr(self, name) is not None:
                raise ValueError(f"{name} is an argument of mode={'gates' if self.mode == 'track' else 'track'!r}, "
                                 f"not of mode={self.mode!r}")
        if self.mode == "track" and self.samples_per_gate != 8:
            raise ValueError("samples_per_gate is an argument of mode='gates', not of mode='track'")
        if self.mode == "track" and self.checkpoint_spacing is None:
            raise ValueError("mode='track' needs checkpoint_spacing (the spacing of the checkpoints, [m])")
