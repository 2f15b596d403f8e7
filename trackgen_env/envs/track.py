"""``TrackGen-Track-v0``: a car racing on freshly generated closed tracks (a Gymnasium vector env)."""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import warp as wp
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from ..core import env_loop
from . import render
from .. import tools
from ..core.checks import check_bool, check_float, check_int, check_range, first_bad
from ..course import Course
from ..generators.track import TrackGenConfig, TrackGenerator
from ..generators.centerline_io import centerline_length, check_centerline
from ..pipeline import PipelineSpec, Registry
from ..core.seeding import Stream, random_key, uniform_range
from ..pipeline.stages.track_family import TRACK
from ..tools.course_size import construction_bound
from .base import INT32_MAX, CourseVectorEnv, auto_episode_steps
from .config import UNSET, RandomizationConfig, TrackRewardConfig, TrackStartConfig, grouped
from .car import CAR_PRESETS, CarParams, CarState, car_params, check_car_model
from .source import generated_source

__all__ = ["TrackVectorEnv", "OBS_FIELDS", "OBS_LOOKAHEAD", "OBS_TYPES", "LIDAR_MOTION_FIELDS",
           "DEFAULT_MAX_EPISODE_STEPS", "CIRCUIT_MIN_SPEED_FRACTION"]

wp.set_module_options({"enable_backward": False})

#: Names of the first observation entries (one each), in order: the one definition of the
#: layout, which the kernel's offsets below and the class docstring's table follow.
OBS_FIELDS = ("speed", "yaw_rate", "steer", "lateral_offset", "heading_error", "half_width", "curvature",
              "lap_fraction")
#: Index of the first lookahead entry; point k is (x, y, curvature) at ``OBS_LOOKAHEAD + 3 k``.
OBS_LOOKAHEAD = len(OBS_FIELDS)
#: The observations the env offers (``obs_type``).
OBS_TYPES = ("state", "lidar", "pixels")
#: ``obs_type="lidar"``: the entries after the ``num_beams`` ranges, in order (the first three of
#: :data:`OBS_FIELDS`, whose offsets the kernel adds to ``num_beams``).
LIDAR_MOTION_FIELDS = OBS_FIELDS[:3]
#: ``max_episode_steps="auto"`` (the default) on generated tracks: 50 s at the default car's 20 Hz.
DEFAULT_MAX_EPISODE_STEPS = 1000
#: With a ``centerline``, ``"auto"`` allows its laps at this fraction of the car's top speed on average
#: (a cautious policy still finishes; pure pursuit averages 0.4-0.7 of it on real circuits).
CIRCUIT_MIN_SPEED_FRACTION = 0.1
#: A circuit whose band is on average more than this many car widths wide gets a warning (real
#: circuits are 5-8 widths of the full-size car; the generated tracks 4 of the 1:10 car).
CIRCUIT_WIDE_BAND = 20.0
_SPEED = wp.constant(OBS_FIELDS.index("speed"))
_YAW_RATE = wp.constant(OBS_FIELDS.index("yaw_rate"))
_STEER = wp.constant(OBS_FIELDS.index("steer"))
_LATERAL_OFFSET = wp.constant(OBS_FIELDS.index("lateral_offset"))
_HEADING_ERROR = wp.constant(OBS_FIELDS.index("heading_error"))
_HALF_WIDTH = wp.constant(OBS_FIELDS.index("half_width"))
_CURVATURE = wp.constant(OBS_FIELDS.index("curvature"))
_LAP_FRACTION = wp.constant(OBS_FIELDS.index("lap_fraction"))
_LOOKAHEAD = wp.constant(OBS_LOOKAHEAD)
_ELAPSED_MAX = wp.constant(INT32_MAX)


@wp.func
def _line(num_points: wp.array(dtype=wp.int32), loop_length: wp.array(dtype=float), valid: wp.array(dtype=wp.int32),
          e: int):
    """Env ``e``'s centreline as the observation reads it: whether it has one (valid, 3+ points, a
    positive length), its point count, its length [m] and its points per metre."""
    n = num_points[e]
    length = loop_length[e]
    usable = valid[e] != 0 and n >= 3 and length > 0.0
    return usable, n, length, float(n) / wp.max(length, 1.0e-6)


@wp.func
def _lookahead_point(s_car: float, ahead: float, length: float, inv_spacing: float, n: int):
    """The point ``ahead`` metres along the line past arc length ``s_car`` (wrapped over the
    loop ``length``): its segment ``j``, the segment's end ``j1`` and the parameter ``t``."""
    sk = s_car + ahead
    if sk >= length:
        sk = sk - length * wp.floor(sk / length)
    # the generators resample the centreline uniformly in arc length
    # (arc_length[e, j] = j * loop_length / num_points): index it directly, without
    # reading arc_length (the observation's cost is its memory reads)
    u = sk * inv_spacing
    j = wp.clamp(int(u), 0, n - 1)
    j1 = wp.where(j < n - 1, j + 1, 0)  # the last segment closes the loop
    t = wp.clamp(u - float(j), 0.0, 1.0)
    return j, j1, t


@wp.kernel
def _observe(
    envs_per_thread: int,
    # inputs: which envs were reset this step
    reset_mask: wp.array(dtype=wp.int32),
    # inputs: the car
    position: wp.array(dtype=wp.vec3),
    yaw: wp.array(dtype=float),
    speed: wp.array(dtype=float),
    yaw_rate: wp.array(dtype=float),
    steer: wp.array(dtype=float),
    # inputs: the track
    centerline: wp.array2d(dtype=wp.vec3),
    track_curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    valid: wp.array(dtype=wp.int32),
    # inputs: the course step (localizer, progress)
    s: wp.array(dtype=float),
    lateral_offset: wp.array(dtype=float),
    heading_error: wp.array(dtype=float),
    frame_curvature: wp.array(dtype=float),
    segment: wp.array(dtype=wp.int32),
    lap_fraction: wp.array(dtype=float),
    # settings
    num_lookahead: int,
    lookahead: wp.array(dtype=float),
    num_beams: int,
    ranges: wp.array2d(dtype=float),
    restart: int,
    # output
    obs: wp.array2d(dtype=float),
):
    """The observation of every env (with ``restart``, of the masked envs only)."""
    thread = wp.tid()
    end = wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])
    for e in range(thread * envs_per_thread, end):
        f = env_loop.ahead(envs_per_thread, e, end)
        if f >= 0 and (restart == 0 or reset_mask[f] != 0):
            # ask for the rows env f will read (env_loop): its lookahead points and half width
            usable_f, n_f, length_f, inv_f = _line(num_points, loop_length, valid, f)
            if usable_f:
                for k in range(num_lookahead):
                    jf, jf1, _ = _lookahead_point(s[f], lookahead[k], length_f, inv_f, n_f)
                    env_loop.prefetch(centerline, f, jf)
                    env_loop.prefetch(centerline, f, jf1)
                    env_loop.prefetch(track_curvature, f, jf)
                env_loop.prefetch(half_width, f, segment[f])
        if restart != 0 and reset_mask[e] == 0:
            continue
        usable, n, length, inv_spacing = _line(num_points, loop_length, valid, e)
        psi = yaw[e]
        c = wp.cos(psi)
        sn = wp.sin(psi)
        p = position[e]
        if num_beams > 0:
            # obs_type "lidar": the ranges, then the car's own motion (LIDAR_OBS_FIELDS)
            for b in range(num_beams):
                obs[e, b] = ranges[e, b]
            obs[e, num_beams + _SPEED] = speed[e]
            obs[e, num_beams + _YAW_RATE] = yaw_rate[e]
            obs[e, num_beams + _STEER] = steer[e]
        else:
            obs[e, _SPEED] = speed[e]
            obs[e, _YAW_RATE] = yaw_rate[e]
            obs[e, _STEER] = steer[e]
            if usable:
                obs[e, _LATERAL_OFFSET] = lateral_offset[e]
                obs[e, _HEADING_ERROR] = heading_error[e]
                obs[e, _HALF_WIDTH] = half_width[e, wp.clamp(segment[e], 0, n - 1)]
                obs[e, _CURVATURE] = frame_curvature[e]
                obs[e, _LAP_FRACTION] = lap_fraction[e]
                s_car = s[e]
                for k in range(num_lookahead):
                    j, j1, t = _lookahead_point(s_car, lookahead[k], length, inv_spacing, n)
                    q = wp.lerp(centerline[e, j], centerline[e, j1], t)
                    dx = q[0] - p[0]
                    dy = q[1] - p[1]
                    obs[e, _LOOKAHEAD + 3 * k] = c * dx + sn * dy
                    obs[e, _LOOKAHEAD + 3 * k + 1] = -sn * dx + c * dy
                    obs[e, _LOOKAHEAD + 3 * k + 2] = wp.lerp(track_curvature[e, j], track_curvature[e, j1], t)
            else:
                # everything but the car's own state (speed, yaw rate, steer)
                for i in range(_LATERAL_OFFSET, _LOOKAHEAD + 3 * num_lookahead):
                    obs[e, i] = 0.0


