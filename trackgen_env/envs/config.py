"""Grouped constructor arguments of the course envs: where the bodies start, what is randomised
at each reset, how the reward is shaped.

Each group is a frozen dataclass whose fields are the env's flat keywords of the same names
(``TrackVectorEnv(start_config=TrackStartConfig(start_yaw=0.3))`` is
``TrackVectorEnv(start_yaw=0.3)``); a field left out keeps its default, the one default of that
keyword. The env checks the values (the messages name the keyword), and keeps the checked group
as a read-only attribute (``env.start_config``, ``env.randomization_config``, ``env.reward_config``).
Passing a group and one of its flat keywords together is a TypeError.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TrackStartConfig", "RandomizationConfig", "TrackRewardConfig", "GatesStartConfig", "GatesRewardConfig",
           "UNSET", "grouped"]


class _Unset:
    """The default of a flat keyword that a group holds: "not given" (the group's default applies)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self):
        return (_Unset, ())


#: The default of every grouped flat keyword: its group's default applies.
UNSET = _Unset()


@dataclass(frozen=True)
class TrackStartConfig:
    """Where a track env's cars start each episode (``start_config=``).

    Attributes:
        random_start: False: every episode starts at the course's start pose, at rest; True: at a
            checkpoint drawn per episode (laps count a full loop from it).
        start_yaw: [rad] in ``[0, pi/2]``: with ``random_start``, the start heading is turned by a
            draw in ``[-start_yaw, start_yaw)``.
        start_speed: ``(lo, hi)`` [m/s], ``0 <= lo <= hi <=`` the car's top speed: with
            ``random_start``, the start speed along the heading is drawn in ``[lo, hi)``.
    """

    random_start: bool = False
    start_yaw: float = 0.0
    start_speed: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class RandomizationConfig:
    """The track env's per-episode car draws (``randomization_config=``): each None (the car's
    own values) or ``(lo, hi)`` scales with ``0 < lo <= hi <= 2``, drawn per env at each reset.

    Attributes:
        friction_range: the friction (grip) scale.
        accel_range: the motor and brake scale.
        steer_range: the steering scale (``hi`` times the car's ``max_steer`` below pi/2).
    """

    friction_range: tuple[float, float] | None = None
    accel_range: tuple[float, float] | None = None
    steer_range: tuple[float, float] | None = None


@dataclass(frozen=True)
class TrackRewardConfig:
    """The track env's reward (``reward_config=``): progress along the centreline [m] per step, less
    the penalty.

    Attributes:
        off_track_penalty: (>= 0) subtracted at the step the car leaves the band (the episode ends).
    """

    off_track_penalty: float = 1.0


@dataclass(frozen=True)
class GatesStartConfig:
    """Where a gates env's drones start each episode (``start_config=``).

    Attributes:
        start: ``"first_gate"`` (behind gate 0) or ``"random_gate"`` (behind a gate drawn per
            episode, with probability ``random_start_prob``; else behind gate 0).
        random_start_prob: in ``[0, 1]``, see ``start``.
        start_distance: ``(lo, hi)`` [m] >= 0: the distance behind the gate, drawn.
        start_speed: ``(lo, hi)`` [m/s] >= 0: the start speed towards the gate, drawn.
        start_offset: [m] >= 0: the start position's lateral and vertical jitter.
        start_tilt: [rad] in ``[0, 1]``: the roll and pitch jitter.
        start_yaw: [rad] in ``[0, 3.2]``: the heading jitter.
    """

    start: str = "first_gate"
    random_start_prob: float = 0.5
    start_distance: tuple[float, float] = (0.3, 1.5)
    start_speed: tuple[float, float] = (0.0, 2.5)
    start_offset: float = 0.1
    start_tilt: float = 0.2
    start_yaw: float = 0.3


@dataclass(frozen=True)
class GatesRewardConfig:
    """The gates env's reward terms (``reward_config=``), each >= 0.

    Attributes:
        progress_weight: times the step's progress [m] towards the target gate's centre.
        gate_bonus: per gate passed.
        crash_penalty: at a crash (collision, out of bounds, a missed gate).
        body_rate_penalty: times the body rates' norm [rad/s].
        smoothness_penalty: times the squared change of the action.
        approach_penalty: the safety term near the gate's plane (0: off).
        approach_distance: [m] > 0: how far from the plane the safety term reaches.
    """

    progress_weight: float = 1.0
    gate_bonus: float = 2.0
    crash_penalty: float = 2.0
    body_rate_penalty: float = 0.002
    smoothness_penalty: float = 2e-4
    approach_penalty: float = 0.0
    approach_distance: float = 1.0


def grouped(argument: str, config_cls: type, config, **flat):
    """The one place flat keywords meet their group: ``config`` where given, else a ``config_cls``
    of the flat keywords given (the others at the group's defaults).

    Args:
        argument: the group's keyword (``"start_config"``), for the messages.
        config_cls: the group's dataclass.
        config: None or a ``config_cls``.
        **flat: the group's flat keywords as passed (:data:`UNSET`: not given).

    Raises:
        TypeError: ``config`` of another type; a ``config`` and a flat keyword of it both given.
    """
    given = {name: value for name, value in flat.items() if value is not UNSET}
    if config is None:
        return config_cls(**given)
    if not isinstance(config, config_cls):
        raise TypeError(f"{argument} must be a {config_cls.__name__} or None, got {type(config).__name__} {config!r}")
    if given:
        raise TypeError(f"pass either {argument}={config_cls.__name__}(...) or its keywords {sorted(given)}, not both "
                        f"(the keywords are the fields of {argument}: {config_cls.__name__}({', '.join(sorted(given))}"
                        f"=...))")
    return config

