"""``TrackGen-Gates-v0``: a quadrotor racing through freshly generated gate courses (a Gymnasium vector env)."""

from __future__ import annotations

from typing import Any

import numpy as np
import warp as wp
from gymnasium.vector import AutoresetMode

from ..core import env_loop
from . import render
from .. import tools
from ..core.checks import check_float, check_range, first_bad
from ..core.polyline import BIG, wrap_index
from ..core.seeding import Stream, random_key, uniform, uniform_range
from ..course import Course
from ..course.presets import WIDTH_PARAM, check_gate_width
from ..generators.gate_layouts import RaceLayout, gate_axes
from ..generators.gates import GateGenConfig, GateGenerator
from ..pipeline import PipelineSpec, Registry
from ..tools.course_size import construction_bound
from .config import UNSET, GatesRewardConfig, GatesStartConfig, grouped
from .base import CourseVectorEnv, auto_episode_steps, obs_layout
from .quadrotor import Quadrotor, QuadrotorParams
from .source import generated_source

__all__ = ["GatesVectorEnv", "OBS_FIELDS", "OBS_DIM", "DEFAULT_GATE_WIDTH", "START_MODES", "RewardWeights"]

wp.set_module_options({"enable_backward": False})

#: [m] width (and height, unless the config sets one) of the gate openings when ``gates`` is not given.
DEFAULT_GATE_WIDTH = 0.6

#: ``max_episode_steps="auto"``: 30 s at the default 50 Hz.
DEFAULT_MAX_EPISODE_STEPS = 1500
#: [m/s] with a ``layout``, ``"auto"`` allows its laps at this average speed along the gates.
LAYOUT_MIN_SPEED = 1.0

#: The start-state distributions of ``start=``: the race start (at rest behind gate 0), or a
#: share ``random_start_prob`` of episodes on the course line before a random gate.
START_MODES = ("first_gate", "random_gate")


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
def _start_state(
    envs_per_thread: int,
    mask: wp.array(dtype=wp.int32),
    # the envs' random streams (the generator's seeds and counters)
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    stream: int,
    random_start: int,
    random_start_prob: float,
    # the course: gates (checkpoints), course line, standard start pose
    num_checkpoints: wp.array(dtype=wp.int32),
    line: wp.array2d(dtype=wp.vec3),
    samples_per_gate: int,
    sampled_gate: wp.array(dtype=wp.int32),
    standard_position: wp.array(dtype=wp.vec3),
    standard_orientation: wp.array(dtype=wp.quat),
    # perturbation bounds
    distance_lo: float,
    distance_hi: float,
    offset: float,
    tilt: float,
    yaw: float,
    speed_lo: float,
    speed_hi: float,
    # outputs
    out_position: wp.array(dtype=wp.vec3),
    out_orientation: wp.array(dtype=wp.quat),
    out_velocity: wp.array(dtype=wp.vec3),
    out_progress_start: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, mask.shape[0])):
        if mask[e] == 0:
            continue
        n = num_checkpoints[e]
        p = standard_position[e]
        q = standard_orientation[e]
        v = wp.vec3(0.0)
        gate = int(0)  # the gate expected first: gate 0 from the standard start
        if random_start != 0 and n >= 2:
            key = random_key(seeds[e], counters[e], stream)
            if uniform(key, 0) < random_start_prob:
                gate = wp.min(wp.max(sampled_gate[e], 0), n - 1)
                # walk back along the course line from gate k's point (point k * samples_per_gate)
                count = n * samples_per_gate
                i0 = gate * samples_per_gate
                leg = float(0.0)
                for j in range(samples_per_gate):
                    leg = leg + wp.length(line[e, wrap_index(i0 - j, count)] - line[e, wrap_index(i0 - j - 1, count)])
                # at most 45 % of the leg back: the start stays on the far side of the previous gate
                s = wp.min(uniform_range(key, 1, distance_lo, distance_hi), 0.45 * leg)
                point = line[e, i0]
                tangent = wp.vec3(1.0, 0.0, 0.0)
                for j in range(samples_per_gate):
                    a = line[e, wrap_index(i0 - j, count)]
                    b = line[e, wrap_index(i0 - j - 1, count)]
                    seg = wp.length(a - b)
                    if seg > 1.0e-9:
                        tangent = (a - b) / seg
                    if s <= seg:
                        point = a + (b - a) * (s / wp.max(seg, 1.0e-9))
                        break
                    s = s - seg
                    point = b
                lateral = wp.normalize(wp.cross(wp.vec3(0.0, 0.0, 1.0), tangent))
                up = wp.cross(tangent, lateral)
                p = (point + uniform_range(key, 2, -offset, offset) * lateral
                     + uniform_range(key, 3, -offset, offset) * up)
                heading = wp.atan2(tangent[1], tangent[0]) + uniform_range(key, 4, -yaw, yaw)
                roll = uniform_range(key, 5, -tilt, tilt)
                pitch = uniform_range(key, 6, -tilt, tilt)
                q = wp.normalize(
                    wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), heading)
                    * wp.quat_from_axis_angle(wp.vec3(0.0, 1.0, 0.0), pitch)
                    * wp.quat_from_axis_angle(wp.vec3(1.0, 0.0, 0.0), roll)
                )
                v = uniform_range(key, 7, speed_lo, speed_hi) * tangent
        out_position[e] = p
        out_orientation[e] = q
        out_velocity[e] = v
        # Progress starts "on" the gate before the first expected one, so that one counts first
        out_progress_start[e] = wp.where(n > 0, wrap_index(gate - 1, wp.max(n, 1)), 0)