@wp.kernel
def _reward_termination(
    envs_per_thread: int,
    # inputs: which envs were reset this step
    reset_mask: wp.array(dtype=wp.int32),
    # inputs: the car's steps this episode, the track
    elapsed: wp.array(dtype=wp.int32),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    valid: wp.array(dtype=wp.int32),
    # inputs: the course step (localizer, collision, progress)
    s: wp.array(dtype=float),
    hit: wp.array(dtype=wp.int32),
    laps: wp.array(dtype=wp.int32),
    passed: wp.array(dtype=wp.int32),
    # settings
    max_episode_steps: int,
    stall_steps: int,
    target_laps: int,
    off_track_penalty: float,
    restart: int,
    # state (in/out)
    s_prev: wp.array(dtype=float),
    stalled: wp.array(dtype=wp.int32),
    # outputs
    autoreset: wp.array(dtype=wp.int32),
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    truncated: wp.array(dtype=wp.bool),
    laps_out: wp.array(dtype=wp.int32),
    off_track: wp.array(dtype=wp.bool),
):
    """Reward, termination, the info arrays and the autoreset mask of every env (with ``restart``,
    of the masked envs only: they get reset info and keep the ended episode's reward and flags)."""
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        was_reset = reset_mask[e] != 0  # read before autoreset (may be the same array) is written
        if restart != 0 and not was_reset:
            continue
        usable, n, length, inv_spacing = _line(num_points, loop_length, valid, e)
        off = usable and hit[e] != 0
        if was_reset:
            s_prev[e] = s[e]
            stalled[e] = 0
            if restart == 0:  # a restart keeps the ended episode's reward and termination
                reward[e] = 0.0
                terminated[e] = False
                truncated[e] = False
            laps_out[e] = 0
            off_track[e] = False
            autoreset[e] = 0
            continue

        progress = float(0.0)
        if usable:
            progress = s[e] - s_prev[e]
            # the lap seam: s jumps by one loop length when the car crosses the start line
            if progress < -0.5 * length:
                progress = progress + length
            elif progress > 0.5 * length:
                progress = progress - length
        s_prev[e] = s[e]
        # steps since the car last reached a new checkpoint (new ground only: no reset by wiggling)
        stalled[e] = wp.where(passed[e] > 0, 0, wp.min(stalled[e], _ELAPSED_MAX - 1) + 1)
        r = progress
        if off:
            r = r - off_track_penalty
        reward[e] = r
        term = off or (not usable) or laps[e] >= target_laps
        trunc = elapsed[e] >= max_episode_steps or (stall_steps > 0 and stalled[e] >= stall_steps)
        terminated[e] = term
        truncated[e] = trunc
        laps_out[e] = laps[e]
        off_track[e] = off
        autoreset[e] = wp.where(term or trunc, 1, 0)


#: The track env's per-episode car draws: constructor argument -> (what it scales, the
#: :class:`~trackgen_env.envs.car.CarState` array that holds the scales, the draw's index in
#: the env's ``Stream.CAR_PARAMS`` stream: one index each, so no draw moves another).
_CAR_DRAWS = {
    "friction_range": ("friction scales", "grip", 0),
    "accel_range": ("motor and brake scales", "accel_scale", 1),
    "steer_range": ("steering scales", "steer_scale", 2),
}


@wp.kernel
def _draw_scale(
    envs_per_thread: int,
    reset_mask: wp.array(dtype=wp.int32),
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    stream: int,
    index: int,
    lo: float,
    hi: float,
    scale: wp.array(dtype=float),
):
    """A new scale in [lo, hi) for every reset env: draw ``index`` of its stream (seed, counter)."""
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        if reset_mask[e] != 0:
            scale[e] = uniform_range(random_key(seeds[e], counters[e], stream), index, lo, hi)


@wp.kernel
def _perturb_start(
    envs_per_thread: int,
    reset_mask: wp.array(dtype=wp.int32),
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    stream: int,
    yaw: float,
    speed_lo: float,
    speed_hi: float,
    # in/out: the sampled checkpoint's orientation, turned by the heading error
    orientation: wp.array(dtype=wp.quat),
    # outputs
    speed: wp.array(dtype=float),
):
    """Turn every reset env's start pose by a heading error in [-yaw, yaw) [rad] and draw its
    start speed in [speed_lo, speed_hi) [m/s], from its stream (seed, counter)."""
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, reset_mask.shape[0])):
        if reset_mask[e] != 0:
            key = random_key(seeds[e], counters[e], stream)
            turn = wp.quat_from_axis_angle(wp.vec3(0.0, 0.0, 1.0), uniform_range(key, 0, -yaw, yaw))
            orientation[e] = wp.normalize(turn * orientation[e])
            speed[e] = uniform_range(key, 1, speed_lo, speed_hi)


def _source_spec(source) -> PipelineSpec | None:
    """The spec of ``source`` (a config, a spec or a built generator), None for a given centreline."""
    spec = source.to_spec() if isinstance(source, TrackGenConfig) else getattr(source, "spec", source)
    return spec if isinstance(spec, PipelineSpec) else None


def _longest_loop(source) -> float | None:
    """[m] the longest loop ``source`` (a config, a spec, a built program or generator) declares
    it can draw (``TrackLayout.max_loop_length``), None where it declares none (hills)."""
    layout = getattr(source, "layout", None)
    if layout is None:
        spec = _source_spec(source)
        layout = None if spec is None else TRACK.layout(spec)
    return None if layout is None else layout.max_loop_length


