"""``python -m trackgen_env demo --env race``: pure-pursuit cars of different speed limits racing on one track.

Each car is a :class:`~trackgen_env.envs.controllers.PurePursuit` with its own speed margin
(its speed limit is ``margin * max_speed``) that also overtakes (:class:`RacePursuit`): when an
opponent it observes is close ahead, it follows a line offset to the side away from it, and
brakes when it is about to run into it. The demo prints the overtakes and the contacts of the
first race and writes a picture of the cars' traces and their positions over time.
"""

from __future__ import annotations

import os
import time

import numpy as np

from . import viz
from ..envs.controllers import PurePursuit
from ..envs.race import OPPONENT_FIELDS, RaceVectorEnv
from ..envs.track import OBS_FIELDS, OBS_LOOKAHEAD

__all__ = ["RacePursuit", "run", "speed_margins"]

_LATERAL = OBS_FIELDS.index("lateral_offset")
_HALF_WIDTH = OBS_FIELDS.index("half_width")
_ACTIVE, _X, _Y, _VX = (OPPONENT_FIELDS.index(n) for n in ("active", "x", "y", "vx"))


def speed_margins(num_agents: int) -> np.ndarray:
    """The demo's speed margins, slowest to fastest: car ``i`` plans with ``margins[i]`` of the limits."""
    return np.linspace(0.45, 0.75, num_agents) if num_agents > 1 else np.array([0.7])


class RacePursuit:
    """Pure pursuit per car of a :class:`~trackgen_env.envs.race.RaceVectorEnv`, each with its own
    speed margin, passing the opponents it observes.

    Overtaking: the nearest racing opponent ahead within ``look`` [m] and within two car widths
    sideways makes the car follow a line offset from the centreline to the other side (``share``
    of the room the band leaves its body, ``clearance`` [m] to spare), kept while an opponent is
    alongside (from the grid: its slot's side); closer than ``follow`` [m] straight ahead and
    closing, it brakes. A faster opponent closing from behind within ``look`` makes it move over
    to the other side.

    Args:
        env: the race env (its ``car``, ``num_agents``, ``num_lookahead``, ``num_opponents``).
        margins: ``[num_agents]`` speed margins, one per car of each race.
    """

    def __init__(self, env: RaceVectorEnv, margins, *, look: float = 2.0, follow: float = 1.0, share: float = 0.7,
                 clearance: float = 0.04):
        self.env = env
        self.margins = np.asarray(margins, dtype=float)
        self.pilots = [PurePursuit(env.car, margin=float(m)) for m in self.margins]
        self.single = OBS_LOOKAHEAD + 3 * env.num_lookahead
        self.look, self.follow, self.clearance, self.share = look, follow, clearance, share
        self.offset = np.zeros(env.num_envs, np.float32)

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        env, car = self.env, self.env.car
        E, N, K = env.num_envs, env.num_agents, env.num_opponents
        single = np.array(obs[:, :self.single], dtype=np.float32)
        opp = np.asarray(obs[:, self.single:], dtype=np.float32).reshape(E, K, len(OPPONENT_FIELDS))
        active = opp[..., _ACTIVE] > 0
        x, y = opp[..., _X], opp[..., _Y]
        ahead = active & (x > 0) & (x < self.look) & (np.abs(y) < 2 * car.width)
        alongside = active & (np.abs(x) < car.length) & (np.abs(y) < 3 * car.width)
        # a faster opponent closing from behind: make room for it
        behind = active & (x < 0) & (x > -self.look) & (np.abs(y) < 2 * car.width) & (opp[..., _VX] > 0)
        first = np.where(ahead.any(axis=1), ahead.argmax(axis=1), -1)
        chaser = np.where(behind.any(axis=1), behind.argmax(axis=1), -1)
        room = self.share * np.maximum(single[:, _HALF_WIDTH] - 0.5 * car.width - self.clearance, 0.0)
        rows = np.arange(E)
        side = np.where(y[rows, np.maximum(first, 0)] > 0, -1.0, 1.0)
        aside = np.where(y[rows, np.maximum(chaser, 0)] > 0, -1.0, 1.0)
        # on the grid (at rest): keep the slot's side of the centreline while a car is alongside
        held = np.where(single[:, 0] < 0.05, single[:, _LATERAL], self.offset)
        self.offset = np.where(first >= 0, side * room,
                               np.where(chaser >= 0, aside * room,
                                        np.where(alongside.any(axis=1), np.clip(held, -room, room), 0.0)))
        # the lookahead points (car frame) moved sideways: the line to follow, offset from the centreline
        single[:, OBS_LOOKAHEAD + 1::3] += self.offset[:, None]
        single[:, _LATERAL] -= self.offset
        action = np.empty((E, 2), np.float32)
        for a, pilot in enumerate(self.pilots):
            action[a::N] = pilot(single[a::N])
        blocked = ahead & (x < self.follow) & (np.abs(y) < 1.6 * car.width) & (opp[..., _VX] < 0)
        action[blocked.any(axis=1), 1] = np.minimum(action[blocked.any(axis=1), 1], -0.3)
        return action


