"""Quadrotor dynamics with collective-thrust and body-rate commands, and a reference controller.

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

The reference controller is the geometric controller of Lee, Leok and McClamroch
("Geometric tracking control of a quadrotor UAV on SE(3)", CDC 2010) in the form of
Mellinger and Kumar ("Minimum snap trajectory generation and control for quadrotors",
ICRA 2011): a PD acceleration command towards the closest point of the course line, plus the
line's centripetal acceleration as feed-forward, the collective
thrust from its projection on the body z axis, and body rates proportional to the
attitude error ``e_R = 1/2 vee(R_d^T R - R^T R_d)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import warp as wp

from ..checks import check_float, check_int, check_vec3

wp.set_module_options({"enable_backward": False})

__all__ = [
    "QuadrotorParams",
    "QuadrotorModel",
    "quadrotor_model",
    "integrate_quadrotor",
    "action_to_command",
    "Quadrotor",
    "ControllerGains",
    "ReferenceController",
    "GRAVITY",
]

GRAVITY = 9.81  # [m/s^2]


@dataclass(frozen=True)
class QuadrotorParams:
    """Physical parameters of the simulated quadrotor: a 250 g micro racing quad.

    The defaults give a thrust-to-weight ratio of 3 and rate limits of a calm racing
    setup, scaled for gate courses a few metres apart.

    Attributes:
        mass: [kg] mass ``m`` (> 0).
        thrust_to_weight: maximum collective thrust over ``m g`` (> 1): action thrust
            ``-1..1`` maps to ``0..thrust_to_weight * m * g`` [N].
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

    @property
    def max_thrust(self) -> float:
        """[N] collective thrust of an action thrust of +1."""
        return self.thrust_to_weight * self.mass * self.gravity

    @property
    def hover_action(self) -> float:
        """The action thrust (in [-1, 1]) whose collective thrust equals ``m g``."""
        return 2.0 / self.thrust_to_weight - 1.0


@wp.struct
class QuadrotorModel:
    """The kernel-side copy of :class:`QuadrotorParams` (frozen into a recorded graph)."""

    mass: float
    max_thrust: float
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
    """Action in [-1, 1]^4 (clamped) -> (collective thrust [N], body-rate command [rad/s])."""
    thrust = 0.5 * (wp.clamp(a0, -1.0, 1.0) + 1.0) * d.max_thrust
    rate = wp.cw_mul(
        wp.vec3(wp.clamp(a1, -1.0, 1.0), wp.clamp(a2, -1.0, 1.0), wp.clamp(a3, -1.0, 1.0)), d.max_rate
    )
    return thrust, rate


@wp.kernel
def _step_quadrotor(
    # inputs
    d: QuadrotorModel,
    action: wp.array2d(dtype=wp.float32),
    # in/out
    position: wp.array(dtype=wp.vec3),
    velocity: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    body_rate: wp.array(dtype=wp.vec3),
):
    e = wp.tid()
    thrust, rate_cmd = action_to_command(d, action[e, 0], action[e, 1], action[e, 2], action[e, 3])
    p, v, q, w = integrate_quadrotor(d, thrust, rate_cmd, position[e], velocity[e], orientation[e], body_rate[e])
    position[e] = p
    velocity[e] = v
    orientation[e] = q
    body_rate[e] = w


