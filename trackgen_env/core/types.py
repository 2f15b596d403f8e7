"""The data model: every result dataclass of the library, each field with its shape.

Units are SI (m, s, rad); device arrays are float32 unless noted; the env axis is first.
Positions are ``wp.vec3`` with z up; orientations ``wp.quat`` in Warp's (x, y, z, w) order.
Variable-length per-env data is padded to a capacity fixed at construction (the layouts).
All arrays here are *stable*: allocated once, written in place, never reallocated, so a
recorded graph that reads them stays valid.
"""

from __future__ import annotations

from dataclasses import dataclass

import warp as wp

__all__ = [
    "TrackLayout",
    "TrackResult",
    "GateLayout",
    "GateResult",
    "GATE_FIELDS",
    "CheckpointSet",
    "ProgressEvents",
    "Contacts",
    "TrackFrame",
    "CourseLine",
    "InputInfo",
]


@dataclass(frozen=True)
class TrackLayout:
    """Capacities of a track generator (fixed at construction)."""

    num_envs: int
    max_points: int  # P: centreline points per env
    max_loop_length: float | None  # [m] longest loop the generator can produce; None if undeclared


@dataclass
class TrackResult:
    """A batch of closed tracks (generator output, committed per env).

    The centreline is the middle line of the drivable band. Its points are spaced evenly
    in arc length: ``arc_length[e, j] == j * loop_length[e] / num_points[e]`` (a
    guarantee of the built-in generators that consumers may index by). Points
    ``j >= num_points[e]`` are padding (they repeat the last point) and are never read by
    the components.
    """

    centerline: wp.array  # [E, P] vec3 [m] centreline points, spaced ~point_spacing apart
    tangent: wp.array  # [E, P] vec3 unit tangent (direction of travel) at each point
    normal: wp.array  # [E, P] vec3 unit left normal (z x tangent) at each point
    arc_length: wp.array  # [E, P] float32 [m] arc length s of each point from point 0
    curvature: wp.array  # [E, P] float32 [1/m] signed curvature (left turn > 0)
    half_width: wp.array  # [E, P] float32 [m] half width of the band at each point
    num_points: wp.array  # [E] int32 points in use
    loop_length: wp.array  # [E] float32 [m] length of the closed loop
    start_position: wp.array  # [E] vec3 [m] start pose position (on the centreline)
    start_orientation: wp.array  # [E] quat start pose orientation (yaw along the tangent)
    valid: wp.array  # [E] int32 1 where the env holds a usable track
    generation: wp.array  # [E] int32 number of commits of this env's course


@dataclass(frozen=True)
class GateLayout:
    """Capacities of a gate generator (fixed at construction)."""

    num_envs: int
    max_gates: int  # G


@dataclass
class GateResult:
    """A batch of closed gate courses (generator output, committed per env)."""

    gate_position: wp.array  # [E, G] vec3 [m] centre of each gate's opening
    gate_orientation: wp.array  # [E, G] quat; the gate's local +x is its normal, along the loop
    gate_width: wp.array  # [E] float32 [m] width of the opening (local y)
    gate_height: wp.array  # [E] float32 [m] height of the opening (local z)
    num_gates: wp.array  # [E] int32 gates in use
    start_position: wp.array  # [E] vec3 [m]
    start_orientation: wp.array  # [E] quat
    valid: wp.array  # [E] int32
    generation: wp.array  # [E] int32


#: The fields of a :class:`GateResult` that describe its gates: what a gate component reads.
GATE_FIELDS = ("gate_position", "gate_orientation", "gate_width", "gate_height", "num_gates")


@dataclass
class CheckpointSet:
    """Checkpoints of one generation: openings to pass in order, in the plane normal to ``direction``.

    A track checkpoint is the line across the band (unbounded in height); a gate checkpoint
    is the gate's opening. Checkpoint 0 is the start/finish line.
    """

    position: wp.array  # [E, C] vec3 [m] centre of each checkpoint
    direction: wp.array  # [E, C] vec3 unit forward direction of travel through it
    half_width: wp.array  # [E, C] float32 [m] half width of the opening (across the course line)
    half_height: wp.array  # [E, C] float32 [m] half height of the opening (a track's is unbounded: 1e30)
    arc_length: wp.array  # [E, C] float32 [m] arc length s of each checkpoint along the course line
    num_checkpoints: wp.array  # [E] int32 checkpoints in use (>= 3 on a valid env)
    loop_length: wp.array  # [E] float32 [m] loop length the checkpoints divide


@dataclass
class ProgressEvents:
    """Per-step progress of each env through its checkpoints (``Progress`` result)."""

    passed: wp.array  # [E] int32 checkpoints passed in order this step, new ground only (0, 1, more when fast)
    lap_completed: wp.array  # [E] int32 1 where a lap was completed this step (at most one per step)
    wrong_way: wp.array  # [E] int32 1 where the last crossing went backwards (until undone)
    next_checkpoint: wp.array  # [E] int32 index of the next checkpoint to pass
    checkpoints_passed: wp.array  # [E] int32 checkpoints passed in order since the reset
    laps: wp.array  # [E] int32 laps completed since the reset
    lap_fraction: wp.array  # [E] float32 fraction of the current lap done, in [0, 1)


@dataclass
class Contacts:
    """Per-step collision state (a collision component's result)."""

    hit: wp.array  # [E] int32 1 where the body touches the boundary (band edge, post, bar)
    distance: wp.array  # [E] float32 [m] signed clearance to the nearest boundary (< 0: penetration)


@dataclass
class TrackFrame:
    """The pose of each env's body relative to the course line (``Localizer`` result)."""

    s: wp.array  # [E] float32 [m] arc length of the closest course-line point
    lateral_offset: wp.array  # [E] float32 [m] signed distance from the line (left > 0)
    heading_error: wp.array  # [E] float32 [rad] body yaw minus line yaw, wrapped to [-pi, pi)
    curvature: wp.array  # [E] float32 [1/m] course-line curvature at s
    segment: wp.array  # [E] int32 index of the closest segment (warm start of the next search)


@dataclass
class CourseLine:
    """A closed course line through gates (``CenterlineFromGates`` result), track-shaped."""

    centerline: wp.array  # [E, L] vec3 [m]
    tangent: wp.array  # [E, L] vec3
    normal: wp.array  # [E, L] vec3 (horizontal left normal)
    arc_length: wp.array  # [E, L] float32 [m]
    curvature: wp.array  # [E, L] float32 [1/m]
    half_width: wp.array  # [E, L] float32 [m] half the gate width
    num_points: wp.array  # [E] int32
    loop_length: wp.array  # [E] float32 [m]


@dataclass(frozen=True)
class InputInfo:
    """A generator input: a stable array the user writes in place (``generator.inputs[name]``)."""

    dtype: object  # Warp dtype of the elements
    shape: tuple[int, ...]  # env axis first
    doc: str  # what to write, with units
