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

``car_model="dynamic"`` (:class:`CarState`): the dynamic single-track model with tyre
forces, the CommonRoad "ST" model (Althoff, Koschi and Manzinger, "CommonRoad: Composable
benchmarks for motion planning on roads", IEEE IV 2017; CommonRoad vehicle models
documentation, sec. "Single-track model"; the model f1tenth_gym steps), states slip angle
beta at the CoG and yaw rate r besides the pose and speed::

    F_zf = m (g l_r - a h) / L,  F_zr = m (g l_f + a h) / L     axle loads, load transfer
    alpha_f = delta - beta - l_f r / v,  alpha_r = -beta + l_r r / v
    F_yi = clip(mu C_Si F_zi alpha_i, -mu F_zi, mu F_zi)         linear tyres, saturating
    beta' = (F_yf + F_yr) / (m v) - r
    r'    = (l_f F_yf - l_r F_yr) / I_z
    x' = v cos(psi + beta),  y' = v sin(psi + beta),  psi' = r,  v' = a

(``a`` the motor/brake acceleration as above; the friction circle between longitudinal and
lateral force is not modelled; a spin is held at |beta| = 45 deg, where the small-angle
model has long stopped holding). Its ``1 / v`` terms make it singular at standstill, so it is
blended with the kinematic model by speed, as Kabzan et al. do ("Learning-based model
predictive control for autonomous racing", IEEE RA-L 4(4), 2019): below ``kinematic_speed``
(beta, r) are the kinematic model's, above ``dynamic_speed`` the dynamic model's, and in
between the linear mix of the two after each substep. Each substep integrates (beta, r) by
explicit Euler micro steps, as many as keep it stable (``h * |eigenvalue| <= 1/2``; the
stiffness grows as ``1 / v``). The default ``"kinematic"`` runs the kinematic kernel,
unchanged.

Action (both in [-1, 1]): ``steering * max_steer`` is the front wheel angle delta [rad]
(positive = left); ``throttle > 0`` accelerates with ``throttle * max_accel * (1 - v /
max_speed)`` [m/s^2], ``throttle < 0`` brakes with ``throttle * max_brake`` [m/s^2]. Per env,
``CarState.steer_scale`` scales ``max_steer`` and ``CarState.accel_scale`` scales ``max_accel``
and ``max_brake`` (both 1 by default: exactly the params).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import warp as wp

from ..core import env_loop
from ..core.checks import check_float, check_int
from ..core.polyline import GRAVITY, quat_from_yaw, wrap_angle
from ..tools.heightfield import HeightField, sample_height
from .base import INT32_MAX
from .lifecycle import EVERY_ATTRIBUTE, ReadOnlyAfterConstruction

__all__ = ["CarParams", "CAR_PRESETS", "CAR_MODELS", "car_params", "check_car_model", "CarState", "understeer_gradient"]

#: The car models of :class:`CarState` (and ``TrackVectorEnv(car_model=...)``).
#: ``"kinematic"``: the kinematic single-track model above (the default). ``"dynamic"``:
#: the dynamic single-track model with tyre forces of ``_dynamic_car_step``.
CAR_MODELS = ("kinematic", "dynamic")
#: The :class:`CarParams` fields the dynamic model needs (None in a kinematic-only CarParams).
DYNAMIC_FIELDS = ("mass", "yaw_inertia", "cornering_stiffness_front", "cornering_stiffness_rear", "cog_height",
                  "kinematic_speed", "dynamic_speed")

wp.set_module_options({"enable_backward": False})


_FLOAT32_MAX = 3.4028234663852886e38  # float32 max


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
        mass: [kg] (dynamic model; None: kinematic only, as every field below).
        yaw_inertia: [kg m^2] moment of inertia about the vertical axis through the CoG.
        cornering_stiffness_front, cornering_stiffness_rear: [1/rad] normalised cornering
            stiffness ``C_S`` of an axle: its lateral force is ``mu * C_S * F_z * alpha`` for a
            slip angle ``alpha`` and normal load ``F_z`` (CommonRoad's ``C_Sf``, ``C_Sr``),
            saturating at ``mu * F_z``.
        cog_height: [m] height of the CoG (longitudinal load transfer; 0 = none).
        kinematic_speed, dynamic_speed: [m/s] below ``kinematic_speed`` the dynamic model is the
            kinematic one; above ``dynamic_speed`` it is fully dynamic; linear blend between.

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
    mass: float | None = None
    yaw_inertia: float | None = None
    cornering_stiffness_front: float | None = None
    cornering_stiffness_rear: float | None = None
    cog_height: float | None = None
    kinematic_speed: float | None = None
    dynamic_speed: float | None = None

    def __post_init__(self):
        for f in fields(self):
            if f.name in DYNAMIC_FIELDS and getattr(self, f.name) is None:
                continue
            if f.name == "substeps":
                value = check_int(f.name, self.substeps, lo=1)
            elif f.name == "cog_height":
                value = check_float(f.name, self.cog_height, lo=0.0)
            else:
                # the kernels hold float32: a larger value would be inf there
                hi = {"cog_to_rear": 1.0, "max_steer": math.pi / 2}.get(f.name, _FLOAT32_MAX)
                value = check_float(f.name, getattr(self, f.name), lo=0.0, lo_open=True, hi=hi)
            object.__setattr__(self, f.name, value)
        if self.cog_to_rear >= 1.0 or self.max_steer >= math.pi / 2:
            raise ValueError(
                f"cog_to_rear must be < 1 and max_steer < pi/2, got {self.cog_to_rear} and {self.max_steer}"
            )
        unset = [name for name in DYNAMIC_FIELDS if getattr(self, name) is None]
        if unset and len(unset) < len(DYNAMIC_FIELDS):
            raise ValueError(f"the dynamic model's fields are all set or all None; unset: {unset}")
        if not unset and self.dynamic_speed <= self.kinematic_speed:
            raise ValueError(f"dynamic_speed must be > kinematic_speed, got {self.dynamic_speed} <= "
                             f"{self.kinematic_speed}")

    @property
    def has_tyres(self) -> bool:
        """Whether every field of the dynamic model is set."""
        return all(getattr(self, name) is not None for name in DYNAMIC_FIELDS)

    @property
    def half_extents(self) -> tuple[float, float, float]:
        """[m] half extents of the body box (length, width, height) / 2."""
        return (0.5 * self.length, 0.5 * self.width, 0.5 * self.height)

    @property
    def max_lateral_accel(self) -> float:
        """[m/s^2] ``friction * g``."""
        return self.friction * GRAVITY


# F1TENTH's published parameters: f1tenth_gym's default vehicle ``params`` (the 1:10 car of the
# F1TENTH races; the gym: O'Kelly et al., "F1TENTH: An open-source evaluation environment for
# continuous control and reinforcement learning", PMLR 123, 2020)
_F1TENTH_TYRES = dict(mass=3.74, yaw_inertia=0.04712, cornering_stiffness_front=4.718,
                      cornering_stiffness_rear=5.4562, cog_height=0.074, kinematic_speed=1.0, dynamic_speed=2.0)

#: Car presets. ``"rc10"``: a 1:10 RC car (F1TENTH-sized: 0.33 m wheelbase) for the
#: default generated tracks (~19 m loops in a 10 m square), with F1TENTH's mass, inertia
#: and tyres for ``car_model="dynamic"``; ``"f1tenth"``: the F1TENTH car's published
#: parameters throughout (f1tenth_gym: 0.3302 m wheelbase, mu 1.0489, 9.51 m/s^2, 20 m/s, 0.4189 rad;
#: its motor's power limit above 7.3 m/s is modelled by our linear motor line to 20 m/s,
#: brakes at its 9.51 m/s^2); ``"full"``: a full-size race car (2.7 m wheelbase, 2 m wide, ~1.5 g of
#: grip) for real circuits, which are km long with 3-14 m half widths, with the mass,
#: inertia and front normalised cornering stiffness of CommonRoad's vehicle 2 (a BMW 320i:
#: 1093 kg, 1791 kg m^2, C_S = 20.89 / rad; Althoff, Koschi and Manzinger, "CommonRoad:
#: Composable benchmarks for motion planning on roads", IEEE IV 2017; the same values are
#: f1tenth_gym's full-size test vehicle) and two race-car choices of ours: the CoG 0.3 m high
#: (the road car's 0.61 m unloads the rear axle so much under 1.5 g of braking that the car
#: spins into corners) and a rear axle 25% stiffer (wider rear tyres: the car understeers,
#: K = 0.00065 rad / (m/s^2), where equal stiffnesses make it neutral).
CAR_PRESETS: dict[str, CarParams] = {
    "rc10": CarParams(
        wheelbase=0.33, cog_to_rear=0.5, max_steer=0.45, max_accel=6.0, max_brake=8.0,
        max_speed=6.0, friction=0.9, length=0.45, width=0.2, height=0.1, **_F1TENTH_TYRES,
    ),
    "f1tenth": CarParams(
        wheelbase=0.3302, cog_to_rear=0.17145 / 0.3302, max_steer=0.4189, max_accel=9.51, max_brake=9.51,
        max_speed=20.0, friction=1.0489, length=0.58, width=0.31, height=0.1, **_F1TENTH_TYRES,
    ),
    "full": CarParams(
        wheelbase=2.7, cog_to_rear=0.55, max_steer=0.55, max_accel=9.0, max_brake=15.0,
        max_speed=85.0, friction=1.5, length=4.6, width=2.0, height=1.0,
        mass=1093.3, yaw_inertia=1791.6, cornering_stiffness_front=20.89, cornering_stiffness_rear=1.25 * 20.89,
        cog_height=0.3, kinematic_speed=3.0, dynamic_speed=6.0,
    ),
}


def understeer_gradient(p: CarParams) -> float:
    """[rad / (m/s^2)] the understeer gradient ``K`` of the dynamic model in its linear range.

    Steady-state cornering of the linear single-track model (Rajamani, *Vehicle Dynamics and
    Control*, 2nd ed., 2012, sec. 3.3; Milliken and Milliken, *Race Car Vehicle Dynamics*,
    1995, ch. 5): ``delta = L / R + K a_y`` with ``K = m / L (l_r / C_f - l_f / C_r)``; with
    CommonRoad's axle stiffness ``C_f = mu C_Sf m g l_r / L`` (``C_r`` alike) this is
    ``K = (1 / C_Sf - 1 / C_Sr) / (mu g)``. The steady yaw rate is ``v delta / (L + K v^2)``.

    Raises:
        ValueError: ``p`` has no tyre parameters.
    """
    if not p.has_tyres:
        raise ValueError("the car has no tyre parameters (mass, cornering stiffness, ...): set them for the dynamic "
                         "model")
    return (1.0 / p.cornering_stiffness_front - 1.0 / p.cornering_stiffness_rear) / (p.friction * GRAVITY)


def car_params(car: str | CarParams) -> CarParams:
    """A preset name (``"rc10"``, ``"f1tenth"``, ``"full"``) or a :class:`CarParams` -> :class:`CarParams`.

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


def check_car_model(model: str, params: CarParams) -> str:
    """``model`` if it is one of :data:`CAR_MODELS` that ``params`` can run.

    Raises:
        TypeError: not a str.
        ValueError: an unknown model, or ``"dynamic"`` for a car without tyre parameters.
    """
    if not isinstance(model, str):
        raise TypeError(f"car_model must be a str, one of {CAR_MODELS}, got {type(model).__name__}")
    if model not in CAR_MODELS:
        raise ValueError(f"car_model must be one of {CAR_MODELS}, got {model!r}")
    if model == "dynamic" and not params.has_tyres:
        raise ValueError(f"car_model='dynamic' needs the car's tyre parameters ({', '.join(DYNAMIC_FIELDS)}); "
                         "use a preset (rc10, f1tenth, full) or set them in the CarParams")
    return model


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


@wp.struct
class TyreModel:
    """The kernel-side dynamic-model fields of :class:`CarParams`."""

    l_f: float
    mass: float
    yaw_inertia: float
    stiffness_front: float  # mu * C_Sf [1/rad]
    stiffness_rear: float  # mu * C_Sr [1/rad]
    friction: float
    cog_height: float
    kinematic_speed: float
    dynamic_speed: float
    rate: float  # [m/s^2] and
    rate_const: float  # [1/s]: |eigenvalue| of the linear model <= rate / v + rate_const (sizes the micro steps)


def tyre_model(p: CarParams) -> TyreModel:
    """The :class:`TyreModel` struct of ``p`` (zeros when ``p`` has no tyres: unused then)."""
    m = TyreModel()
    if not p.has_tyres:
        return m
    L = p.wheelbase
    l_r = p.cog_to_rear * L
    l_f = L - l_r
    m.l_f, m.mass, m.yaw_inertia = l_f, p.mass, p.yaw_inertia
    m.stiffness_front = p.friction * p.cornering_stiffness_front
    m.stiffness_rear = p.friction * p.cornering_stiffness_rear
    m.friction, m.cog_height = p.friction, p.cog_height
    m.kinematic_speed, m.dynamic_speed = p.kinematic_speed, p.dynamic_speed
    # the heaviest axle loads the longitudinal transfer allows, per unit mass
    load_f = (GRAVITY * l_r + max(p.max_accel, p.max_brake) * p.cog_height) / L
    load_r = (GRAVITY * l_f + max(p.max_accel, p.max_brake) * p.cog_height) / L
    cf, cr = m.stiffness_front * load_f, m.stiffness_rear * load_r  # axle stiffness / mass [m/s^2 / rad]
    # the linear model's Jacobian in (beta, r) is [[-kb / v, c1 / v^2 - 1], [c2, -ky / v]];
    # |eigenvalue| <= |trace| + sqrt(|det|) <= (kb + ky + sqrt(kb ky + |c1 c2|)) / v + sqrt(|c2|)
    ky = p.mass * (l_f * l_f * cf + l_r * l_r * cr) / p.yaw_inertia
    kb = cf + cr
    c1 = l_r * cr - l_f * cf
    c2 = p.mass * c1 / p.yaw_inertia
    m.rate = kb + ky + math.sqrt(kb * ky + abs(c1 * c2))
    m.rate_const = math.sqrt(abs(c2))
    return m


@wp.func
def yaw_of(q: wp.quat) -> float:
    """Yaw [rad] of a quaternion (rotation about z of its x axis)."""
    return wp.atan2(2.0 * (q[3] * q[2] + q[0] * q[1]), 1.0 - 2.0 * (q[1] * q[1] + q[2] * q[2]))


@wp.func
def geometric_slip(m: CarModel, steer: float) -> float:
    """Slip angle beta [rad] at the CoG of the kinematic bicycle for wheel angle ``steer``
    (Rajamani, *Vehicle Dynamics and Control*, 2012, section 2.2); constant over a step's
    substeps, so computed once per step."""
    return wp.atan(m.l_r / m.wheelbase * wp.tan(steer))


@wp.func
def slip_angle(m: CarModel, beta: float, v: float, grip: float) -> float:
    """The geometric slip angle ``beta`` (:func:`geometric_slip`) friction-limited at speed ``v``
    (the friction scaled by ``grip``)."""
    # lateral acceleration v^2 sin(beta) / l_r <= grip mu g
    v2 = wp.max(v * v, 1.0e-6)
    sin_max = wp.min(1.0, grip * m.max_lateral_accel * m.l_r / v2)
    limit = wp.asin(sin_max)
    return wp.clamp(beta, -limit, limit)


_ELAPSED_MAX = wp.constant(INT32_MAX)
_GRAVITY = wp.constant(GRAVITY)


@wp.func
def _restart(
    e: int,
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    start_speed: wp.array(dtype=float),
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    yaw: wp.array(dtype=float),
    speed: wp.array(dtype=float),
    yaw_rate: wp.array(dtype=float),
    steer: wp.array(dtype=float),
    elapsed: wp.array(dtype=wp.int32),
):
    """A reset of env ``e`` (both car models): the env's action is ignored, the car starts again at
    its start pose and speed (along its heading, no yaw rate: at rest unless the env draws a start speed)."""
    p0 = start_position[e]
    psi0 = yaw_of(start_orientation[e])
    position[e] = wp.vec3(p0[0], p0[1], p0[2])
    orientation[e] = quat_from_yaw(psi0)
    yaw[e] = psi0
    speed[e] = start_speed[e]
    yaw_rate[e] = 0.0
    steer[e] = 0.0
    elapsed[e] = 0


@wp.func
def _command(model: CarModel, u: wp.vec2, steer_scale: float, accel_scale: float):
    """An action (both car models): the steering angle [rad] and throttle in [-1, 1] it asks for, and
    the env's acceleration and braking limits [m/s^2] (its drawn scales applied)."""
    delta = wp.clamp(u[0], -1.0, 1.0) * model.max_steer * steer_scale
    throttle = wp.clamp(u[1], -1.0, 1.0)
    return delta, throttle, model.max_accel * accel_scale, model.max_brake * accel_scale


@wp.func
def _longitudinal(model: CarModel, throttle: float, max_accel: float, max_brake: float, v: float, h: float):
    """One substep ``h`` [s] along the heading (both car models): the acceleration [m/s^2] (drive
    fading to 0 at top speed, or braking), the speed after it (never below 0) and the mean speed."""
    a = throttle * max_brake
    v1 = float(0.0)
    if throttle >= 0.0:
        a = throttle * max_accel * wp.max(0.0, 1.0 - v / model.max_speed)
        # the drive fades to 0 at top speed: a substep too long for it (max_accel * h > max_speed)
        # must not carry the car past it (the exact solution never reaches it)
        v1 = wp.min(v + a * h, wp.max(v, model.max_speed))
    else:
        v1 = wp.max(0.0, v + a * h)
    return a, v1, 0.5 * (v + v1)


@wp.kernel
def _car_step(
    envs_per_thread: int,
    # inputs
    model: CarModel,
    action: wp.array(dtype=wp.vec2),
    reset_mask: wp.array(dtype=wp.int32),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    start_speed: wp.array(dtype=float),
    reset_only: int,
    grip: wp.array(dtype=float),
    accel_scale: wp.array(dtype=float),
    steer_scale: wp.array(dtype=float),
    # state (in/out)
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    yaw: wp.array(dtype=float),
    speed: wp.array(dtype=float),
    yaw_rate: wp.array(dtype=float),
    steer: wp.array(dtype=float),
    elapsed: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        if reset_mask[e] != 0:
            _restart(e, start_position, start_orientation, start_speed, position, orientation, yaw, speed, yaw_rate,
                     steer, elapsed)
            continue
        if reset_only != 0:
            continue

        delta, throttle, max_accel, max_brake = _command(model, action[e], steer_scale[e], accel_scale[e])
        p = position[e]
        psi = yaw[e]
        v = speed[e]
        h = model.dt / float(model.substeps)
        omega = float(0.0)
        beta_geometric = geometric_slip(model, delta)
        for _ in range(model.substeps):
            a, v1, vm = _longitudinal(model, throttle, max_accel, max_brake, v, h)
            beta = slip_angle(model, beta_geometric, vm, grip[e])
            omega = vm / model.l_r * wp.sin(beta)
            heading = psi + beta + 0.5 * omega * h
            p = wp.vec3(p[0] + vm * h * wp.cos(heading), p[1] + vm * h * wp.sin(heading), p[2])
            psi = psi + omega * h
            v = v1
        # keep yaw in [-pi, pi) so float32 keeps its precision over long episodes
        psi = wrap_angle(psi)
        position[e] = p
        orientation[e] = quat_from_yaw(psi)
        yaw[e] = psi
        speed[e] = v
        yaw_rate[e] = omega
        steer[e] = delta
        # saturates: an int32 that wrapped would never reach the truncation limit again
        elapsed[e] = wp.min(elapsed[e], _ELAPSED_MAX - 1) + 1


#: micro steps per substep of the dynamic model at most (their count keeps explicit Euler
#: stable: h * rate / v <= 1 / 2 for v >= kinematic_speed)
_MAX_MICRO_STEPS = wp.constant(256)
#: [rad] the slip angle beta is held within +-45 deg: the small-angle slip angles of the model
#: stop holding well before, and a spinning car's beta would otherwise wind up without bound
#: (held there, the saturated tyres brake the yaw rate)
_MAX_SLIP = wp.constant(0.25 * math.pi)


@wp.func
def _axle_force(stiffness: float, friction: float, load: float, alpha: float) -> float:
    """[N] lateral force of an axle: linear in the slip angle, saturating at mu * F_z."""
    limit = friction * load
    return wp.clamp(stiffness * load * alpha, -limit, limit)


@wp.kernel
def _dynamic_car_step(
    envs_per_thread: int,
    # inputs
    model: CarModel,
    tyres: TyreModel,
    action: wp.array(dtype=wp.vec2),
    reset_mask: wp.array(dtype=wp.int32),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    start_speed: wp.array(dtype=float),
    reset_only: int,
    grip: wp.array(dtype=float),
    accel_scale: wp.array(dtype=float),
    steer_scale: wp.array(dtype=float),
    # state (in/out)
    position: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    yaw: wp.array(dtype=float),
    speed: wp.array(dtype=float),
    yaw_rate: wp.array(dtype=float),
    steer: wp.array(dtype=float),
    slip: wp.array(dtype=float),
    elapsed: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        if reset_mask[e] != 0:
            _restart(e, start_position, start_orientation, start_speed, position, orientation, yaw, speed, yaw_rate,
                     steer, elapsed)
            slip[e] = 0.0
            continue
        if reset_only != 0:
            continue

        delta, throttle, max_accel, max_brake = _command(model, action[e], steer_scale[e], accel_scale[e])
        k = accel_scale[e]  # the friction-circle bound below scales with it
        p = position[e]
        psi = yaw[e]
        v = speed[e]
        beta = slip[e]
        omega = yaw_rate[e]
        h = model.dt / float(model.substeps)
        l_r = model.l_r
        l_f = tyres.l_f
        # the friction scale: mu (and with it the axle stiffness mu C_S) times g
        g = grip[e]
        stiffness_f = g * tyres.stiffness_front
        stiffness_r = g * tyres.stiffness_rear
        friction = g * tyres.friction
        beta_geometric = geometric_slip(model, delta)
        for _ in range(model.substeps):
            a, v1, vm = _longitudinal(model, throttle, max_accel, max_brake, v, h)
            # the kinematic model's state at this speed (what it is below kinematic_speed)
            beta_k = slip_angle(model, beta_geometric, vm, g)
            omega_k = vm / l_r * wp.sin(beta_k)
            lam = wp.clamp((vm - tyres.kinematic_speed) / (tyres.dynamic_speed - tyres.kinematic_speed), 0.0, 1.0)
            b = beta_k
            r = omega_k
            if lam > 0.0:
                # the single-track model (CommonRoad ST): axle loads with longitudinal transfer,
                # small-angle slip angles, saturating axle forces; explicit Euler micro steps
                m = tyres.mass
                load_f = wp.max(0.0, m * (_GRAVITY * l_r - a * tyres.cog_height) / model.wheelbase)
                load_r = wp.max(0.0, m * (_GRAVITY * l_f + a * tyres.cog_height) / model.wheelbase)
                # the eigenvalue bound scales as g (rate) and sqrt(g) (rate_const) with the stiffness,
                # and at most so with an accel scale k > 1 (the heaviest axle load, g l + k a_max h,
                # grows at most k-fold)
                gk = g * wp.max(1.0, k)
                n = wp.clamp(int(wp.ceil(2.0 * h * (gk * tyres.rate / vm + wp.sqrt(gk) * tyres.rate_const))), 1,
                             _MAX_MICRO_STEPS)
                hh = h / float(n)
                bd = beta
                rd = omega
                for _k in range(n):
                    alpha_f = delta - bd - l_f * rd / vm
                    alpha_r = -bd + l_r * rd / vm
                    f_f = _axle_force(stiffness_f, friction, load_f, alpha_f)
                    f_r = _axle_force(stiffness_r, friction, load_r, alpha_r)
                    bd_dot = (f_f + f_r) / (m * vm) - rd
                    rd_dot = (l_f * f_f - l_r * f_r) / tyres.yaw_inertia
                    bd = wp.clamp(bd + hh * bd_dot, -_MAX_SLIP, _MAX_SLIP)
                    rd = rd + hh * rd_dot
                b = lam * bd + (1.0 - lam) * beta_k
                r = lam * rd + (1.0 - lam) * omega_k
            heading = psi + b + 0.5 * r * h
            p = wp.vec3(p[0] + vm * h * wp.cos(heading), p[1] + vm * h * wp.sin(heading), p[2])
            psi = psi + r * h
            v = v1
            beta = b
            omega = r
        psi = wrap_angle(psi)
        position[e] = p
        orientation[e] = quat_from_yaw(psi)
        yaw[e] = psi
        speed[e] = v
        yaw_rate[e] = omega
        steer[e] = delta
        slip[e] = beta
        elapsed[e] = wp.min(elapsed[e], _ELAPSED_MAX - 1) + 1


@wp.kernel
def _on_ground(envs_per_thread: int, heights: wp.array3d(dtype=float), origin: wp.vec2, cell_size: float,
               position: wp.array(dtype=wp.vec3)):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, position.shape[0])):
        p = position[e]
        position[e] = wp.vec3(p[0], p[1], sample_height(heights, e, origin, cell_size, p[0], p[1]))


class CarState(ReadOnlyAfterConstruction):
    """The car's device state for ``E`` envs (stable arrays, SI units).

    ``model``: ``"kinematic"`` (default) or ``"dynamic"`` (:data:`CAR_MODELS`; the dynamic one
    needs ``params.has_tyres``, ValueError otherwise), kept as ``car_model``.

    Attributes:
        position: ``[E]`` vec3 [m] centre of gravity (z from the start pose; on the ground
            after :meth:`follow_ground`).
        orientation: ``[E]`` quat, yaw about z (what the course's components read).
        yaw: ``[E]`` float32 [rad] heading psi in [-pi, pi).
        speed: ``[E]`` float32 [m/s] speed v >= 0.
        yaw_rate: ``[E]`` float32 [rad/s] psi' over the last substep.
        steer: ``[E]`` float32 [rad] front wheel angle applied at the last step.
        slip: ``[E]`` float32 [rad] slip angle beta at the CoG (the dynamic model's state; 0 for the kinematic one).
        elapsed: ``[E]`` int32 env steps since the env's last reset (saturates at 2**31 - 1).
        half_extents: ``[E]`` vec3 [m] body box half extents (constant).
        grip: ``[E]`` float32 friction scale per env, > 0: the car's friction (and the dynamic
            model's axle stiffness ``mu C_S``) times it; 1 by default (exactly ``params``). The
            track env's ``friction_range`` draws it at every reset; written in place.
        accel_scale: ``[E]`` float32 motor and brake scale per env, > 0: the car's ``max_accel``
            and ``max_brake`` times it; 1 by default. The track env's ``accel_range`` draws it.
        steer_scale: ``[E]`` float32 steering scale per env, > 0: the car's ``max_steer`` times
            it (keep ``max_steer * steer_scale < pi/2``); 1 by default. The track env's
            ``steer_range`` draws it.
        ground: the course's :class:`~trackgen_env.tools.HeightField` the cars ride on (hills,
            banked corners: :meth:`step` ends with :meth:`follow_ground`), or None (the plane).

    The attributes are read-only after construction (AttributeError): the step kernel and a
    recorded graph hold these arrays and ``params``; write the arrays in place instead.
    """

    def __init__(self, params: CarParams, num_envs: int, device, *, model: str = "kinematic",
                 ground: HeightField | None = None):
        self.params = params
        self.ground = ground
        self.car_model = check_car_model(model, params)
        self._model = car_model(params)
        self._tyres = tyre_model(params)
        self.num_envs = num_envs
        self.device = wp.get_device(device)
        def zeros(dtype):
            return wp.zeros(num_envs, dtype=dtype, device=self.device)

        self.position = zeros(wp.vec3)
        self.orientation = wp.full(num_envs, wp.quat_identity(), dtype=wp.quat, device=self.device)
        self.yaw, self.speed, self.yaw_rate, self.steer = zeros(float), zeros(float), zeros(float), zeros(float)
        self.slip = zeros(float)
        self.elapsed = zeros(wp.int32)
        self.half_extents = wp.full(num_envs, wp.vec3(*params.half_extents), dtype=wp.vec3, device=self.device)
        self.grip = wp.ones(num_envs, dtype=float, device=self.device)
        self.accel_scale = wp.ones(num_envs, dtype=float, device=self.device)
        self.steer_scale = wp.ones(num_envs, dtype=float, device=self.device)
        self._rest = zeros(float)  # the start speed of a reset without one
        self._freeze(EVERY_ATTRIBUTE)

    def _read_only_message(self, name: str) -> str:
        return (f"CarState.{name} is read-only after construction (the step kernel and a recorded graph hold it): "
                "write its arrays in place, or build a new env")

    def pose(self) -> dict[str, wp.array]:
        """The arrays the course binds (:class:`~trackgen_env.envs.body.Body`)."""
        return {"position": self.position, "orientation": self.orientation, "half_extents": self.half_extents}

    def step(self, action: wp.array, reset_mask: wp.array, start_position: wp.array, start_orientation: wp.array,
             *, start_velocity: wp.array | None = None, reset_only: bool = False):
        """Reset the masked envs to their start pose and speed; integrate the others over ``dt``; with
        a ``ground``, put every car on it (:meth:`follow_ground`).

        Args:
            action: ``[E]`` vec2 (steering, throttle) in [-1, 1] (clipped).
            reset_mask: ``[E]`` int32, nonzero = put the car at the start pose and speed.
            start_position, start_orientation: ``[E]`` vec3 / quat start poses.
            start_velocity: ``[E]`` float32 [m/s] >= 0, the reset cars' speed along their heading
                (no yaw rate, no slip); None: at rest.
            reset_only: leave the unmasked envs untouched (a masked restart).

        One or two launches, no host sync: capturable.
        """
        self._integrate(action, reset_mask, start_position, start_orientation, start_velocity, reset_only)
        if self.ground is not None:
            self.follow_ground(self.ground)

    def _integrate(self, action, reset_mask, start_position, start_orientation, start_speed, reset_only):
        v0 = self._rest if start_speed is None else start_speed
        threads, per = env_loop.shape(self.device, self.num_envs)
        if self.car_model == "dynamic":
            wp.launch(
                _dynamic_car_step,
                threads,
                inputs=[per, self._model, self._tyres, action, reset_mask, start_position, start_orientation, v0,
                        int(reset_only),
                        self.grip, self.accel_scale, self.steer_scale],
                outputs=[self.position, self.orientation, self.yaw, self.speed, self.yaw_rate, self.steer, self.slip,
                         self.elapsed],
                device=self.device,
            )
            return
        wp.launch(
            _car_step,
            threads,
            inputs=[per, self._model, action, reset_mask, start_position, start_orientation, v0, int(reset_only),
                    self.grip, self.accel_scale, self.steer_scale],
            outputs=[self.position, self.orientation, self.yaw, self.speed, self.yaw_rate, self.steer, self.elapsed],
            device=self.device,
        )

    def follow_ground(self, ground: HeightField) -> None:
        """Set every car's z to the ground height under its x-y (bilinear in ``ground``'s grid,
        :func:`~trackgen_env.tools.heightfield.sample_height`): the planar model drives on the
        surface of an elevated or banked track. One launch, no host sync: capturable.

        Args:
            ground: the course's :class:`~trackgen_env.tools.HeightField` (``course.heightfield``),
                on this state's device with ``E`` envs.
        """
        threads, per = env_loop.shape(self.device, self.num_envs)
        wp.launch(_on_ground, threads, inputs=[per, ground.heights, ground.origin, ground.cell_size],
                  outputs=[self.position], device=self.device)