def _on_hills_or_banked(source) -> bool:
    """Whether the courses of ``source`` (a config, a spec or a built generator) can leave the ground
    plane: a ``layout.elevation`` that can be > 0, or a ``banking`` stage."""
    spec = _source_spec(source)
    if spec is None:
        return False
    return "banking" in spec.stages or (construction_bound(spec, "layout.elevation", "hi") or 0.0) > 0.0


def _narrower_car(car: CarParams) -> str:
    """``"a narrower car (car='rc10' is 0.2 m wide) or "``: the narrowest preset, when it is
    narrower than ``car``, for the refusals of a band too narrow for the car; else ``""``."""
    name, smallest = min(CAR_PRESETS.items(), key=lambda kv: kv[1].width)
    return f"a narrower car (car={name!r} is {smallest.width:g} m wide) or " if smallest.width < car.width else ""


def _check_car_fits(source, car: CarParams) -> None:
    """Refuse a car at least as wide as the narrowest band ``source`` can draw: on such a band its
    body box is off the band at the start pose, so that env would end at every step (``off_track``)."""
    spec = _source_spec(source)
    narrowest = None if spec is None else construction_bound(spec, "band.width", "lo")
    # as the float32 values the band is drawn and the body stored in (0.20000001 is 0.2)
    if narrowest is not None and np.float32(car.width) >= np.float32(narrowest):
        narrower = _narrower_car(car)
        wider = ("a randomize range of band.width whose lo is a few car widths" if "band.width" in spec.randomize
                 else "track=TrackGenConfig(width=...), a few car widths")
        raise ValueError(
            f"the car is {car.width:g} m wide and the narrowest band these tracks draw is {narrowest:g} m "
            f"(band.width): "
            f"its body would be off such a band from the start, and that env would end at every step; pass "
            f"{narrower}wider tracks ({wider})"
        )


def _check_car_fits_circuit(centerline, car: CarParams) -> None:
    """:func:`_check_car_fits` for a given circuit: refuse a car at least as wide as the band's
    narrowest row (``w_tr_right_m + w_tr_left_m``), before anything is built."""
    data = check_centerline(centerline, name="points")  # as from_centerline names it
    width = data[:, 2] + data[:, 3]
    row = int(np.argmin(width))
    if np.float32(car.width) >= np.float32(width[row]):
        narrower = _narrower_car(car)
        raise ValueError(
            f"the car is {car.width:g} m wide and this circuit's band is {width[row]:g} m wide at row {row} "
            f"(w_tr_right_m + "
            f"w_tr_left_m): its body would be off the band there, and the env would end at every pass; pass {narrower}"
            f"the circuit at a larger scale (a 1:10 circuit is for car='rc10')"
        )


def _circuit_steps(centerline, car, laps) -> int:
    """``max_episode_steps="auto"`` with a ``centerline``: :func:`~trackgen_env.envs.base.auto_episode_steps`
    at ``CIRCUIT_MIN_SPEED_FRACTION`` of the car's top speed; the default where the circuit or the car
    is refused (the refusal comes later, after the arguments every env checks)."""
    try:
        params = car_params(car)
        length = centerline_length(check_centerline(centerline, name="points"))
    except (TypeError, ValueError):
        return DEFAULT_MAX_EPISODE_STEPS
    return auto_episode_steps(DEFAULT_MAX_EPISODE_STEPS, laps, length, CIRCUIT_MIN_SPEED_FRACTION * params.max_speed,
                              params.dt)


def _warn_circuit_scale(centerline, car: CarParams) -> None:
    """Warn when a circuit's band is over ``CIRCUIT_WIDE_BAND`` times as wide as the car on average: a
    full-size circuit (10-15 m) driven by the 1:10 car, whose laps then take hours of steps."""
    data = check_centerline(centerline, name="points")
    width = float(np.mean(data[:, 2] + data[:, 3]))
    if width > CIRCUIT_WIDE_BAND * car.width:
        full = CAR_PRESETS["full"]
        other = f", or car='full' ({full.width:g} m wide)" if width <= CIRCUIT_WIDE_BAND * full.width else ""
        warnings.warn(
            f"this circuit's band is {width:.3g} m wide on average, {width / car.width:.0f} times the car's width "
            f"({car.width:g} m): a full-size circuit for a small car? Its {centerline_length(data) / 1000:.3g} km lap "
            f"takes the car minutes to hours of steps; scale the circuit (all four columns, e.g. points * 0.1 for "
            f"1:10){other}",
            UserWarning,
            stacklevel=3,
        )


def _flat_live(name: str, values: np.ndarray) -> None:
    """A ``Params`` validator of ``"layout.elevation"`` for an env built flat, which keeps its car
    on the ground plane (no height field is baked): refuse any hill."""
    v = np.asarray(values)
    if np.any(v > 0.0):
        raise ValueError(f"params[{name!r}] must stay 0 in an env built with flat tracks: its car is kept on the "
                         f"ground plane (no height field is baked), and on hills it would drive through them; build "
                         f"the "
                         f"env with hills (track=presets.track(elevation=...), or a randomize range of "
                         f"layout.elevation "
                         f"up to the most a curriculum will ask for), got {first_bad(v, v > 0.0, ' m')}")


def _lidar_resolution(source, centerline) -> int:
    """Grid cells per side of the LiDAR's edge grid: cells about a third of the band's width across
    the course's extent (a cell then lists a few edge segments), in [16, 128] (memory: 4 bytes a
    cell per env)."""
    if centerline is not None:
        pts = np.asarray(centerline, np.float64)
        extent = float(np.max(pts[:, :2].max(0) - pts[:, :2].min(0)))
        width = float(np.median(pts[:, 2] + pts[:, 3]))
    else:
        spec = _source_spec(source)
        longest = _longest_loop(source)
        narrowest = None if spec is None else construction_bound(spec, "band.width", "lo")
        if longest is None or not narrowest:
            return 64
        extent, width = 0.5 * longest, narrowest  # a closed loop of length L spans about L / 2
    return int(np.clip(math.ceil(extent / (width / 3.0)), 16, 128))


def _car_fits_live(car: CarParams):
    """A ``Params`` validator of ``"band.width"``: refuse a live width (or either end of a live
    range) at most the car's width, in any env (:func:`_check_car_fits` for that env)."""

    width = float(np.float32(car.width))  # the values are the float32 the array would store

    def check(name: str, values: np.ndarray) -> None:
        v = np.asarray(values)
        narrow = v <= width
        if np.any(narrow):
            got = first_bad(v, narrow, " m")
            raise ValueError(f"params[{name!r}] must be wider than the car ({car.width:g} m): a {got} band puts its "
                             f"body off the band from the start, and that env would end at every step (a band only a "
                             f"little wider still ends most episodes early: a few car widths leave room to drive)")

    return check


