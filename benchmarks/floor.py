"""Two references for TrackGen-Track-v0's step, on the same generated centrelines as the env.

* :class:`FusedWarpStep`: the **floor**, the whole per-env step written as ONE plain Warp
  kernel (what the hardware allows for this work): the kinematic bicycle model of
  ``trackgen_env/envs/car.py`` (same substeps, friction-limited slip, motor line, brakes),
  a windowed localisation on the centreline (closest of the segments within ``+-window`` of
  the previous one; Ericson, *Real-Time Collision Detection*, 2005, 5.1.2), the band check
  (the body box's lateral extent against the half width), checkpoint progress
  (``max(3, floor(L / spacing))`` evenly spaced checkpoints, as ``tools.Checkpoints``, passed
  in order by arc length; laps), the observation of ``OBS_FIELDS`` + lookahead points and the
  reward, with ``NEXT_STEP`` auto-reset semantics (the step after an env ends puts its car back
  at the start at rest). It reads ``centerline``, ``curvature`` and ``half_width`` of the env's
  :class:`~trackgen_env.core.types.TrackResult`, packed once into one ``(x, y, half width,
  curvature)`` record per point (the layout a plain-Warp author picks: one read per point; the
  lateral offset is the signed distance to the closest segment, as the env's Localizer). It
  does NOT regenerate a track when an env ends (the car restarts on the same track).
* :class:`NumpyStep`: the same step written with NumPy over all envs at once (what a user
  would write without this package), minus the observation's lookahead (a user's first
  version: speed, pose in the track frame, progress).

Both take ``[E, 2]`` float32 actions and return host ``(obs, reward, terminated, truncated)``
(fresh copies, as the env's NumPy outputs), so :func:`benchmarks.measure.steps_per_second`
times them like the env.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from trackgen_env.envs.car import car_model
from trackgen_env.envs.track import OBS_LOOKAHEAD

wp.set_module_options({"enable_backward": False})


@wp.kernel
def _fused_step(
    # the car
    wheelbase: float, l_r: float, max_steer: float, max_accel: float, max_brake: float, max_speed: float,
    max_lat: float, dt: float, substeps: int, half_length: float, half_width_car: float,
    # the track: one (x, y, half width, curvature) record per point
    track: wp.array2d(dtype=wp.vec4),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    valid: wp.array(dtype=wp.int32),
    start_position: wp.array(dtype=wp.vec3),
    start_yaw: wp.array(dtype=float),
    # settings
    window: int, checkpoint_spacing: float, target_laps: int, max_steps: int, penalty: float,
    num_lookahead: int, lookahead: wp.array(dtype=float),
    action: wp.array(dtype=wp.vec2),
    # state
    position: wp.array(dtype=wp.vec3), yaw: wp.array(dtype=float), speed: wp.array(dtype=float),
    elapsed: wp.array(dtype=wp.int32), warm: wp.array(dtype=wp.int32), s_prev: wp.array(dtype=float),
    next_cp: wp.array(dtype=wp.int32), laps: wp.array(dtype=wp.int32), done: wp.array(dtype=wp.int32),
    # outputs
    obs: wp.array2d(dtype=float), reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool), truncated: wp.array(dtype=wp.bool),
):
    e = wp.tid()
    n = num_points[e]
    length = loop_length[e]
    usable = valid[e] != 0 and n >= 3 and length > 0.0
    p = position[e]
    psi = yaw[e]
    v = speed[e]
    omega = float(0.0)
    delta = float(0.0)
    was_reset = done[e] != 0
    if was_reset:
        p = start_position[e]
        psi = start_yaw[e]
        v = 0.0
        elapsed[e] = 0
        warm[e] = 0
        next_cp[e] = 1
        laps[e] = 0
    else:
        u = action[e]
        delta = wp.clamp(u[0], -1.0, 1.0) * max_steer
        throttle = wp.clamp(u[1], -1.0, 1.0)
        h = dt / float(substeps)
        for _ in range(substeps):
            acc = throttle * max_brake
            if throttle >= 0.0:
                acc = throttle * max_accel * wp.max(0.0, 1.0 - v / max_speed)
            v1 = wp.max(0.0, v + acc * h)
            vm = 0.5 * (v + v1)
            beta = wp.atan(l_r / wheelbase * wp.tan(delta))
            sin_max = wp.min(1.0, max_lat * l_r / wp.max(vm * vm, 1.0e-6))
            beta = wp.clamp(beta, -wp.asin(sin_max), wp.asin(sin_max))
            omega = vm / l_r * wp.sin(beta)
            heading = psi + beta + 0.5 * omega * h
            p = wp.vec3(p[0] + vm * h * wp.cos(heading), p[1] + vm * h * wp.sin(heading), p[2])
            psi = psi + omega * h
            v = v1
        psi = psi - 2.0 * wp.pi * wp.floor((psi + wp.pi) / (2.0 * wp.pi))
        elapsed[e] = elapsed[e] + 1
    position[e] = p
    yaw[e] = psi
    speed[e] = v
    obs[e, 0] = v
    obs[e, 1] = omega
    obs[e, 2] = delta
    if not usable:
        for i in range(3, obs.shape[1]):
            obs[e, i] = 0.0
        reward[e] = 0.0
        terminated[e] = not was_reset
        truncated[e] = False
        done[e] = wp.where(was_reset, 0, 1)
        return

    # windowed localisation: the closest of the segments within +-window of the last one
    best = float(1.0e30)
    j = int(0)
    t = float(0.0)
    w0 = warm[e]
    for k in range(-window, window + 1):
        jj = w0 + k
        jj = jj - n * int(wp.floor(float(jj) / float(n)))
        jn = wp.where(jj < n - 1, jj + 1, 0)
        pa = track[e, jj]
        pb = track[e, jn]
        d = wp.vec2(pb[0] - pa[0], pb[1] - pa[1])
        q = wp.vec2(p[0] - pa[0], p[1] - pa[1])
        tt = wp.clamp((q[0] * d[0] + q[1] * d[1]) / wp.max(d[0] * d[0] + d[1] * d[1], 1.0e-12), 0.0, 1.0)
        rx = q[0] - tt * d[0]
        ry = q[1] - tt * d[1]
        dist = rx * rx + ry * ry
        if dist < best:
            best = dist
            j = jj
            t = tt
    warm[e] = j
    j1 = wp.where(j < n - 1, j + 1, 0)
    r0 = track[e, j]
    r1 = track[e, j1]
    d = wp.vec2(r1[0] - r0[0], r1[1] - r0[1])
    # signed distance to the segment, left > 0 (its left normal is (-d_y, d_x) / |d|)
    lateral = ((p[1] - r0[1] - t * d[1]) * d[0] - (p[0] - r0[0] - t * d[0]) * d[1]) / wp.max(wp.length(d), 1.0e-9)
    hw = wp.lerp(r0[2], r1[2], t)
    spacing = length / float(n)
    s = (float(j) + t) * spacing
    err = psi - wp.atan2(d[1], d[0])
    err = err - 2.0 * wp.pi * wp.floor((err + wp.pi) / (2.0 * wp.pi))
    # band check: the body box's lateral extent
    extent = wp.abs(half_length * wp.sin(err)) + wp.abs(half_width_car * wp.cos(err))
    off = wp.abs(lateral) + extent > hw

    # progress and checkpoints (evenly spaced; checkpoint 0 is the start line)
    num_cp = wp.max(3, int(length / checkpoint_spacing))
    ds = float(0.0)
    if not was_reset:
        ds = s - s_prev[e]
        if ds < -0.5 * length:
            ds = ds + length
        elif ds > 0.5 * length:
            ds = ds - length
        c = next_cp[e]
        target = float(c % num_cp) * length / float(num_cp)
        ahead = target - s_prev[e]
        ahead = ahead - length * wp.floor(ahead / length)
        if ds > 0.0 and ahead <= ds:
            if c == num_cp:
                laps[e] = laps[e] + 1
                next_cp[e] = 1
            else:
                next_cp[e] = c + 1
    s_prev[e] = s

    obs[e, 3] = lateral
    obs[e, 4] = err
    obs[e, 5] = hw
    obs[e, 6] = wp.lerp(r0[3], r1[3], t)
    obs[e, 7] = float(next_cp[e] - 1) / float(num_cp)  # checkpoints passed this lap / checkpoints
    cs = wp.cos(psi)
    sn = wp.sin(psi)
    inv_spacing = 1.0 / spacing
    for k in range(num_lookahead):
        sk = s + lookahead[k]
        sk = sk - length * wp.floor(sk / length)
        uu = sk * inv_spacing
        i0 = wp.clamp(int(uu), 0, n - 1)
        i1 = wp.where(i0 < n - 1, i0 + 1, 0)
        f = wp.clamp(uu - float(i0), 0.0, 1.0)
        ahead_point = wp.lerp(track[e, i0], track[e, i1], f)
        dx = ahead_point[0] - p[0]
        dy = ahead_point[1] - p[1]
        obs[e, 8 + 3 * k] = cs * dx + sn * dy
        obs[e, 9 + 3 * k] = -sn * dx + cs * dy
        obs[e, 10 + 3 * k] = ahead_point[3]

    if was_reset:
        reward[e] = 0.0
        terminated[e] = False
        truncated[e] = False
        done[e] = 0
        return
    term = off or laps[e] >= target_laps
    trunc = elapsed[e] >= max_steps
    reward[e] = ds - wp.where(off, penalty, 0.0)
    terminated[e] = term
    truncated[e] = trunc
    done[e] = wp.where(term or trunc, 1, 0)


def _yaw(q: np.ndarray) -> np.ndarray:
    return np.arctan2(2.0 * (q[:, 3] * q[:, 2] + q[:, 0] * q[:, 1]), 1.0 - 2.0 * (q[:, 1] ** 2 + q[:, 2] ** 2))


def _window(env) -> int:
    """The env's warm-search half window: one step of travel at top speed, + 2 segments (as track.py)."""
    return math.ceil(env.car.max_speed * env.car.dt / env.track_config.point_spacing) + 2


