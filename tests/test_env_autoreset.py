"""Autoreset modes of both envs (NEXT_STEP, SAME_STEP, DISABLED): exact sequences of scripted episode ends.

Episodes end at known steps by truncation (``max_episode_steps``, cars and drones held
still) and by a forced termination (a car at full lock leaves the band; a drone at zero
thrust hits the ground). Each test states what obs, reward, terminated, truncated and
final_obs are at every step. A twin env reset without a seed gives the first observation
of each env's next course (``second``, ``third``), the reference of every restart.
"""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env.envs.controllers import CourseLinePilot, PurePursuit
from trackgen_env.envs.gates import GatesVectorEnv
from trackgen_env.envs.track import TrackVectorEnv

NO, YES = [False, False], [True, True]


def _still(env):
    """Actions that keep every body where it starts: a car at rest, a drone hovering."""
    if isinstance(env, GatesVectorEnv):
        a = np.zeros((env.num_envs, 4), np.float32)
        a[:, 0] = env.quadrotor.hover_action
        return a
    return np.zeros((env.num_envs, 2), np.float32)


def _first_observations(cls, seed, count):
    """The first observation of each env's first ``count`` courses."""
    twin = cls(2, "cpu", seed=seed)
    return [twin.reset()[0] for _ in range(count)]


@pytest.mark.parametrize("value", [AutoresetMode.SAME_STEP, "SameStep", "same_step", "SAME_STEP"])
def test_autoreset_mode_accepts_the_enum_its_value_and_its_name(value):
    env = TrackVectorEnv(1, "cpu", seed=0, autoreset_mode=value)
    assert env.autoreset_mode is AutoresetMode.SAME_STEP
    assert env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert TrackVectorEnv.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP  # per instance, not the class's


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
def test_an_unknown_autoreset_mode_is_refused(cls):
    with pytest.raises(ValueError, match="autoreset_mode"):
        cls(1, "cpu", seed=0, autoreset_mode="sometimes")


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_make_vec_passes_the_autoreset_mode(mode):
    env = gymnasium.make_vec("TrackGen-Gates-v0", num_envs=2, device="cpu", seed=0, autoreset_mode=mode)
    assert env.metadata["autoreset_mode"] is mode


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
def test_same_step_exact_sequence_after_truncation(cls):
    """max_episode_steps=3: steps 3 and 6 end both envs and return the next course's first obs at once."""
    first, second, third = _first_observations(cls, 3, 3)
    env = cls(2, "cpu", seed=3, max_episode_steps=3, autoreset_mode=AutoresetMode.SAME_STEP)
    obs, info = env.reset()
    np.testing.assert_array_equal(obs, first)
    assert "final_obs" not in info
    previous = first
    for t in range(1, 8):
        obs, reward, terminated, truncated, info = env.step(_still(env))
        end = t in (3, 6)
        assert terminated.tolist() == NO and truncated.tolist() == (YES if end else NO), t
        if cls is TrackVectorEnv:
            assert reward.tolist() == [0.0, 0.0]  # at rest: no progress
        if not end:
            assert "final_obs" not in info and "final_info" not in info
            if cls is TrackVectorEnv:
                np.testing.assert_array_equal(obs, previous)
            continue
        expected = second if t == 3 else third
        np.testing.assert_array_equal(obs, expected)  # the new episode's first observation
        assert info["_final_obs"].tolist() == YES and info["_final_info"].tolist() == YES
        assert info["final_obs"].shape == obs.shape and info["final_obs"].dtype == np.float32
        if cls is TrackVectorEnv:
            np.testing.assert_array_equal(info["final_obs"], previous)  # still at the start of the ended track
            assert info["final_info"]["laps"].tolist() == [0, 0] and info["final_info"]["_laps"].tolist() == YES
        else:
            assert not np.array_equal(info["final_obs"], expected)
            assert info["final_info"]["_gates_passed"].tolist() == YES
        previous = expected