class TrackVectorEnv(CourseVectorEnv):
    """A car racing on procedurally generated closed tracks; every finished env gets a new track.

    ## Description

    Each of ``num_envs`` envs holds its own closed track (a band of width ``width`` around
    a smooth generated centreline, :class:`~trackgen_env.TrackGenConfig`) and a car, a
    kinematic single-track (bicycle) model (Kong et al., IEEE IV 2015; Rajamani, *Vehicle
    Dynamics and Control*, 2012; see :mod:`trackgen_env.envs.car`) with friction-limited
    steering. The default car is a 1:10 RC car (0.33 m wheelbase, up to 6 m/s) on ~19 m
    loops (18-20 m) in a 10 m square, 0.8 m wide. The goal is to cover as much track as possible without touching
    the band's edges. Everything runs in Warp kernels on ``device``; ``step()`` replays one
    recorded graph: car dynamics -> ``course.step()`` (progress through checkpoints, box
    collision against the band edges, localization on the centreline) -> observations ->
    reward and termination, with the auto-reset of ``autoreset_mode`` as the course's
    masked regeneration inside the same graph (:mod:`trackgen_env.envs.base`; ``docs/envs.md``).

    ## Action Space

    ``Box(-1, 1, (num_envs, 2), float32)``:

    | Index | Action    | Physical meaning                                                        |
    |-------|-----------|-------------------------------------------------------------------------|
    | 0     | steering  | front wheel angle ``steering * max_steer`` [rad], left > 0 (rc10: 0.45) |
    | 1     | throttle  | > 0: accelerate ``throttle * max_accel * (1 - v / max_speed)`` [m/s^2]; |
    |       |           | < 0: brake ``throttle * max_brake`` [m/s^2] (no reverse: v >= 0)         |

    Values outside [-1, 1] (including +-inf) are clipped. Any real floating dtype is
    accepted (converted to float32); NaN raises ``ValueError``, another dtype ``TypeError``,
    another shape ``ValueError``; a refused action leaves the env unchanged. With
    ``output="torch"`` a torch tensor is copied into the action buffer on the device (no
    host round trip; its NaN are not checked, which would synchronise).

    ## Observation Space

    ``Box(-inf, inf, (num_envs, 8 + 3 * num_lookahead), float32)`` (38 by default):

    | Index        | Observation                                                    | Unit  |
    |--------------|----------------------------------------------------------------|-------|
    | 0            | speed v                                                        | m/s   |
    | 1            | yaw rate                                                       | rad/s |
    | 2            | front wheel angle applied at the last step                     | rad   |
    | 3            | lateral offset from the centreline, the band's middle (left > 0) | m   |
    | 4            | heading error: car yaw minus centreline yaw, in [-pi, pi)      | rad   |
    | 5            | half width of the band at the car                              | m     |
    | 6            | centreline curvature at the car (left turn > 0)                | 1/m   |
    | 7            | fraction of the current lap done, in [0, 1)                    | -     |
    | 8 + 3k, 9 + 3k | centreline point ``d_k`` ahead of the car's arc length s, car frame, k < K | m |
    | 10 + 3k      | centreline curvature at that point (left turn > 0)             | 1/m   |

    The lookahead points are in the car frame (x forward, y left), k = 0 .. K - 1.
    The lookahead distances grow as triangular numbers, dense near the car and reaching far
    enough to brake: ``d_k = lookahead_horizon * (k + 1)(k + 2) / (K (K + 1))`` with ``K =
    num_lookahead``, so ``d_{K-1} = lookahead_horizon`` (rc10: 0.09, 0.27, 0.54, ... 4.95 m).

    An env whose track is invalid (``valid == 0``, the generator's retries all failed)
    observes zeros at indices 3 and above, and terminates.

    With ``obs_type="lidar"`` (``docs/sensors.md``) the observation is instead
    ``Box(low, high, (num_envs, num_beams + 3), float32)``: a planar LiDAR scan of the band's
    edges, then the car's own motion:

    | Index        | Observation                                                    | Unit  |
    |--------------|----------------------------------------------------------------|-------|
    | 0 .. B - 1   | range of beam b to the nearest band edge (either edge, anywhere), in [0, lidar_range] | m |
    | B            | speed v                                                        | m/s   |
    | B + 1        | yaw rate                                                       | rad/s |
    | B + 2        | front wheel angle applied at the last step                     | rad   |

    with ``B = num_beams``; beam b points ``beam_angles[b]`` [rad] from the car's heading (left >
    0), the angles evenly spaced over ``lidar_fov`` from ``-lidar_fov / 2`` to ``+lidar_fov / 2``
    as f1tenth_gym's scan. A beam that meets no edge within ``lidar_range`` reads
    ``lidar_range``; so does every beam of an env without a track or whose car pose is not
    finite (never NaN). The ranges come from the course's ``tools.Lidar`` component
    (``course.components["lidar"]``), exact for the band's edge polylines in float32.

    With ``obs_type="pixels"`` the observation is ``Box(0, 255, (num_envs, 96, 96, 3), uint8)``:
    Gymnasium CarRacing-v3's layout, a top-down RGB frame that moves and turns with the car (grass,
    the band, its edges, the car's body box with its centre at the centre of pixel (72, 48),
    heading up), ``pixels_per_metre = 72 / lookahead_horizon`` (the view shows the lookahead
    horizon ahead of the car), drawn on the env's device inside the step, whatever ``render_size``
    (``docs/sensors.md``).

    ## Rewards

    The progress along the centreline during the step [m]: the change of the car's arc
    length s (from the course's ``Localizer``), unwrapped across the start/finish line, so
    driving backwards is negative. ``off_track_penalty`` is subtracted on the step where
    the car's body touches a band edge. The step that auto-resets an env (NEXT_STEP) gives 0.

    ## Starting State

    Every env starts at its track's start pose (on the centreline at arc length 0,
    facing along the track) at rest.

    With ``random_start=True`` (training: a start anywhere on the lap, so the policy also
    learns to pull away from rest in a corner) every episode starts instead on a uniformly
    drawn checkpoint ``k`` (the course's ``CheckpointSampler``: arc length ``k L / n``, on
    the centreline, facing along it), turned by a heading error drawn in ``[-start_yaw,
    start_yaw)`` [rad] and moving along its heading at a speed drawn in ``start_speed``
    [m/s]; ``Progress`` starts on checkpoint ``k`` (``reset_to``), so a lap is still one full
    loop, from the start back to it, and ``lap_fraction`` counts from there. The draws come
    from the env's stream (its seed and generation counter; streams
    ``Stream.CHECKPOINT_SAMPLER`` and ``Stream.TRACK_START``): deterministic per env,
    whatever ``num_envs``.

    ## Episode End

    * Termination: the car's body box touches a band edge (``BandCollision("segments")``),
      the car completed ``laps`` laps (checkpoints passed in order), or the track is invalid.
    * Truncation: ``max_episode_steps`` steps (counted on the device), or, with
      ``stall_steps``, that many steps without reaching a new checkpoint (a car stopped or
      circling: the rest of such an episode holds nothing to learn from).

    Auto-reset (``autoreset_mode``, ``docs/envs.md``), always onto a **new** track (the
    course's masked regeneration with ``advance=True``):

    * ``NEXT_STEP`` (default): the step after an env ends ignores its action and returns
      its first observation, reward 0, terminated and truncated False.
    * ``SAME_STEP``: the step that ends an env returns its reward and termination, its new
      episode's first observation, and ``info["final_obs"]`` ``[E, D]`` / ``info["final_info"]``
      (the ended step's info arrays) with the masks ``"_final_obs"`` / ``"_final_info"``.
    * ``DISABLED``: no auto-reset; ``reset(options={"reset_mask": m})`` restarts the envs of
      ``m``. A finished env stepped without a reset goes on driving from where it ended (its
      outputs are then the continuation, with terminated/truncated as the kernel computes them).

    ``info`` holds ``"laps"`` ([E] int32, laps completed this episode) and ``"off_track"``
    ([E] bool), with their Gymnasium masks ``"_laps"`` / ``"_off_track"``.

    ## Arguments

    * ``num_envs``: number of envs (>= 1).
    * ``device``: Warp device; None means ``"cuda:0"`` when Warp sees a GPU, else ``"cpu"``.
    * ``max_episode_steps``: truncation, an int in [1, 2**31 - 1] (the device counts steps in
      int32); ``"auto"`` (default): 1000 steps = 50 s (``DEFAULT_MAX_EPISODE_STEPS``) on generated
      tracks, and with a ``centerline`` at least ``laps`` laps of it at an average of
      ``CIRCUIT_MIN_SPEED_FRACTION`` = 0.1 of the car's ``max_speed`` (a real circuit is km long:
      Spielberg's 4.3 km gets 10,154 steps = 8.5 min with ``car="full"``); the same rule as the
      gates env's with a ``layout`` (:func:`~trackgen_env.envs.base.auto_episode_steps`); None: no
      limit (an episode is truncated only when its int32 step counter is full, after
      2**31 - 1 steps). TypeError for another type (a string but ``"auto"`` among them),
      ValueError for an int out of range (:func:`~trackgen_env.envs.base.check_limit`, as the gates env).
    * ``laps``: laps to finish an episode (default 1), an int in [1, 2**31 - 1]; None: no
      limit (the episode ends only by leaving the band, an invalid track or truncation).
    * ``seed``: int seed of the tracks (env i uses ``hash(seed, i)``), or ``num_envs`` ints
      (env i uses ``seed[i]``); None draws one from the OS. ``reset(seed=s)`` reseeds the same way.
    * ``render_mode``: None or ``"rgb_array"``: ``render()`` returns a tuple of ``num_envs``
      RGB frames ``[render_size, render_size, 3]`` uint8, drawn on the device (track band,
      edges, checkpoints, start line, the car's body box); ``"human"``: those of the first 16
      envs, tiled, in a window at every step (pygame: the ``human`` extra;
      :mod:`trackgen_env.envs.viewer`), ``render()`` returning None.
    * ``render_size``: frame side in pixels (default 256).
    * ``autoreset_mode``: a ``gymnasium.vector.AutoresetMode`` or its value (default
      ``NEXT_STEP``); also ``metadata["autoreset_mode"]``.
    * ``output``: ``"numpy"`` (default: fresh host arrays) or ``"torch"`` (torch tensors on
      the env's device, zero-copy views of the env's buffers, overwritten by the next step:
      clone to keep; no host sync inside ``step()`` on CUDA).
    * ``car``: ``"rc10"`` (default), ``"f1tenth"`` (the F1TENTH car's published parameters),
      ``"full"`` (a full-size race car, for real circuits) or a
      :class:`~trackgen_env.envs.car.CarParams`; ``dt`` and ``substeps`` are its fields.
    * ``car_model``: ``"kinematic"`` (default: the kinematic single-track model) or
      ``"dynamic"`` (the dynamic single-track model with slip angles and saturating linear
      tyres, blended to the kinematic one at low speed; :mod:`trackgen_env.envs.car`).
    * ``track``: a :class:`~trackgen_env.TrackGenConfig` or a track
      :class:`~trackgen_env.pipeline.PipelineSpec` (``presets.track(...)``, with plugin
      stages or randomized parameters, or ``PipelineSpec.from_dict`` of a saved one; its
      ``num_envs`` and ``device`` are replaced by the env's, ``docs/pipelines.md``); default
      ``TrackGenConfig()`` (a ~19 m loop in a 10 m square, 0.8 m wide). ``track_config``
      keeps it. A spec of the gates family raises TypeError; a ``source="centerline"``
      config or spec raises ValueError (its inputs would stay empty: pass ``centerline=``).
    * ``registry``: the :class:`~trackgen_env.pipeline.Registry` holding a spec's plugin
      stages (None: the default registry); TypeError with a config or ``centerline``.
      With ``elevation > 0`` or ``banking > 0`` the course also bakes the ground
      (``tools.HeightFieldBake()``, 128 nodes per side, ``course.heightfield``) and the planar
      car rides on it: its z is the ground height under it after every step
      (``docs/elevated-tracks.md``).
    * ``centerline``: ``[N, 4]`` (x, y, width right, width left) [m]: drive this closed
      centreline (a real circuit, e.g. from :func:`~trackgen_env.generators.centerline_io.load_centerline_csv`)
      in every env instead of generated tracks (``track`` must then be None); resampled
      every ``wheelbase / 3`` (0.11 m for rc10, 0.9 m for the full-size car). A band more than
      ``CIRCUIT_WIDE_BAND`` = 20 car widths wide on average warns (a full-size circuit for the
      1:10 car: scale all four columns, e.g. ``points * 0.1``), as does a band that folds over
      itself (:func:`~trackgen_env.generators.centerline_io.band_folds`). It is driven as
      given: its rows are checked (finite, widths > 0 m), but not its shape, so a line whose
      band crosses itself (a figure-8, or Suzuka's bridge) is valid: the band is not tested
      against itself, as a generated track's is. With unequal widths the env's centreline is
      the middle of the band (the given line shifted by half their difference; real circuits
      move by up to ~1.4 m): the start, the lateral offset and the lookahead read that line.
    * ``checkpoint_spacing``: [m] spacing of the progress checkpoints, at least the
      centreline's point spacing; default twice the distance the car covers in one step at
      ``max_speed``, or the point spacing if that is larger. A loop holds at least 3
      checkpoints: a spacing over a third of it gives 3, evenly spaced.
    * ``start_config``, ``randomization_config``, ``reward_config``: the keywords below in groups
      (:class:`~trackgen_env.envs.config.TrackStartConfig`: ``random_start``, ``start_yaw``,
      ``start_speed``; :class:`~trackgen_env.envs.config.RandomizationConfig`:
      ``friction_range``, ``accel_range``, ``steer_range``;
      :class:`~trackgen_env.envs.config.TrackRewardConfig`: ``off_track_penalty``), kept as
      read-only attributes of those names; a group and one of its keywords together raise TypeError.
    * ``off_track_penalty``: subtracted from the reward when the car touches an edge (default 1).
    * ``friction_range``: None (default: the car's friction) or ``(lo, hi)`` with ``0 < lo <= hi
      <= 2``: domain randomisation of the grip. At every reset each env draws a friction scale
      uniformly in ``[lo, hi)`` from its course's random stream (its seed and generation
      counter, stream ``Stream.CAR_PARAMS``: deterministic per env, whatever ``num_envs``) and
      drives that episode with the car's friction times it (the dynamic model's axle stiffness
      ``mu C_S`` too); ``state.grip`` holds the scales. It is not observed.
    * ``accel_range``, ``steer_range``: None (default: the car's own) or ``(lo, hi)`` with
      ``0 < lo <= hi <= 2`` (and ``hi * max_steer < pi/2``): domain randomisation of the motor
      and the steering, drawn like ``friction_range`` (the same stream, draws of their own, so
      the grip's draws do not change): each episode drives with the car's ``max_accel`` and
      ``max_brake`` times a scale in ``[lo, hi)`` of ``accel_range`` (``state.accel_scale``) and
      its ``max_steer`` times one of ``steer_range`` (``state.steer_scale``). Not observed.
    * ``random_start``: a bool (default False): start every episode at a random checkpoint
      (see Starting State); ``start_yaw`` (default 0) [rad] in ``[0, pi/2]`` bounds its heading
      error, ``start_speed`` (default ``(0, 0)``: at rest) ``(lo, hi)`` [m/s] with ``0 <= lo <=
      hi <= max_speed`` its speed; both apply only with ``random_start``.
    * ``stall_steps``: None (default) or an int >= 1: truncate an episode after that many steps
      without a new checkpoint (see Episode End).
    * ``num_lookahead``, ``lookahead_horizon``: the lookahead points of the observation
      (default 10 points up to ``max(15 * wheelbase, max_speed^2 / (2 max_brake))`` [m], the
      braking distance from top speed: 4.95 m for rc10, 241 m for the full-size car); a
      given horizon must be at most the longest loop the tracks declare (a flat procedural
      track's bound; a given centreline's and a hilly track's are not checked).
    * ``obs_type``: ``"state"`` (default: the table above), ``"lidar"`` (a LiDAR scan, then the
      car's motion) or ``"pixels"`` (CarRacing-v3's 96x96x3 uint8 frame; ``pixels_per_metre``
      holds its scale, None with the others; ``docs/sensors.md``). Reward, termination and
      everything else are the same.
    * ``num_beams``, ``lidar_fov``, ``lidar_range``, ``lidar_noise_std``: the LiDAR of
      ``obs_type="lidar"`` (None: the default; refused with ``"state"``): beams, an int in [1,
      16384] (default 1080); field of view [rad] in (0, 2 pi] (default 4.71); range [m] > 0
      (default f1tenth_gym's 30 m, or the car's braking distance ``max_speed^2 / (2 max_brake)``
      where farther: 241 m for the full-size car); Gaussian range noise [m] >= 0 (default 0),
      drawn from each env's own stream (seed, course counter, scans since its reset) and clipped
      to ``[0, lidar_range]``. ``beam_angles`` holds the ``[num_beams]`` float32 angles [rad]
      (None with the other observations).
    * ``capture``: a bool: record the step as one graph (default True); False runs it eagerly.

    Bad arguments raise TypeError / ValueError before the course is built (a ``track=`` spec's
    program and a ``centerline=``'s generator are built first: some checks read them); a construction
    whose memory estimate (:meth:`memory_estimate`) exceeds what the device has free raises
    MemoryError. After construction every attribute is read-only (AttributeError naming the
    constructor argument) except ``render_mode`` and ``render_size``; ``close()`` releases
    the buffers, after which ``step``/``reset``/``render`` raise RuntimeError
    (:class:`~trackgen_env.envs.base.CourseVectorEnv`, ``docs/envs.md``).

    ## Version History

    * v0: initial version; ``autoreset_mode`` (NEXT_STEP, SAME_STEP, DISABLED), ``output``
      ("numpy", "torch") and on-device ``render_mode="rgb_array"`` added without changing
      the default behaviour; later ``None`` limits, read-only attributes, a releasing
      ``close()`` and the memory check, none of which changes a valid run; then
      ``car_model="dynamic"`` and the ``"f1tenth"`` car, beside the unchanged default; then
      on an elevated or banked track (``TrackGenConfig(elevation=, banking=)``) the car's z
      follows the ground (a ``HeightFieldBake`` on the course), flat tracks unchanged; then
      ``friction_range`` (off by default); then ``random_start`` (``start_yaw``,
      ``start_speed``) and ``stall_steps`` (off by default); then ``accel_range`` and
      ``steer_range`` (off by default); then ``obs_type="lidar"`` and ``obs_type="pixels"`` beside
      the unchanged default.
    """

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 20, "autoreset_mode": AutoresetMode.NEXT_STEP}
    action_labels = "(steering, throttle)"
    info_fields = (("laps", wp.int32), ("off_track", wp.bool))
    argument_attributes = {"track": "track_config", "centerline": "track_config"}

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
        car: str | CarParams = "rc10",
        car_model: str = "kinematic",
        track: TrackGenConfig | PipelineSpec | None = None,
        registry: Registry | None = None,
        centerline: np.ndarray | None = None,
        checkpoint_spacing: float | None = None,
        start_config: TrackStartConfig | None = None,
        randomization_config: RandomizationConfig | None = None,
        reward_config: TrackRewardConfig | None = None,
        off_track_penalty: float = UNSET,
        friction_range: tuple[float, float] | None = UNSET,
        accel_range: tuple[float, float] | None = UNSET,
        steer_range: tuple[float, float] | None = UNSET,
        random_start: bool = UNSET,
        start_yaw: float = UNSET,
        start_speed: tuple[float, float] = UNSET,
        stall_steps: int | None = None,
        num_lookahead: int = 10,
        lookahead_horizon: float | None = None,
        obs_type: str = "state",
        num_beams: int | None = None,
        lidar_fov: float | None = None,
        lidar_range: float | None = None,
        lidar_noise_std: float | None = None,
        capture: bool = True,
    ):
        start = grouped("start_config", TrackStartConfig, start_config, random_start=random_start, start_yaw=start_yaw,
                        start_speed=start_speed)
        draws = grouped("randomization_config", RandomizationConfig, randomization_config,
                        friction_range=friction_range, accel_range=accel_range, steer_range=steer_range)
        reward = grouped("reward_config", TrackRewardConfig, reward_config, off_track_penalty=off_track_penalty)
        auto_steps = DEFAULT_MAX_EPISODE_STEPS
        if centerline is not None and isinstance(max_episode_steps, str) and max_episode_steps == "auto":
            auto_steps = _circuit_steps(centerline, car, laps)
        seed = self._setup(num_envs, device, max_episode_steps=max_episode_steps, laps=laps, seed=seed,
                           render_mode=render_mode, autoreset_mode_=autoreset_mode, output=output,
                           render_size=render_size, auto_steps=auto_steps)
        self.car = car_params(car)
        self.car_model = check_car_model(car_model, self.car)
        self.off_track_penalty = check_float("off_track_penalty", reward.off_track_penalty, lo=0.0)
        self.reward_config = TrackRewardConfig(self.off_track_penalty)
        # each None, or (lo, hi) scales with 0 < lo <= hi <= 2
        self.friction_range, self.accel_range, self.steer_range = (
            check_range(name, value, 0.0, 2.0, lo_open=True, none=True, what=f" of {_CAR_DRAWS[name][0]}")
            for name, value in (("friction_range", draws.friction_range), ("accel_range", draws.accel_range),
                                ("steer_range", draws.steer_range)))
        self.randomization_config = RandomizationConfig(self.friction_range, self.accel_range, self.steer_range)
        if self.steer_range is not None and self.car.max_steer * self.steer_range[1] >= 0.5 * math.pi:
            raise ValueError(f"steer_range[1] times the car's max_steer ({self.car.max_steer} rad) must be < pi/2, "
                             f"got {self.steer_range[1]} (a wheel angle of "
                             f"{self.car.max_steer * self.steer_range[1]:.4g} rad)")
        self.random_start = check_bool("random_start", start.random_start)
        self.start_yaw = check_float("start_yaw", start.start_yaw, lo=0.0, hi=0.5 * math.pi)
        self.start_speed = check_range("start_speed", start.start_speed, 0.0, self.car.max_speed)
        self.start_config = TrackStartConfig(self.random_start, self.start_yaw, self.start_speed)
        self.stall_steps = None if stall_steps is None else check_int("stall_steps", stall_steps, lo=1, hi=INT32_MAX)
        self.num_lookahead = check_int("num_lookahead", num_lookahead, lo=0, hi=256)
        c = self.car
        horizon = max(15.0 * c.wheelbase,
                      c.max_speed**2 / (2.0 * c.max_brake)) if lookahead_horizon is None else lookahead_horizon
        self.lookahead_horizon = check_float("lookahead_horizon", horizon, lo=0.0, lo_open=True)
        if checkpoint_spacing is not None:
            checkpoint_spacing = check_float("checkpoint_spacing", checkpoint_spacing, lo=0.0, lo_open=True)
        self._check_sensor(obs_type, num_beams, lidar_fov, lidar_range, lidar_noise_std)
        if self.obs_type == "lidar":
            self._lidar_spaces()
        elif self.obs_type == "pixels":
            self._pixel_spaces()
        else:
            self._spaces(OBS_LOOKAHEAD + 3 * self.num_lookahead, 2)

        self.registry = registry
        if centerline is None:
            source, seeds, self.track_config = generated_source(
                TrackGenConfig() if track is None else track, argument="track", family="track",
                config_cls=TrackGenConfig, registry=registry, num_envs=self.num_envs, device=self.device, seed=seed)
            kept = self.track_config
            spacing = kept.settings["point_spacing"] if isinstance(kept, PipelineSpec) else kept.point_spacing
        else:
            if track is not None or registry is not None:
                raise TypeError("pass either track= (generated tracks, with registry= for a spec's plugins) or "
                                "centerline= (a given circuit), not both")
            if isinstance(centerline, (str, os.PathLike)):
                raise TypeError(f"centerline= takes the circuit's [N, 4] points, got the path "
                                f"{os.fspath(centerline)!r}: "
                                "load it first, centerline=load_centerline_csv(path)")
            spacing, seeds = self.car.wheelbase / 3.0, {}
            _check_car_fits_circuit(centerline, self.car)
            _warn_circuit_scale(centerline, self.car)
            try:
                source = TrackGenerator.from_centerline(
                    centerline, num_envs=self.num_envs, device=str(self.device), point_spacing=spacing,
                    seeds=seed,
                )
            except ValueError as exc:  # from_centerline's own spacing is not this env's to choose
                raise ValueError(str(exc).replace(
                    "from_centerline takes a coarser point_spacing",
                    f"the env resamples every {spacing:g} m, a third of the car's wheelbase")) from None
        _check_car_fits(source, self.car)
        if checkpoint_spacing is None:  # no closer than the points (a slow car covers less than one per step)
            self.checkpoint_spacing = max(2.0 * self.car.max_speed * self.car.dt, spacing)
        elif checkpoint_spacing < spacing:
            raise ValueError(
                f"checkpoint_spacing must be >= the centreline's point spacing ({spacing:g} m): checkpoints closer "
                f"than "
                f"the points carry no more progress (each is interpolated between the same two points) and take "
                f"memory (36 B each, per env, for every checkpoint the longest loop holds), got {checkpoint_spacing:g}")
        else:
            self.checkpoint_spacing = checkpoint_spacing
        longest = _longest_loop(source)
        # only a given horizon: the default, the car's braking distance (241 m for the full-size car),
        # may exceed a small loop, whose far lookahead points then wrap past the start
        if lookahead_horizon is not None and longest is not None and self.lookahead_horizon > longest:
            raise ValueError(f"lookahead_horizon must be <= the longest loop these tracks hold ({longest:.4g} m): its "
                             f"farthest points would lie past the start again, a lap or more ahead, got "
                             f"{self.lookahead_horizon:g}")
        # the warm-started searches only need to cover one step of travel at top speed (a
        # longer jump falls back to a global search): a small window is the cheap one
        window = math.ceil(self.car.max_speed * self.car.dt / spacing) + 2
        # on hills or banked corners the car rides on a baked ground (CarState.follow_ground)
        ground = _on_hills_or_banked(source)
        extra = [tools.Localizer(warm_window=window)]
        if self.obs_type == "lidar":
            extra.append(tools.Lidar(self.num_beams, fov=self.lidar_fov, max_range=self.lidar_range,
                                     noise_std=self.lidar_noise_std, resolution=_lidar_resolution(source, centerline)))
        self.course = Course.track(
            source, checkpoint_spacing=self.checkpoint_spacing,
            collision=tools.BandCollision("segments", window=window),
            extra=extra, heightfield=True if ground else None, **seeds,
        )
        if centerline is not None:
            self.track_config = source.config
        params = self.course.generator.params
        if "band.width" in params:  # a live set (or range) of the width meets the same rule
            params.add_validator("band.width", _car_fits_live(self.car))
        if not ground and "layout.elevation" in params:  # built flat: the car is kept on the plane
            params.add_validator("layout.elevation", _flat_live)

        E, dev = self.num_envs, self.device
        # the ground: None on a flat, level track (no launch)
        self.state = CarState(self.car, E, dev, model=self.car_model, ground=self.course.heightfield)
        self._s_prev = wp.zeros(E, dtype=float, device=dev)
        self._stalled = wp.zeros(E, dtype=wp.int32, device=dev)  # steps since the last new checkpoint
        # the random start of each env's episode (written for the reset envs)
        self._start_position = wp.zeros(E, dtype=wp.vec3, device=dev)
        self._start_orientation = wp.zeros(E, dtype=wp.quat, device=dev)
        self._start_speed = wp.zeros(E, dtype=float, device=dev)
        self._start_checkpoint = wp.zeros(E, dtype=wp.int32, device=dev)
        k = np.arange(self.num_lookahead)
        K = max(self.num_lookahead, 1)
        distances = self.lookahead_horizon * (k + 1) * (k + 2) / (K * (K + 1))
        # [K + 1]: never empty
        self._lookahead = wp.array(np.append(distances, 0.0).astype(np.float32), dtype=float, device=dev)
        # stands for the ranges (obs_type "state": not read)
        self._no_ranges = wp.zeros((1, 1), dtype=float, device=dev)
        if self.obs_type == "pixels":  # scratch of the egocentric view: each env's band segments in view
            self._ego_scratch = render.ego_scratch(E, self.course.result.centerline.shape[1], dev)
            # the band is drawn in segments about 5 pixels long (the default tracks' points lie 1.6
            # pixels apart): a chord L misses a bend of radius R by L^2 / (8 R), a quarter pixel at
            # the default tracks' tightest bends (0.8 m, 12 pixels)
            self._ego_stride = max(1, round(5.0 / (spacing * self.pixels_per_metre)))
        self._finish_init(wp.zeros(E, dtype=wp.vec2, device=dev), capture)

    # -- the observation -----------------------------------------------------------------------
    def _check_sensor(self, obs_type, num_beams, fov, max_range, noise_std) -> None:
        """Check and set ``obs_type`` and the LiDAR's arguments (None in a ``"state"`` env)."""
        if not isinstance(obs_type, str):
            raise TypeError(f"obs_type must be a str, one of {OBS_TYPES}, got {type(obs_type).__name__} {obs_type!r}")
        if obs_type not in OBS_TYPES:
            raise ValueError(f"obs_type must be one of {OBS_TYPES}, got {obs_type!r}")
        self.obs_type = obs_type
        self.pixels_per_metre = None  # obs_type "pixels": set with its spaces
        given = {"num_beams": num_beams, "lidar_fov": fov, "lidar_range": max_range, "lidar_noise_std": noise_std}
        if obs_type != "lidar":
            named = [k for k, v in given.items() if v is not None]
            if named:
                raise ValueError(f"{', '.join(named)} set the LiDAR of obs_type='lidar', and this env observes "
                                 f"obs_type={obs_type!r}: pass obs_type='lidar', or leave them out")
            self.num_beams = self.lidar_fov = self.lidar_range = self.lidar_noise_std = self.beam_angles = None
            return
        c = self.car
        self.num_beams = check_int("num_beams", tools.lidar.F1TENTH_NUM_BEAMS if num_beams is None else num_beams,
                                   lo=1, hi=16384)
        self.lidar_fov = check_float("lidar_fov", tools.lidar.F1TENTH_FOV if fov is None else fov, lo=0.0,
                                     lo_open=True, hi=2.0 * math.pi)
        # f1tenth_gym's 30 m, or the car's braking distance from top speed where that is farther
        default_range = max(tools.lidar.F1TENTH_RANGE, c.max_speed**2 / (2.0 * c.max_brake))
        self.lidar_range = check_float("lidar_range", default_range if max_range is None else max_range, lo=0.0,
                                       lo_open=True, hi=1.0e6)
        self.lidar_noise_std = check_float("lidar_noise_std", 0.0 if noise_std is None else noise_std, lo=0.0, hi=1.0e6)
        angles = tools.lidar.beam_angles(self.num_beams, self.lidar_fov)
        angles.flags.writeable = False
        self.beam_angles = angles

    def _lidar_spaces(self) -> None:
        """The spaces of ``obs_type="lidar"``: ranges in ``[0, lidar_range]``, then the car's motion."""
        B = self.num_beams
        low = np.full(B + len(LIDAR_MOTION_FIELDS), -np.inf, np.float32)
        high = np.full(B + len(LIDAR_MOTION_FIELDS), np.inf, np.float32)
        low[:B], high[:B] = 0.0, np.float32(self.lidar_range)
        self.single_observation_space = spaces.Box(low, high, dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    def _pixel_spaces(self) -> None:
        """The spaces of ``obs_type="pixels"``: CarRacing-v3's ``Box(0, 255, (96, 96, 3), uint8)`` frame."""
        size = render.EGO_SIZE
        self.pixels_per_metre = float(render.EGO_CAR_ROW) / self.lookahead_horizon
        self.single_observation_space = spaces.Box(0, 255, (size, size, 3), np.uint8)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.single_action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = batch_space(self.single_action_space, self.num_envs)

    # -- what differs from the gates env: the car, the observation, the picture --------------
    def _start(self, reset_mask: wp.array):
        threads, per = env_loop.shape(self.device, self.num_envs)
        seeds = self.course.seeds
        for argument, (_, field, index) in _CAR_DRAWS.items():
            bounds = getattr(self, argument)
            if bounds is not None:
                wp.launch(_draw_scale, threads,
                          inputs=[per, reset_mask, seeds.seeds, seeds.counters, int(Stream.CAR_PARAMS), index, *bounds],
                          outputs=[getattr(self.state, field)], device=self.device)
        if not self.random_start:
            r = self.course.result
            return r.start_position, r.start_orientation, None
        course = self.course
        course.checkpoint_sampler.sample(reset_mask, self._start_position, self._start_orientation,
                                         self._start_checkpoint)
        wp.launch(_perturb_start, threads,
                  inputs=[per, reset_mask, seeds.seeds, seeds.counters, int(Stream.TRACK_START), self.start_yaw,
                          *self.start_speed],
                  outputs=[self._start_orientation, self._start_speed], device=self.device)
        # a lap is a full loop from the start: progress counts from the drawn checkpoint
        progress = course.components["progress"]
        progress.reset_to(progress.context, reset_mask, self._start_checkpoint)
        return self._start_position, self._start_orientation, self._start_speed

    def _observe(self, res, reset_mask: wp.array, restart: bool):
        r, st, fr = self.course.result, self.state, res.frame
        if self.obs_type == "pixels":
            render.draw_ego(self._obs, self._ego_scratch, reset_mask, restart,
                            st.position, st.yaw, r.centerline, r.half_width, r.num_points, r.valid,
                            self.pixels_per_metre, self._ego_stride, self.car.half_extents[:2])
            return
        threads, per = env_loop.shape(self.device, self.num_envs)
        if self.obs_type == "lidar":
            sensor = [0, self._lookahead, self.num_beams, self.course.components["lidar"].result.ranges]
        else:
            sensor = [self.num_lookahead, self._lookahead, 0, self._no_ranges]
        wp.launch(
            _observe,
            threads,
            inputs=[
                per, reset_mask, st.position, st.yaw, st.speed, st.yaw_rate, st.steer,
                r.centerline, r.curvature, r.half_width, r.num_points, r.loop_length, r.valid,
                fr.s, fr.lateral_offset, fr.heading_error, fr.curvature, fr.segment, res.events.lap_fraction,
                *sensor, int(restart),
            ],
            outputs=[self._obs],
            device=self.device,
        )

    def _reward_termination(self, res, reset_mask: wp.array, restart: bool):
        r, ev, info = self.course.result, res.events, self._info
        threads, per = env_loop.shape(self.device, self.num_envs)
        wp.launch(
            _reward_termination,
            threads,
            inputs=[
                per, reset_mask, self.state.elapsed, r.num_points, r.loop_length, r.valid,
                res.frame.s, res.contacts.hit, ev.laps, ev.passed,
                self._step_limit, self.stall_steps or 0, self._lap_limit, self.off_track_penalty, int(restart),
                self._s_prev, self._stalled,
            ],
            outputs=[self._autoreset, self._reward, self._terminated, self._truncated, info["laps"],
                     info["off_track"]],
            device=self.device,
        )

    def _draw(self, frames: wp.array, views: wp.array, num: int):
        r, cps = self.course.result, self.course.checkpoints
        render.draw_track(
            frames, views, num, r.centerline, r.half_width, r.num_points, r.valid,
            cps.position, cps.direction, cps.half_width, cps.num_checkpoints,
            self.state.position, self.state.yaw, self.car.half_extents[:2],
        )

    # -- inspection -------------------------------------------------------------------------
    def car_pose(self) -> np.ndarray:
        """``[E, 3]`` float32 (x [m], y [m], yaw [rad]) of every car (a host copy)."""
        self.check_open()
        p = self.state.position.numpy()  # a view on the CPU: concatenate copies
        return np.concatenate([p[:, :2], self.state.yaw.numpy()[:, None]], axis=1).astype(np.float32)

    def tracks(self) -> list[dict[str, np.ndarray]]:
        """Host copies of every env's track: ``centerline [n, 2]``, ``half_width [n]``, ``valid``."""
        self.check_open()
        r = self.course.result
        c, hw, n, v = r.centerline.numpy(), r.half_width.numpy(), r.num_points.numpy(), r.valid.numpy()
        return [
            {"centerline": c[e, : n[e], :2].copy(), "half_width": hw[e, : n[e]].copy(), "valid": bool(v[e])}
            for e in range(self.num_envs)
        ]