@wp.struct
class RewardWeights:
    """The reward terms' weights (frozen into the recorded step)."""

    progress: float
    gate_bonus: float
    crash: float
    body_rate: float
    smoothness: float
    approach: float
    approach_distance: float


@wp.kernel
def _observe(
    envs_per_thread: int,
    # inputs: which envs were reset this step
    reset_mask: wp.array(dtype=wp.int32),
    # inputs: the drone
    position: wp.array(dtype=wp.vec3),
    velocity: wp.array(dtype=wp.vec3),
    orientation: wp.array(dtype=wp.quat),
    body_rate: wp.array(dtype=wp.vec3),
    last_action: wp.array2d(dtype=wp.float32),
    # inputs: the course (gate checkpoints, validity) and its step (progress)
    cp_position: wp.array2d(dtype=wp.vec3),
    cp_direction: wp.array2d(dtype=wp.vec3),
    cp_half_width: wp.array2d(dtype=wp.float32),
    cp_half_height: wp.array2d(dtype=wp.float32),
    num_checkpoints: wp.array(dtype=wp.int32),
    valid: wp.array(dtype=wp.int32),
    passed: wp.array(dtype=wp.int32),
    next_checkpoint: wp.array(dtype=wp.int32),
    restart: int,
    # the gate the reward measures towards (the reward kernel after this one moves it)
    target: wp.array(dtype=wp.int32),
    # output
    obs: wp.array2d(dtype=wp.float32),
):
    """The observation of every env (with ``restart``, of the masked envs only): the drone's own
    state and the corners of the next two gates from the target gate on."""
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        was_reset = reset_mask[e] != 0
        if restart != 0 and not was_reset:
            continue
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

        if usable:
            # the target as the reward kernel leaves it: a reset env's first expected gate (Progress's
            # reset_to ran before this step's course.step), else the target, moved on by a counted pass
            tgt = next_checkpoint[e] % n
            if not was_reset and passed[e] == 0:
                tgt = target[e] % n
            for k in range(2):
                g = (tgt + k) % n
                _write_corners(obs, e, _NEXT_GATE + (_SECOND_GATE - _NEXT_GATE) * k, p, q, cp_position[e, g],
                               cp_direction[e, g], cp_half_width[e, g], cp_half_height[e, g])
        else:
            for i in range(_NEXT_GATE, _CORNERS_END):
                obs[e, i] = 0.0


