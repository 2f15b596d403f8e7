"""A kinematic single-track (bicycle) car, integrated in a Warp kernel.

Model (Kong, Pfeiffer, Schildbach, Borrelli, "Kinematic and dynamic vehicle models for
autonomous driving control design", IEEE IV 2015, eq. 1; also Rajamani, *Vehicle
Dynamics and Control*, 2nd ed., 2012, sec. 2.2), with the reference point at the centre
of gravity::

    beta     = atan(l_r / (l_f + l_r) * tan(delta))     slip angle at the CoG
    x'       = v cos(psi + beta)
    y'       = v sin(psi + beta)
    psi'     = v / l_r * sin(beta)
    v'       = a

Two extensions keep it honest at racing speeds:

* friction-limited steering: the path curvature ``sin(beta) / l_r`` is capped so that the
  lateral acceleration ``v^2 * curvature`` stays below ``friction * g`` (the car
  understeers instead of turning tighter than its tyres allow);
* a motor whose acceleration falls linearly to zero at ``max_speed`` (a DC motor's
  torque-speed line), brakes that stop the car and no reverse gear (``v >= 0``).

Each control step of ``dt`` is split into ``substeps`` midpoint-rule steps (heading at
the middle of the substep, mean speed over it).

Action (both in [-1, 1]): ``steering * max_steer`` is the front wheel angle delta [rad]
(positive = left); ``throttle > 0`` accelerates with ``throttle * max_accel * (1 - v /
max_speed)`` [m/s^2], ``throttle < 0`` brakes with ``throttle * max_brake`` [m/s^2].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import warp as wp

from ..checks import check_float, check_int
from ..polyline import GRAVITY, quat_from_yaw
from .base import INT32_MAX

__all__ = ["CarParams", "CAR_PRESETS", "car_params", "CarState"]

wp.set_module_options({"enable_backward": False})


@dataclass(frozen=True)
class CarParams:
    """Physical parameters of the single-track car (SI units).

    Attributes:
        wheelbase: [m] front to rear axle, ``l_f + l_r``.
        cog_to_rear: fraction in (0, 1) of the wheelbase from the rear axle to the centre of
            gravity (``l_r / wheelbase``).
        max_steer: [rad] front wheel angle at steering = +-1.
        max_accel: [m/s^2] acceleration at throttle = 1 from standstill.
        max_brake: [m/s^2] deceleration at throttle = -1.
        max_speed: [m/s] speed at which the motor's acceleration reaches 0.
        friction: tyre friction coefficient mu; lateral acceleration <= mu * g.
        length, width, height: [m] body box (what the collision checks against the band edges).
        dt: [s] control period (one env step).
        substeps: integration substeps per env step (>= 1).

    Raises:
        TypeError / ValueError: a field of the wrong type or out of range.
    """

    wheelbase: float
    cog_to_rear: float
    max_steer: float
    max_accel: float
    max_brake: float
    max_speed: float
    friction: float
    length: float
    width: float
    height: float
    dt: float = 0.05
    substeps: int = 2

    def __post_init__(self):
        for f in fields(self):
            if f.name == "substeps":
                value = check_int(f.name, self.substeps, lo=1)
            else:
                hi = {"cog_to_rear": 1.0, "max_steer": math.pi / 2}.get(f.name)
                value = check_float(f.name, getattr(self, f.name), lo=0.0, lo_open=True, hi=hi)
            object.__setattr__(self, f.name, value)
        if self.cog_to_rear >= 1.0 or self.max_steer >= math.pi / 2:
            raise ValueError(
                f"cog_to_rear must be < 1 and max_steer < pi/2, got {self.cog_to_rear} and {self.max_steer}"
            )

    @property
    def half_extents(self) -> tuple[float, float, float]:
        """[m] half extents of the body box (length, width, height) / 2."""
        return (0.5 * self.length, 0.5 * self.width, 0.5 * self.height)

    @property
    def max_lateral_accel(self) -> float:
        """[m/s^2] ``friction * g``."""
        return self.friction * GRAVITY


#: Car presets. ``"rc10"``: a 1:10 RC car (F1TENTH-sized: 0.33 m wheelbase) for the
#: default generated tracks (~19 m loops in a 10 m square); ``"full"``: a full-size race car (2.7 m wheelbase, 2 m
#: wide, ~1.5 g of grip) for real circuits, which are km long with 3-14 m half widths.
CAR_PRESETS: dict[str, CarParams] = {
    "rc10": CarParams(
        wheelbase=0.33, cog_to_rear=0.5, max_steer=0.45, max_accel=6.0, max_brake=8.0,
        max_speed=6.0, friction=0.9, length=0.45, width=0.2, height=0.1,
    ),
    "full": CarParams(
        wheelbase=2.7, cog_to_rear=0.55, max_steer=0.55, max_accel=9.0, max_brake=15.0,
        max_speed=85.0, friction=1.5, length=4.6, width=2.0, height=1.0,
    ),
}


def car_params(car: str | CarParams) -> CarParams:
    """A preset name (``"rc10"``, ``"full"``) or a :class:`CarParams` -> :class:`CarParams`.

    Raises:
        ValueError: an unknown preset name.
        TypeError: neither a str nor a CarParams.
    """
    if isinstance(car, CarParams):
        return car
    if isinstance(car, str):
        if car not in CAR_PRESETS:
            raise ValueError(f"car must be one of {sorted(CAR_PRESETS)} or a CarParams, got {car!r}")
        return CAR_PRESETS[car]
    raise TypeError(f"car must be a preset name or a CarParams, got {type(car).__name__}")


@wp.struct
class CarModel:
    """The kernel-side copy of :class:`CarParams` (frozen into a recorded graph)."""

    wheelbase: float
    l_r: float
    max_steer: float
    max_accel: float
    max_brake: float
    max_speed: float
    max_lateral_accel: float
    dt: float
    substeps: int


def car_model(p: CarParams) -> CarModel:
    """The :class:`CarModel` struct of ``p``."""
    m = CarModel()
    m.wheelbase = p.wheelbase
    m.l_r = p.cog_to_rear * p.wheelbase
    m.max_steer = p.max_steer
    m.max_accel = p.max_accel
    m.max_brake = p.max_brake
    m.max_speed = p.max_speed
    m.max_lateral_accel = p.max_lateral_accel
    m.dt = p.dt
    m.substeps = p.substeps
    return m


@wp.func
def yaw_of(q: wp.quat) -> float:
    """Yaw [rad] of a quaternion (rotation about z of its x axis)."""
    return wp.atan2(2.0 * (q[3] * q[2] + q[0] * q[1]), 1.0 - 2.0 * (q[1] * q[1] + q[2] * q[2]))


@wp.func
def slip_angle(m: CarModel, steer: float, v: float) -> float:
    """Slip angle beta [rad] at the CoG for wheel angle ``steer`` at speed ``v``, friction-limited."""
    beta = wp.atan(m.l_r / m.wheelbase * wp.tan(steer))
    # lateral acceleration v^2 sin(beta) / l_r <= mu g
    v2 = wp.max(v * v, 1.0e-6)
    sin_max = wp.min(1.0, m.max_lateral_accel * m.l_r / v2)
    return wp.clamp(beta, -wp.asin(sin_max), wp.asin(sin_max))


_ELAPSED_MAX = wp.constant(INT32_MAX)


@wp.kernel
def _car_step(
    # inputs
    model: CarModel,
    action: wp.array(dtype=wp.vec2),
    reset_mask: wp.array(dtype=wp.int32),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    reset_only: int,
    # state (in/out)
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    yaw: wp.array(dtype=float),
    speed: wp.array(dtype=float),
    yaw_rate: wp.array(dtype=float),
    steer: wp.array(dtype=float),
    elapsed: wp.array(dtype=wp.int32),
):
    e = wp.tid()
    if reset_mask[e] != 0:
        # a reset: the env's action is ignored, the car starts again at rest
        p0 = start_position[e]
        psi0 = yaw_of(start_orientation[e])
        position[e] = wp.vec3(p0[0], p0[1], p0[2])
        orientation[e] = quat_from_yaw(psi0)
        yaw[e] = psi0
        speed[e] = 0.0
        yaw_rate[e] = 0.0
        steer[e] = 0.0
        elapsed[e] = 0
        return
    if reset_only != 0:
        return

    u = action[e]
    delta = wp.clamp(u[0], -1.0, 1.0) * model.max_steer
    throttle = wp.clamp(u[1], -1.0, 1.0)
    p = position[e]
    psi = yaw[e]
    v = speed[e]
    h = model.dt / float(model.substeps)
    omega = float(0.0)
    for _ in range(model.substeps):
        if throttle >= 0.0:
            a = throttle * model.max_accel * wp.max(0.0, 1.0 - v / model.max_speed)
        else:
            a = throttle * model.max_brake
        v1 = wp.max(0.0, v + a * h)
        vm = 0.5 * (v + v1)
        beta = slip_angle(model, delta, vm)
        omega = vm / model.l_r * wp.sin(beta)
        heading = psi + beta + 0.5 * omega * h
        p = wp.vec3(p[0] + vm * h * wp.cos(heading), p[1] + vm * h * wp.sin(heading), p[2])
        psi = psi + omega * h
        v = v1
    # keep yaw in [-pi, pi) so float32 keeps its precision over long episodes
    psi = psi - 2.0 * wp.pi * wp.floor((psi + wp.pi) / (2.0 * wp.pi))
    position[e] = p
    orientation[e] = quat_from_yaw(psi)
    yaw[e] = psi
    speed[e] = v
    yaw_rate[e] = omega
    steer[e] = delta
    # saturates: an int32 that wrapped would never reach the truncation limit again
    elapsed[e] = wp.min(elapsed[e], _ELAPSED_MAX - 1) + 1


class CarState:
    """The car's device state for ``E`` envs (stable arrays, SI units).

    Attributes:
        position: ``[E]`` vec3 [m] centre of gravity (z from the start pose).
        orientation: ``[E]`` quat, yaw about z (what the course's components read).
        yaw: ``[E]`` float32 [rad] heading psi in [-pi, pi).
        speed: ``[E]`` float32 [m/s] speed v >= 0.
        yaw_rate: ``[E]`` float32 [rad/s] psi' over the last substep.
        steer: ``[E]`` float32 [rad] front wheel angle applied at the last step.
        elapsed: ``[E]`` int32 env steps since the env's last reset (saturates at 2**31 - 1).
        half_extents: ``[E]`` vec3 [m] body box half extents (constant).

    The attributes are read-only after construction (AttributeError): the step kernel and a
    recorded graph hold these arrays and ``params``; write the arrays in place instead.
    """

    def __init__(self, params: CarParams, num_envs: int, device):
        self.params = params
        self._model = car_model(params)
        self.num_envs = num_envs
        self.device = wp.get_device(device)
        def zeros(dtype):
            return wp.zeros(num_envs, dtype=dtype, device=self.device)

        self.position = zeros(wp.vec3)
        self.orientation = wp.full(num_envs, wp.quat_identity(), dtype=wp.quat, device=self.device)
        self.yaw, self.speed, self.yaw_rate, self.steer = zeros(float), zeros(float), zeros(float), zeros(float)
        self.elapsed = zeros(wp.int32)
        self.half_extents = wp.full(num_envs, wp.vec3(*params.half_extents), dtype=wp.vec3, device=self.device)
        self._constructed = True

    def __setattr__(self, name, value):
        if self.__dict__.get("_constructed", False):
            raise AttributeError(f"CarState.{name} is read-only after construction (the step kernel and a recorded "
                                 "graph hold it): write its arrays in place, or build a new env")
        super().__setattr__(name, value)

    def step(self, action: wp.array, reset_mask: wp.array, start_position: wp.array, start_orientation: wp.array,
             *, reset_only: bool = False):
        """Reset the masked envs to their start pose at rest; integrate the others over ``dt``.

        Args:
            action: ``[E]`` vec2 (steering, throttle) in [-1, 1] (clipped).
            reset_mask: ``[E]`` int32, nonzero = put the car at the start pose, speed 0.
            start_position, start_orientation: ``[E]`` vec3 / quat start poses.
            reset_only: leave the unmasked envs untouched (a masked restart).

        One launch, no host sync: capturable.
        """
        wp.launch(
            _car_step,
            self.num_envs,
            inputs=[self._model, action, reset_mask, start_position, start_orientation, int(reset_only)],
            outputs=[self.position, self.orientation, self.yaw, self.speed, self.yaw_rate, self.steer, self.elapsed],
            device=self.device,
        )