def test_same_step_matches_next_step_around_an_off_track_termination():
    """Env 0 at full lock leaves the band at step k: SAME_STEP returns at k what NEXT_STEP returns at k and k + 1."""
    second = _first_observations(TrackVectorEnv, 4, 2)[1]
    nxt = TrackVectorEnv(2, "cpu", seed=4)
    same = TrackVectorEnv(2, "cpu", seed=4, autoreset_mode="SameStep")
    nxt.reset()
    same.reset()
    off = np.array([[1.0, 1.0], [0.0, 0.0]], np.float32)
    for k in range(1, 200):
        a = nxt.step(off)
        b = same.step(off)
        for x, y in zip(a[1:4], b[1:4]):
            np.testing.assert_array_equal(x, y)
        if a[2][0]:
            break
        np.testing.assert_array_equal(a[0], b[0])
        assert "final_obs" not in b[4]
    else:
        pytest.fail("a full-lock turn never left the band")
    obs_n = a[0]
    obs_s, reward_s, terminated_s, truncated_s, info_s = b
    assert terminated_s.tolist() == [True, False] and not truncated_s.any() and reward_s[0] < 0
    assert info_s["_final_obs"].tolist() == [True, False]
    np.testing.assert_array_equal(info_s["final_obs"][0], obs_n[0])  # the ended episode's last observation
    assert info_s["final_info"]["off_track"][0] and info_s["final_info"]["_off_track"].tolist() == [True, False]
    assert not info_s["off_track"][0] and info_s["laps"][0] == 0  # the info of the new episode's reset
    np.testing.assert_array_equal(obs_s[0], second[0])
    np.testing.assert_array_equal(obs_s[1], obs_n[1])
    obs_n, reward_n, terminated_n, truncated_n, _ = nxt.step(off)  # NEXT_STEP's autoreset step
    np.testing.assert_array_equal(obs_n[0], obs_s[0])
    assert reward_n[0] == 0.0 and not terminated_n[0] and not truncated_n[0]


def test_same_step_ground_crash_of_a_drone():
    """Zero thrust: the drone hits the ground, terminates with the crash penalty and restarts in the same step."""
    second = _first_observations(GatesVectorEnv, 5, 2)[1]
    env = GatesVectorEnv(2, "cpu", seed=5, crash_penalty=5.0, autoreset_mode="SameStep")
    env.reset()
    fall = _still(env)
    fall[0, 0] = -1.0
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(fall)
        if terminated[0]:
            break
    assert terminated.tolist() == [True, False] and not truncated.any()
    assert reward[0] <= -5.0 + 0.5
    assert info["final_obs"][0, 15] <= 0.0  # the last altitude: on the ground
    assert info["final_info"]["collision"][0] and not info["collision"][0]
    np.testing.assert_array_equal(obs[0], second[0])
    assert obs[1, 15] > 0.0  # env 1 hovers on


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
def test_disabled_exact_sequence_with_a_masked_reset(cls):
    """max_episode_steps=3: no autoreset; the ended envs stay truncated until reset(options={"reset_mask": m})."""
    first, second = _first_observations(cls, 6, 2)
    env = cls(2, "cpu", seed=6, max_episode_steps=3, autoreset_mode=AutoresetMode.DISABLED)
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs, first)
    for t in range(1, 6):
        obs, reward, terminated, truncated, info = env.step(_still(env))
        assert terminated.tolist() == NO and truncated.tolist() == (YES if t >= 3 else NO), t
        assert "final_obs" not in info
    if cls is TrackVectorEnv:
        np.testing.assert_array_equal(obs, first)  # never reset: still at the start of the first track
    kept = obs[1].copy()
    obs, info = env.reset(options={"reset_mask": np.array([True, False])})
    assert info["_laps"].tolist() == [True, False] and info["laps"][0] == 0  # the reset env's info
    np.testing.assert_array_equal(obs[0], second[0])  # a new course for env 0
    np.testing.assert_array_equal(obs[1], kept)  # env 1 untouched
    for t in range(1, 4):
        obs, reward, terminated, truncated, info = env.step(_still(env))
        assert truncated.tolist() == [t >= 3, True] and terminated.tolist() == NO


def test_disabled_masked_reset_leaves_the_other_envs_bit_identical():
    env = TrackVectorEnv(3, "cpu", seed=7, autoreset_mode="Disabled")
    env.reset()
    rng = np.random.default_rng(7)
    for _ in range(5):
        env.step(rng.uniform(0, 1, (3, 2)).astype(np.float32))
    tracks, pose = env.tracks(), env.car_pose()
    env.reset(options={"reset_mask": np.array([False, True, False])})
    after, pose_after = env.tracks(), env.car_pose()
    for e in (0, 2):
        np.testing.assert_array_equal(tracks[e]["centerline"], after[e]["centerline"])
        np.testing.assert_array_equal(pose[e], pose_after[e])
    assert tracks[1]["centerline"].shape != after[1]["centerline"].shape or not np.array_equal(
        tracks[1]["centerline"], after[1]["centerline"])


