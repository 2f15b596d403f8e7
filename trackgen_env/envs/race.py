"""``TrackGen-Race-v0``: several cars racing head to head on each freshly generated closed track.

Design: ``num_envs`` courses (races) of ``num_agents`` cars each are held as one course of
``E * N`` bodies, env-major (car ``a`` of race ``e`` is body ``e * N + a``), every body with
its own copy of its race's track. The N bodies of race ``e`` get the same seed (``hash(s, e)``
of an int seed ``s``, as ``TrackGen-Track-v0``'s env ``e``), and a race ends, regenerates and
advances its counters for all its cars at once (its cars' ``autoreset`` are equal), so the N
copies are the same track at every episode: a course depends only on its seed and counter
(:mod:`trackgen_env.seeding`). Every per-body component (checkpoints, progress, band
collision, localizer) then works unchanged, the masked regeneration regenerates whole races,
and one race's cars are N adjacent rows of every array, which the race kernel reads together.
The price is N copies of each track's arrays and of its generation; the step reads each
car's own rows as the single-car env does.

The step is :class:`~trackgen_env.envs.track.TrackVectorEnv`'s (car dynamics, the course's
step, its observation and progress reward), followed by one launch per race
(:func:`_race`): car-car contact between every pair of racing cars (the separating axis test
of :mod:`trackgen_env.envs.contact`), each car's race distance, laps, rank and gap, who is
out or finished, the race's end, the reward terms and the opponents' observations.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp
from gymnasium.vector import AutoresetMode

from ..core import env_loop
from ..core.checks import check_float, check_int, check_num_envs
from ..generators.centerline_io import check_centerline
from ..generators.track import TrackGenConfig
from ..core.polyline import quat_from_yaw, wrap_angle
from ..core.seeding import Stream, env_seeds, random_key, uniform
from ..tools.course_size import construction_bound
from .base import INT32_MAX, check_seed
from .car import car_params, yaw_of
from .contact import boxes_overlap
from .track import DEFAULT_MAX_EPISODE_STEPS, TrackVectorEnv

__all__ = ["RaceVectorEnv", "OPPONENT_FIELDS", "MAX_AGENTS", "check_num_agents", "race_seeds", "host_ranks",
           "no_single_env"]

wp.set_module_options({"enable_backward": False})

#: The most cars per race: a race kernel thread compares every pair of its cars.
MAX_AGENTS = 16
#: Names of one opponent's observation entries, in order (``OPPONENT_FIELDS.index(name)``).
OPPONENT_FIELDS = ("active", "x", "y", "vx", "vy", "heading", "gap")
_OPP = wp.constant(len(OPPONENT_FIELDS))
_RACING = wp.constant(0)
_OUT = wp.constant(1)
_FINISHED = wp.constant(2)


def check_num_agents(value) -> int:
    """``num_agents``: an int in ``[1, MAX_AGENTS]`` (not a bool).

    Raises:
        TypeError: not an int. ValueError: out of range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"num_agents must be an int (cars per course), got {type(value).__name__} {value!r}")
    if not 1 <= value <= MAX_AGENTS:
        raise ValueError(f"num_agents must be an int in [1, {MAX_AGENTS}] (cars per course), got {value}")
    return int(value)


def race_seeds(seed, num_races: int, num_agents: int) -> np.ndarray | None:
    """The per-car seeds of ``num_races`` races: race ``e``'s cars all get ``hash(seed, e)`` (an
    int ``seed``), or ``seed[e]`` (``num_races`` ints), or car ``i`` ``seed[i]`` (``E * N`` ints
    that agree within each race). None stays None.

    Raises:
        TypeError / ValueError: as :func:`~trackgen_env.envs.base.check_seed`; ``E * N`` seeds that
            differ within a race (its cars share one track).
    """
    if seed is None:
        return None
    if isinstance(seed, (list, tuple, np.ndarray)) and len(seed) == num_races * num_agents and num_agents > 1:
        values = check_seed(seed, num_races * num_agents).reshape(num_races, num_agents)
        if np.any(values != values[:, :1]):
            raise ValueError("per-car seeds must agree within each race (its num_agents cars share one track): pass "
                             f"one seed per course ({num_races} ints) or equal seeds per race, got {list(seed)!r}")
        return values.ravel()
    seed = check_seed(seed, num_races)
    per_race = env_seeds(seed, num_races).astype(np.int64) if isinstance(seed, int) else seed
    return np.repeat(per_race, num_agents)


