"""``TrackGen-Gates-v0``: a quadrotor racing through freshly generated gate courses (a Gymnasium vector env)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import warp as wp
from gymnasium.vector import AutoresetMode

from .. import render, tools
from ..checks import check_float
from ..course import Course
from ..generators.gate_layouts import RaceLayout
from ..generators.gates import GateGenerator
from ..pipeline.gates_config import GateGenConfig
from .base import CourseVectorEnv, obs_layout
from .quadrotor import Quadrotor, QuadrotorParams

__all__ = ["GatesVectorEnv", "OBS_FIELDS", "OBS_DIM", "DEFAULT_GATE_WIDTH"]

wp.set_module_options({"enable_backward": False})

#: [m] width (and height, unless the config sets one) of the gate openings when ``gates`` is not given.
DEFAULT_GATE_WIDTH = 0.6

#: Default ``max_episode_steps`` (30 s at the default 50 Hz).
DEFAULT_MAX_EPISODE_STEPS = 1500
#: [m/s] a ``layout``'s default time limit allows its laps at this average speed along the gates.
LAYOUT_MIN_SPEED = 1.0

#: Observation index ranges ``(name, start, stop)``, in order: the one definition of the
#: layout, which the kernel's offsets below and the class docstring's table follow.
OBS_FIELDS = obs_layout(
    ("velocity", 3),
    ("rotation", 9),
    ("body_rate", 3),
    ("altitude", 1),
    ("next_gate_corners", 12),
    ("second_gate_corners", 12),
    ("previous_action", 4),
)
OBS_DIM = OBS_FIELDS[-1][2]
_START = {name: start for name, start, _ in OBS_FIELDS}
_VELOCITY = wp.constant(_START["velocity"])
_ROTATION = wp.constant(_START["rotation"])
_BODY_RATE = wp.constant(_START["body_rate"])
_ALTITUDE = wp.constant(_START["altitude"])
_NEXT_GATE = wp.constant(_START["next_gate_corners"])
_SECOND_GATE = wp.constant(_START["second_gate_corners"])
_CORNERS_END = wp.constant(_START["previous_action"])  # the two corner blocks end where the previous action starts
_PREVIOUS_ACTION = wp.constant(_START["previous_action"])


@wp.func
def _write_corners(
    obs: wp.array2d(dtype=wp.float32),
    e: int,
    first: int,
    p: wp.vec3,
    q: wp.quat,
    centre: wp.vec3,
    direction: wp.vec3,
    half_width: float,
    half_height: float,
):
    # the opening's axes as Progress defines them: lateral = normalize(z x direction), vertical = direction x lateral
    lateral = wp.normalize(wp.cross(wp.vec3(0.0, 0.0, 1.0), direction))
    vertical = wp.cross(direction, lateral)
    for k in range(4):
        # top-left, top-right, bottom-right, bottom-left as seen flying through
        sy = wp.where(k == 0 or k == 3, 1.0, -1.0)
        sz = wp.where(k < 2, 1.0, -1.0)
        corner = centre + sy * half_width * lateral + sz * half_height * vertical
        rel = wp.quat_rotate_inv(q, corner - p)
        obs[e, first + 3 * k + 0] = rel[0]
        obs[e, first + 3 * k + 1] = rel[1]
        obs[e, first + 3 * k + 2] = rel[2]


@wp.kernel
def _observe(
    # inputs: which envs were reset this step
    reset_mask: wp.array(dtype=wp.int32),
    # inputs: the drone
    position: wp.array(dtype=wp.vec3),
    velocity: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    body_rate: wp.array(dtype=wp.vec3),
    last_action: wp.array2d(dtype=wp.float32),
    elapsed: wp.array(dtype=wp.int32),
    # inputs: the course (gate checkpoints, validity) and its step (progress, collision)
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=wp.float32),
    cp_half_height: wp.array2d(dtype=wp.float32),
    num_checkpoints: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    line_points: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    passed: wp.array(dtype=wp.int32),
    next_checkpoint: wp.array(dtype=wp.int32),
    checkpoints_passed: wp.array(dtype=wp.int32),
    laps: wp.array(dtype=wp.int32),
    hit: wp.array(dtype=wp.int32),
    # settings
    max_episode_steps: int,
    target_laps: int,
    gate_bonus: float,
    crash_penalty: float,
    body_rate_penalty: float,
    bounds_margin: float,
    restart: int,
    # state (in/out): the gate the progress reward measures towards, and the distance to it
    target: wp.array(dtype=wp.int32),
    target_distance: wp.array(dtype=wp.float32),
    # outputs
    autoreset: wp.array(dtype=wp.int32),
    obs: wp.array2d(dtype=wp.float32),
    reward: wp.array(dtype=wp.float32),
    terminated: wp.array(dtype=wp.bool),
    truncated: wp.array(dtype=wp.bool),
    gates_out: wp.array(dtype=wp.int32),
    laps_out: wp.array(dtype=wp.int32),
    collision_out: wp.array(dtype=wp.bool),
    out_of_bounds_out: wp.array(dtype=wp.bool),
):
    e = wp.tid()
    was_reset = reset_mask[e] != 0  # read before autoreset (may be the same array) is written
    if restart != 0 and not was_reset:
        return
    n = num_checkpoints[e]
    usable = valid[e] != 0 and n >= 2
    p = position[e]
    q = orientation[e]
    w = body_rate[e]

    v_body = wp.quat_rotate_inv(q, velocity[e])
    r = wp.quat_to_matrix(q)
    for i in range(3):
        obs[e, _VELOCITY + i] = v_body[i]
        obs[e, _BODY_RATE + i] = w[i]
        for j in range(3):
            obs[e, _ROTATION + 3 * i + j] = r[i, j]
    obs[e, _ALTITUDE] = p[2]
    for i in range(4):
        obs[e, _PREVIOUS_ACTION + i] = last_action[e, i]

    # course bounds: the bounding box of the gates and the course line between them (a
    # turn swings out past the gates) grown by the margin (ground: z = 0)
    lo = wp.vec3(1.0e30)
    hi = wp.vec3(-1.0e30)
    nxt = int(0)
    dist = float(0.0)
    if usable:
        nxt = next_checkpoint[e] % n
        # Progress starts an episode "on" gate 0 (the start/finish gate, next = 1), but the
        # drone starts behind gate 0: until it crosses gate 0's plane, gate 0 is the gate ahead
        if nxt == 1 and checkpoints_passed[e] == 0 and laps[e] == 0:
            if wp.dot(p - cp_position[e, 0], cp_direction[e, 0]) < 0.0:
                nxt = 0
        for k in range(2):
            g = (nxt + k) % n
            _write_corners(obs, e, _NEXT_GATE + (_SECOND_GATE - _NEXT_GATE) * k, p, q, cp_position[e, g], cp_direction[e, g],
                           cp_half_width[e, g], cp_half_height[e, g])
        for g in range(n):
            lo = wp.min(lo, cp_position[e, g])
            hi = wp.max(hi, cp_position[e, g])
        for k in range(line_points[e]):
            lo = wp.min(lo, line[e, k])
            hi = wp.max(hi, line[e, k])
        dist = wp.length(p - cp_position[e, nxt])
    else:
        for i in range(_NEXT_GATE, _CORNERS_END):
            obs[e, i] = 0.0

    if was_reset:
        target[e] = nxt
        target_distance[e] = dist
        if restart == 0:  # a restart keeps the ended episode's reward and termination
            reward[e] = 0.0
            terminated[e] = False
            truncated[e] = False
        gates_out[e] = 0
        laps_out[e] = 0
        collision_out[e] = False
        out_of_bounds_out[e] = False
        autoreset[e] = 0
        return

    collided = p[2] <= 0.0 or (usable and hit[e] != 0)
    outside = usable and (
        p[0] < lo[0] - bounds_margin
        or p[0] > hi[0] + bounds_margin
        or p[1] < lo[1] - bounds_margin
        or p[1] > hi[1] + bounds_margin
        or p[2] > hi[2] + bounds_margin
    )
    rew = float(0.0)
    if usable:
        # progress towards the gate that was next at the start of the step (Song et al. 2021)
        rew = target_distance[e] - wp.length(p - cp_position[e, target[e] % n])
        rew = rew + gate_bonus * float(passed[e])
    rew = rew - body_rate_penalty * wp.length(w)
    if collided or outside:
        rew = rew - crash_penalty
    target[e] = nxt
    target_distance[e] = dist
    reward[e] = rew
    term = collided or outside or (not usable) or laps[e] >= target_laps
    trunc = elapsed[e] >= max_episode_steps
    terminated[e] = term
    truncated[e] = trunc
    gates_out[e] = checkpoints_passed[e]
    laps_out[e] = laps[e]
    collision_out[e] = collided
    out_of_bounds_out[e] = outside
    autoreset[e] = wp.where(term or trunc, 1, 0)


class GatesVectorEnv(CourseVectorEnv):
    """A quadrotor racing through procedurally generated gate courses; every finished env gets a new course.

    ## Description

    Each of ``num_envs`` envs holds its own closed course of gates (a loop of rectangular
    frames in 3-D, :class:`~trackgen_env.GateGenConfig`, facing along the loop) and a
    quadrotor commanded, as in drone-racing RL (Kaufmann et al., Nature 2023; Song et al.,
    IROS 2021), by a collective thrust and body rates, with a first-order body-rate lag,
    gravity and linear rotor drag (:mod:`trackgen_env.envs.quadrotor`). The default drone
    is a 250 g micro quad (thrust-to-weight 3) on courses of 7 gates 0.6 m wide, 2-3 m
    apart in an 8 m disc. The goal is to fly through the gates in order without touching a frame or the
    ground. Everything runs in Warp kernels on ``device``; ``step()`` replays one recorded
    graph: quadrotor dynamics -> ``course.step()`` (gate passes in order, frame collision of
    the body box, localization on the course line) -> reward and termination ->
    observations, with the auto-reset of ``autoreset_mode`` as the course's masked
    regeneration (``advance=True``) inside the same graph (:mod:`trackgen_env.envs.base`;
    ``docs/envs.md``).

    ## Action Space

    ``Box(-1, 1, (num_envs, 4), float32)``:

    | Index | Action        | Physical meaning (default :class:`QuadrotorParams`)                    |
    |-------|---------------|-------------------------------------------------------------------------|
    | 0     | thrust        | collective thrust ``(a + 1) / 2 * thrust_to_weight * m * g`` [N]: 0 .. 7.36 N; hover at a = -1/3 |
    | 1     | roll rate     | body-rate command about body x, ``a * max_body_rate[0]`` [rad/s]: +-8  |
    | 2     | pitch rate    | body-rate command about body y, ``a * max_body_rate[1]`` [rad/s]: +-8  |
    | 3     | yaw rate      | body-rate command about body z, ``a * max_body_rate[2]`` [rad/s]: +-3  |

    Body frame: x forward, y left, z up along the thrust. Values outside [-1, 1]
    (including +-inf) are clipped. Any real floating dtype is accepted (converted to
    float32); NaN raises ``ValueError``, another dtype ``TypeError``, another shape
    ``ValueError``; a refused action leaves the env unchanged. With ``output="torch"`` a
    torch tensor is copied into the action buffer on the device (no host round trip; its
    NaN are not checked, which would synchronise).

    ## Observation Space

    ``Box(-inf, inf, (num_envs, 44), float32)``:

    | Index   | Observation                                                              | Unit  |
    |---------|--------------------------------------------------------------------------|-------|
    | 0-2     | velocity in the body frame                                               | m/s   |
    | 3-11    | attitude: rotation matrix body -> world, row-major                       | -     |
    | 12-14   | body rates (roll, pitch, yaw)                                            | rad/s |
    | 15      | altitude z above the ground                                              | m     |
    | 16-27   | next gate's 4 opening corners relative to the drone, in the body frame:  | m     |
    |         | (x, y, z) of top-left, top-right, bottom-right, bottom-left as seen flying through |  |
    | 28-39   | the gate after it, the same way                                          | m     |
    | 40-43   | the action applied at the previous step, clipped (0 after a reset)       | -     |

    The *next gate* is the one the course's ``Progress`` expects next, except at the start:
    until the drone crosses the plane of gate 0 (the start/finish gate, just ahead of the
    start pose) it is gate 0. The opening is the one ``Progress`` counts a pass through:
    lateral axis ``normalize(z x direction)``, vertical axis ``direction x lateral``. An env
    whose course is invalid (the generator's retries all failed) observes zeros at 16-39
    and terminates.

    ## Rewards

    Per step (Song et al. 2021): the progress towards the next gate ``g`` of the start of
    the step, ``|g - p_{t-1}| - |g - p_t|`` [m]; plus ``gate_bonus`` when a gate is
    passed in order; minus ``body_rate_penalty * |w|`` (|w| in rad/s); minus
    ``crash_penalty`` on the step that ends in a collision or out of bounds. The step
    that auto-resets an env gives 0.

    ## Starting State

    Every env starts at rest, level, at its course's start pose: ``start_clearance`` (1 m)
    behind gate 0, facing it. Gate 0 is the start/finish gate (as a track's start line):
    flying through it at the start counts no pass; gates 1, 2, ... then count in order, and
    the lap ends through gate 0 (``num_gates`` passes per lap).

    ## Episode End

    * Termination: the body box touches a gate frame (the course's ``collision``
      component), the drone reaches the ground (z <= 0), it leaves the course bounds
      (the bounding box of the gates and of the course line through them, grown by
      ``bounds_margin``, up to ``bounds_margin`` above the highest point), it completed
      ``laps`` laps (gates passed in order), or the course is invalid.
    * Truncation: ``max_episode_steps`` steps (counted on the device).

    Auto-reset (``autoreset_mode``, ``docs/envs.md``), always onto a **new** course (the
    course's masked regeneration with ``advance=True``):

    * ``NEXT_STEP`` (default): the step after an env ends ignores its action and returns
      its first observation, reward 0, terminated and truncated False.
    * ``SAME_STEP``: the step that ends an env returns its reward and termination, its new
      episode's first observation, and ``info["final_obs"]`` ``[E, 44]`` / ``info["final_info"]``
      (the ended step's info arrays) with the masks ``"_final_obs"`` / ``"_final_info"``.
    * ``DISABLED``: no auto-reset; ``reset(options={"reset_mask": m})`` restarts the envs of
      ``m``. A finished env stepped without a reset goes on flying from where it ended.

    ``info`` holds ``"gates_passed"`` ([E] int32, gates passed in order this episode),
    ``"laps"`` ([E] int32), ``"collision"`` ([E] bool: a gate frame or the ground was hit
    this step) and ``"out_of_bounds"`` ([E] bool), each with its Gymnasium ``"_name"`` mask.

    ## Arguments

    * ``num_envs``: number of envs (>= 1).
    * ``device``: Warp device; None means ``"cuda:0"`` when Warp sees a GPU, else ``"cpu"``.
    * ``max_episode_steps``: truncation; ``"auto"`` (default): 1500 steps = 30 s, and with a
      ``layout`` at least ``laps`` laps of its gate-to-gate length at ``LAYOUT_MIN_SPEED`` =
      1 m/s; an int in ``[1, 2**31 - 1]``; None: no limit.
    * ``laps``: laps to finish an episode (default 1); None: no limit.
    * ``seed``: int seed of the courses (env i uses ``hash(seed, i)``), or ``num_envs`` ints
      (env i uses ``seed[i]``); None draws one from the OS. ``reset(seed=s)`` reseeds the same way.
    * ``render_mode``: None or ``"rgb_array"``: ``render()`` returns a tuple of ``num_envs``
      RGB frames ``[render_size, render_size, 3]`` uint8, drawn on the device: the course
      line and the gates from above (the next gate in green), the drone with its heading,
      and along the bottom quarter a side view (x against altitude).
    * ``render_size``: frame side in pixels (default 256).
    * ``autoreset_mode``: a ``gymnasium.vector.AutoresetMode`` or its value (default
      ``NEXT_STEP``); also ``metadata["autoreset_mode"]``.
    * ``output``: ``"numpy"`` (default: fresh host arrays) or ``"torch"`` (torch tensors on
      the env's device, zero-copy views of the env's buffers, overwritten by the next step:
      clone to keep; no host sync inside ``step()`` on CUDA).
    * ``quadrotor``: a :class:`~trackgen_env.envs.quadrotor.QuadrotorParams` (mass, thrust,
      rate limits, lag, drag, ``dt``, ``substeps``, body box); default the 250 g micro quad
      at 50 Hz.
    * ``gates``: a :class:`~trackgen_env.GateGenConfig` (its ``num_envs`` and ``device`` are
      replaced by the env's); default ``GateGenConfig(gate_width=0.6)``.
    * ``layout``: a :class:`~trackgen_env.generators.gate_layouts.RaceLayout` (e.g.
      ``load_gate_layout("split_s.yaml")``): fly this given course in every env instead of
      generated ones (``gates`` must then be None; ``GateGenerator.from_layout``).
    * ``gate_bonus``: reward per gate passed in order (default 1).
    * ``crash_penalty``: subtracted on a collision or leaving the bounds (default 5).
    * ``body_rate_penalty``: [1/(rad/s)] weight of ``|w|`` (default 0.002).
    * ``bounds_margin``: [m] the course bounds around the gates and the course line (default 2).
    * ``bar_thickness``: [m] section of the gate frames' bars (``tools.FrameCollision``; default 0.05).
    * ``capture``: record the step as one graph (default True); False runs it eagerly.

    ## Version History

    * v0: initial version; ``autoreset_mode`` (NEXT_STEP, SAME_STEP, DISABLED), ``output``
      ("numpy", "torch") and on-device ``render_mode="rgb_array"`` added without changing
      the default behaviour.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50, "autoreset_mode": AutoresetMode.NEXT_STEP}
    action_labels = "(thrust, roll rate, pitch rate, yaw rate)"
    info_fields = (("gates_passed", wp.int32), ("laps", wp.int32), ("collision", wp.bool), ("out_of_bounds", wp.bool))
    argument_attributes = {"gates": "gates_config"}

    def __init__(
        self,
        num_envs: int = 1,
        device: str | None = None,
        *,
        max_episode_steps: int | None | str = "auto",
        laps: int | None = 1,
        seed: int | None = None,
        render_mode: str | None = None,
        render_size: int = 256,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        output: str = "numpy",
        quadrotor: QuadrotorParams | None = None,
        gates: GateGenConfig | None = None,
        layout: RaceLayout | None = None,
        gate_bonus: float = 1.0,
        crash_penalty: float = 5.0,
        body_rate_penalty: float = 0.002,
        bounds_margin: float = 2.0,
        bar_thickness: float = 0.05,
        capture: bool = True,
    ):
        if quadrotor is not None and not isinstance(quadrotor, QuadrotorParams):
            raise TypeError(f"quadrotor must be a QuadrotorParams or None, got {type(quadrotor).__name__}")
        quadrotor = quadrotor if quadrotor is not None else QuadrotorParams()
        steps = max_episode_steps
        if isinstance(max_episode_steps, str):
            if max_episode_steps != "auto":
                raise ValueError(f'max_episode_steps must be "auto", None (no limit) or an int, got {max_episode_steps!r}')
            steps = DEFAULT_MAX_EPISODE_STEPS
            if isinstance(layout, RaceLayout):
                # a real layout may be many generated courses long: time for its laps at LAYOUT_MIN_SPEED
                lap_count = laps if isinstance(laps, int) and laps >= 1 else 1
                need = lap_count * layout.length() / (LAYOUT_MIN_SPEED * quadrotor.dt)
                steps = max(steps, math.ceil(need))
        seed = self._setup(num_envs, device, max_episode_steps=steps, laps=laps, seed=seed,
                           render_mode=render_mode, autoreset_mode_=autoreset_mode, output=output,
                           render_size=render_size)
        self.quadrotor = quadrotor
        if gates is not None and not isinstance(gates, GateGenConfig):
            raise TypeError(f"gates must be a GateGenConfig or None, got {type(gates).__name__}")
        if layout is None:
            base = gates if gates is not None else GateGenConfig(gate_width=DEFAULT_GATE_WIDTH)
            source = dataclasses.replace(base, num_envs=self.num_envs, device=str(self.device))
            seeds = {"seeds": seed}
        else:
            if gates is not None:
                raise TypeError("pass either gates= (generated courses) or layout= (a given race layout), not both")
            source = GateGenerator.from_layout(layout, num_envs=self.num_envs, device=str(self.device), seeds=seed)
            seeds = {}
        self.gate_bonus = check_float("gate_bonus", gate_bonus, lo=0.0)
        self.crash_penalty = check_float("crash_penalty", crash_penalty, lo=0.0)
        self.body_rate_penalty = check_float("body_rate_penalty", body_rate_penalty, lo=0.0)
        self.bounds_margin = check_float("bounds_margin", bounds_margin, lo=0.0, lo_open=True)
        self.bar_thickness = check_float("bar_thickness", bar_thickness, lo=0.0, lo_open=True)
        self._spaces(OBS_DIM, 4)

        self.course = Course.gates(source, collision=tools.FrameCollision(self.bar_thickness), **seeds)
        self.gates_config = self.course.generator.config
        self.layout = layout  # the race layout flown (None: generated courses)

        E, dev = self.num_envs, self.device
        self.drone = Quadrotor(E, dev, self.quadrotor)
        # the drones' state arrays (stable, written in place by the dynamics)
        d = self.drone
        self.position, self.velocity, self.orientation, self.body_rate = d.position, d.velocity, d.orientation, d.body_rate
        self.half_extents = d.half_extents
        self.course.bind(position=self.position, orientation=self.orientation, half_extents=self.half_extents)
        self._target = wp.zeros(E, dtype=wp.int32, device=dev)
        self._target_distance = wp.zeros(E, dtype=wp.float32, device=dev)
        self._finish_init(wp.zeros((E, 4), dtype=wp.float32, device=dev), capture)

    # -- what differs from the track env: the quadrotor, the observation, the picture --------
    def _dynamics(self, reset_mask: wp.array, reset_only: bool):
        r = self.course.result
        self.drone.step(self._action, reset_mask, r.start_position, r.start_orientation, reset_only=reset_only)

    def _observe(self, res, reset_mask: wp.array, restart: bool):
        cps, ev, info = self.course.checkpoints, res.events, self._info
        wp.launch(
            _observe,
            self.num_envs,
            inputs=[
                reset_mask, self.position, self.velocity, self.orientation, self.body_rate, self.drone.last_action,
                self.drone.elapsed,
                cps.position, cps.direction, cps.half_width, cps.half_height, cps.num_checkpoints,
                self.course.course_line.centerline, self.course.course_line.num_points, self.course.result.valid,
                ev.passed, ev.next_checkpoint, ev.checkpoints_passed, ev.laps, res.contacts.hit,
                self._step_limit, self._lap_limit, self.gate_bonus, self.crash_penalty, self.body_rate_penalty,
                self.bounds_margin, int(restart),
                self._target, self._target_distance,
            ],
            outputs=[
                self._autoreset, self._obs, self._reward, self._terminated, self._truncated,
                info["gates_passed"], info["laps"], info["collision"], info["out_of_bounds"],
            ],
            device=self.device,
        )

    def _draw(self, frames: wp.array, views: wp.array, num: int):
        cps, line = self.course.checkpoints, self.course.course_line
        render.draw_gates(
            frames, views, num, cps.position, cps.direction, cps.half_width, cps.half_height, cps.num_checkpoints,
            self._target, line.centerline, line.num_points, self.position, self.orientation,
            max(self.quadrotor.half_extents[:2]),
        )

    # -- inspection -------------------------------------------------------------------------
    def drone_state(self) -> dict[str, np.ndarray]:
        """Host copies of every drone's state: ``position [E, 3]`` [m], ``velocity [E, 3]`` [m/s],
        ``orientation [E, 4]`` (x, y, z, w), ``body_rate [E, 3]`` [rad/s]."""
        return {
            "position": self.position.numpy().copy(),
            "velocity": self.velocity.numpy().copy(),
            "orientation": self.orientation.numpy().copy(),
            "body_rate": self.body_rate.numpy().copy(),
        }

    def courses(self) -> list[dict[str, Any]]:
        """Host copies of every env's course: ``gate_position [G, 3]`` [m], ``gate_orientation
        [G, 4]``, ``gate_width``, ``gate_height`` [m], ``course_line [L, 3]`` [m], ``valid``."""
        r, line = self.course.result, self.course.course_line
        gp, go = r.gate_position.numpy(), r.gate_orientation.numpy()
        gw, gh, ng, v = r.gate_width.numpy(), r.gate_height.numpy(), r.num_gates.numpy(), r.valid.numpy()
        cl, nl = line.centerline.numpy(), line.num_points.numpy()
        return [
            {
                "gate_position": gp[e, : ng[e]].copy(),
                "gate_orientation": go[e, : ng[e]].copy(),
                "gate_width": float(gw[e]),
                "gate_height": float(gh[e]),
                "course_line": cl[e, : nl[e]].copy(),
                "valid": bool(v[e]),
            }
            for e in range(self.num_envs)
        ]