def test_disabled_replayed_and_eager_masked_resets_agree():
    envs = [GatesVectorEnv(3, "cpu", seed=8, max_episode_steps=4, autoreset_mode="Disabled", capture=c)
            for c in (True, False)]
    assert envs[0].reset_graph is not None and envs[1].reset_graph is None
    rng = np.random.default_rng(8)
    actions = rng.uniform(-1, 1, (12, 3, 4)).astype(np.float32)
    outs = []
    for env in envs:
        out = [env.reset(seed=8)[0]]
        for t, a in enumerate(actions):
            out.extend(env.step(a)[:4])
            if t % 4 == 3:
                out.append(env.reset(options={"reset_mask": np.array([True, t % 8 == 3, False])})[0])
        outs.append(out)
    for x, y in zip(*outs):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "mode, options, error, match",
    [
        ("NextStep", {"reset_mask": np.array([True, False])}, ValueError, "DISABLED"),
        ("Disabled", {"reset_mask": [True, False]}, TypeError, "bool NumPy array"),
        ("Disabled", {"reset_mask": np.array([1, 0])}, TypeError,
         r"must have `dtype=np.bool_`, got int64 \(a bool NumPy array or a bool torch tensor\)"),
        ("Disabled", {"reset_mask": np.array([True])}, ValueError, r"shape `\(2,\)`, got \(1,\)"),
        ("Disabled", {"reset_mask": np.array([False, False])}, ValueError, "at least one True"),
        ("Disabled", {"reset_mask": np.array([True, False]), "x": 1}, ValueError,
         r"no options but reset_mask, got \['x'\]$"),
    ],
)
def test_bad_reset_masks_raise_and_leave_the_env_unchanged(mode, options, error, match):
    env = TrackVectorEnv(2, "cpu", seed=9, autoreset_mode=mode)
    obs, _ = env.reset()
    with pytest.raises(error, match=match):
        env.reset(options=options)
    np.testing.assert_array_equal(env.step(_still(env))[0], obs)


def test_a_masked_reset_with_a_seed_or_before_any_reset_raises():
    env = TrackVectorEnv(2, "cpu", seed=9, autoreset_mode="Disabled")
    with pytest.raises(RuntimeError, match="before a masked reset"):
        env.reset(options={"reset_mask": np.array([True, False])})
    env.reset()
    with pytest.raises(ValueError, match="no seed"):
        env.reset(seed=1, options={"reset_mask": np.array([True, False])})


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_recorded_and_eager_steps_agree_in_every_mode(mode):
    envs = [TrackVectorEnv(3, "cpu", seed=10, max_episode_steps=7, autoreset_mode=mode, capture=c)
            for c in (True, False)]
    rng = np.random.default_rng(10)
    actions = rng.uniform(-1, 1, (20, 3, 2)).astype(np.float32)
    outs = []
    for env in envs:
        out = [env.reset(seed=10)[0]]
        for a in actions:
            obs, reward, terminated, truncated, info = env.step(a)
            out += [obs, reward, terminated, truncated, info.get("final_obs", np.zeros(0))]
        outs.append(out)
    for x, y in zip(*outs):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("env_id", ["TrackGen-Track-v0", "TrackGen-Gates-v0"])
@pytest.mark.parametrize("output", ["numpy", "torch"])
def test_same_step_final_info_is_zero_where_no_env_ended_as_sync_vector_env(env_id, output):
    """``info["final_info"][k]`` holds the ended step's value where the env ended and 0 / False
    elsewhere, as ``SyncVectorEnv`` fills it (not the step's value of an env that went on: here
    the reference controllers pass gates and finish laps, so the envs that go on count them)."""
    if output == "torch":
        pytest.importorskip("torch")
    env = gymnasium.make_vec(env_id, num_envs=16, device="cpu", seed=1, autoreset_mode="SameStep", output=output,
                             laps=2)
    obs, _ = env.reset(seed=1)
    pilot = PurePursuit(env.car) if env_id == "TrackGen-Track-v0" else CourseLinePilot(env)
    host = (lambda x: x.cpu().numpy()) if output == "torch" else np.asarray
    checked = 0
    for _ in range(1500):
        obs, *_, info = env.step(pilot(host(obs)))
        if "_final_info" not in info:  # NumPy output: present only when an env ended
            continue
        done = host(info["_final_info"])
        if not done.any() or done.all():
            continue
        for name, _ in env.info_fields:
            value = host(info["final_info"][name])
            assert not value[~done].any(), name
            checked += int(host(info[name])[~done].any())  # the envs that went on hold nonzero values
    env.close()
    assert checked > 0
