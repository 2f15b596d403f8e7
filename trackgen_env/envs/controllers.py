"""Controllers for the envs: baselines, demos and tests drive the envs with them.

* :class:`PurePursuit`: steering and speed of the car of ``TrackGen-Track-v0`` from its
  observation (NumPy, on the host).
* :class:`ReferenceController`: a geometric controller flying a batch of quadrotors along
  closed course lines (a Warp kernel); :class:`CourseLinePilot` runs it on a
  ``TrackGen-Gates-v0`` env's device state (a privileged baseline, not a policy).

``ReferenceController`` is the geometric controller of Lee, Leok and McClamroch
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

from ..core.checks import check_float, check_int
from ..core.polyline import BIG, segment_param, wrap_index
from .car import CarParams
from .quadrotor import QuadrotorModel, QuadrotorParams, quadrotor_model, thrust_to_action
from .track import OBS_LOOKAHEAD

__all__ = ["PurePursuit", "ControllerGains", "ReferenceController", "CourseLinePilot"]

wp.set_module_options({"enable_backward": False})


# -- the car: pure pursuit --------------------------------------------------------------------
class PurePursuit:
    """Pure-pursuit steering with a curvature speed profile, on
    :class:`~trackgen_env.envs.track.TrackVectorEnv` observations.

    Steering (Coulter, "Implementation of the Pure Pursuit Path Tracking Algorithm",
    CMU-RI-TR-92-01, 1992): the goal point is where the polyline through the observation's
    lookahead points (car frame, starting at the car) first reaches the distance
    ``L_d = lookahead_gain * v + lookahead_min`` from the car; the arc through it has
    curvature ``kappa = 2 y / L_d^2``, so the wheel angle is ``atan(wheelbase * kappa)``.

    Speed: the pursued arc (``kappa``, at distance 0) and, at each lookahead point, the
    larger of the centreline curvature there and the curvature of the circle through it
    and its two neighbours (which catches a short corner between two points), ``kappa_k``,
    allow ``v_k = sqrt(lat_accel / |kappa_k|)`` with ``lat_accel = margin * friction * g``; the
    target speed is the lowest ``sqrt(v_k^2 + 2 b d_k)`` (braking at ``b = margin *
    max_brake`` over the distance ``d_k`` to the point), capped at ``margin * max_speed``;
    the throttle is proportional to the speed error.

    Args:
        car: the env's :class:`CarParams` (``env.car``).
        lookahead_gain: [s] lookahead distance per speed.
        lookahead_min: [m] lookahead at rest; default ``1.2 * wheelbase`` (0.4 m for rc10).
        margin: fraction of the friction, brake and speed limits to plan with.
        speed_gain: [1/(m/s)] throttle per m/s of speed error.
    """

    def __init__(self, car: CarParams, *, lookahead_gain: float = 0.15, lookahead_min: float | None = None,
                 margin: float = 0.7, speed_gain: float = 2.0):
        self.car = car
        self.lookahead_gain = lookahead_gain
        self.lookahead_min = 1.2 * car.wheelbase if lookahead_min is None else lookahead_min
        self.margin = margin
        self.speed_gain = speed_gain

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        """``[E, D]`` observations -> ``[E, 2]`` float32 actions in [-1, 1].

        Raises:
            ValueError: observations without lookahead points.
        """
        obs = np.asarray(obs, dtype=np.float32)
        E = obs.shape[0]
        v = obs[:, 0]
        ahead = obs[:, OBS_LOOKAHEAD:].reshape(E, -1, 3)
        if ahead.shape[1] < 1:
            raise ValueError("PurePursuit needs observations with lookahead points (num_lookahead >= 1)")
        # the polyline from the car (the origin) through the lookahead points
        pts = np.concatenate([np.zeros((E, 1, 2), np.float32), ahead[:, :, :2]], axis=1)
        dist = np.linalg.norm(pts, axis=2)  # [E, K + 1], 0 at the car
        # steering: the goal point at distance L_d on the polyline
        ld = self.lookahead_gain * v + self.lookahead_min
        beyond = dist >= ld[:, None]
        k = np.where(beyond.any(axis=1), beyond.argmax(axis=1), pts.shape[1] - 1)
        rows = np.arange(E)
        p0, p1 = pts[rows, k - 1], pts[rows, k]
        d0, d1 = dist[rows, k - 1], dist[rows, k]
        t = np.clip((ld - d0) / np.maximum(d1 - d0, 1e-6), 0.0, 1.0)
        goal = p0 + t[:, None] * (p1 - p0)
        kappa = 2.0 * goal[:, 1] / np.maximum((goal**2).sum(axis=1), 1e-6)
        steer = np.arctan(self.car.wheelbase * kappa) / self.car.max_steer
        # speed: the slowest of the curvature limits ahead, braking distance included
        # (a short corner between two points shows as a turn of the polyline through them)
        q = ahead[:, :, :2]
        a, b, c = q[:, 1:-1] - q[:, :-2], q[:, 2:] - q[:, 1:-1], q[:, 2:] - q[:, :-2]
        cross = np.abs(a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0])
        norms = np.linalg.norm(a, axis=2) * np.linalg.norm(b, axis=2) * np.linalg.norm(c, axis=2)
        turn = np.zeros(ahead.shape[:2], np.float32)
        turn[:, 1:-1] = 2.0 * cross / np.maximum(norms, 1e-9)
        curv = np.concatenate([np.abs(kappa[:, None]), np.maximum(np.abs(ahead[:, :, 2]), turn)], axis=1)
        v_curve = np.sqrt(self.margin * self.car.max_lateral_accel / np.maximum(curv, 1e-6))
        reach = np.sqrt(v_curve**2 + 2.0 * self.margin * self.car.max_brake * dist)
        v_target = np.minimum(reach.min(axis=1), self.margin * self.car.max_speed)
        throttle = self.speed_gain * (v_target - v)
        return np.clip(np.stack([steer, throttle], axis=1), -1.0, 1.0).astype(np.float32)


# -- the quadrotor: a geometric controller along the course line ------------------------------
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
        max_tilt: [rad] largest tilt of the commanded thrust axis from vertical, in (0, pi/2].
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
        for name in ("speed", "lateral_accel", "preview", "kp", "kv", "kr"):
            object.__setattr__(self, name, check_float(name, getattr(self, name), lo=0.0, lo_open=True))
        # a thrust axis tilted to the horizon or past it holds no altitude
        object.__setattr__(self, "max_tilt", check_float("max_tilt", self.max_tilt, lo=0.0, lo_open=True,
                                                         hi=0.5 * math.pi))
        object.__setattr__(self, "search_window", check_int("search_window", self.search_window, lo=2))


    @classmethod
    def racing(cls, **overrides) -> ControllerGains:
        """Gains for :meth:`QuadrotorParams.racing() <trackgen_env.envs.quadrotor.QuadrotorParams.racing>`
        on race layouts of 1.5-2.8 m gates: 8 m/s cruise, 12 m/s^2 in turns over a 3 m preview,
        1.2 rad of tilt (its thrust-to-weight of 3.3 holds altitude up to 72 deg). ``overrides``: fields to change."""
        fields = dict(speed=8.0, lateral_accel=12.0, preview=3.0, max_tilt=1.2)
        fields.update(overrides)
        return cls(**fields)


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
def _point_at(line: wp.array2d(dtype=wp.vec3), e: int, n: int, j: int, t: float) -> wp.vec3:
    return wp.lerp(line[e, wrap_index(j, n)], line[e, wrap_index(j + 1, n)], t)


@wp.func
def _vertex_tangent(line: wp.array2d(dtype=wp.vec3), e: int, n: int, j: int) -> wp.vec3:
    return wp.normalize(line[e, wrap_index(j + 1, n)] - line[e, wrap_index(j - 1, n)])


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
    if n < 3:
        # no course line: hover level
        action[e, 0] = thrust_to_action(d, d.hover_thrust)
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
    best = float(BIG)
    best_j = int(0)
    best_t = float(0.0)
    for k in range(count):
        j = wrap_index(lo + k, n)
        a = line[e, j]
        b = line[e, wrap_index(j + 1, n)]
        t = segment_param(p, a, b)
        dist2 = wp.length_sq(p - (a + (b - a) * t))
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
        a = line[e, wrap_index(j, n)]
        b = line[e, wrap_index(j + 1, n)]
        c = line[e, wrap_index(j + 2, n)]
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
    seg_len = wp.max(wp.length(line[e, wrap_index(best_j + 1, n)] - line[e, wrap_index(best_j, n)]), 1.0e-6)
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

    action[e, 0] = thrust_to_action(d, thrust)  # the env's hover-centred thrust mapping, inverted
    action[e, 1] = wp.clamp(rate[0] / d.max_rate[0], -1.0, 1.0)
    action[e, 2] = wp.clamp(rate[1] / d.max_rate[1], -1.0, 1.0)
    action[e, 3] = wp.clamp(rate[2] / d.max_rate[2], -1.0, 1.0)


@wp.kernel
def _search_from_next_gate(
    elapsed: wp.array(dtype=wp.int32),
    next_gate: wp.array(dtype=wp.int32),
    num_gates: wp.array(dtype=wp.int32),
    num_points: wp.array(dtype=wp.int32),
    generation: wp.array(dtype=wp.int32),
    segment: wp.array(dtype=wp.int32),
    seen_generation: wp.array(dtype=wp.int32),
):
    e = wp.tid()
    n = num_points[e]
    g = num_gates[e]
    if elapsed[e] != 0 or n < 3 or g < 1:
        return
    # a drone just started behind its next gate: search the line ending at that gate (point gate * n / g), not
    # the whole loop, whose nearest point may lie on another leg that passes close by
    segment[e] = wrap_index(next_gate[e] * (n / g) - 1, n)
    seen_generation[e] = generation[e]


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

    def __init__(self, num_envs: int, device=None, params: QuadrotorParams | None = None,
                 gains: ControllerGains | None = None):
        self.num_envs = check_int("num_envs", num_envs, lo=1)
        self.device = wp.get_device(device)
        if params is not None and not isinstance(params, QuadrotorParams):
            raise TypeError(f"params must be a QuadrotorParams or None, got {type(params).__name__}")
        if gains is not None and not isinstance(gains, ControllerGains):
            raise TypeError(f"gains must be a ControllerGains (ControllerGains(speed=3.0)) or None, got "
                            f"{type(gains).__name__} {gains!r}"[:200])
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

    def search_from_next_gate(self, elapsed, next_gate, num_gates, num_points, generation) -> None:
        """Start the closest-point search of every drone that has just started (``elapsed == 0``) on the
        course-line leg into its next gate (point ``next_gate * num_points / num_gates``) instead of the
        whole loop, whose nearest point may lie on another leg passing close by. Capturable.

        Args:
            elapsed: ``[E]`` int32 steps since each drone's reset.
            next_gate: ``[E]`` int32 the gate each drone flies to next.
            num_gates, num_points: ``[E]`` int32 gates of each course, points of its course line.
            generation: ``[E]`` int32 course generation counter.
        """
        wp.launch(_search_from_next_gate, self.num_envs, inputs=[elapsed, next_gate, num_gates, num_points, generation],
                  outputs=[self.segment, self._seen], device=self.device)

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


class CourseLinePilot:
    """The reference controller of :class:`~trackgen_env.envs.gates.GatesVectorEnv`: flies each drone along its
    course line.

    A geometric controller (Lee et al. 2010; Mellinger & Kumar 2011;
    :class:`ReferenceController`) tracking the closed course
    line through the gates (the course's ``centerline`` component) at ``gains.speed``,
    slower in tight turns. It reads the env's device state, not the observation: it is a
    privileged baseline, not a policy.

    Args:
        env: the :class:`~trackgen_env.envs.gates.GatesVectorEnv` to fly (its ``unwrapped`` is taken).
        gains: :class:`ControllerGains`.

    Raises:
        TypeError: ``env`` is not a gates env; ``gains`` not a ``ControllerGains``.

    Call it (``pilot()`` or ``pilot(obs)``; ``obs`` is ignored) before each ``env.step`` for
    the ``[E, 4]`` float32 action.
    """

    def __init__(self, env, gains: ControllerGains | None = None):
        env = getattr(env, "unwrapped", env)
        if getattr(env, "quadrotor", None) is None or getattr(env, "course", None) is None:
            raise TypeError(f"CourseLinePilot flies a gates env (GatesVectorEnv, gymnasium.make_vec("
                            f"'TrackGen-Gates-v0', ...)), got {type(env).__name__}; for the track env use PurePursuit")
        self.env = env
        self.controller = ReferenceController(env.num_envs, env.device, env.quadrotor, gains)

    def __call__(self, obs=None) -> np.ndarray:
        env, line = self.env, self.env.course.course_line
        course = env.course
        self.controller.search_from_next_gate(env.drone.elapsed, course.components["progress"].result.next_checkpoint,
                                              course.result.num_gates, line.num_points, course.result.generation)
        action = self.controller.compute(
            env.position, env.velocity, env.orientation, line.centerline, line.num_points, env.course.result.generation
        )
        return action.numpy().copy()
