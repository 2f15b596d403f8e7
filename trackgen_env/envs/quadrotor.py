"""Quadrotor dynamics with collective-thrust and body-rate commands: the one model the gates env flies.

The model is the one drone-racing RL trains on (Kaufmann et al., "Champion-level drone
racing using deep reinforcement learning", Nature 620, 2023; Song et al., "Autonomous
drone racing with deep reinforcement learning", IROS 2021): the policy commands a
collective thrust and body rates that a low-level controller tracks. Here the low-level
loop is a first-order lag on the body rates; the translational dynamics add gravity and
the linear rotor drag of Faessler et al. ("Differential flatness of quadrotor dynamics
subject to rotor drag", RA-L 2018). State per env (world frame: z up; body frame: x
forward, y left, z up along the thrust)::

    p' = v
    v' = R(q) [0, 0, T/m] - R(q) D R(q)^T v - [0, 0, g]
    q' = 1/2 q (x) [w, 0]
    w' = (w_cmd - w) / tau

Integration: ``substeps`` semi-implicit Euler substeps of ``h = dt / substeps`` per
control step: the rate lag is integrated exactly (``w += (1 - exp(-h/tau)) (w_cmd - w)``),
the attitude by the exponential map of ``w h`` (stays unit length), then v, then p with the
new v.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import warp as wp

from ..core import env_loop
from ..core.checks import check_float, check_int, check_vec3, dtype_name
from ..core.polyline import GRAVITY

wp.set_module_options({"enable_backward": False})

__all__ = ["QuadrotorParams", "QuadrotorModel", "quadrotor_model", "action_to_command", "thrust_to_action", "Quadrotor",
           "GRAVITY"]


@dataclass(frozen=True)
class QuadrotorParams:
    """Physical parameters of the simulated quadrotor: a 250 g micro racing quad.

    The defaults give a thrust-to-weight ratio of 3 and rate limits of a calm racing
    setup, scaled for gate courses a few metres apart.

    Attributes:
        mass: [kg] mass ``m`` (> 0).
        thrust_to_weight: maximum collective thrust over ``m g`` (> 1). The action thrust
            ``a`` in [-1, 1] is centred on hover: ``m g (1 + a (thrust_to_weight - 1))`` [N]
            for ``a >= 0`` and ``m g (1 + a)`` for ``a < 0`` (0 = hover, +1 = maximum,
            -1 = none), so a policy's zero-mean initial actions hover instead of climbing.
        max_body_rate: [rad/s] (roll, pitch, yaw) rate commanded by an action of +-1 (> 0).
        body_rate_time_constant: [s] ``tau`` of the first-order body-rate tracking lag (> 0).
        drag: [1/s] mass-normalised linear rotor-drag coefficients ``D`` along the body
            (x, y, z) axes (>= 0).
        gravity: [m/s^2] ``g`` (> 0).
        dt: [s] control period: one env step (> 0).
        substeps: integration substeps per control step (>= 1).
        half_extents: [m] half extents (x, y, z) of the body box that collisions test
            (> 0): a 0.16 m x 0.16 m x 0.06 m frame with its propellers by default.

    Raises:
        TypeError / ValueError: a field of the wrong type or range.
    """

    mass: float = 0.25
    thrust_to_weight: float = 3.0
    max_body_rate: tuple[float, float, float] = (8.0, 8.0, 3.0)
    body_rate_time_constant: float = 0.03
    drag: tuple[float, float, float] = (0.3, 0.3, 0.1)
    gravity: float = GRAVITY
    dt: float = 0.02
    substeps: int = 2
    half_extents: tuple[float, float, float] = (0.08, 0.08, 0.03)

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "mass", check_float("mass", self.mass, lo=0.0, lo_open=True))
        set_(self, "thrust_to_weight", check_float("thrust_to_weight", self.thrust_to_weight, lo=1.0, lo_open=True))
        set_(self, "max_body_rate", check_vec3("max_body_rate", self.max_body_rate, lo=0.0, lo_open=True))
        set_(
            self,
            "body_rate_time_constant",
            check_float("body_rate_time_constant", self.body_rate_time_constant, lo=0.0, lo_open=True),
        )
        set_(self, "drag", check_vec3("drag", self.drag, lo=0.0))
        set_(self, "gravity", check_float("gravity", self.gravity, lo=0.0, lo_open=True))
        set_(self, "dt", check_float("dt", self.dt, lo=0.0, lo_open=True, hi=1.0))
        set_(self, "substeps", check_int("substeps", self.substeps, lo=1, hi=100))
        set_(self, "half_extents", check_vec3("half_extents", self.half_extents, lo=0.0, lo_open=True))

    @classmethod
    def racing(cls, **overrides) -> QuadrotorParams:
        """A 0.85 kg racing quadrotor: the drone of Foehn, Romero and Scaramuzza, "Time-optimal
        planning for quadrotor waypoint flight", *Science Robotics* 6(56), 2021 (the UZH Split-S).

        Published parameters (its model file ``quads/quad.yaml`` in ``uzh-rpg/rpg_time_optimal``):
        mass 0.85 kg, arm length ``l`` 0.15 m, inertia ``J`` = diag(1.0, 1.0, 1.7) g m^2, thrust-to-weight
        3.3 (``T_motor`` = 3.3 m g / 4 = 6.88 N per rotor), body-rate limits 15 rad/s (roll, pitch) and
        0.3 rad/s (yaw), no drag (the planner's model has none). This model has no inertia: the
        rate loop's time constant is the one whose initial slope is the largest angular
        acceleration the rotors give about x, ``tau = J_xx w_max / (2 l T_motor)`` = 7.3 ms (two
        rotors at full thrust, two off). The body box: a 0.3 m motor-to-motor diagonal with 5 inch
        propellers, 0.34 m x 0.34 m x 0.08 m.

        Args:
            overrides: fields to change (e.g. ``dt=0.01``).
        """
        mass, arm, inertia_xx, twr, rate_xy = 0.85, 0.15, 1.0e-3, 3.3, 15.0
        motor = twr * mass * GRAVITY / 4.0
        fields = dict(mass=mass, thrust_to_weight=twr, max_body_rate=(rate_xy, rate_xy, 0.3),
                      body_rate_time_constant=inertia_xx * rate_xy / (2.0 * arm * motor), drag=(0.0, 0.0, 0.0),
                      half_extents=(0.17, 0.17, 0.04))
        fields.update(overrides)
        return cls(**fields)

    @property
    def max_thrust(self) -> float:
        """[N] collective thrust of an action thrust of +1."""
        return self.thrust_to_weight * self.mass * self.gravity

    @property
    def hover_action(self) -> float:
        """The action thrust (in [-1, 1]) whose collective thrust equals ``m g``: 0."""
        return 0.0


@wp.struct
class QuadrotorModel:
    """The kernel-side copy of :class:`QuadrotorParams` (frozen into a recorded graph)."""

    mass: float
    max_thrust: float
    hover_thrust: float  # m g [N]: the thrust of action 0
    max_rate: wp.vec3
    rate_blend: float  # 1 - exp(-h / tau): exact discretisation of the rate lag over one substep
    drag: wp.vec3
    gravity: float
    h: float
    substeps: int


def quadrotor_model(params: QuadrotorParams) -> QuadrotorModel:
    """The :class:`QuadrotorModel` struct of ``params``."""
    s = QuadrotorModel()
    h = params.dt / params.substeps
    s.mass = params.mass
    s.max_thrust = params.max_thrust
    s.hover_thrust = params.mass * params.gravity
    s.max_rate = wp.vec3(*params.max_body_rate)
    s.rate_blend = 1.0 - math.exp(-h / params.body_rate_time_constant)
    s.drag = wp.vec3(*params.drag)
    s.gravity = params.gravity
    s.h = h
    s.substeps = params.substeps
    return s


@wp.func
def integrate_quadrotor(
    d: QuadrotorModel,
    thrust: float,
    rate_cmd: wp.vec3,
    position: wp.vec3,
    velocity: wp.vec3,
    orientation: wp.quat,
    body_rate: wp.vec3,
):
    """One control step of the model above; returns the new (position, velocity, orientation, body_rate)."""
    p = position
    v = velocity
    q = orientation
    w = body_rate
    for _ in range(d.substeps):
        w = w + d.rate_blend * (rate_cmd - w)
        angle = wp.length(w) * d.h
        if angle > 1.0e-9:
            q = wp.normalize(q * wp.quat_from_axis_angle(wp.normalize(w), angle))
        v_body = wp.quat_rotate_inv(q, v)
        force_body = wp.vec3(0.0, 0.0, thrust / d.mass) - wp.cw_mul(d.drag, v_body)
        accel = wp.quat_rotate(q, force_body) - wp.vec3(0.0, 0.0, d.gravity)
        v = v + accel * d.h
        p = p + v * d.h
    return p, v, q, w


@wp.func
def action_to_command(d: QuadrotorModel, a0: float, a1: float, a2: float, a3: float):
    """Action in [-1, 1]^4 (clamped) -> (collective thrust [N], body-rate command [rad/s]).

    Thrust centred on hover: ``m g (1 + a0 (T/W - 1))`` for ``a0 >= 0``, ``m g (1 + a0)`` below."""
    a = wp.clamp(a0, -1.0, 1.0)
    thrust = d.hover_thrust * (1.0 + a)
    if a >= 0.0:
        thrust = d.hover_thrust + a * (d.max_thrust - d.hover_thrust)
    rate = wp.cw_mul(
        wp.vec3(wp.clamp(a1, -1.0, 1.0), wp.clamp(a2, -1.0, 1.0), wp.clamp(a3, -1.0, 1.0)), d.max_rate
    )
    return thrust, rate


@wp.func
def thrust_to_action(d: QuadrotorModel, thrust: float) -> float:
    """The action thrust in [-1, 1] of a collective thrust [N]: the inverse of :func:`action_to_command` (clamped)."""
    a = thrust / d.hover_thrust - 1.0
    if thrust >= d.hover_thrust:
        a = (thrust - d.hover_thrust) / (d.max_thrust - d.hover_thrust)
    return wp.clamp(a, -1.0, 1.0)


@wp.kernel
def _fly(
    envs_per_thread: int,
    # inputs
    dynamics: QuadrotorModel,
    action: wp.array2d(dtype=wp.float32),
    reset_mask: wp.array(dtype=wp.int32),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    start_velocity: wp.array(dtype=wp.vec3),
    use_start_velocity: int,
    reset_only: int,
    # state (in/out)
    position: wp.array(dtype=wp.vec3),
    velocity: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    body_rate: wp.array(dtype=wp.vec3),
    last_action: wp.array2d(dtype=wp.float32),
    elapsed: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        if reset_mask[e] != 0:
            # a reset: the action is ignored, the drone starts at the start pose (at rest, or at the start velocity)
            position[e] = start_position[e]
            velocity[e] = wp.vec3(0.0)
            if use_start_velocity != 0:
                velocity[e] = start_velocity[e]
            orientation[e] = wp.normalize(start_orientation[e])
            body_rate[e] = wp.vec3(0.0)
            for i in range(4):
                last_action[e, i] = 0.0
            elapsed[e] = 0
            continue
        if reset_only != 0:
            continue
        a0 = wp.clamp(action[e, 0], -1.0, 1.0)
        a1 = wp.clamp(action[e, 1], -1.0, 1.0)
        a2 = wp.clamp(action[e, 2], -1.0, 1.0)
        a3 = wp.clamp(action[e, 3], -1.0, 1.0)
        thrust, rate_cmd = action_to_command(dynamics, a0, a1, a2, a3)
        p, v, q, w = integrate_quadrotor(dynamics, thrust, rate_cmd, position[e], velocity[e], orientation[e],
                                         body_rate[e])
        position[e] = p
        velocity[e] = v
        orientation[e] = q
        body_rate[e] = w
        last_action[e, 0] = a0
        last_action[e, 1] = a1
        last_action[e, 2] = a2
        last_action[e, 3] = a3
        elapsed[e] = elapsed[e] + 1


class Quadrotor:
    """A batch of ``num_envs`` quadrotors, reset and integrated in one Warp launch per step.

    Attributes (stable ``wp.array``, env axis first, written in place):
        position: ``[E]`` vec3 [m], world frame, z up.
        velocity: ``[E]`` vec3 [m/s], world frame.
        orientation: ``[E]`` quat (x, y, z, w), body to world.
        body_rate: ``[E]`` vec3 [rad/s], body frame (roll, pitch, yaw rates).
        last_action: ``[E, 4]`` float32, the clipped action of the last step (0 after a reset).
        elapsed: ``[E]`` int32 steps since the env's last reset.
        half_extents: ``[E]`` vec3 [m] body box half extents (constant).

    Args:
        num_envs: ``E`` (>= 1).
        device: Warp device name or ``wp.Device``.
        params: :class:`QuadrotorParams` (default: the 250 g micro quad).

    The state starts at rest at the origin, level (identity attitude).
    """

    def __init__(self, num_envs: int, device=None, params: QuadrotorParams | None = None):
        self.num_envs = check_int("num_envs", num_envs, lo=1)
        self.device = wp.get_device(device)
        self.params = params if params is not None else QuadrotorParams()
        if not isinstance(self.params, QuadrotorParams):
            raise TypeError(f"params must be a QuadrotorParams, got {type(self.params).__name__}")
        self.dynamics = quadrotor_model(self.params)
        E, dev = self.num_envs, self.device
        self.position = wp.zeros(E, dtype=wp.vec3, device=dev)
        self.velocity = wp.zeros(E, dtype=wp.vec3, device=dev)
        self.orientation = wp.array(np.tile([0.0, 0.0, 0.0, 1.0], (E, 1)), dtype=wp.quat, device=dev)
        self.body_rate = wp.zeros(E, dtype=wp.vec3, device=dev)
        self.last_action = wp.zeros((E, 4), dtype=wp.float32, device=dev)
        self.elapsed = wp.zeros(E, dtype=wp.int32, device=dev)
        self.half_extents = wp.array(np.tile(self.params.half_extents, (E, 1)), dtype=wp.vec3, device=dev)

    def pose(self) -> dict[str, wp.array]:
        """The arrays the course binds (:class:`~trackgen_env.envs.body.Body`)."""
        return {"position": self.position, "orientation": self.orientation, "half_extents": self.half_extents}

    def step(self, action: wp.array, reset_mask: wp.array, start_position: wp.array, start_orientation: wp.array,
             *, start_velocity: wp.array | None = None, reset_only: bool = False) -> None:
        """Put the masked envs at their start state (zero body rates); advance the others one control step ``dt``.
        Capturable.

        Args:
            action: ``[E, 4]`` float32 ``wp.array`` on this device: (thrust, roll rate,
                pitch rate, yaw rate) in [-1, 1] (clamped), mapped as :class:`QuadrotorParams` says.
            reset_mask: ``[E]`` int32, nonzero = reset the env (its action is ignored).
            start_position, start_orientation: ``[E]`` vec3 / quat start poses (read for masked envs only).
            start_velocity: ``[E]`` vec3 [m/s] world-frame start velocities (masked envs
                only); None starts at rest.
            reset_only: leave the unmasked envs untouched (a masked restart).

        Raises:
            ValueError: ``action`` has another shape, dtype or device.
        """
        if action.dtype != wp.float32 or action.shape != (self.num_envs, 4) or action.device != self.device:
            raise ValueError(
                f"action must be a [{self.num_envs}, 4] float32 array on {self.device}, got shape "
                f"{action.shape} dtype {dtype_name(action.dtype)} on {action.device}"
            )
        threads, per = env_loop.shape(self.device, self.num_envs)
        wp.launch(
            _fly,
            threads,
            inputs=[per, self.dynamics, action, reset_mask, start_position, start_orientation,
                    start_velocity if start_velocity is not None else self.velocity, int(start_velocity is not None),
                    int(reset_only)],
            outputs=[self.position, self.velocity, self.orientation, self.body_rate, self.last_action, self.elapsed],
            device=self.device,
        )
