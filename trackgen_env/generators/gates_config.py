"""``GateGenConfig``: the validated configuration of the gate-course family.

Its checks and fit rules are the gate family's (``pipeline.stages.gates_family.check_gates``),
which ``presets.gates`` and ``pipeline.build`` use too; ``to_spec`` compiles it to a spec.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..pipeline import PipelineSpec, presets
from ..pipeline.stages.gates_family import GATES_DEFAULTS, check_gates, spec_fields

__all__ = ["GateGenConfig"]


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

    num_envs: int = GATES_DEFAULTS["num_envs"]
    device: str | None = GATES_DEFAULTS["device"]
    size: float = GATES_DEFAULTS["size"]
    num_gates: int = GATES_DEFAULTS["num_gates"]
    radius_jitter: float = GATES_DEFAULTS["radius_jitter"]
    angle_jitter: float = GATES_DEFAULTS["angle_jitter"]
    altitude_min: float = GATES_DEFAULTS["altitude_min"]
    altitude_max: float = GATES_DEFAULTS["altitude_max"]
    gate_width: float = GATES_DEFAULTS["gate_width"]
    gate_height: float | None = GATES_DEFAULTS["gate_height"]
    min_gate_spacing: float = GATES_DEFAULTS["min_gate_spacing"]
    max_turn: float = GATES_DEFAULTS["max_turn"]
    max_climb: float = GATES_DEFAULTS["max_climb"]
    start_clearance: float = GATES_DEFAULTS["start_clearance"]
    ground_clearance: float = GATES_DEFAULTS["ground_clearance"]
    max_retries: int = GATES_DEFAULTS["max_retries"]
    source: str = GATES_DEFAULTS["source"]

    def __post_init__(self):
        for name, value in check_gates({f.name: getattr(self, f.name) for f in fields(self)}).items():
            object.__setattr__(self, name, value)  # frozen dataclass

    def to_spec(self) -> PipelineSpec:
        """The pipeline of this config (stage names, settings, construction values of the params)."""
        return presets.gates(**{f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_spec(cls, spec: PipelineSpec) -> "GateGenConfig":
        """The config of a gates spec's settings and construction values.

        Raises:
            ValueError: ``spec`` is not of the gates family, or its values break the config's rules.
        """
        if not isinstance(spec, PipelineSpec) or spec.family != "gates":
            raise ValueError(f"from_spec() takes a gates PipelineSpec, got {spec!r}")
        return cls(**spec_fields(spec))
