"""TrackGen-Race-v0 (RaceVectorEnv): the grid, car-car contact, ranks and gaps, the race's end, seeding,
its equality with TrackGen-Track-v0 for one car, bad input, the autoreset modes and the adapters."""

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env.envs.contact import boxes_overlap_numpy
from trackgen_env.envs.controllers import PurePursuit
from trackgen_env.envs.race import OPPONENT_FIELDS, RaceVectorEnv, host_ranks
from trackgen_env.envs.track import OBS_LOOKAHEAD, TrackVectorEnv
from trackgen_env.generators.track import TrackGenConfig


def _single(env, obs):
    """The single-car part of race observations (what PurePursuit reads)."""
    return obs[:, :OBS_LOOKAHEAD + 3 * env.num_lookahead]


def _pilots(env, margins):
    """One pure-pursuit controller per car of a race, each with its own speed margin."""
    cars = [PurePursuit(env.car, margin=m) for m in margins]

    def act(obs):
        single = _single(env, obs)
        out = np.empty((env.num_envs, 2), np.float32)
        for a, pilot in enumerate(cars):
            out[a::env.num_agents] = pilot(single[a::env.num_agents])
        return out

    return act


# -- the grid ---------------------------------------------------------------------------------
@pytest.mark.parametrize("num_agents", [2, 5, 8])
def test_every_grid_slot_is_clear_of_the_band_and_the_other_cars(num_agents):
    """At the start of every race (several seeds), no car touches the band or another car."""
    E = 6
    env = RaceVectorEnv(E, "cpu", num_agents=num_agents, seed=3)
    half = np.array(env.car.half_extents[:2])
    for seed in range(4):
        obs, info = env.reset(seed=seed)
        assert not info["out"].any() and not info["off_track"].any() and not info["car_contact"].any()
        # a step at rest: the band and contact checks of the step see the grid as it is
        obs, _, term, _, info = env.step(np.tile([0.0, 0.0], (env.num_envs, 1)).astype(np.float32))
        assert not info["off_track"].any() and not info["car_contact"].any() and not term.any()
        # the body stays on the band with its half diagonal to spare
        lateral, half_width = obs[:, 3], obs[:, 5]
        assert (np.abs(lateral) + np.hypot(*half) <= half_width + 1e-4).all()
        pose = env.car_pose().reshape(E, num_agents, 3)
        for e in range(E):
            for i in range(num_agents):
                for j in range(i + 1, num_agents):
                    assert not boxes_overlap_numpy(pose[e, i, :2], pose[e, i, 2], half, pose[e, j, :2],
                                                   pose[e, j, 2], half)[0]
        slots = env.grid_slots()
        assert all(sorted(row) == list(range(num_agents)) for row in slots)


def test_grid_slots_are_staggered_behind_the_start_line():
    """Slot j starts j * grid_spacing behind the line (race progress -j * spacing), alternating sides."""
    env = RaceVectorEnv(4, "cpu", num_agents=4, seed=2)
    obs, info = env.reset(seed=2)
    slots = env.grid_slots().ravel()
    # (a slot beside the centreline on a curve projects a little off its arc length)
    np.testing.assert_allclose(info["race_progress"], -slots * env.grid_spacing, atol=0.02)
    side = np.sign(obs[:, 3])
    assert (side[slots % 2 == 0] > 0).all() and (side[slots % 2 == 1] < 0).all()
    assert (info["rank"] == slots + 1).all()


def test_the_grid_order_is_seeded_per_race_whatever_num_envs():
    a = RaceVectorEnv(3, "cpu", num_agents=6, seed=11)
    b = RaceVectorEnv(5, "cpu", num_agents=6, seed=11)
    a.reset(seed=11)
    b.reset(seed=11)
    np.testing.assert_array_equal(a.grid_slots(), b.grid_slots()[:3])
    np.testing.assert_array_equal(a.car_pose(), b.car_pose()[:18])
    # drawn per episode: another episode of the same races, another order
    orders = {tuple(a.grid_slots()[0])}
    for _ in range(6):
        a.reset()
        orders.add(tuple(a.grid_slots()[0]))
    assert len(orders) > 1