def no_single_env(**kwargs):
    """``gymnasium.make("TrackGen-Race-v0")``'s entry point: a race has several cars, so it has no
    one-car ``gymnasium.Env``.

    Raises:
        TypeError: always, naming the two faces of the race.
    """
    raise TypeError("TrackGen-Race-v0 is several cars per course: build it with gymnasium.make_vec("
                    "'TrackGen-Race-v0', num_envs=E, num_agents=N) (the E * N cars as one vector env) or "
                    "trackgen_env.integrations.pettingzoo.parallel_env(num_agents=N) (PettingZoo)")


def host_ranks(progress: np.ndarray, status: np.ndarray, finish_step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks (1 = leader) and gaps to the car ahead [m] of the cars of races, on the host: the
    reference of the race kernel's.

    A finished car is ahead of every unfinished one, earlier finishes first; otherwise the car
    with the larger race progress is ahead; ties go to the lower index. The gap is the race
    progress of the car one rank ahead minus the car's own (0 for the leader).

    Args:
        progress: ``[E, N]`` race progress [m]. status: ``[E, N]`` (0 racing, 1 out, 2 finished).
        finish_step: ``[E, N]`` the step a finished car finished on.
    """
    E, N = progress.shape
    rank = np.zeros((E, N), dtype=np.int32)
    gap = np.zeros((E, N), dtype=np.float32)
    for e in range(E):
        def key(i, e=e):
            done = status[e, i] == 2
            return (0 if done else 1, finish_step[e, i] if done else 0, -float(progress[e, i]), i)

        order = sorted(range(N), key=key)
        for r, i in enumerate(order):
            rank[e, i] = r + 1
            gap[e, i] = 0.0 if r == 0 else progress[e, order[r - 1]] - progress[e, i]
    return rank, gap


@wp.func
def _ahead(j: int, i: int, status: wp.array(dtype=wp.int32), finish_step: wp.array(dtype=wp.int32),
           progress: wp.array(dtype=float)) -> bool:
    """Whether car ``j`` is ahead of car ``i`` (of the same race): :func:`host_ranks`'s order."""
    fj = status[j] == _FINISHED
    fi = status[i] == _FINISHED
    if fj != fi:
        return fj
    if fj and finish_step[j] != finish_step[i]:
        return finish_step[j] < finish_step[i]
    if not fj and progress[j] != progress[i]:
        return progress[j] > progress[i]
    return j < i


@wp.func
def _point_at(centerline: wp.array2d(dtype=wp.vec3), half_width: wp.array2d(dtype=float), e: int, s: float,
              length: float, n: int):
    """Env ``e``'s centreline at arc length ``s`` in [0, length): the point, the chord direction of its
    segment (unit, horizontal) and the band's half width there (uniform resampling: index directly)."""
    u = s * float(n) / length
    j = wp.clamp(int(u), 0, n - 1)
    j1 = wp.where(j < n - 1, j + 1, 0)
    t = wp.clamp(u - float(j), 0.0, 1.0)
    a = centerline[e, j]
    b = centerline[e, j1]
    d = b - a
    d = wp.vec3(d[0], d[1], 0.0)
    return wp.lerp(a, b, t), wp.normalize(d), wp.lerp(half_width[e, j], half_width[e, j1], t)


@wp.kernel
def _grid(
    races_per_thread: int,
    num_agents: int,
    reset_mask: wp.array(dtype=wp.int32),
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    stream: int,
    # the track
    centerline: wp.array2d(dtype=wp.vec3),
    half_width: wp.array2d(dtype=float),
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    valid: wp.array(dtype=wp.int32),
    track_start_position: wp.array(dtype=wp.vec3),
    track_start_orientation: wp.array(dtype=wp.quat),
    # the grid
    spacing: float,
    lateral: float,
    half_diagonal: float,
    grid_length: float,
    # outputs
    slot: wp.array(dtype=wp.int32),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    voided: wp.array(dtype=wp.int32),
):
    """Every reset race's grid: a random order of its cars (Fisher-Yates on the race's stream),
    slot ``j`` at arc length ``-j * spacing`` (behind the start line), alternating left and right
    of the centreline; a race whose track cannot hold the grid is void (its cars on the start pose)."""
    thread = wp.tid()
    for r in range(thread * races_per_thread, wp.min((thread + 1) * races_per_thread, voided.shape[0])):
        b = r * num_agents
        if reset_mask[b] == 0:
            continue
        n = num_points[b]
        length = loop_length[b]
        fits = valid[b] != 0 and n >= 3 and length > 0.0 and grid_length <= 0.5 * length
        voided[r] = wp.where(fits, 0, 1)
        key = random_key(seeds[b], counters[b], stream)
        for i in range(num_agents):
            slot[b + i] = i
        for i in range(num_agents - 1, 0, -1):
            k = wp.min(int(uniform(key, i) * float(i + 1)), i)
            tmp = slot[b + i]
            slot[b + i] = slot[b + k]
            slot[b + k] = tmp
        for i in range(num_agents):
            e = b + i
            j = slot[e]
            side = wp.where(j % 2 == 0, 1.0, -1.0)
            p = wp.vec3()
            q = wp.quat_identity()
            psi = float(0.0)
            hw = float(0.0)
            if not fits or j == 0:
                p = track_start_position[e]
                q = track_start_orientation[e]
                psi = yaw_of(q)
                if n >= 1:
                    hw = half_width[e, 0]
            else:
                c, d, w = _point_at(centerline, half_width, e, length - float(j) * spacing, length, n)
                p = c
                hw = w
                psi = wp.atan2(d[1], d[0])
                q = quat_from_yaw(psi)
            off = float(0.0)
            if fits and num_agents > 1:
                off = side * wp.max(wp.min(lateral, hw - half_diagonal), 0.0)
            start_position[e] = p + wp.vec3(-wp.sin(psi), wp.cos(psi), 0.0) * off
            start_orientation[e] = q


@wp.func
def _race_progress(c: int, nc: int, length: float, s: float) -> float:
    """[m] a car's race progress: ``c L / n`` for the ``c`` checkpoints it has passed in order (its
    course's ``Progress`` starts every car on checkpoint 0, the start line, so a grid car behind it
    counts from the line on), plus its arc length past the last one (the localizer's s, wrapped to
    the nearer side: negative on the grid), continuous across the start line."""
    spacing = length / float(nc)
    ds = s - float(c % nc) * spacing
    ds = ds - length * wp.floor(ds / length + 0.5)
    return float(c) * spacing + ds


@wp.kernel
def _park(races_per_thread: int, num_agents: int, status: wp.array(dtype=wp.int32), action: wp.array(dtype=wp.vec2)):
    """An out or finished car brakes to a stop with its wheels straight, whatever its action."""
    thread = wp.tid()
    for r in range(thread * races_per_thread, wp.min((thread + 1) * races_per_thread, action.shape[0] // num_agents)):
        for i in range(r * num_agents, (r + 1) * num_agents):
            if status[i] != _RACING:
                action[i] = wp.vec2(0.0, -1.0)


@wp.kernel
def _race(
    races_per_thread: int,
    num_agents: int,
    num_opponents: int,
    obs_offset: int,
    reset_mask: wp.array(dtype=wp.int32),
    restart: int,
    voided: wp.array(dtype=wp.int32),
    # the cars
    position: wp.array(dtype=wp.vec3),
    yaw: wp.array(dtype=float),
    speed: wp.array(dtype=float),
    slip: wp.array(dtype=float),
    half_extents: wp.array(dtype=wp.vec3),
    elapsed: wp.array(dtype=wp.int32),
    # the course
    loop_length: wp.array(dtype=float),
    num_checkpoints: wp.array(dtype=wp.int32),
    capacity: int,
    s: wp.array(dtype=float),
    best: wp.array(dtype=wp.int32),
    wrong_way_in: wp.array(dtype=wp.int32),
    # settings
    target_laps: int,
    grace_steps: int,
    contact_penalty: float,
    position_reward: float,
    # state (in/out)
    status: wp.array(dtype=wp.int32),
    finish_step: wp.array(dtype=wp.int32),
    progress: wp.array(dtype=float),
    rank: wp.array(dtype=wp.int32),
    grace_left: wp.array(dtype=wp.int32),
    # in/out: the single-car outputs (TrackVectorEnv's observation and reward kernels wrote them)
    obs: wp.array2d(dtype=float),
    reward: wp.array(dtype=float),
    terminated: wp.array(dtype=wp.bool),
    truncated: wp.array(dtype=wp.bool),
    autoreset: wp.array(dtype=wp.int32),
    # outputs: info
    off_track: wp.array(dtype=wp.bool),
    laps: wp.array(dtype=wp.int32),
    car_contact: wp.array(dtype=wp.bool),
    opponent: wp.array(dtype=wp.int32),
    rank_out: wp.array(dtype=wp.int32),
    gap: wp.array(dtype=float),
    progress_out: wp.array(dtype=float),
    wrong_way: wp.array(dtype=wp.bool),
    out: wp.array(dtype=wp.bool),
    finished: wp.array(dtype=wp.bool),
):
    thread = wp.tid()
    for r in range(thread * races_per_thread, wp.min((thread + 1) * races_per_thread, voided.shape[0])):
        b = r * num_agents
        was_reset = reset_mask[b] != 0
        if restart != 0 and not was_reset:
            continue
        end = b + num_agents
        length = wp.max(loop_length[b], 1.0e-6)
        nc = wp.max(wp.min(num_checkpoints[b], capacity), 1)
        # the cars racing when the step began: they move on, meet each other, finish
        for i in range(b, end):
            if was_reset:
                status[i] = wp.where(voided[r] != 0, _OUT, _RACING)
                finish_step[i] = 0
            car_contact[i] = False
            opponent[i] = -1
            if status[i] == _RACING or was_reset:
                progress[i] = _race_progress(best[i], nc, length, s[i])
        if was_reset:
            grace_left[r] = -1
        else:
            for i in range(b, end):
                if status[i] != _RACING:
                    off_track[i] = False  # a parked car is out of the race: its band contacts are no news
                    continue
                hi = half_extents[i]
                pi = position[i]
                for j in range(i + 1, end):
                    if status[j] != _RACING:
                        continue
                    hj = half_extents[j]
                    pj = position[j]
                    if boxes_overlap(wp.vec2(pi[0], pi[1]), yaw[i], wp.vec2(hi[0], hi[1]),
                                     wp.vec2(pj[0], pj[1]), yaw[j], wp.vec2(hj[0], hj[1])) != 0:
                        # the nearest of several opponents at once is the one reported
                        if not car_contact[i] or wp.length(pj - pi) < wp.length(position[b + opponent[i]] - pi):
                            opponent[i] = j - b
                        if not car_contact[j] or wp.length(pj - pi) < wp.length(position[b + opponent[j]] - pj):
                            opponent[j] = i - b
                        car_contact[i] = True
                        car_contact[j] = True
            for i in range(b, end):
                if status[i] != _RACING:
                    reward[i] = 0.0  # out or finished earlier: nothing more to earn
                    continue
                if car_contact[i]:
                    # the car behind caused the contact (a tie blames both)
                    j = b + opponent[i]
                    if progress[i] <= progress[j]:
                        reward[i] = reward[i] - contact_penalty
                lap = best[i] // nc
                if terminated[i] or car_contact[i]:
                    status[i] = _OUT  # off the band, an invalid track, or a contact
                elif lap >= target_laps:
                    status[i] = _FINISHED
                    finish_step[i] = elapsed[i]
                    if grace_left[r] < 0:
                        grace_left[r] = grace_steps + 1  # counted down below, this step included
        # ranks and gaps, and the reward for places gained
        for i in range(b, end):
            ahead = int(0)
            for j in range(b, end):
                if j != i and _ahead(j, i, status, finish_step, progress):
                    ahead = ahead + 1
            if not was_reset and status[i] != _OUT and ahead + 1 != rank[i]:
                reward[i] = reward[i] + position_reward * float(rank[i] - (ahead + 1))
            rank_out[i] = ahead + 1
        racing = int(0)
        for i in range(b, end):
            rank[i] = rank_out[i]
            g = float(0.0)
            for j in range(b, end):
                if rank_out[j] == rank_out[i] - 1:
                    g = progress[j] - progress[i]
            gap[i] = g
            progress_out[i] = progress[i]
            laps[i] = best[i] // nc
            wrong_way[i] = wrong_way_in[i] != 0 and status[i] == _RACING
            out[i] = status[i] == _OUT
            finished[i] = status[i] == _FINISHED
            if status[i] == _RACING:
                racing = racing + 1
        if not was_reset:
            if grace_left[r] > 0:
                grace_left[r] = grace_left[r] - 1
            over = racing == 0 or grace_left[r] == 0
            trunc = truncated[b]
            for i in range(b, end):
                terminated[i] = over
                truncated[i] = trunc
                autoreset[i] = wp.where(over or trunc, 1, 0)
        # the K nearest opponents of each car, in its frame (nearest first; ties by index)
        for i in range(b, end):
            pi = position[i]
            ci = wp.cos(yaw[i])
            si = wp.sin(yaw[i])
            vi = wp.vec2(wp.cos(yaw[i] + slip[i]), wp.sin(yaw[i] + slip[i])) * speed[i]
            last_d = float(-1.0)
            last_j = int(-1)
            for k in range(num_opponents):
                pick = int(-1)
                pick_d = float(0.0)
                for j in range(b, end):
                    if j == i:
                        continue
                    d = wp.length(position[j] - pi)
                    later = d > last_d or (d == last_d and j > last_j)
                    if later and (pick < 0 or d < pick_d or (d == pick_d and j < pick)):
                        pick = j
                        pick_d = d
                last_d = pick_d
                last_j = pick
                o = obs_offset + k * _OPP
                dp = position[pick] - pi
                vj = wp.vec2(wp.cos(yaw[pick] + slip[pick]), wp.sin(yaw[pick] + slip[pick])) * speed[pick]
                dv = vj - vi
                obs[i, o] = wp.where(status[pick] == _RACING, 1.0, 0.0)
                obs[i, o + 1] = ci * dp[0] + si * dp[1]
                obs[i, o + 2] = -si * dp[0] + ci * dp[1]
                obs[i, o + 3] = ci * dv[0] + si * dv[1]
                obs[i, o + 4] = -si * dv[0] + ci * dv[1]
                obs[i, o + 5] = wrap_angle(yaw[pick] - yaw[i])
                obs[i, o + 6] = progress[pick] - progress[i]


class RaceVectorEnv(TrackVectorEnv):
    """Several cars racing head to head on each procedurally generated closed track.

    ## Description

    ``num_envs`` courses (races), each a freshly generated closed track (as ``TrackGen-Track-v0``'s)
    with ``num_agents`` cars on it. The vector env's batch is the ``num_envs * num_agents`` cars,
    env-major: car ``a`` of course ``e`` is row ``e * num_agents + a``; its ``num_envs`` attribute
    is that product (``num_courses`` is ``num_envs`` as passed). One policy drives every car
    (self-play). Each car is ``TrackGen-Track-v0``'s car (kinematic or dynamic), with its
    observation and progress reward, and races the others: the cars' body boxes collide, and
    each car has a race progress, laps, a position in the race (rank) and the gap to the car
    ahead. A finished race regenerates its track for all its cars at once.

    ## Action Space

    ``Box(-1, 1, (num_envs * num_agents, 2), float32)``: per car (steering, throttle), as
    ``TrackGen-Track-v0``. An out or finished car ignores its action and brakes to a stop.

    ## Observation Space

    ``Box(-inf, inf, (num_envs * num_agents, 8 + 3 * num_lookahead + 7 * K), float32)``: the
    single-car observation (indices ``0 .. 8 + 3 * num_lookahead - 1``, the table of
    ``TrackGen-Track-v0``; the lap fraction counts from the start line, 0 on the grid), then
    the ``K = min(num_opponents, num_agents - 1)`` nearest opponents (by distance, nearest
    first), 7 entries each, in the car's frame (x forward, y left):

    | Offset | Observation (opponent k, at ``8 + 3 * num_lookahead + 7 k``)       | Unit  |
    |--------|--------------------------------------------------------------------|-------|
    | 0      | active: 1 while the opponent races, 0 once it is out or finished   | -     |
    | 1, 2   | its position relative to the car (x, y)                            | m     |
    | 3, 4   | its velocity minus the car's (x, y)                                | m/s   |
    | 5      | its heading minus the car's, in [-pi, pi)                          | rad   |
    | 6      | its race progress minus the car's (> 0: it is ahead)               | m     |

    ## Race progress, laps, rank, gap

    A car's race progress [m] is its arc length along the course counted from the start line,
    negative on the grid behind it: ``c L / n`` for the ``c`` checkpoints passed in order beyond
    the start line (the course's ``Progress``, new ground only) plus its arc length past the last
    one. Laps are ``floor(c / n)`` (crossing the start line from the grid is no lap). The rank
    (1 = leader) orders finished cars first (earlier finishes ahead), then race progress (out
    cars keep the progress they had); ties go to the lower row. The gap is the race progress of
    the car one rank ahead minus the car's own [m] (0 for the leader).

    ## Rewards

    Per car: the progress of ``TrackGen-Track-v0`` (arc length gained this step [m],
    ``off_track_penalty`` subtracted when its body touches a band edge), plus
    ``position_reward`` per place gained in the step (minus per place lost; default 0), minus
    ``contact_penalty`` for a contact the car caused (the car behind in race progress; both at
    a tie; default 0: the contact already ends the car's race, as ``off_track`` ends the
    single-car episode). An out or finished car gets 0. The reset step gives 0.

    ## Starting State

    A grid behind the start line: slot ``j`` (0 = pole) at arc length ``-j * grid_spacing`` on
    the centreline, facing along it, at rest, shifted sideways by ``grid_lateral`` (left for even
    slots, right for odd: a staggered grid; less where the band is narrower, so that the body's
    half diagonal stays on the band; on the centreline when ``num_agents`` is 1). Which car takes
    which slot is drawn per episode from the race's stream (seed, counter; ``Stream.RACE_GRID``):
    deterministic for any ``num_envs``. A track too short for the grid (the grid, ``(N - 1)
    grid_spacing + car length``, longer than half the loop) holds a void race: every car starts
    at the start pose, out, and the race ends at the next step with a new track.

    ## Episode End

    A car is out when its body touches a band edge (``off_track``) or another racing car's body
    (``car_contact``: both cars are out, as in f1tenth_gym, where a collision ends the episode);
    an out or finished car is parked (no obstacle to the others). A car finishes when it has
    completed ``laps`` laps. The race, and with it every car's episode, ends (terminated) when no
    car races any more, or ``grace_steps`` steps after the first car finished; it is truncated
    at ``max_episode_steps``. Then all its cars auto-reset together (``autoreset_mode``, as
    ``TrackGen-Track-v0``) onto a new track.

    ``info`` (each ``[num_envs * num_agents]``, with its ``"_name"`` mask): ``laps`` (int32),
    ``off_track`` (bool, the step the car touched a band edge), ``car_contact`` (bool, the step
    its body touched another car's), ``opponent`` (int32, the index in its race of the car it
    touched, -1 without contact), ``rank`` (int32), ``gap`` (float32 [m]), ``race_progress``
    (float32 [m]), ``wrong_way`` (bool), ``out`` and ``finished`` (bool).

    ## Arguments

    As :class:`~trackgen_env.envs.track.TrackVectorEnv` (``num_envs`` is the number of courses),
    without the per-episode car draws and random starts (every car of a race starts from the
    grid), plus:

    * ``num_agents``: cars per course, an int in [1, 16] (default 2) that the grid fits on the course
      (15 on the default tracks at the default ``grid_spacing``).
    * ``num_opponents``: K, the most opponents each car observes (default 3; ``min(K, N - 1)``).
    * ``grid_spacing``: [m] between consecutive grid slots along the track (default 1.5 car lengths).
    * ``grid_lateral``: [m] the slots' sideways shift (default a quarter of the narrowest band, or a car width).
    * ``grace_steps``: steps the race goes on after the first car finished (default 0).
    * ``contact_penalty``, ``position_reward``: the reward terms' weights (default 0).

    With ``num_agents=1`` the env's outputs are ``TrackGen-Track-v0``'s for the same seed and
    arguments.

    ``render_mode`` must be None: the race draws no frames on the device (the demo,
    ``python -m trackgen_env demo --env race``, plots the cars' traces).

    ## Version History

    * v0: first version.
    """

    # no on-device frames: the single-car drawing would show each car alone on its copy of the track
    metadata = {"render_modes": [], "render_fps": 20, "autoreset_mode": AutoresetMode.NEXT_STEP}
    info_fields = (("laps", wp.int32), ("off_track", wp.bool), ("car_contact", wp.bool), ("opponent", wp.int32),
                   ("rank", wp.int32), ("gap", wp.float32), ("race_progress", wp.float32), ("wrong_way", wp.bool),
                   ("out", wp.bool), ("finished", wp.bool))
    argument_attributes = {**TrackVectorEnv.argument_attributes, "num_envs": "num_courses"}

    def __init__(
        self,
        num_envs: int = 1,
        device: str | None = None,
        *,
        num_agents: int = 2,
        num_opponents: int = 3,
        grid_spacing: float | None = None,
        grid_lateral: float | None = None,
        grace_steps: int = 0,
        contact_penalty: float = 0.0,
        position_reward: float = 0.0,
        max_episode_steps: int | None | str = DEFAULT_MAX_EPISODE_STEPS,
        laps: int | None = 1,
        seed: int | None = None,
        render_mode: str | None = None,
        render_size: int = 256,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        output: str = "numpy",
        car: str = "rc10",
        car_model: str = "kinematic",
        track=None,
        registry=None,
        centerline: np.ndarray | None = None,
        checkpoint_spacing: float | None = None,
        off_track_penalty: float = 1.0,
        num_lookahead: int = 10,
        lookahead_horizon: float | None = None,
        capture: bool = True,
    ):
        num_courses = check_num_envs(num_envs)
        self.num_agents = check_num_agents(num_agents)
        self.num_courses = num_courses
        N = self.num_agents
        self.num_opponents = min(check_int("num_opponents", num_opponents, lo=0, hi=MAX_AGENTS - 1), N - 1)
        params = car_params(car)
        self.grid_spacing = check_float("grid_spacing", 1.5 * params.length if grid_spacing is None else grid_spacing,
                                        lo=params.length, lo_open=True)
        self.grace_steps = check_int("grace_steps", grace_steps, lo=0, hi=INT32_MAX - 1)
        self.contact_penalty = check_float("contact_penalty", contact_penalty, lo=0.0)
        self.position_reward = check_float("position_reward", position_reward, lo=0.0)
        self.grid_length = (N - 1) * self.grid_spacing + params.length
        narrowest = _narrowest_band(track, centerline)
        if grid_lateral is None:
            grid_lateral = 0.25 * narrowest if narrowest is not None else params.width
        self.grid_lateral = check_float("grid_lateral", grid_lateral, lo=0.0)
        _check_grid_fits(self.grid_length, N, self.grid_spacing, params.length, track, centerline)
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (1 << 31))
        seeds = race_seeds(seed, num_courses, N)
        super().__init__(
            num_courses * N, device, max_episode_steps=max_episode_steps, laps=laps, seed=seeds,
            render_mode=render_mode, render_size=render_size, autoreset_mode=autoreset_mode, output=output, car=car,
            car_model=car_model, track=track, registry=registry, centerline=centerline,
            checkpoint_spacing=checkpoint_spacing, off_track_penalty=off_track_penalty, num_lookahead=num_lookahead,
            lookahead_horizon=lookahead_horizon, capture=capture)

    # -- construction hooks -------------------------------------------------------------------
    def _setup(self, num_envs, device, **kwargs) -> int:
        seed = super()._setup(num_envs, device, **kwargs)
        # the single-car kernel must not end a car's episode at its laps: the race decides
        self._race_laps = self._lap_limit
        self._lap_limit = INT32_MAX
        return seed

    def _spaces(self, obs_dim: int, action_dim: int) -> None:
        self._obs_offset = obs_dim
        super()._spaces(obs_dim + len(OPPONENT_FIELDS) * self.num_opponents, action_dim)

    def _finish_init(self, action: wp.array, capture: bool) -> None:
        E, dev = self.num_courses, self.device
        cars = self.num_envs

        def zeros(n, dtype=wp.int32):
            return wp.zeros(n, dtype=dtype, device=dev)

        self._slot, self._void = zeros(cars), zeros(E)
        self._status, self._finish_step, self._rank = zeros(cars), zeros(cars), zeros(cars)
        self._progress = zeros(cars, float)
        self._grace_left = zeros(E)
        self._race_reset = zeros(cars)
        self._half_diagonal = math.hypot(*self.car.half_extents[:2])
        super()._finish_init(action, capture)

    def _construction_size(self) -> int:
        return self.num_courses

    # -- the step -----------------------------------------------------------------------------
    def _dynamics(self, reset_mask: wp.array, reset_only: bool):
        if not reset_only:  # a finished or retired car stands still
            threads, per = env_loop.shape(self.device, self.num_courses)
            wp.launch(_park, threads, inputs=[per, self.num_agents, self._status], outputs=[self._action],
                      device=self.device)
        super()._dynamics(reset_mask, reset_only)

    def _start(self, reset_mask: wp.array):
        r, seeds = self.course.result, self.course.seeds
        threads, per = env_loop.shape(self.device, self.num_courses)
        wp.launch(
            _grid, threads,
            inputs=[per, self.num_agents, reset_mask, seeds.seeds, seeds.counters, int(Stream.RACE_GRID),
                    r.centerline, r.half_width, r.num_points, r.loop_length, r.valid, r.start_position,
                    r.start_orientation, self.grid_spacing, self.grid_lateral, self._half_diagonal, self.grid_length],
            outputs=[self._slot, self._start_position, self._start_orientation, self._void],
            device=self.device)
        return self._start_position, self._start_orientation, None

    def _reward_termination(self, res, reset_mask: wp.array, restart: bool):
        # the single-car kernel writes autoreset per car, which may be the reset mask itself
        wp.copy(self._race_reset, reset_mask)
        super()._reward_termination(res, reset_mask, restart)
        # the race over the single-car outcome: contact, ranks, finishes, and the opponents' entries
        # of the observation (which read the ranks)
        r, st, ev, info = self.course.result, self.state, res.events, self._info
        cps = self.course.checkpoints
        threads, per = env_loop.shape(self.device, self.num_courses)
        wp.launch(
            _race, threads,
            inputs=[per, self.num_agents, self.num_opponents, self._obs_offset, self._race_reset, int(restart),
                    self._void, st.position, st.yaw, st.speed, st.slip, st.half_extents, st.elapsed,
                    r.loop_length, cps.num_checkpoints, cps.position.shape[1], res.frame.s, ev.checkpoints_passed,
                    ev.wrong_way, self._race_laps, self.grace_steps, self.contact_penalty, self.position_reward,
                    self._status, self._finish_step, self._progress, self._rank, self._grace_left],
            outputs=[self._obs, self._reward, self._terminated, self._truncated, self._autoreset,
                     info["off_track"], info["laps"], info["car_contact"], info["opponent"], info["rank"], info["gap"],
                     info["race_progress"], info["wrong_way"], info["out"], info["finished"]],
            device=self.device)

    # -- the Gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed=None, options=None):
        """As :meth:`TrackVectorEnv.reset <trackgen_env.envs.base.CourseVectorEnv.reset>`, with the
        seeds of races: an int ``s`` gives course ``e`` (all its cars) seed ``hash(s, e)``;
        ``num_envs / num_agents`` ints give one seed per course; ``num_envs`` ints must agree
        within each course. ``options={"reset_mask": m}`` (DISABLED) takes a per-car mask that is
        equal within each course (the cars of a course restart together).

        Raises:
            as the track env's; ValueError for seeds or a mask that differ within a course.
        """
        self.check_open()
        seeds = race_seeds(seed, self.num_courses, self.num_agents)
        mask = self.check_reset_options(options, seeds)
        if mask is not None:
            per_race = mask.reshape(self.num_courses, self.num_agents)
            if np.any(per_race != per_race[:, :1]):
                raise ValueError("options['reset_mask'] must be equal for the cars of each course (they share one "
                                 "track and restart together)")
        with self._io.stream_scope():
            return self._reset(seeds, mask)

    # -- inspection ---------------------------------------------------------------------------
    def grid_slots(self) -> np.ndarray:
        """``[num_courses, num_agents]`` int32: the grid slot (0 = pole) of every car this episode."""
        self.check_open()
        return self._slot.numpy().reshape(self.num_courses, self.num_agents).copy()


def _narrowest_band(track, centerline) -> float | None:
    """[m] the narrowest band the courses can draw (``band.width``'s low bound, a circuit's narrowest row)."""
    if centerline is not None:
        data = check_centerline(centerline, name="points")
        return float(np.min(data[:, 2] + data[:, 3]))
    spec = TrackGenConfig() if track is None else track
    spec = spec.to_spec() if isinstance(spec, TrackGenConfig) else spec
    return construction_bound(spec, "band.width", "lo")


def _check_grid_fits(grid_length: float, num_agents: int, spacing: float, car_length: float, track,
                     centerline) -> None:
    """Refuse a grid longer than half the shortest loop these courses can draw: a given circuit's
    length, or the layout's square side (``layout.size``'s low bound; a closed loop in it is longer)."""
    if centerline is not None:
        data = check_centerline(centerline, name="points")
        xy = data[:, :2]
        shortest = float(np.sum(np.linalg.norm(np.roll(xy, -1, axis=0) - xy, axis=1)))
        what = f"half this circuit's length ({shortest:.4g} m)"
    else:
        spec = TrackGenConfig() if track is None else track
        spec = spec.to_spec() if isinstance(spec, TrackGenConfig) else spec
        size = construction_bound(spec, "layout.size", "lo")
        if size is None:
            return
        shortest = 2.0 * size
        what = f"the smallest layout square's side (layout.size {size:g} m; a loop in it is at least twice as long)"
    if grid_length > 0.5 * shortest:
        most = int((0.5 * shortest - car_length) // spacing) + 1
        raise ValueError(f"num_agents={num_agents} cars do not fit on the grid: {num_agents - 1} slots of "
                         f"grid_spacing {spacing:g} m plus a car length make {grid_length:.4g} m, more than {what}; "
                         f"pass num_agents <= {max(most, 1)}, a smaller grid_spacing, or larger courses")