class Quadrotor:
    """A batch of ``num_envs`` quadrotors integrated in one Warp launch per step.

    Attributes (stable ``wp.array``, env axis first, written in place):
        position: ``[E]`` vec3 [m], world frame, z up.
        velocity: ``[E]`` vec3 [m/s], world frame.
        orientation: ``[E]`` quat (x, y, z, w), body to world.
        body_rate: ``[E]`` vec3 [rad/s], body frame (roll, pitch, yaw rates).

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
        E = self.num_envs
        self.position = wp.zeros(E, dtype=wp.vec3, device=self.device)
        self.velocity = wp.zeros(E, dtype=wp.vec3, device=self.device)
        self.orientation = wp.array(np.tile([0.0, 0.0, 0.0, 1.0], (E, 1)), dtype=wp.quat, device=self.device)
        self.body_rate = wp.zeros(E, dtype=wp.vec3, device=self.device)

    def step(self, action: wp.array) -> None:
        """Advance every quadrotor one control step ``dt`` under ``action``. Capturable.

        Args:
            action: ``[E, 4]`` float32 ``wp.array`` on this device: (thrust, roll rate,
                pitch rate, yaw rate) in [-1, 1] (clamped), mapped as :class:`QuadrotorParams` says.

        Raises:
            ValueError: ``action`` has another shape, dtype or device.
        """
        if action.dtype != wp.float32 or action.shape != (self.num_envs, 4) or action.device != self.device:
            raise ValueError(
                f"action must be a [{self.num_envs}, 4] float32 array on {self.device}, got shape "
                f"{action.shape} dtype {wp.types.type_repr(action.dtype)} on {action.device}"
            )
        wp.launch(
            _step_quadrotor,
            self.num_envs,
            inputs=[self.dynamics, action],
            outputs=[self.position, self.velocity, self.orientation, self.body_rate],
            device=self.device,
        )


# --------------------------------------------------------------------------------------------
# Reference controller


@dataclass(frozen=True)
class ControllerGains:
    """Gains and limits of :class:`ReferenceController` (SI units).

    Attributes:
        speed: [m/s] cruise speed along the course line.
        lateral_accel: [m/s^2] the speed is lowered to ``sqrt(lateral_accel / curvature)``
            where the line ahead turns tighter.
        preview: [m] arc length ahead of the closest point over which curvature slows the drone.
        kp: [1/s^2] position gain.
        kv: [1/s] velocity gain.
        kr: [1/s] attitude gain (body-rate command per radian of attitude error).
        max_tilt: [rad] largest tilt of the commanded thrust axis from vertical.
        search_window: course-line samples searched ahead of (and a quarter of it behind)
            the previous closest point.
    """

    speed: float = 2.5
    lateral_accel: float = 6.0
    preview: float = 1.0
    kp: float = 12.0
    kv: float = 6.0
    kr: float = 16.0
    max_tilt: float = 1.0
    search_window: int = 12

    def __post_init__(self):
        for name in ("speed", "lateral_accel", "preview", "kp", "kv", "kr", "max_tilt"):
            object.__setattr__(self, name, check_float(name, getattr(self, name), lo=0.0, lo_open=True))
        object.__setattr__(self, "search_window", check_int("search_window", self.search_window, lo=2))


@wp.struct
class _Gains:
    speed: float
    lateral_accel: float
    preview: float
    kp: float
    kv: float
    kr: float
    max_tilt: float
    window: int


@wp.func
def _line_index(j: int, n: int) -> int:
    return ((j % n) + n) % n


@wp.func
def _closest_on_segment(a: wp.vec3, b: wp.vec3, p: wp.vec3):
    ab = b - a
    t = wp.clamp(wp.dot(p - a, ab) / wp.max(wp.dot(ab, ab), 1.0e-12), 0.0, 1.0)
    c = a + t * ab
    return wp.length_sq(p - c), t


@wp.func
def _point_at(line: wp.array2d(dtype=wp.vec3), e: int, n: int, j: int, t: float) -> wp.vec3:
    return wp.lerp(line[e, _line_index(j, n)], line[e, _line_index(j + 1, n)], t)


@wp.func
def _vertex_tangent(line: wp.array2d(dtype=wp.vec3), e: int, n: int, j: int) -> wp.vec3:
    return wp.normalize(line[e, _line_index(j + 1, n)] - line[e, _line_index(j - 1, n)])


@wp.kernel
def _reference_control(
    # inputs
    d: QuadrotorModel,
    g: _Gains,
    position: wp.array(dtype=wp.vec3),
    velocity: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    line: wp.array2d(dtype=wp.vec3),
    num_points: wp.array(dtype=wp.int32),
    generation: wp.array(dtype=wp.int32),
    # controller state
    segment: wp.array(dtype=wp.int32),
    seen_generation: wp.array(dtype=wp.int32),
    # outputs
    action: wp.array2d(dtype=wp.float32),
):
    e = wp.tid()
    n = num_points[e]
    p = position[e]
    v = velocity[e]
    q = orientation[e]
    hover = d.mass * d.gravity
    if n < 3:
        # no course line: hover level
        action[e, 0] = 2.0 * hover / d.max_thrust - 1.0
        action[e, 1] = 0.0
        action[e, 2] = 0.0
        action[e, 3] = 0.0
        return

    # closest segment: a global search on a new course, else a forward-biased window
    lo = 0
    count = n
    if seen_generation[e] == generation[e]:
        lo = segment[e] - g.window / 4
        count = wp.min(g.window, n)
    best = float(1.0e30)
    best_j = int(0)
    best_t = float(0.0)
    for k in range(count):
        j = _line_index(lo + k, n)
        dist2, t = _closest_on_segment(line[e, j], line[e, _line_index(j + 1, n)], p)
        if dist2 < best:
            best = dist2
            best_j = j
            best_t = t
    segment[e] = best_j
    seen_generation[e] = generation[e]

    # speed: slow down for the tightest turn within the preview distance
    max_curv = float(0.0)
    walked = float(0.0)
    j = best_j
    for _k in range(n):
        a = line[e, _line_index(j, n)]
        b = line[e, _line_index(j + 1, n)]
        c = line[e, _line_index(j + 2, n)]
        ab = b - a
        bc = c - b
        lab = wp.length(ab)
        lbc = wp.length(bc)
        if lab > 1.0e-6 and lbc > 1.0e-6:
            turn = wp.length(bc / lbc - ab / lab) / (0.5 * (lab + lbc))
            max_curv = wp.max(max_curv, turn)
        walked = walked + lab
        j = j + 1
        if walked > g.preview:
            break
    speed = g.speed
    if max_curv > 1.0e-6:
        speed = wp.min(speed, wp.sqrt(g.lateral_accel / max_curv))

    # reference: the closest point, the line's tangent and curvature there (interpolated
    # between vertex tangents so that the velocity reference does not jump per segment)
    t0 = _vertex_tangent(line, e, n, best_j)
    t1 = _vertex_tangent(line, e, n, best_j + 1)
    seg_len = wp.max(wp.length(line[e, _line_index(best_j + 1, n)] - line[e, _line_index(best_j, n)]), 1.0e-6)
    curvature = (t1 - t0) / seg_len
    tangent = wp.normalize(wp.lerp(t0, t1, best_t))
    ref = _point_at(line, e, n, best_j, best_t)

    # Mellinger & Kumar: desired acceleration, thrust along the current body z axis
    v_ref = speed * tangent
    z_world = wp.vec3(0.0, 0.0, 1.0)
    v_body = wp.quat_rotate_inv(q, v)
    drag_world = wp.quat_rotate(q, wp.cw_mul(d.drag, v_body))
    acc = g.kp * (ref - p) + g.kv * (v_ref - v) + speed * speed * curvature + drag_world + d.gravity * z_world
    # keep a thrust that can lift, tilted at most max_tilt from vertical
    acc = wp.vec3(acc[0], acc[1], wp.max(acc[2], 0.2 * d.gravity))
    horiz = wp.vec3(acc[0], acc[1], 0.0)
    max_h = acc[2] * wp.tan(g.max_tilt)
    lh = wp.length(horiz)
    if lh > max_h:
        acc = wp.vec3(acc[0] * max_h / lh, acc[1] * max_h / lh, acc[2])
    b3 = wp.quat_rotate(q, z_world)
    thrust = d.mass * wp.dot(acc, b3)

    # desired attitude: thrust axis b3d, heading along the line
    b3d = wp.normalize(acc)
    heading = wp.vec3(tangent[0], tangent[1], 0.0)
    if wp.length(heading) < 1.0e-3:
        heading = wp.quat_rotate(q, wp.vec3(1.0, 0.0, 0.0))
    b2d = wp.normalize(wp.cross(b3d, wp.normalize(heading)))
    b1d = wp.cross(b2d, b3d)
    rd = wp.matrix_from_cols(b1d, b2d, b3d)
    r = wp.quat_to_matrix(q)
    err = 0.5 * (wp.transpose(rd) * r - wp.transpose(r) * rd)
    e_r = wp.vec3(err[2, 1], err[0, 2], err[1, 0])
    rate = -g.kr * e_r

    action[e, 0] = wp.clamp(2.0 * thrust / d.max_thrust - 1.0, -1.0, 1.0)
    action[e, 1] = wp.clamp(rate[0] / d.max_rate[0], -1.0, 1.0)
    action[e, 2] = wp.clamp(rate[1] / d.max_rate[1], -1.0, 1.0)
    action[e, 3] = wp.clamp(rate[2] / d.max_rate[2], -1.0, 1.0)


class ReferenceController:
    """Geometric controller that flies a batch of quadrotors along their closed course lines.

    Each call finds the closest point of the course line (a global search after the
    course changes, tracked by ``generation``; a window ahead of the previous one
    otherwise), and outputs the
    collective thrust and body rates of Lee et al. 2010 / Mellinger & Kumar 2011 (see the
    module docstring) as a normalised action in [-1, 1]^4. The speed drops to
    ``sqrt(lateral_accel / curvature)`` before tight turns.

    Args:
        num_envs: ``E``.
        device: Warp device.
        params: the :class:`QuadrotorParams` of the flown quadrotors.
        gains: :class:`ControllerGains` (defaults suit the default gate courses).

    Attributes:
        action: ``[E, 4]`` float32 ``wp.array``, the last computed action.
        segment: ``[E]`` int32 ``wp.array``, the course-line segment closest to each drone
            at the last call (the warm start of the next search).
    """

    def __init__(self, num_envs: int, device=None, params: QuadrotorParams | None = None, gains: ControllerGains | None = None):
        self.num_envs = check_int("num_envs", num_envs, lo=1)
        self.device = wp.get_device(device)
        self.params = params if params is not None else QuadrotorParams()
        self.gains = gains if gains is not None else ControllerGains()
        self._dynamics = quadrotor_model(self.params)
        g = _Gains()
        for name in ("speed", "lateral_accel", "preview", "kp", "kv", "kr", "max_tilt"):
            setattr(g, name, getattr(self.gains, name))
        g.window = self.gains.search_window
        self._gains = g
        self.segment = wp.zeros(self.num_envs, dtype=wp.int32, device=self.device)
        # -1 never equals a generation counter: the first call searches globally
        self._seen = wp.full(self.num_envs, -1, dtype=wp.int32, device=self.device)
        self.action = wp.zeros((self.num_envs, 4), dtype=wp.float32, device=self.device)

    def compute(self, position, velocity, orientation, line, num_points, generation) -> wp.array:
        """Compute :attr:`action` for the current state. Capturable; returns :attr:`action`.

        Args:
            position, velocity, orientation: ``[E]`` vec3 [m], vec3 [m/s], quat (body to world).
            line: ``[E, L]`` vec3 [m] closed course line (a ``CourseLine.centerline``).
            num_points: ``[E]`` int32 line points in use (an env with < 3 hovers).
            generation: ``[E]`` int32 course generation counter (a changed value restarts the search).
        """
        wp.launch(
            _reference_control,
            self.num_envs,
            inputs=[self._dynamics, self._gains, position, velocity, orientation, line, num_points, generation],
            outputs=[self.segment, self._seen, self.action],
            device=self.device,
        )
        return self.action