def test_the_cars_of_a_race_share_one_track_and_regenerate_together():
    env = RaceVectorEnv(3, "cpu", num_agents=3, seed=4, max_episode_steps=5)
    env.reset(seed=4)
    tracks = env.tracks()
    for e in range(3):
        for a in range(1, 3):
            np.testing.assert_array_equal(tracks[3 * e]["centerline"], tracks[3 * e + a]["centerline"])
    assert not np.array_equal(tracks[0]["centerline"], tracks[3]["centerline"])
    for _ in range(6):  # truncated at step 5, new tracks at step 6
        env.step(np.zeros((9, 2), np.float32))
    again = env.tracks()
    assert not np.array_equal(again[0]["centerline"], tracks[0]["centerline"])
    for e in range(3):
        for a in range(1, 3):
            np.testing.assert_array_equal(again[3 * e]["centerline"], again[3 * e + a]["centerline"])


# -- contact ----------------------------------------------------------------------------------
def _place(env, car: int, x: float, y: float, yaw: float) -> None:
    """Put ``car`` at a pose (at rest) on the device."""
    p = env.state.position.numpy()
    p[car, :2] = (x, y)
    env.state.position.assign(p)
    for name, value in (("yaw", yaw), ("speed", 0.0)):
        arr = getattr(env.state, name).numpy()
        arr[car] = value
        getattr(env.state, name).assign(arr)
    q = env.state.orientation.numpy()
    q[car] = (0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2))
    env.state.orientation.assign(q)


@pytest.mark.parametrize("relative_yaw", [0.0, 0.5, np.pi / 2, 2.5, np.pi])
def test_overlapping_cars_are_flagged_both_with_each_others_index_and_leave_the_race(relative_yaw):
    env = RaceVectorEnv(1, "cpu", num_agents=3, seed=5)
    env.reset(seed=5)
    pose = env.car_pose()
    front = int(np.argmin(env.grid_slots()[0]))
    others = [i for i in range(3) if i != front]
    x, y, yaw = pose[front]
    # a car 0.1 m ahead of the pole car, turned: the boxes overlap
    _place(env, others[0], x + 0.1 * np.cos(yaw), y + 0.1 * np.sin(yaw), yaw + relative_yaw)
    _, reward, term, _, info = env.step(np.zeros((3, 2), np.float32))
    assert info["car_contact"][front] and info["car_contact"][others[0]]
    assert not info["car_contact"][others[1]]
    assert info["opponent"][front] == others[0] and info["opponent"][others[0]] == front
    assert info["opponent"][others[1]] == -1
    assert info["out"][front] and info["out"][others[0]] and not info["out"][others[1]]
    assert not term.any()  # the third car races on
    # parked: no obstacle and no reward any more
    _, reward, term, _, info = env.step(np.tile([0.0, 1.0], (3, 1)).astype(np.float32))
    assert reward[front] == 0.0 and reward[others[0]] == 0.0 and not info["car_contact"].any()


def test_a_contact_penalises_the_car_behind_only():
    env = RaceVectorEnv(1, "cpu", num_agents=2, seed=5, contact_penalty=2.0)
    _, start = env.reset(seed=5)
    pose = env.car_pose()
    front = int(np.argmin(env.grid_slots()[0]))
    back = 1 - front
    x, y, yaw = pose[front]
    _place(env, back, x - 0.3 * np.cos(yaw), y - 0.3 * np.sin(yaw), yaw)
    _, reward, term, _, info = env.step(np.zeros((2, 2), np.float32))
    assert info["car_contact"].all() and term.all()  # both out: the race is over
    # the progress reward (the move counts as progress) minus the penalty, for the car behind only
    moved = info["race_progress"] - start["race_progress"]
    assert reward[back] == pytest.approx(moved[back] - 2.0, abs=1e-4)
    assert reward[front] == pytest.approx(moved[front], abs=1e-4)


def test_cars_one_mm_apart_are_no_contact():
    env = RaceVectorEnv(1, "cpu", num_agents=2, seed=5)
    env.reset(seed=5)
    pose = env.car_pose()
    front = int(np.argmin(env.grid_slots()[0]))
    x, y, yaw = pose[front]
    gap = 2 * env.car.half_extents[0] + 1e-3
    _place(env, 1 - front, x - gap * np.cos(yaw), y - gap * np.sin(yaw), yaw)
    _, _, _, _, info = env.step(np.zeros((2, 2), np.float32))
    assert not info["car_contact"].any()


