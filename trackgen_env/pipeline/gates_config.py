"""``GateGenConfig``: the validated configuration of the gate-course family."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..checks import check_float, check_int, resolve_device
from .spec import PipelineSpec

__all__ = ["GateGenConfig", "GATE_STAGES"]

# Stage names in execution order (``"stage.param"`` parameters are addressed by them);
# ``gate_frames`` also places the start pose, which the checks read.
GATE_STAGES = ("layout", "gate_frames", "checks")

# Default gate height when neither it nor the width is given: the square 0.1 m opening of
# the spec's micro-drone example (``presets.gates(..., gate_width=0.1)``).
DEFAULT_GATE_HEIGHT = 0.1


@dataclass(frozen=True)
class GateGenConfig:
    """Configuration of a batch of procedurally generated closed gate courses (3-D, z up).

    A course is a closed loop of ``num_gates`` gates around the origin: gate ``i`` sits at
    the jittered angle ``2 pi (i + angle_jitter (u - 1/2)) / num_gates`` and the jittered
    radius ``size / 2 * (1 - radius_jitter u)`` (so every gate centre lies in the disc of
    diameter ``size``), at an altitude drawn uniformly in ``[altitude_min, altitude_max]``
    (raised where needed so that the gate's bottom edge clears ``ground_clearance``). Each
    gate faces along the loop: its local +x (the normal of its opening, yaw only) is the
    bisector of the horizontal directions of its incoming and outgoing legs; its opening
    is ``gate_width`` wide (local y) and ``gate_height`` high (local z). The start pose is
    ``start_clearance`` in front of gate 0 (behind it along its normal), at its altitude,
    facing it.

    An env draws again (fresh draws, up to ``max_retries`` times) when any check fails, and
    is marked invalid only if every attempt fails:

    * spacing: the horizontal distance between any two gate centres is at least
      ``max(min_gate_spacing, 2 * hypot(gate_width, gate_height))``: no two gates (with
      frames or posts up to half the opening thick, posts reaching the ground) overlap
      or sit inside one another;
    * turn: the horizontal heading changes by at most ``max_turn`` between consecutive legs;
    * climb: every leg rises or falls at most ``max_climb`` metres per horizontal metre;
    * start: every gate centre is at least ``start_clearance`` (horizontally) from the
      start position;
    * ground: every gate's bottom edge (centre z - gate_height / 2) is at least
      ``ground_clearance`` above the ground z = 0.

    The defaults make a micro-drone course (the spec's ``gate_width=0.1``): gates about
    2-3 m apart in an 8 m disc, 0.5-2.5 m high; about 88 % of first draws pass the checks,
    so with 8 retries practically every env is valid.

    The fields that set a course's scale and the checks bound each other (more gates, wider
    spacing or openings, a longer start leg or a smaller turn need a larger disc; a higher
    altitude range needs a larger climb): a value that fits with the other fields at their
    defaults yields >= 99 % valid envs in the ranges below (a test measures it), a
    combination that fits rarely is not refused but warned about when the generator is
    built (``UserWarning`` with the measured valid rate). A loop that cannot close within
    ``max_turn`` (``max_turn <= 2 pi / num_gates``) is refused.

    Attributes:
        num_envs: number of envs ``E`` (>= 1).
        device: Warp device; None means ``"cuda:0"`` when Warp sees a GPU, else ``"cpu"``.
        size: [m] diameter of the disc the gate centres lie in, > 0; >= 7 m with the other
            defaults (dynamic: ``"layout.size"``).
        num_gates: gates per course, in [3, 64], with ``max_turn > 2 pi / num_gates`` (a
            closed loop turns by 2 pi in all: a loop of 3 needs ``max_turn > 2.09``); 4 to 8
            with the other defaults (more need a larger ``size``).
        radius_jitter: fraction in [0, 0.5] of the radius drawn away (``"layout.radius_jitter"``).
        angle_jitter: fraction in [0, 0.7] of the angular step drawn around each gate's
            nominal angle (``"layout.angle_jitter"``); below 1 the gates stay in loop order.
        altitude_min, altitude_max: [m] range of the gate centres' altitude, ``0 <
            altitude_min <= altitude_max`` (``"layout.altitude_min"``, ``"layout.altitude_max"``).
        gate_width: [m] width of each opening, >= 0 (``"gate_frames.gate_width"``). 0 is
            allowed here (``presets.gates`` defaults to it) but ``Course.gates`` refuses it:
            a width-0 gate can never be passed.
        gate_height: [m] height of each opening, > 0 (``"gate_frames.gate_height"``).
            Default None: a square opening (``gate_width``), or 0.1 m when ``gate_width`` is 0.
        min_gate_spacing: [m] minimum horizontal distance between gate centres (> 0).
        max_turn: [rad] largest heading change between consecutive legs, in (0, pi) (dynamic: ``"layout.max_turn"``).
        max_climb: largest slope of a leg (rise over horizontal run, > 0).
        start_clearance: [m] distance from the start position to gate 0, and the least
            horizontal distance from it to any gate (> 0).
        ground_clearance: [m] least height of a gate's bottom edge above the ground (>= 0).
        max_retries: extra attempts for an env whose draw is rejected, in [2, 64] (about 88 %
            of first draws pass at the defaults: fewer retries leave envs invalid); a
            ``"layout"`` source draws nothing and may take 0.
        source: ``"procedural"`` (default) or ``"layout"``: every env flies the gates written
            into the generator inputs ``"gates.pose"`` (``[E, num_gates]`` ``wp.transform``:
            centre [m] and orientation, local +x the normal) and ``"gates.count"`` (``[E]``
            int32, gates in use, in ``[3, num_gates]``), e.g. a real race layout
            (:mod:`trackgen_env.generators.gate_layouts`). ``num_gates`` is then the input
            capacity; the layout, size, altitude and check fields are not used (a given
            layout is flown as it is, as a real circuit is driven with its crossings), but
            ``gate_width`` / ``gate_height`` are the openings and ``start_clearance`` places
            the start.

    Raises:
        TypeError / ValueError: on construction, for a field of the wrong type or range
            (the message says what was expected and what was received).
    """

    num_envs: int = 1
    device: str | None = None
    size: float = 8.0
    num_gates: int = 7
    radius_jitter: float = 0.45
    angle_jitter: float = 0.4
    altitude_min: float = 0.5
    altitude_max: float = 2.5
    gate_width: float = 0.0
    gate_height: float | None = None
    min_gate_spacing: float = 1.5
    max_turn: float = 1.75
    max_climb: float = 1.0
    start_clearance: float = 1.0
    ground_clearance: float = 0.2
    max_retries: int = 8
    source: str = "procedural"

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        set_("num_envs", check_int("num_envs", self.num_envs, lo=1))
        set_("device", resolve_device(self.device))
        set_("size", check_float("size", self.size, lo=0.0, lo_open=True))
        set_("num_gates", check_int("num_gates", self.num_gates, lo=3, hi=64))
        set_("radius_jitter", check_float("radius_jitter", self.radius_jitter, lo=0.0, hi=0.5))
        set_("angle_jitter", check_float("angle_jitter", self.angle_jitter, lo=0.0, hi=0.7))
        set_("altitude_min", check_float("altitude_min", self.altitude_min, lo=0.0, lo_open=True))
        set_("altitude_max", check_float("altitude_max", self.altitude_max, lo=0.0, lo_open=True))
        if self.altitude_max < self.altitude_min:
            raise ValueError(f"altitude_max must be >= altitude_min = {self.altitude_min}, got {self.altitude_max}")
        set_("gate_width", check_float("gate_width", self.gate_width, lo=0.0))
        if self.gate_height is None:
            set_("gate_height", self.gate_width if self.gate_width > 0.0 else DEFAULT_GATE_HEIGHT)
        set_("gate_height", check_float("gate_height", self.gate_height, lo=0.0, lo_open=True))
        set_("min_gate_spacing", check_float("min_gate_spacing", self.min_gate_spacing, lo=0.0, lo_open=True))
        set_("max_turn", check_float("max_turn", self.max_turn, lo=0.0, lo_open=True))
        if self.max_turn >= math.pi:
            raise ValueError(f"max_turn must be < pi (a gate cannot face a U-turn), got {self.max_turn}")
        set_("max_climb", check_float("max_climb", self.max_climb, lo=0.0, lo_open=True))
        set_("start_clearance", check_float("start_clearance", self.start_clearance, lo=0.0, lo_open=True))
        set_("ground_clearance", check_float("ground_clearance", self.ground_clearance, lo=0.0))
        if self.source not in ("procedural", "layout"):
            raise ValueError(f"source must be 'procedural' or 'layout', got {self.source!r}")
        procedural = self.source == "procedural"
        set_("max_retries", check_int("max_retries", self.max_retries, lo=2 if procedural else 0, hi=64))
        if procedural and self.max_turn <= 2.0 * math.pi / self.num_gates:
            raise ValueError(
                f"max_turn must be > 2 pi / num_gates = {2.0 * math.pi / self.num_gates:.6g} rad (a closed loop of "
                f"{self.num_gates} gates turns by 2 pi in all), got {self.max_turn}"
            )
        lowest = self.ground_clearance + 0.5 * self.gate_height
        if self.source == "procedural" and self.altitude_max < lowest:
            raise ValueError(
                f"altitude_max must be >= ground_clearance + gate_height / 2 = {lowest} "
                f"(the gate's bottom edge must clear the ground), got {self.altitude_max}"
            )

    def to_spec(self) -> PipelineSpec:
        """The pipeline of this config (stage names, construction values of the dynamic params)."""
        params = {
            "layout.size": self.size,
            "layout.radius_jitter": self.radius_jitter,
            "layout.angle_jitter": self.angle_jitter,
            "layout.max_turn": self.max_turn,
            "layout.altitude_min": self.altitude_min,
            "layout.altitude_max": self.altitude_max,
            "gate_frames.gate_width": self.gate_width,
            "gate_frames.gate_height": self.gate_height,
        }
        return PipelineSpec("gates", self, GATE_STAGES, params)