def _lookahead(env) -> np.ndarray:
    k = np.arange(env.num_lookahead)
    K = max(env.num_lookahead, 1)
    return (env.lookahead_horizon * (k + 1) * (k + 2) / (K * (K + 1))).astype(np.float32)


class FusedWarpStep:
    """The floor: the step as one Warp kernel, on the tracks of ``env`` (a :class:`TrackVectorEnv`).

    ``capture=True`` records the launch (and the action copy in) as a graph, as the env does.
    ``step(actions [E, 2] float32) -> (obs [E, D], reward [E], terminated [E], truncated [E])``:
    host NumPy copies (``output="numpy"``, as the env's NumPy outputs), or with ``output="torch"``
    (as the env's torch outputs) zero-copy torch views of the device buffers, the actions then a
    torch tensor on the env's device, copied on the device. ``env`` must stay open while this is
    used (its track arrays are read).
    """

    def __init__(self, env, capture: bool = True, output: str = "numpy"):
        if output not in ("numpy", "torch"):
            raise ValueError(f'output must be "numpy" or "torch", got {output!r}')
        self.num_envs, self.device, self.output = env.num_envs, env.device, output
        E, dev, r, c = env.num_envs, env.device, env.course.result, env.car
        m = car_model(c)
        self._car = [m.wheelbase, m.l_r, m.max_steer, m.max_accel, m.max_brake, m.max_speed,
                     m.max_lateral_accel, m.dt, m.substeps, 0.5 * c.length, 0.5 * c.width]
        # packed once per track (as a component's on_generate would): one record read per point
        line = r.centerline.numpy()
        packed = np.stack([line[..., 0], line[..., 1], r.half_width.numpy(), r.curvature.numpy()], -1)
        self._track = [wp.array(packed.astype(np.float32), dtype=wp.vec4, device=dev), r.num_points, r.loop_length,
                       r.valid, r.start_position,
                       wp.array(_yaw(r.start_orientation.numpy()).astype(np.float32), dtype=float, device=dev)]
        look = _lookahead(env)
        self._settings = [_window(env), env.checkpoint_spacing, 1, 1000, env.off_track_penalty, len(look),
                          wp.array(np.append(look, 0.0).astype(np.float32), dtype=float, device=dev)]
        self._host_action = wp.zeros(E, dtype=wp.vec2, device="cpu", pinned=dev.is_cuda)
        self._action = wp.zeros(E, dtype=wp.vec2, device=dev)
        z = lambda dtype: wp.zeros(E, dtype=dtype, device=dev)  # noqa: E731
        self._state = [z(wp.vec3), z(float), z(float), z(wp.int32), z(wp.int32), z(float), z(wp.int32),
                       z(wp.int32), wp.ones(E, dtype=wp.int32, device=dev)]  # done = 1: the first step resets
        self.obs = wp.zeros((E, OBS_LOOKAHEAD + 3 * len(look)), dtype=float, device=dev)
        self.reward, self.terminated, self.truncated = z(float), z(wp.bool), z(wp.bool)
        if output == "torch":
            self._views = tuple(wp.to_torch(a) for a in (self.obs, self.reward, self.terminated, self.truncated))
            self._action_view = wp.to_torch(self._action)  # [E, 2] float32, as the env's torch action view
        self._body()  # load the module outside the capture
        self._state[-1].fill_(1)
        self.graph = None
        if capture:
            with wp.ScopedCapture(device=dev) as cap:
                self._body()
            self.graph = cap.graph

    def _body(self):
        if self.output == "numpy":  # torch: the actions are copied on the device before the body
            wp.copy(self._action, self._host_action)
        wp.launch(_fused_step, self.num_envs, inputs=[*self._car, *self._track, *self._settings, self._action,
                                                      *self._state],
                  outputs=[self.obs, self.reward, self.terminated, self.truncated], device=self.device)

    def reset(self):
        """Every car back at its start (the next step is the reset step); returns the zero obs."""
        self._state[-1].fill_(1)
        zeros = np.zeros((self.num_envs, 2), np.float32)
        if self.output == "torch":
            zeros = self._action_view.new_zeros(self._action_view.shape)
        return self.step(zeros)[0]

    def step(self, actions):
        if self.output == "torch":
            self._action_view.copy_(actions, non_blocking=True)  # on the device, as the env's write_actions
        else:
            self._host_action.numpy()[:] = np.asarray(actions, np.float32)
        if self.graph is not None:
            wp.capture_launch(self.graph)
        else:
            self._body()
        if self.output == "torch":
            return self._views
        return (self.obs.numpy().copy(), self.reward.numpy().copy(), self.terminated.numpy().copy(),
                self.truncated.numpy().copy())