# -- race progress, ranks, gaps, the end ------------------------------------------------------
def test_ranks_and_gaps_equal_the_host_computation_across_the_start_line():
    """Four pure-pursuit cars of different speeds race more than a lap: every step's ranks and gaps
    are host_ranks of the race progress, which is continuous across the start line, equals the
    arc length modulo the loop, and counts the laps."""
    E, N = 3, 4
    env = RaceVectorEnv(E, "cpu", num_agents=N, seed=8, laps=2, grace_steps=1000, max_episode_steps=900)
    obs, info = env.reset(seed=8)
    act = _pilots(env, [0.5, 0.6, 0.7, 0.8])
    loop = env.course.result.loop_length.numpy()
    prev = info["race_progress"].copy()
    crossed = np.zeros(E * N, bool)
    for _ in range(700):
        obs, _, term, trunc, info = env.step(act(obs))
        if (term | trunc).any():
            break
        x = info["race_progress"]
        status = np.where(info["finished"], 2, np.where(info["out"], 1, 0))
        rank, gap = host_ranks(x.reshape(E, N), status.reshape(E, N), env._finish_step.numpy().reshape(E, N))
        np.testing.assert_array_equal(info["rank"], rank.ravel())
        np.testing.assert_allclose(info["gap"], gap.ravel(), atol=1e-5)
        racing = status == 0
        # continuous (a step covers at most max_speed * dt), across the line too
        assert (np.abs(x - prev)[racing] <= env.car.max_speed * env.car.dt + 1e-3).all()
        s = env.course.components["localizer"].result.s.numpy()
        d = (x - s) / loop
        np.testing.assert_allclose(d[racing], np.round(d[racing]), atol=1e-4)
        away = racing & (np.abs(x - np.round(x / loop) * loop) > 0.5)  # not at the line
        np.testing.assert_array_equal(info["laps"][away], np.maximum(np.floor(x / loop), 0)[away].astype(int))
        crossed |= (prev < 0) & (x >= 0)
        prev = x.copy()
    assert crossed.any() and (info["laps"] >= 1).any()


def test_the_race_ends_grace_steps_after_the_leader_finishes():
    N, grace = 2, 15
    env = RaceVectorEnv(1, "cpu", num_agents=N, seed=3, laps=1, grace_steps=grace, max_episode_steps=2000)
    obs, info = env.reset(seed=3)
    # the faster car on pole (behind, it would run into the slower one)
    act = _pilots(env, [0.75 if slot == 0 else 0.4 for slot in env.grid_slots()[0]])
    first = None
    for t in range(2000):
        obs, reward, term, trunc, info = env.step(act(obs))
        if first is None and info["finished"].any():
            first = t
            winner = int(np.argmax(info["finished"]))
            assert info["rank"][winner] == 1
        if term.any() or trunc.any():
            break
        if first is not None and t > first:
            assert reward[winner] == 0.0  # a finished car earns nothing more
    assert first is not None and term.all() and not trunc.any()
    assert t == first + grace or info["finished"].all()


def test_the_race_is_truncated_at_max_episode_steps_for_all_its_cars():
    env = RaceVectorEnv(2, "cpu", num_agents=3, seed=1, max_episode_steps=7)
    env.reset(seed=1)
    for t in range(7):
        _, _, term, trunc, _ = env.step(np.zeros((6, 2), np.float32))
    assert trunc.all() and not term.any()