@wp.kernel
def _reward_termination(
    envs_per_thread: int,
    # inputs: which envs were reset this step
    reset_mask: wp.array(dtype=wp.int32),
    # inputs: the drone
    position: wp.array(dtype=wp.vec3),
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
    weights: RewardWeights,
    bounds_margin: float,
    restart: int,
    # state (in/out): the gate the reward measures towards, the distance to it, the last
    # position and action (the gate-plane test, the smoothness term)
    target: wp.array(dtype=wp.int32),
    target_distance: wp.array(dtype=wp.float32),
    prev_position: wp.array(dtype=wp.vec3),
    prev_action: wp.array2d(dtype=wp.float32),
    # outputs
    autoreset: wp.array(dtype=wp.int32),
    reward: wp.array(dtype=wp.float32),
    terminated: wp.array(dtype=wp.bool),
    truncated: wp.array(dtype=wp.bool),
    gates_out: wp.array(dtype=wp.int32),
    laps_out: wp.array(dtype=wp.int32),
    collision_out: wp.array(dtype=wp.bool),
    out_of_bounds_out: wp.array(dtype=wp.bool),
    missed_gate_out: wp.array(dtype=wp.bool),
):
    """Reward, termination, the info arrays and the autoreset mask of every env (with ``restart``,
    of the masked envs only: they get reset info and keep the ended episode's reward and flags)."""
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        was_reset = reset_mask[e] != 0  # read before autoreset (may be the same array) is written
        if restart != 0 and not was_reset:
            continue
        n = num_checkpoints[e]
        usable = valid[e] != 0 and n >= 2
        p = position[e]
        w = body_rate[e]

        if was_reset:
            # the gate Progress expects first (its reset_to ran before this step's course.step)
            nxt = int(0)
            if usable:
                nxt = next_checkpoint[e] % n
            target[e] = nxt
            prev_position[e] = p
            for i in range(4):
                prev_action[e, i] = 0.0
            if usable:
                target_distance[e] = wp.length(p - cp_position[e, nxt])
            else:
                target_distance[e] = 0.0
            if restart == 0:  # a restart keeps the ended episode's reward and termination
                reward[e] = 0.0
                terminated[e] = False
                truncated[e] = False
            gates_out[e] = 0
            laps_out[e] = 0
            collision_out[e] = False
            out_of_bounds_out[e] = False
            missed_gate_out[e] = False
            autoreset[e] = 0
            continue

        rew = float(0.0)
        missed = False
        outside = False
        prev = prev_position[e]
        if usable:
            tgt = target[e] % n
            c = cp_position[e, tgt]
            d = cp_direction[e, tgt]
            # progress towards the target gate's centre (Song et al. 2021; Kaufmann et al. 2023)
            rew = weights.progress * (target_distance[e] - wp.length(p - c))
            if passed[e] != 0:
                rew = rew + weights.gate_bonus * float(passed[e])  # passed counts every gate of the step
            else:
                # crossing the target gate's plane forwards without a counted pass: outside the opening
                dq = wp.dot(prev - c, d)
                dp = wp.dot(p - c, d)
                missed = dq < 0.0 and dp >= 0.0
            if weights.approach > 0.0 and passed[e] == 0:
                # Song et al. 2021's safety term: near the plane, penalise the distance from the gate's normal axis
                rel = p - c
                dist_plane = wp.abs(wp.dot(rel, d))
                dist_axis = wp.length(rel - wp.dot(rel, d) * d)
                f = wp.max(1.0 - dist_plane / weights.approach_distance, 0.0)
                spread = wp.max((1.0 - f) * (2.0 * cp_half_width[e, tgt]) / 6.0, 0.05)
                rew = rew - weights.approach * f * f * (1.0 - wp.exp(-0.5 * dist_axis * dist_axis / spread))
            # the target switches only on a counted pass
            if passed[e] != 0:
                tgt = next_checkpoint[e] % n
            target[e] = tgt
            target_distance[e] = wp.length(p - cp_position[e, tgt])
            # course bounds: the bounding box of the gates (up to the top of each opening) and the
            # course line between them (a turn swings out past the gates) grown by the margin
            # (ground: z = 0)
            lo = wp.vec3(BIG)
            hi = wp.vec3(-BIG)
            for g in range(n):
                lo = wp.min(lo, cp_position[e, g])
                hi = wp.max(hi, cp_position[e, g] + wp.vec3(0.0, 0.0, cp_half_height[e, g]))
            for k in range(wp.min(line_points[e], line.shape[1])):
                lo = wp.min(lo, line[e, k])
                hi = wp.max(hi, line[e, k])
            outside = (
                p[0] < lo[0] - bounds_margin
                or p[0] > hi[0] + bounds_margin
                or p[1] < lo[1] - bounds_margin
                or p[1] > hi[1] + bounds_margin
                or p[2] > hi[2] + bounds_margin
            )
        prev_position[e] = p

        collided = p[2] <= 0.0 or (usable and hit[e] != 0)
        rew = rew - weights.body_rate * wp.length(w)
        smooth = float(0.0)
        for i in range(4):
            da = last_action[e, i] - prev_action[e, i]
            smooth = smooth + da * da
            prev_action[e, i] = last_action[e, i]
        rew = rew - weights.smoothness * smooth
        crashed = collided or outside or missed
        if crashed:
            rew = rew - weights.crash
        reward[e] = rew
        term = crashed or (not usable) or laps[e] >= target_laps
        trunc = elapsed[e] >= max_episode_steps
        terminated[e] = term
        truncated[e] = trunc
        gates_out[e] = checkpoints_passed[e]
        laps_out[e] = laps[e]
        collision_out[e] = collided
        out_of_bounds_out[e] = outside
        missed_gate_out[e] = missed
        autoreset[e] = wp.where(term or trunc, 1, 0)


_OPENING = {"gate_frames.gate_width": ("width", 0), "gate_frames.gate_height": ("height", 1)}


def _body_section(quadrotor: QuadrotorParams) -> tuple[float, float]:
    """[m] the drone's cross-section flying level through a gate, as the float32 the arrays store:
    its body box's narrower horizontal side (``2 min(hx, hy)``) by its height (``2 hz``)."""
    hx, hy, hz = (float(np.float32(h)) for h in quadrotor.half_extents)
    return 2.0 * min(hx, hy), 2.0 * hz


def _refuse_small_opening(what: str, side: str, got: str, quadrotor: QuadrotorParams) -> ValueError:
    w, h = _body_section(quadrotor)
    return ValueError(f"{what} must be larger than the drone flying level through it ({w:g} m wide, {h:g} m tall: "
                      f"QuadrotorParams.half_extents {tuple(quadrotor.half_extents)}), got a {side} of {got}: a drone "
                      f"flying level cannot pass such a gate without touching its frame, and that env would crash at "
                      f"every gate; pass larger gates or a smaller quadrotor")