def run(args) -> int:
    """Run the race demo for the parsed command-line ``args`` (see ``trackgen_env.__main__``)."""
    from tqdm import tqdm

    N = 4 if args.num_agents is None else args.num_agents
    courses = args.num_envs or 1
    steps = args.steps or 1500
    laps = 2
    t_build = time.perf_counter()
    env = RaceVectorEnv(courses, args.device, num_agents=N, seed=args.seed, laps=laps, grace_steps=200,
                        max_episode_steps=steps)
    margins = speed_margins(N)
    limits = margins * env.car.max_speed
    print(f"TrackGen-Race-v0 on {env.device}: {courses} course(s) x {N} cars (1:10 RC cars, {laps} laps); built in "
          f"{time.perf_counter() - t_build:.1f} s")
    pilot = RacePursuit(env, margins)
    obs, info = env.reset(seed=args.seed)
    slots = env.grid_slots()[0]
    for i in range(N):
        print(f"car {i}: speed limit {limits[i]:.2f} m/s, grid slot {slots[i] + 1}")
    track = env.tracks()[0]
    traces = [[env.car_pose()[i, :2].copy()] for i in range(N)]
    ranks = [info["rank"][:N].copy()]
    events: list[tuple[int, str]] = []
    overtakes = contacts = 0
    env_seconds = 0.0
    for t in tqdm(range(steps), desc="racing", unit="step", disable=args.no_progress, leave=False):
        action = pilot(obs)
        t0 = time.perf_counter()
        obs, _, terminated, truncated, info = env.step(action)
        env_seconds += time.perf_counter() - t0
        if terminated[0] or truncated[0]:
            end = "truncated" if truncated[0] else "over"
            break
        pose = env.car_pose()
        for i in range(N):
            traces[i].append(pose[i, :2].copy())
        before, now = ranks[-1], info["rank"][:N].copy()
        ranks.append(now)
        out = info["out"][:N]
        for a in range(N):
            for b in range(N):
                if before[a] > before[b] and now[a] < now[b] and not out[b]:
                    overtakes += 1
                    print(f"t={(t + 1) * env.car.dt:6.2f} s  overtake: car {a} passes car {b} for P{now[a]}")
        for a in np.flatnonzero(info["car_contact"][:N]):
            b = int(info["opponent"][a])
            if a < b:
                contacts += 1
                events.append((t + 1, "contact"))
                print(f"t={(t + 1) * env.car.dt:6.2f} s  contact: car {a} and car {b} (both out)")
    else:
        end = "running"
    final = ranks[-1]
    order = np.argsort(final)
    print(f"race {end} after {len(ranks) - 1} steps ({(len(ranks) - 1) * env.car.dt:.1f} s): "
          + ", ".join(f"P{final[i]} car {i}" + (" (finished)" if info["finished"][i] else " (out)" if info["out"][i]
                                                else "") for i in order))
    print(f"overtakes: {overtakes}, contacts: {contacts}")
    car_steps = (len(ranks) - 1) * env.num_envs
    print(f"throughput: {car_steps / max(env_seconds, 1e-9):,.0f} car-steps/s (time inside env.step)")
    os.makedirs(args.out, exist_ok=True)
    labels = [f"car {i} ({limits[i]:.1f} m/s, slot {slots[i] + 1})" for i in range(N)]
    path = viz.plot_race(track, [np.array(tr) for tr in traces], np.array(ranks), os.path.join(args.out, "race.png"),
                         dt=env.car.dt, labels=labels, events=events,
                         title=f"TrackGen-Race-v0: {N} pure-pursuit cars, seed {args.seed}")
    print(f"picture:    {path}")
    env.close()
    return 0