def test_the_opponents_observation():
    """The K nearest opponents, nearest first, in the car's frame, with their race-progress gap."""
    env = RaceVectorEnv(2, "cpu", num_agents=4, num_opponents=2, seed=6)
    obs, info = env.reset(seed=6)
    assert env.single_observation_space.shape == (OBS_LOOKAHEAD + 3 * env.num_lookahead + 2 * len(OPPONENT_FIELDS),)
    obs, _, _, _, info = env.step(np.tile([0.1, 0.8], (8, 1)).astype(np.float32))
    pose = env.car_pose()
    speed = env.state.speed.numpy()
    base = OBS_LOOKAHEAD + 3 * env.num_lookahead
    for e in range(2):
        for i in range(4 * e, 4 * e + 4):
            others = [j for j in range(4 * e, 4 * e + 4) if j != i]
            dist = [np.hypot(*(pose[j, :2] - pose[i, :2])) for j in others]
            nearest = [others[k] for k in np.argsort(dist, kind="stable")[:2]]
            c, s = np.cos(pose[i, 2]), np.sin(pose[i, 2])
            for k, j in enumerate(nearest):
                o = obs[i, base + 7 * k: base + 7 * k + 7]
                dx, dy = pose[j, :2] - pose[i, :2]
                dv = speed[j] * np.array([np.cos(pose[j, 2]), np.sin(pose[j, 2])]) - speed[i] * np.array([c, s])
                np.testing.assert_allclose(o[0], 1.0)
                np.testing.assert_allclose(o[1:3], [c * dx + s * dy, -s * dx + c * dy], atol=1e-4)
                np.testing.assert_allclose(o[3:5], [c * dv[0] + s * dv[1], -s * dv[0] + c * dv[1]], atol=1e-4)
                np.testing.assert_allclose(o[6], info["race_progress"][j] - info["race_progress"][i], atol=1e-5)


# -- one car is the track env -----------------------------------------------------------------
@pytest.mark.parametrize("mode", list(AutoresetMode))
@pytest.mark.parametrize("car_model", ["kinematic", "dynamic"])
def test_one_car_per_race_gives_the_track_envs_outputs(mode, car_model):
    E = 3
    kwargs = dict(seed=9, autoreset_mode=mode, car_model=car_model, car="f1tenth", max_episode_steps=40)
    race = RaceVectorEnv(E, "cpu", num_agents=1, **kwargs)
    track = TrackVectorEnv(E, "cpu", **kwargs)
    assert race.num_envs == E and race.single_observation_space == track.single_observation_space
    a, b = race.reset(seed=9), track.reset(seed=9)
    np.testing.assert_array_equal(a[0], b[0])
    rng = np.random.default_rng(0)
    ended = 0
    for t in range(90):
        act = rng.uniform(-1, 1, (E, 2)).astype(np.float32)
        act[:, 1] = np.abs(act[:, 1])
        ra, rb = race.step(act), track.step(act)
        for x, y in zip(ra[:4], rb[:4]):
            np.testing.assert_array_equal(x, y)
        for key in ("laps", "off_track"):
            np.testing.assert_array_equal(ra[4][key], rb[4][key])
        assert ("final_obs" in ra[4]) == ("final_obs" in rb[4])
        if "final_obs" in rb[4]:
            np.testing.assert_array_equal(ra[4]["final_obs"], rb[4]["final_obs"])
            np.testing.assert_array_equal(ra[4]["_final_obs"], rb[4]["_final_obs"])
        done = ra[2] | ra[3]
        ended += done.sum()
        if mode is AutoresetMode.DISABLED and done.any():
            ra = race.reset(options={"reset_mask": done})
            rb = track.reset(options={"reset_mask": done})
            np.testing.assert_array_equal(ra[0], rb[0])
    assert ended >= 2


# -- the autoreset modes, outputs, adapters ---------------------------------------------------
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_every_autoreset_mode_restarts_whole_races(mode):
    E, N = 2, 3
    env = gymnasium.make_vec("TrackGen-Race-v0", num_envs=E, num_agents=N, device="cpu", seed=2,
                             autoreset_mode=mode, max_episode_steps=6)
    assert isinstance(env, RaceVectorEnv) and env.num_envs == E * N and env.num_courses == E
    obs, info = env.reset(seed=2)
    for t in range(6):
        obs, reward, term, trunc, info = env.step(np.zeros((E * N, 2), np.float32))
        assert env.observation_space.contains(obs)
    assert trunc.all()
    if mode is AutoresetMode.SAME_STEP:
        assert info["_final_obs"].all() and (info["race_progress"] <= 1e-3).all()
        assert (env.state.elapsed.numpy() == 0).all()
    elif mode is AutoresetMode.NEXT_STEP:
        obs, reward, term, trunc, info = env.step(np.zeros((E * N, 2), np.float32))
        assert (reward == 0).all() and (env.state.elapsed.numpy() == 0).all()
    else:
        with pytest.raises(ValueError, match="equal for the cars of each course"):
            env.reset(options={"reset_mask": np.array([True, False, False, True, True, True])})
        obs, info = env.reset(options={"reset_mask": np.array([True] * 3 + [False] * 3)})
        elapsed = env.state.elapsed.numpy()
        assert (elapsed[:3] == 0).all() and (elapsed[3:] == 6).all()