def _check_drone_fits(source, quadrotor: QuadrotorParams, layout: RaceLayout | None = None) -> None:
    """Refuse gates whose smallest opening (construction value or randomizer's lo; a race layout's
    smallest gate, which the course flies) is at most the drone's level cross-section
    (:func:`_body_section`). Each side on its own (width against width, height against height)."""
    section = _body_section(quadrotor)
    if layout is not None:
        for side, axis, sizes in (("width", 0, layout.width), ("height", 1, layout.height)):
            g = int(np.argmin(sizes))
            if np.float32(sizes[g]) <= section[axis]:
                raise _refuse_small_opening(f"{layout.name}: gate {g}'s opening (the course flies the smallest)", side,
                                            f"{sizes[g]:g} m", quadrotor)
        return
    spec = source.to_spec() if isinstance(source, GateGenConfig) else getattr(source, "spec", source)
    for name, (side, axis) in _OPENING.items():
        least = construction_bound(spec, name, "lo")
        if least is not None and np.float32(least) <= section[axis]:
            raise _refuse_small_opening(f"the gate opening ({name})", side, f"{least:g} m", quadrotor)


def _drone_fits_live(quadrotor: QuadrotorParams):
    """A ``Params`` validator of the opening's width and height: refuse a live value (or range end)
    at most the drone's level cross-section, in any env (each side on its own: no order between
    the two sets)."""
    section = _body_section(quadrotor)

    def check(name: str, values: np.ndarray) -> None:
        side, axis = _OPENING[name]
        small = np.asarray(values) <= section[axis]
        if np.any(small):
            raise _refuse_small_opening(f"params[{name!r}]", side, first_bad(values, small, " m"), quadrotor)

    return check


