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

# Fit rules of a procedural course (GateGenConfig._check_fit), from a Monte-Carlo sweep of
# the checks over num_gates 3..64 and the jitter ranges: at a bound about half or more of the
# first draws still pass that check, so with the default 8 retries >= 99 % of envs are valid;
# the defaults meet each rule (the start and turn rules with little room).
FIT_SPACING = 1.15  # mean leg / required spacing
FIT_START = 1.35  # size sin(pi / n) (1 - radius_jitter / 2) / the regular loop's bound 2 start_clearance cos(pi / n)
FIT_CLIMB = 0.5  # least share of first draws whose every leg climbs within max_climb (uniform altitudes)
FIT_TURN_RADIAL = 1.2  # [rad] turn added per radius_jitter, times the angular step
FIT_TURN_ANGLE = 0.5  # turn added per angle_jitter, as a fraction of the angular step
FIT_TURN_MARGIN = 0.003  # [rad] headroom over the regular loop's turn (float32 positions)


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

    The fields that set a course's scale and the checks bound each other, so a procedural
    config is refused (``ValueError`` naming the fields, the bound and the values received)
    unless it meets the fit rules below, where ``leg = size * sin(pi / num_gates) * (1 -
    radius_jitter / 2) * (1 - angle_jitter / 2)`` is the typical leg (the regular loop's
    chord shortened by half of each jitter) and ``step = 2 pi / num_gates``:

    * spacing: ``leg >= 1.15 * max(min_gate_spacing, 2 * hypot(gate_width, gate_height))``;
    * start: ``size * sin(pi / num_gates) * (1 - radius_jitter / 2) >= 1.35 * 2 *
      start_clearance * cos(pi / num_gates)`` (in the regular loop the start is
      ``start_clearance`` from the last gate where the chord is ``2 start_clearance cos(pi / n)``);
    * climb: the drawn altitude range ``altitude_max - max(altitude_min, ground_clearance +
      gate_height / 2) <= max_climb * leg / t`` with ``t = 1 - sqrt(1 - 0.5 ** (1 /
      num_gates))`` (two uniform altitudes differ by at most ``t`` of the range with
      probability ``1 - (1 - t)^2``: every leg then climbs within ``max_climb`` in about half
      of the first draws);
    * turn: ``max_turn >= step + 0.003 + 1.2 * radius_jitter / step + 0.5 * angle_jitter * step``
      (the regular loop's turn plus what the jitters add).

    The constants come from a Monte-Carlo sweep of the checks (``benchmarks/valid_rates.py``
    measures the valid rates): with the default 8 retries, values that meet the rules yield
    >= 99 % valid envs at the ends of the ranges below and at several joint bounds (a test
    measures them); with ``size`` and ``max_turn`` both at their least at once, about 1
    config in 10 falls to 80-98 % (most with 10 or more gates and ``radius_jitter >=
    0.25``: the turn rule is the least exact). The defaults meet each rule,
    the start and turn rules with little room: with the other fields at their defaults the
    ranges are the ones given below. Live parameters (``"layout.size"``, ...) set or drawn
    after construction are not checked against the rules: a first generation below 90 %
    valid warns (``UserWarning`` with the measured valid rate).

    Attributes:
        num_envs: number of envs ``E`` (>= 1).
        device: Warp device; None means ``"cuda:0"`` when Warp sees a GPU, else ``"cpu"``.
        size: [m] diameter of the disc the gate centres lie in, > 0 and meeting the fit rules:
            >= 7.24 m with the other defaults (dynamic: ``"layout.size"``).
        num_gates: gates per course, in [3, 64], with ``max_turn > 2 pi / num_gates`` (a
            closed loop turns by 2 pi in all) and the fit rules: 7 with the other defaults;
            3 needs ``max_turn >= 2.78``, 4 ``>= 2.24``, 5 ``>= 1.95``, 6 ``>= 1.78``; 8
            needs ``size >= 9.3``, 12 ``size >= 14.4``.
        radius_jitter: fraction in [0, 0.5] of the radius drawn away (``"layout.radius_jitter"``).
        angle_jitter: fraction in [0, 0.7] of the angular step drawn around each gate's
            nominal angle (``"layout.angle_jitter"``); below 1 the gates stay in loop order;
            [0, 0.55] with the other defaults (the turn rule).
        altitude_min, altitude_max: [m] range of the gate centres' altitude, ``0 <
            altitude_min <= altitude_max``, its width bounded by the climb rule: ``altitude_max
            <= 3.6`` with the other defaults (``"layout.altitude_min"``, ``"layout.altitude_max"``).
        gate_width: [m] width of each opening, >= 0 (``"gate_frames.gate_width"``); <= 0.66
            with the other defaults (the spacing rule: a square opening). 0 is
            allowed here (``presets.gates`` defaults to it) but ``Course.gates`` refuses it:
            a width-0 gate can never be passed.
        gate_height: [m] height of each opening, > 0 (``"gate_frames.gate_height"``); <= 0.93
            with the other defaults (the spacing rule).
            Default None: a square opening (``gate_width``), or 0.1 m when ``gate_width`` is 0.
        min_gate_spacing: [m] minimum horizontal distance between gate centres (> 0); <= 1.87
            with the other defaults (the spacing rule).
        max_turn: [rad] largest heading change between consecutive legs, in (0, pi); >= 1.682
            with the other defaults (the turn rule); dynamic: ``"layout.max_turn"``.
        max_climb: largest slope of a leg (rise over horizontal run, > 0); >= 0.65 with the
            other defaults (the climb rule).
        start_clearance: [m] distance from the start position to gate 0, and the least
            horizontal distance from it to any gate (> 0); <= 1.1 with the other defaults
            (the start rule).
        ground_clearance: [m] least height of a gate's bottom edge above the ground (>= 0).
        max_retries: extra attempts for an env whose draw is rejected, in [2, 64] (about 88 %
            of first draws pass at the defaults: fewer retries leave envs invalid; the fit
            rules assume the default 8: at a joint bound about half the draws pass); a
            ``"layout"`` source draws nothing and may take 0.
        source: ``"procedural"`` (default) or ``"layout"``: every env flies the gates written
            into the generator inputs ``"gates.pose"`` (``[E, num_gates]`` ``wp.transform``:
            centre [m] and orientation, local +x the normal) and ``"gates.count"`` (``[E]``
            int32, gates in use, in ``[3, num_gates]``), e.g. a real race layout
            (:mod:`trackgen_env.generators.gate_layouts`). ``num_gates`` is then the input
            capacity; the layout, size, altitude and check fields are not used (a given
            layout is flown as it is, as a real circuit is driven with its crossings), but
            ``gate_width`` / ``gate_height`` are the openings and ``start_clearance`` places
            the start; the fit rules do not apply.

    Raises:
        TypeError / ValueError: on construction, for a field of the wrong type or range, or
            a procedural combination that breaks a fit rule (the message says what was
            expected and what was received).
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
        if procedural:
            self._check_fit()

    def _check_fit(self) -> None:
        """Refuse a combination of fields whose courses would rarely pass the checks (the
        bounds, measured in ``benchmarks/valid_rates.py``, keep >= 99 % of envs valid)."""
        n = self.num_gates
        # the typical leg: the regular loop's chord shortened by half of each jitter
        leg = self.size * math.sin(math.pi / n) * (1.0 - 0.5 * self.radius_jitter) * (1.0 - 0.5 * self.angle_jitter)
        leg_formula = "size * sin(pi / num_gates) * (1 - radius_jitter / 2) * (1 - angle_jitter / 2)"
        what = f"the mean leg {leg_formula} = {leg:.6g} m"
        spacing = max(self.min_gate_spacing, 2.0 * math.hypot(self.gate_width, self.gate_height))
        if leg < FIT_SPACING * spacing:
            raise ValueError(
                f"{what} must be >= {FIT_SPACING} * max(min_gate_spacing, 2 * hypot(gate_width, gate_height)) = "
                f"{FIT_SPACING * spacing:.6g} m (gates that far apart rarely fit: raise size, or lower num_gates, "
                f"the jitters, min_gate_spacing or the openings), got size={self.size}, num_gates={n}, "
                f"min_gate_spacing={self.min_gate_spacing}, gate_width={self.gate_width}, "
                f"gate_height={self.gate_height}"
            )
        # the start sits start_clearance behind gate 0 along its normal: in the regular loop of
        # chord c the last gate is start_clearance from it where c = 2 start_clearance cos(pi / n)
        chord = self.size * math.sin(math.pi / n) * (1.0 - 0.5 * self.radius_jitter)
        start = 2.0 * self.start_clearance * math.cos(math.pi / n)
        if chord < FIT_START * start:
            raise ValueError(
                f"size * sin(pi / num_gates) * (1 - radius_jitter / 2) = {chord:.6g} m must be >= {FIT_START} * 2 * "
                f"start_clearance * cos(pi / num_gates) = {FIT_START * start:.6g} m (the start, start_clearance behind "
                f"gate 0, must stay start_clearance from the last gate: lower start_clearance or raise size), got "
                f"start_clearance={self.start_clearance}, size={self.size}, num_gates={n}"
            )
        # climb: two uniform altitudes in a range ``span`` differ by at most ``t * span`` with
        # probability 1 - (1 - t)^2; all n legs pass with probability FIT_CLIMB where t is
        span = self.altitude_max - max(self.altitude_min, self.ground_clearance + 0.5 * self.gate_height)
        share = 1.0 - math.sqrt(1.0 - FIT_CLIMB ** (1.0 / n))
        if span * share > self.max_climb * leg:
            raise ValueError(
                f"the drawn altitude range altitude_max - max(altitude_min, ground_clearance + gate_height / 2) = "
                f"{span:.6g} m must be <= max_climb * {leg_formula} / (1 - sqrt(1 - {FIT_CLIMB} ** (1 / num_gates))) "
                f"= {self.max_climb * leg / share:.6g} m (legs that short rarely climb it: narrow the altitude range "
                f"or raise max_climb or size), got altitude_min={self.altitude_min}, altitude_max={self.altitude_max}, "
                f"max_climb={self.max_climb}"
            )
        step = 2.0 * math.pi / n
        turn = (step + FIT_TURN_MARGIN + FIT_TURN_RADIAL * self.radius_jitter / step
                + FIT_TURN_ANGLE * self.angle_jitter * step)
        if self.max_turn < turn:
            raise ValueError(
                f"max_turn must be >= 2 pi / num_gates + {FIT_TURN_MARGIN} + {FIT_TURN_RADIAL} * radius_jitter / "
                f"(2 pi / num_gates) + "
                f"{FIT_TURN_ANGLE} * angle_jitter * 2 pi / num_gates = {turn:.6g} rad (the regular loop's turn and "
                f"what the jitters add to it: raise max_turn, use more gates, or lower the jitters), got "
                f"max_turn={self.max_turn}, num_gates={n}, radius_jitter={self.radius_jitter}, "
                f"angle_jitter={self.angle_jitter}"
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