def test_torch_outputs():
    env = RaceVectorEnv(2, "cpu", num_agents=2, seed=1, output="torch")
    obs, info = env.reset(seed=1)
    assert isinstance(obs, torch.Tensor) and obs.shape == (4, env.single_observation_space.shape[0])
    obs, reward, term, trunc, info = env.step(torch.zeros(4, 2))
    assert isinstance(reward, torch.Tensor) and isinstance(info["rank"], torch.Tensor)


def test_the_sb3_adapter_steps_the_cars_as_envs():
    from trackgen_env.integrations.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("TrackGen-Race-v0", num_envs=2, num_agents=3, device="cpu", seed=1, max_episode_steps=4)
    assert venv.num_envs == 6
    venv.reset()
    for _ in range(4):
        obs, reward, dones, infos = venv.step(np.zeros((6, 2), np.float32))
    assert dones.all() and len(infos) == 6 and "terminal_observation" in infos[0] and "rank" in infos[0]


def test_reset_seeds_per_course():
    env = RaceVectorEnv(2, "cpu", num_agents=2, seed=0)
    a, _ = env.reset(seed=[5, 6])
    b, _ = env.reset(seed=[5, 5, 6, 6])
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="agree within each race"):
        env.reset(seed=[5, 6, 6, 6])


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, error, match", [
    (0, ValueError, r"num_agents must be an int in \[1, 16\].*got 0"),
    (-2, ValueError, "got -2"),
    (2.0, TypeError, "num_agents must be an int.*got float 2.0"),
    ("2", TypeError, "got str '2'"),
    (True, TypeError, "got bool True"),
    (17, ValueError, "got 17"),
])
def test_bad_num_agents_is_refused_clearly(bad, error, match):
    with pytest.raises(error, match=match):
        RaceVectorEnv(1, "cpu", num_agents=bad, seed=0)


def test_more_cars_than_the_courses_fit_is_refused():
    with pytest.raises(ValueError, match=r"num_agents=16 cars do not fit on the grid.*pass num_agents <= 15"):
        RaceVectorEnv(1, "cpu", num_agents=16, seed=0)
    with pytest.raises(ValueError, match="do not fit on the grid"):
        RaceVectorEnv(1, "cpu", num_agents=4, seed=0, grid_spacing=4.0)
    with pytest.raises(ValueError, match="do not fit on the grid"):
        RaceVectorEnv(1, "cpu", num_agents=8, seed=0, track=TrackGenConfig(size=5.0, width=0.6))
    with pytest.raises(ValueError, match="grid_spacing must be > 0.45"):
        RaceVectorEnv(1, "cpu", num_agents=2, seed=0, grid_spacing=0.3)


def test_the_race_refuses_a_render_mode():
    with pytest.raises(ValueError, match=r"render_mode must be None: RaceVectorEnv draws no frames, got 'rgb_array'"):
        RaceVectorEnv(1, "cpu", num_agents=2, seed=0, render_mode="rgb_array")


# -- the circuit family, void races -----------------------------------------------------------
def test_a_race_on_a_given_circuit():
    """centerline=: the cars start on the grid behind the circuit's start, clear, and race a lap."""
    from stadium import stadium

    xy = stadium(6.0, 2.0, 0.1)
    points = np.concatenate([xy, np.full((len(xy), 2), 0.5)], axis=1)  # 1 m wide
    env = RaceVectorEnv(2, "cpu", num_agents=3, seed=1, centerline=points, laps=1, max_episode_steps=600)
    obs, info = env.reset(seed=1)
    np.testing.assert_array_equal(env.tracks()[0]["centerline"], env.tracks()[4]["centerline"])
    assert not info["out"].any()
    act = _pilots(env, [0.6, 0.6, 0.6])
    for _ in range(600):
        obs, _, term, trunc, info = env.step(act(obs))
        if term.any() or trunc.any():
            break
    assert info["finished"].any() or info["out"].any()
    with pytest.raises(ValueError, match="this circuit's length"):
        RaceVectorEnv(1, "cpu", num_agents=16, seed=1, centerline=points, grid_spacing=1.2)