def _check_above_ground(layout: RaceLayout, generator: GateGenerator) -> None:
    """Refuse a race layout with a gate whose opening lies wholly at or below the ground (z = 0), or
    whose start pose (``generator``'s, behind gate 0) does: the drone would start in the ground."""
    start = generator.result.start_position.numpy()[0]
    if start[2] <= 0.0:
        raise ValueError(f"{layout.name}: the start, behind gate 0 at ({start[0]:.3g}, {start[1]:.3g}, "
                         f"{start[2]:.3g}) m, lies at or below "
                         f"the ground (the gates env's ground is z = 0, z up): the drone would crash at every start; "
                         f"raise gate 0 (its centre is at z = {layout.position[0, 2]:g} m)")
    side, up = gate_axes(layout.orientation)
    top = layout.position[:, 2] + 0.5 * (layout.width * np.abs(side[:, 2]) + layout.height * np.abs(up[:, 2]))
    low = np.flatnonzero(top <= 0.0)
    if low.size:
        g = int(low[0])
        raise ValueError(f"{layout.name}: gate {g}'s opening lies below the ground (its highest point is at z = "
                         f"{top[g]:.3g} m; the gates env's ground is z = 0, z up): no drone can fly through it. A "
                         f"layout "
                         f"in z-down coordinates (NED) needs its z negated")


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
    the body box, localization on the course line) -> observations -> reward and
    termination, with the auto-reset of ``autoreset_mode`` as the course's masked
    regeneration (``advance=True``) inside the same graph (:mod:`trackgen_env.envs.base`;
    ``docs/envs.md``).

    ## Action Space

    ``Box(-1, 1, (num_envs, 4), float32)``:

    | Index | Action        | Physical meaning (default :class:`QuadrotorParams`)                    |
    |-------|---------------|-------------------------------------------------------------------------|
    | 0     | thrust        | collective thrust centred on hover: 0 = hover (2.45 N), +1 = max (7.36 N), -1 = none |
    | 1     | roll rate     | body-rate command about body x, ``a * max_body_rate[0]`` [rad/s]: +-8  |
    | 2     | pitch rate    | body-rate command about body y, ``a * max_body_rate[1]`` [rad/s]: +-8  |
    | 3     | yaw rate      | body-rate command about body z, ``a * max_body_rate[2]`` [rad/s]: +-3  |

    The thrust for an action a is ``m g (1 + a (T/W - 1))`` for a >= 0 and ``m g (1 + a)`` for a < 0.
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

    The *next gate* is the one the reward measures towards: the gate ``Progress`` expects
    next, which switches only on a counted pass (from the standard start: gate 0). The
    opening is the one ``Progress`` counts a pass through: lateral axis
    ``normalize(z x direction)``, vertical axis ``direction x lateral``. An env whose
    course is invalid (the generator's retries all failed) observes zeros at 16-39 and
    terminates.

    ## Rewards

    Per step, each term a constructor argument (``g``: the centre of the next gate, which
    switches only on a counted pass; Song et al., "Autonomous drone racing with deep
    reinforcement learning", IROS 2021; Kaufmann et al., Nature 2023):

    | Term | Argument (default) | Per step | Typical magnitude |
    |------|--------------------|----------|-------------------|
    | progress | ``progress_weight`` (1) | ``w (|g - p_{t-1}| - |g - p_t|)`` [m] | +0.05 at 2.5 m/s, +2.5 a 2.5 m leg |
    | gate | ``gate_bonus`` (2) | once per gate passed in order | +2 per gate (a 7-gate lap: 14) |
    | crash | ``crash_penalty`` (2) | a collision, the ground, leaving the bounds, or a missed gate | -2, once |
    | body rate | ``body_rate_penalty`` (0.002) | ``-w |omega|`` [rad/s] | -0.002 to -0.01 |
    | smoothness | ``smoothness_penalty`` (2e-4) | ``-w |a_t - a_{t-1}|^2`` | ~-1e-4 (a random policy: ~-1e-3) |
    | approach | ``approach_penalty`` (0: off) | ``-w f^2 (1 - exp(-d_n^2 / (2 s)))`` (Song et al.) | 0 to -w off-axis |

    (A missed gate: the next gate's plane crossed outside its opening. Approach: ``f = max(1 - d_p /
    approach_distance, 0)``, ``s = max((1 - f) W / 6, 0.05)``; ``d_p``: distance to the next gate's
    plane, ``d_n``: to its normal axis, ``W``: its width.)
    The progress is a potential difference, so flying back and forth earns nothing; a
    gate counts only when crossed inside its opening, front to back, in order, once. The
    crash penalty is a little less than one gate's progress and bonus (about 4.5): a
    policy that tries for a gate and crashes still does better than one that hovers,
    which earns 0. The step that auto-resets an env gives 0.

    ## Starting State

    ``start="first_gate"`` (default, the race start, and what evaluation uses): at rest,
    level, at the course's start pose ``start_clearance`` (1 m) behind gate 0, facing it.
    Gate 0 is the first gate counted; a lap is every gate passed once, in order (it ends
    through the last gate).

    ``start="random_gate"`` (training; Kaufmann et al. 2023 start every agent at a random
    gate): a share ``random_start_prob`` of episodes starts instead before a random gate
    ``k`` (the course's ``CheckpointSampler``), on the course line ``start_distance`` [m]
    before it (at most 45 % of the leg), offset up to ``start_offset`` [m] across the line,
    tilted up to ``start_tilt`` [rad] in roll and pitch, turned up to ``start_yaw`` [rad] off
    the line's heading, moving along the line at ``start_speed`` [m/s]; ``Progress`` starts
    there (``reset_to``), so gate ``k`` is the first gate counted and the lap ends through
    gate ``k - 1``. Every draw comes from the env's stream ``(seed, counter)`` on the device,
    inside the recorded step: env i's start does not depend on the other envs.

    ## Episode End

    * Termination: the body box touches a gate frame (the course's ``collision``
      component), the drone reaches the ground (z <= 0), it leaves the course bounds
      (the bounding box of the gates, up to the top of each opening, and of the course line
      through them, grown by ``bounds_margin`` on every side but the ground), it crosses the
      next gate's plane forwards outside the opening (a missed gate), it completed ``laps``
      laps (gates passed in order), or the course is invalid.
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
    this step), ``"out_of_bounds"`` ([E] bool) and ``"missed_gate"`` ([E] bool: the next
    gate's plane crossed outside its opening this step), each with its Gymnasium ``"_name"`` mask.

    ## Arguments

    * ``num_envs``: number of envs (>= 1).
    * ``device``: Warp device; None means ``"cuda:0"`` when Warp sees a GPU, else ``"cpu"``.
    * ``max_episode_steps``: truncation; ``"auto"`` (default): 1500 steps = 30 s, and with a
      ``layout`` at least ``laps`` laps of its gate-to-gate length at ``LAYOUT_MIN_SPEED`` =
      1 m/s; an int in ``[1, 2**31 - 1]``; None: no limit. TypeError for another type (a
      string but ``"auto"`` among them), ValueError for an int out of range
      (:func:`~trackgen_env.envs.base.check_limit`, as the track env).
    * ``laps``: laps to finish an episode (default 1); None: no limit.
    * ``seed``: int seed of the courses (env i uses ``hash(seed, i)``), or ``num_envs`` ints
      (env i uses ``seed[i]``); None draws one from the OS. ``reset(seed=s)`` reseeds the same way.
    * ``render_mode``: None or ``"rgb_array"``: ``render()`` returns a tuple of ``num_envs``
      RGB frames ``[render_size, render_size, 3]`` uint8, drawn on the device: the course
      line and the gates from above (the next gate in green), the drone with its heading,
      and along the bottom quarter a side view (x against altitude); ``"human"``: those of the
      first 16 envs, tiled, in a window at every step (pygame: the ``human`` extra;
      :mod:`trackgen_env.envs.viewer`), ``render()`` returning None.
    * ``render_size``: frame side in pixels (default 256).
    * ``autoreset_mode``: a ``gymnasium.vector.AutoresetMode`` or its value (default
      ``NEXT_STEP``); also ``metadata["autoreset_mode"]``.
    * ``output``: ``"numpy"`` (default: fresh host arrays) or ``"torch"`` (torch tensors on
      the env's device, zero-copy views of the env's buffers, overwritten by the next step:
      clone to keep; no host sync inside ``step()`` on CUDA).
    * ``quadrotor``: a :class:`~trackgen_env.envs.quadrotor.QuadrotorParams` (mass, thrust,
      rate limits, lag, drag, ``dt``, ``substeps``, body box); default the 250 g micro quad
      at 50 Hz.
    * ``gates``: a :class:`~trackgen_env.GateGenConfig` or a gates
      :class:`~trackgen_env.pipeline.PipelineSpec` (``presets.gates(...)``, with plugin stages
      or randomized parameters; its ``num_envs`` and ``device`` are replaced by the env's,
      ``docs/pipelines.md``); default ``GateGenConfig(gate_width=0.6)``. ``gates_config``
      keeps it. A spec of the track family raises TypeError; a gate width of 0 (the default of
      ``presets.gates`` and ``GateGenConfig``, as the spec has it) raises ValueError before
      anything is built, saying to pass ``gate_width=0.6`` (the env's default) or another > 0.
    * ``registry``: the :class:`~trackgen_env.pipeline.Registry` holding a spec's plugin
      stages (None: the default registry); TypeError with a config or ``layout``.
    * ``layout``: a :class:`~trackgen_env.generators.gate_layouts.RaceLayout` (e.g.
      ``load_gate_layout("split_s.yaml")``): fly this given course in every env instead of
      generated ones (``gates`` must then be None; ``GateGenerator.from_layout``).
    * ``start_config``, ``reward_config``: the keywords below in groups
      (:class:`~trackgen_env.envs.config.GatesStartConfig`: ``start`` to ``start_yaw``;
      :class:`~trackgen_env.envs.config.GatesRewardConfig`: ``progress_weight`` to
      ``approach_distance``), kept as read-only attributes of those names; a group and one of
      its keywords together raise TypeError.
    * ``start``: ``"first_gate"`` (default) or ``"random_gate"`` (see Starting State);
      ``random_start_prob`` (0.5), ``start_distance`` ((0.3, 1.5) m), ``start_speed``
      ((0, 2.5) m/s), ``start_offset`` (0.1 m), ``start_tilt`` (0.2 rad), ``start_yaw``
      (0.3 rad): the random-gate start's share and bounds (ranges as ``(low, high)``).
    * ``progress_weight`` (1), ``gate_bonus`` (2), ``crash_penalty`` (2),
      ``body_rate_penalty`` ([1/(rad/s)], 0.002), ``smoothness_penalty`` (2e-4),
      ``approach_penalty`` (0) and ``approach_distance`` ([m], 1): the reward terms (see Rewards).
    * ``bounds_margin``: [m] the course bounds around the gates and the course line (default 2).
    * ``bar_thickness``: [m] section of the gate frames' bars (``tools.FrameCollision``; default 0.05).
    * ``capture``: record the step as one graph (default True); False runs it eagerly.

    ## Version History

    * v0: initial version; ``autoreset_mode`` (NEXT_STEP, SAME_STEP, DISABLED), ``output``
      ("numpy", "torch") and on-device ``render_mode="rgb_array"`` added without changing
      the default behaviour; made learnable: the thrust action centred on
      hover, gate 0 counted from the start, the target switching only on a counted pass,
      a missed gate terminating as a crash, the reward terms above, and ``start=``.
    """

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 50, "autoreset_mode": AutoresetMode.NEXT_STEP}
    action_labels = "(thrust, roll rate, pitch rate, yaw rate)"
    info_fields = (("gates_passed", wp.int32), ("laps", wp.int32), ("collision", wp.bool), ("out_of_bounds", wp.bool),
                   ("missed_gate", wp.bool))
    argument_attributes = {"gates": "gates_config"}
    _body_attribute = "drone"

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
        gates: GateGenConfig | PipelineSpec | None = None,
        registry: Registry | None = None,
        layout: RaceLayout | None = None,
        start_config: GatesStartConfig | None = None,
        reward_config: GatesRewardConfig | None = None,
        start: str = UNSET,
        random_start_prob: float = UNSET,
        start_distance: tuple[float, float] = UNSET,
        start_speed: tuple[float, float] = UNSET,
        start_offset: float = UNSET,
        start_tilt: float = UNSET,
        start_yaw: float = UNSET,
        progress_weight: float = UNSET,
        gate_bonus: float = UNSET,
        crash_penalty: float = UNSET,
        body_rate_penalty: float = UNSET,
        smoothness_penalty: float = UNSET,
        approach_penalty: float = UNSET,
        approach_distance: float = UNSET,
        bounds_margin: float = 2.0,
        bar_thickness: float = 0.05,
        capture: bool = True,
    ):
        starts = grouped("start_config", GatesStartConfig, start_config, start=start,
                         random_start_prob=random_start_prob, start_distance=start_distance, start_speed=start_speed,
                         start_offset=start_offset, start_tilt=start_tilt, start_yaw=start_yaw)
        reward = grouped("reward_config", GatesRewardConfig, reward_config, progress_weight=progress_weight,
                         gate_bonus=gate_bonus, crash_penalty=crash_penalty, body_rate_penalty=body_rate_penalty,
                         smoothness_penalty=smoothness_penalty, approach_penalty=approach_penalty,
                         approach_distance=approach_distance)
        if quadrotor is not None and not isinstance(quadrotor, QuadrotorParams):
            raise TypeError(f"quadrotor must be a QuadrotorParams or None, got {type(quadrotor).__name__}")
        quadrotor = quadrotor if quadrotor is not None else QuadrotorParams()
        if layout is None and gates is not None:
            # before the memory estimate builds probes of it: a width-0 spec is refused here, saying what to pass
            given = "GateGenConfig" if isinstance(gates, GateGenConfig) else "presets.gates"
            check_gate_width(gates, fix=f"pass gates={given}(gate_width={DEFAULT_GATE_WIDTH}, ...) (the env's "
                                        f"default opening, {DEFAULT_GATE_WIDTH} m; {given} defaults to 0), "
                                        f"or randomize {WIDTH_PARAM!r} with a lo > 0")
        auto_steps = DEFAULT_MAX_EPISODE_STEPS
        if isinstance(layout, RaceLayout):
            # a real layout may be many generated courses long: time for its laps at LAYOUT_MIN_SPEED
            auto_steps = auto_episode_steps(auto_steps, laps, layout.length(), LAYOUT_MIN_SPEED, quadrotor.dt)
        seed = self._setup(num_envs, device, max_episode_steps=max_episode_steps, laps=laps, seed=seed,
                           render_mode=render_mode, autoreset_mode_=autoreset_mode, output=output,
                           render_size=render_size, auto_steps=auto_steps)
        self.quadrotor = quadrotor
        self.registry = registry
        if layout is None:
            source, seeds, self.gates_config = generated_source(
                GateGenConfig(gate_width=DEFAULT_GATE_WIDTH) if gates is None else gates, argument="gates",
                family="gates", config_cls=GateGenConfig, registry=registry, num_envs=self.num_envs,
                device=self.device, seed=seed)
        else:
            if not isinstance(layout, RaceLayout):
                raise TypeError(f"layout must be a RaceLayout (load_gate_layout) or None, got {type(layout).__name__}")
            if gates is not None or registry is not None:
                raise TypeError("pass either gates= (generated courses, with registry= for a spec's plugins) or "
                                "layout= (a given race layout), not both")
            if len(layout.obstacles):  # the course collides with gate frames only: never drop them silently
                raise ValueError(f"{layout.name}: {len(layout.obstacles)} obstacles (vertical poles) that this env "
                                 f"does not collide with; to fly the gates alone (through where the poles are), pass "
                                 f"layout=layout.without_obstacles() (the CLI: --without-obstacles)")
            source = GateGenerator.from_layout(layout, num_envs=self.num_envs, device=str(self.device), seeds=seed)
            seeds = {}
        if starts.start not in START_MODES:
            raise ValueError(f"start must be one of {START_MODES}, got {starts.start!r}")
        self.start = starts.start
        self.random_start_prob = check_float("random_start_prob", starts.random_start_prob, lo=0.0, hi=1.0)
        self.start_distance = check_range("start_distance", starts.start_distance, lo=0.0)
        self.start_speed = check_range("start_speed", starts.start_speed, lo=0.0)
        self.start_offset = check_float("start_offset", starts.start_offset, lo=0.0)
        self.start_tilt = check_float("start_tilt", starts.start_tilt, lo=0.0, hi=1.0)
        self.start_yaw = check_float("start_yaw", starts.start_yaw, lo=0.0, hi=3.2)
        self.start_config = GatesStartConfig(self.start, self.random_start_prob, self.start_distance, self.start_speed,
                                             self.start_offset, self.start_tilt, self.start_yaw)
        self.progress_weight = check_float("progress_weight", reward.progress_weight, lo=0.0)
        self.gate_bonus = check_float("gate_bonus", reward.gate_bonus, lo=0.0)
        self.crash_penalty = check_float("crash_penalty", reward.crash_penalty, lo=0.0)
        self.body_rate_penalty = check_float("body_rate_penalty", reward.body_rate_penalty, lo=0.0)
        self.smoothness_penalty = check_float("smoothness_penalty", reward.smoothness_penalty, lo=0.0)
        self.approach_penalty = check_float("approach_penalty", reward.approach_penalty, lo=0.0)
        self.approach_distance = check_float("approach_distance", reward.approach_distance, lo=0.0, lo_open=True)
        self.reward_config = GatesRewardConfig(self.progress_weight, self.gate_bonus, self.crash_penalty,
                                               self.body_rate_penalty, self.smoothness_penalty, self.approach_penalty,
                                               self.approach_distance)
        self.bounds_margin = check_float("bounds_margin", bounds_margin, lo=0.0, lo_open=True)
        self.bar_thickness = check_float("bar_thickness", bar_thickness, lo=0.0, lo_open=True)
        self._spaces(OBS_DIM, 4)

        if layout is not None:
            _check_above_ground(layout, source)
        _check_drone_fits(source, quadrotor, layout)
        self.course = Course.gates(source, collision=tools.FrameCollision(self.bar_thickness), **seeds)
        params = self.course.generator.params
        for name in _OPENING:
            if name in params:  # a live set (or range) of the opening meets the same rule
                params.add_validator(name, _drone_fits_live(quadrotor))
        if layout is not None:
            self.gates_config = source.config
        self.layout = layout  # the race layout flown (None: generated courses)

        E, dev = self.num_envs, self.device
        self.drone = Quadrotor(E, dev, self.quadrotor)
        # the drones' state arrays (stable, written in place by the dynamics)
        d = self.drone
        self.position, self.velocity = d.position, d.velocity
        self.orientation, self.body_rate = d.orientation, d.body_rate
        self.half_extents = d.half_extents
        self._target = wp.zeros(E, dtype=wp.int32, device=dev)
        self._target_distance = wp.zeros(E, dtype=wp.float32, device=dev)
        self._prev_position = wp.zeros(E, dtype=wp.vec3, device=dev)
        self._prev_action = wp.zeros((E, 4), dtype=wp.float32, device=dev)
        # the start state of each env's current episode (written for the reset envs)
        self._start_position = wp.zeros(E, dtype=wp.vec3, device=dev)
        self._start_orientation = wp.zeros(E, dtype=wp.quat, device=dev)
        self._start_velocity = wp.zeros(E, dtype=wp.vec3, device=dev)
        self._progress_start = wp.zeros(E, dtype=wp.int32, device=dev)
        self._sampled_gate = wp.zeros(E, dtype=wp.int32, device=dev)
        self._sampled_position = wp.zeros(E, dtype=wp.vec3, device=dev)  # the sampler's gate pose (unused)
        self._sampled_orientation = wp.zeros(E, dtype=wp.quat, device=dev)
        self._weights = RewardWeights()
        for field, value in (("progress", self.progress_weight), ("gate_bonus", self.gate_bonus),
                             ("crash", self.crash_penalty), ("body_rate", self.body_rate_penalty),
                             ("smoothness", self.smoothness_penalty), ("approach", self.approach_penalty),
                             ("approach_distance", self.approach_distance)):
            setattr(self._weights, field, value)
        self._finish_init(wp.zeros((E, 4), dtype=wp.float32, device=dev), capture)

    # -- what differs from the track env: the quadrotor, the observation, the picture --------
    def _start(self, reset_mask: wp.array):
        course, r = self.course, self.course.result
        random_start = self.start == "random_gate"
        if random_start:
            # the gate index from the course's own sampler (per env, from its seed and counter)
            course.checkpoint_sampler.sample(reset_mask, self._sampled_position, self._sampled_orientation,
                                             self._sampled_gate)
        seeds = course.seeds
        threads, per = env_loop.shape(self.device, self.num_envs)
        wp.launch(
            _start_state,
            threads,
            inputs=[
                per, reset_mask, seeds.seeds, seeds.counters, int(Stream.GATES_START), int(random_start),
                self.random_start_prob, course.checkpoints.num_checkpoints, course.course_line.centerline,
                course.components["centerline"].samples_per_gate, self._sampled_gate, r.start_position,
                r.start_orientation, self.start_distance[0], self.start_distance[1], self.start_offset,
                self.start_tilt, self.start_yaw, self.start_speed[0], self.start_speed[1],
            ],
            outputs=[self._start_position, self._start_orientation, self._start_velocity, self._progress_start],
            device=self.device,
        )
        progress = course.components["progress"]
        progress.reset_to(progress.context, reset_mask, self._progress_start)
        return self._start_position, self._start_orientation, self._start_velocity

    def _observe(self, res, reset_mask: wp.array, restart: bool):
        cps, ev = self.course.checkpoints, res.events
        threads, per = env_loop.shape(self.device, self.num_envs)
        wp.launch(
            _observe,
            threads,
            inputs=[
                per, reset_mask, self.position, self.velocity, self.orientation, self.body_rate, self.drone.last_action,
                cps.position, cps.direction, cps.half_width, cps.half_height, cps.num_checkpoints,
                self.course.result.valid, ev.passed, ev.next_checkpoint, int(restart), self._target,
            ],
            outputs=[self._obs],
            device=self.device,
        )

    def _reward_termination(self, res, reset_mask: wp.array, restart: bool):
        cps, ev, info = self.course.checkpoints, res.events, self._info
        threads, per = env_loop.shape(self.device, self.num_envs)
        wp.launch(
            _reward_termination,
            threads,
            inputs=[
                per, reset_mask, self.position, self.body_rate, self.drone.last_action, self.drone.elapsed,
                cps.position, cps.direction, cps.half_width, cps.half_height, cps.num_checkpoints,
                self.course.course_line.centerline, self.course.course_line.num_points, self.course.result.valid,
                ev.passed, ev.next_checkpoint, ev.checkpoints_passed, ev.laps, res.contacts.hit,
                self._step_limit, self._lap_limit, self._weights, self.bounds_margin, int(restart),
                self._target, self._target_distance, self._prev_position, self._prev_action,
            ],
            outputs=[
                self._autoreset, self._reward, self._terminated, self._truncated,
                info["gates_passed"], info["laps"], info["collision"], info["out_of_bounds"], info["missed_gate"],
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
        self.check_open()
        return {
            "position": self.position.numpy().copy(),
            "velocity": self.velocity.numpy().copy(),
            "orientation": self.orientation.numpy().copy(),
            "body_rate": self.body_rate.numpy().copy(),
        }

    def courses(self) -> list[dict[str, Any]]:
        """Host copies of every env's course: ``gate_position [G, 3]`` [m], ``gate_orientation
        [G, 4]``, ``gate_width``, ``gate_height`` [m], ``course_line [L, 3]`` [m], ``valid``."""
        self.check_open()
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