class NumpyStep:
    """The same step in NumPy over all envs at once (no lookahead points), on ``env``'s tracks (host copies).

    ``step(actions [E, 2]) -> (obs [E, 8], reward, terminated, truncated)``, NEXT_STEP
    semantics as :class:`FusedWarpStep`. float64 internally (NumPy's default), float32 out.
    """

    def __init__(self, env):
        r, c = env.course.result, env.car
        self.E = E = env.num_envs
        self.line = r.centerline.numpy()[:, :, :2].astype(np.float64)
        self.curv = r.curvature.numpy().astype(np.float64)
        self.hw = r.half_width.numpy().astype(np.float64)
        self.n = r.num_points.numpy().astype(np.int64)
        self.L = r.loop_length.numpy().astype(np.float64)
        self.start = r.start_position.numpy()[:, :2].astype(np.float64)
        self.start_yaw = _yaw(r.start_orientation.numpy()).astype(np.float64)
        self.c, self.window, self.cp_spacing = c, _window(env), env.checkpoint_spacing
        self.penalty = env.off_track_penalty
        self.rows = np.arange(E)
        self.p, self.psi, self.v = np.zeros((E, 2)), np.zeros(E), np.zeros(E)
        self.elapsed, self.warm, self.s_prev = np.zeros(E, np.int64), np.zeros(E, np.int64), np.zeros(E)
        self.next_cp, self.laps, self.done = np.ones(E, np.int64), np.zeros(E, np.int64), np.ones(E, bool)

    def reset(self):
        self.done[:] = True
        return self.step(np.zeros((self.E, 2), np.float32))[0]

    def step(self, actions: np.ndarray):
        c, E, rows = self.c, self.E, self.rows
        a = np.clip(np.asarray(actions, np.float64), -1.0, 1.0)
        reset = self.done.copy()
        delta = np.where(reset, 0.0, a[:, 0] * c.max_steer)
        throttle = np.where(reset, 0.0, a[:, 1])
        p, psi, v = self.p.copy(), self.psi.copy(), self.v.copy()
        h, l_r = c.dt / c.substeps, c.cog_to_rear * c.wheelbase
        omega = np.zeros(E)
        for _ in range(c.substeps):
            acc = np.where(throttle >= 0, throttle * c.max_accel * np.maximum(0.0, 1.0 - v / c.max_speed),
                           throttle * c.max_brake)
            v1 = np.maximum(0.0, v + acc * h)
            vm = 0.5 * (v + v1)
            sin_max = np.minimum(1.0, c.max_lateral_accel * l_r / np.maximum(vm * vm, 1e-6))
            beta = np.clip(np.arctan(l_r / c.wheelbase * np.tan(delta)), -np.arcsin(sin_max), np.arcsin(sin_max))
            omega = vm / l_r * np.sin(beta)
            heading = psi + beta + 0.5 * omega * h
            p = p + (vm * h)[:, None] * np.stack([np.cos(heading), np.sin(heading)], 1)
            psi, v = psi + omega * h, v1
        psi = psi - 2 * np.pi * np.floor((psi + np.pi) / (2 * np.pi))
        p[reset], psi[reset], v[reset] = self.start[reset], self.start_yaw[reset], 0.0
        self.warm[reset], self.next_cp[reset], self.laps[reset], self.elapsed[reset] = 0, 1, 0, 0
        self.elapsed[~reset] += 1
        # windowed localisation: [E, 2W + 1] candidate segments
        n = self.n[:, None]
        jj = (self.warm[:, None] + np.arange(-self.window, self.window + 1)[None, :]) % n
        jn = np.where(jj < n - 1, jj + 1, 0)
        A, B = self.line[rows[:, None], jj], self.line[rows[:, None], jn]
        d, q = B - A, p[:, None, :] - A
        t = np.clip((q * d).sum(-1) / np.maximum((d * d).sum(-1), 1e-12), 0.0, 1.0)
        dist = ((q - t[..., None] * d) ** 2).sum(-1)
        k = dist.argmin(1)
        j, j1, t = jj[rows, k], jn[rows, k], t[rows, k]
        self.warm = j
        a0, dd = self.line[rows, j], self.line[rows, j1] - self.line[rows, j]
        rel = p - a0 - t[:, None] * dd  # signed distance to the segment, left > 0
        lateral = (dd[:, 0] * rel[:, 1] - dd[:, 1] * rel[:, 0]) / np.maximum(np.hypot(dd[:, 0], dd[:, 1]), 1e-9)
        hw = self.hw[rows, j] * (1 - t) + self.hw[rows, j1] * t
        s = (j + t) * self.L / self.n
        err = psi - np.arctan2(dd[:, 1], dd[:, 0])
        err = err - 2 * np.pi * np.floor((err + np.pi) / (2 * np.pi))
        off = np.abs(lateral) + np.abs(0.5 * c.length * np.sin(err)) + np.abs(0.5 * c.width * np.cos(err)) > hw
        # progress, checkpoints
        L = self.L
        ds = s - self.s_prev
        ds = np.where(ds < -0.5 * L, ds + L, np.where(ds > 0.5 * L, ds - L, ds))
        ds[reset] = 0.0
        num_cp = np.maximum(3, (L / self.cp_spacing).astype(np.int64))
        ahead = np.mod((self.next_cp % num_cp) * L / num_cp - self.s_prev, L)
        passed = (ds > 0) & (ahead <= ds) & ~reset
        lap = passed & (self.next_cp == num_cp)
        self.laps += lap
        self.next_cp = np.where(lap, 1, np.where(passed, self.next_cp + 1, self.next_cp))
        self.s_prev = s
        obs = np.stack([v, omega, delta, lateral, err, hw,
                        self.curv[rows, j] * (1 - t) + self.curv[rows, j1] * t, (self.next_cp - 1) / num_cp],
                       1).astype(np.float32)
        term = (off | (self.laps >= 1)) & ~reset
        trunc = (self.elapsed >= 1000) & ~reset
        reward = np.where(reset, 0.0, ds - self.penalty * off).astype(np.float32)
        self.p, self.psi, self.v, self.done = p, psi, v, term | trunc
        return obs, reward, term, trunc