def test_a_track_too_short_for_the_grid_holds_a_void_race_that_regenerates():
    """A grid of 9.4 m passes the construction check on 10 m layouts, but loops under 18.8 m cannot
    hold it: those races start void (every car on the start pose, out) and end at the next step;
    the others race."""
    spacing = (9.4 - 0.45) / 7
    E = 12
    env = RaceVectorEnv(E, "cpu", num_agents=8, seed=0, grid_spacing=spacing)
    obs, info = env.reset(seed=0)
    loop = env.course.result.loop_length.numpy()[::8]
    void = info["out"].reshape(E, 8)
    assert void.all(axis=1).any() and (~void).all(axis=1).any()  # both kinds in this batch
    np.testing.assert_array_equal(void.all(axis=1), loop < 2 * 9.4)
    assert (void.all(axis=1) | (~void).all(axis=1)).all()
    assert not info["off_track"].any()  # on the start pose: on the band
    pose = env.car_pose().reshape(E, 8, 3)
    for e in np.flatnonzero(void.all(axis=1)):
        assert np.ptp(pose[e], axis=0).max() < 1e-6  # all on the start pose
    _, reward, term, _, _ = env.step(np.zeros((E * 8, 2), np.float32))
    np.testing.assert_array_equal(term.reshape(E, 8).all(axis=1), void.all(axis=1))
    assert (reward.reshape(E, 8)[void.all(axis=1)] == 0).all()


def test_the_memory_estimate_counts_courses_of_cars():
    """memory_estimate(E, num_agents=N) is the memory of E courses of N cars: about the track env's
    of E * N envs (the same bodies and track copies), and what a construction measures."""
    race = RaceVectorEnv.memory_estimate(64, device="cpu", num_agents=4)
    track = TrackVectorEnv.memory_estimate(256, device="cpu")
    assert 0.9 < race.total / track.total < 1.3
    env = RaceVectorEnv(64, "cpu", num_agents=4, seed=0)
    assert 0.8 < sum(env.memory_usage().values()) / race.total < 1.2


def test_the_race_settings_are_read_only():
    env = RaceVectorEnv(1, "cpu", num_agents=2, seed=0)
    with pytest.raises(AttributeError, match="num_agents=...") as exc:
        env.num_agents = 3
    assert "read-only" in str(exc.value)
    with pytest.raises(AttributeError, match="num_envs="):
        env.num_courses = 3


@pytest.mark.parametrize("car_model", ["kinematic", "dynamic"])
def test_the_circuit_family_races_from_a_clear_grid(car_model):
    """presets.circuit: 8 cars on the grid of each of several circuit-like tracks, clear of the band
    and of each other, and they drive off it (kinematic and dynamic cars)."""
    from trackgen_env.pipeline import presets

    E, N = 4, 8
    env = RaceVectorEnv(E, "cpu", num_agents=N, seed=2, track=presets.circuit(width=1.2), car_model=car_model,
                        car="f1tenth")
    obs, info = env.reset(seed=2)
    assert not info["out"].any()
    half = np.array(env.car.half_extents[:2])
    pose = env.car_pose().reshape(E, N, 3)
    for e in range(E):
        for i in range(N):
            for j in range(i + 1, N):
                assert not boxes_overlap_numpy(pose[e, i, :2], pose[e, i, 2], half, pose[e, j, :2], pose[e, j, 2],
                                               half)[0]
    act = _pilots(env, np.linspace(0.3, 0.5, N))
    for _ in range(20):
        obs, _, term, _, info = env.step(act(obs))
        assert not info["off_track"].any() and not term.any()
    assert (info["race_progress"] > -(N - 1) * env.grid_spacing).all()


def test_one_car_faces_refuse_the_race_clearly():
    from trackgen_env.envs import ShardedVectorEnv

    with pytest.raises(TypeError, match="several cars per course: build it with gymnasium.make_vec"):
        gymnasium.make("TrackGen-Race-v0")
    with pytest.raises(TypeError, match="ShardedVectorEnv splits envs of one body each"):
        ShardedVectorEnv("TrackGen-Race-v0", 4, 2, device="cpu", num_agents=2)

