"""TrackGen-Track-v0 (TrackVectorEnv): Gymnasium conformance, autoreset, seeding, bad input, drivability."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env.envs.controllers import PurePursuit
from trackgen_env.envs.track import OBS_FIELDS, TrackVectorEnv

E = 4


def _random_actions(num_envs, steps, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (steps, num_envs, 2)).astype(np.float32)
    a[..., 1] = np.abs(a[..., 1])
    return a


def _assert_step_types(env, out):
    obs, reward, terminated, truncated, info = out
    n, d = env.num_envs, env.single_observation_space.shape[0]
    assert obs.shape == (n, d) and obs.dtype == np.float32
    assert env.observation_space.contains(obs)
    assert reward.shape == (n,) and reward.dtype == np.float32
    assert terminated.shape == (n,) and terminated.dtype == np.bool_
    assert truncated.shape == (n,) and truncated.dtype == np.bool_
    assert isinstance(info, dict)
    assert info["laps"].shape == (n,) and info["laps"].dtype == np.int32
    assert info["off_track"].shape == (n,) and info["off_track"].dtype == np.bool_
    assert info["_laps"].all() and info["_off_track"].all()
    assert np.isfinite(obs).all() and np.isfinite(reward).all()


def test_make_vec_builds_the_env_with_next_step_autoreset(device):
    env = gymnasium.make_vec("TrackGen-Track-v0", num_envs=E, device=device, seed=1)
    assert isinstance(env, TrackVectorEnv)
    assert env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert env.num_envs == E and str(env.device) == device
    env.close()


def test_spaces_dtypes_and_shapes_of_every_return(device):
    env = TrackVectorEnv(E, device, seed=1)
    assert env.single_action_space == gymnasium.spaces.Box(-1, 1, (2,), np.float32)
    assert env.action_space.shape == (E, 2) and env.action_space.dtype == np.float32
    assert env.single_observation_space.shape == (len(OBS_FIELDS) + 3 * env.num_lookahead,)
    assert env.observation_space.shape == (E, 38) and env.observation_space.dtype == np.float32
    obs, info = env.reset(seed=1)
    assert obs.shape == (E, 38) and obs.dtype == np.float32 and env.observation_space.contains(obs)
    assert isinstance(info, dict)
    for a in _random_actions(E, 30):
        _assert_step_types(env, env.step(a))


def test_returned_arrays_are_not_reused_between_steps():
    env = TrackVectorEnv(E, "cpu", seed=1)
    obs0, _ = env.reset(seed=1)
    first = env.step(np.ones((E, 2), np.float32))
    kept = [x.copy() for x in first[:4]]
    env.step(np.ones((E, 2), np.float32))
    for a, b in zip(first[:4], kept):
        np.testing.assert_array_equal(a, b)
    assert not np.shares_memory(obs0, first[0])


def test_reset_observation_is_the_car_at_rest_on_the_centreline():
    env = TrackVectorEnv(E, "cpu", seed=2)
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[:, :3], 0.0)  # speed, yaw rate, steer
    np.testing.assert_allclose(obs[:, 3:5], 0.0, atol=1e-4)  # on the line, along it
    np.testing.assert_allclose(obs[:, 5], env.track_config.width / 2, rtol=1e-5)
    ahead = obs[:, 8:].reshape(E, -1, 3)[:, :, :2]
    assert (ahead[:, 0, 0] > 0).all()  # the first lookahead point is in front
    K = env.num_lookahead
    np.testing.assert_allclose(np.linalg.norm(ahead[:, 0], axis=1), env.lookahead_horizon * 2 / (K * (K + 1)),
                               rtol=0.05)


def test_next_step_autoreset_exact_sequence():
    """Cars at rest truncate at steps 5 and 11; steps 6 and 12 return each env's first obs on its next track."""
    env = TrackVectorEnv(2, "cpu", seed=3, max_episode_steps=5)
    twin = TrackVectorEnv(2, "cpu", seed=3)
    twin.reset()
    second, _ = twin.reset()  # a reset without a seed: every env's next track
    third, _ = twin.reset()
    first, _ = env.reset()
    still = np.zeros((2, 2), np.float32)
    seen = []
    for t in range(1, 13):
        obs, reward, terminated, truncated, _ = env.step(still)
        seen.append((t, terminated.tolist(), truncated.tolist(), reward.tolist()))
        np.testing.assert_array_equal(obs, first if t <= 5 else second if t <= 11 else third)
    no, yes = [False, False], [True, True]
    assert seen == [(t, no, yes if t in (5, 11) else no, [0.0, 0.0]) for t in range(1, 13)]


def test_autoreset_step_ignores_the_action_and_gives_zero_reward():
    env = TrackVectorEnv(2, "cpu", seed=4)
    env.reset()
    off = np.array([[1.0, 1.0], [0.0, 0.0]], np.float32)  # env 0 turns hard left off the band
    for t in range(200):
        obs, reward, terminated, truncated, info = env.step(off)
        if terminated[0]:
            break
    else:
        pytest.fail("a full-lock turn never left the band")
    assert info["off_track"][0] and reward[0] < 0 and not terminated[1]
    obs, reward, terminated, truncated, info = env.step(off)
    assert reward[0] == 0.0 and not terminated[0] and not truncated[0]
    assert obs[0, 0] == 0.0 and obs[0, 2] == 0.0  # at rest: the action was ignored
    assert not info["off_track"][0] and info["laps"][0] == 0


def test_reset_with_a_seed_reproduces_the_tracks_after_earlier_episodes():
    env = TrackVectorEnv(E, "cpu", seed=5, max_episode_steps=20)
    first, _ = env.reset(seed=9)
    tracks = [t["centerline"].copy() for t in env.tracks()]
    runs = []
    for attempt in range(2):
        env.reset(seed=9)
        out = [env.step(a)[:4] for a in _random_actions(E, 45)]
        runs.append(out)
    again, _ = env.reset(seed=9)
    np.testing.assert_array_equal(first, again)
    for a, b in zip(tracks, env.tracks()):
        np.testing.assert_array_equal(a, b["centerline"])
    for x, y in zip(runs[0], runs[1]):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


def test_reset_seed_matches_a_fresh_env_and_does_not_depend_on_num_envs():
    a, _ = TrackVectorEnv(1, "cpu", seed=11).reset()
    b, _ = TrackVectorEnv(3, "cpu", seed=0).reset(seed=11)
    np.testing.assert_array_equal(a[0], b[0])


def test_reset_without_a_seed_draws_new_tracks():
    env = TrackVectorEnv(E, "cpu", seed=6)
    env.reset()
    before = [t["centerline"].copy() for t in env.tracks()]
    env.reset()
    after = env.tracks()
    assert all(x.shape != y["centerline"].shape or not np.array_equal(x, y["centerline"])
               for x, y in zip(before, after))


def _centerlines(env):
    return [t["centerline"].copy() for t in env.tracks()]


def test_a_live_set_before_the_first_reset_is_in_the_courses_it_draws():
    """The first plain reset keeps the construction's courses only while they still describe the
    parameters: after a live set it draws new ones, as a later reset after the same set would."""
    kept = TrackVectorEnv(E, "cpu", seed=6)
    construction = _centerlines(kept)
    kept.reset()
    assert all(np.array_equal(x, y) for x, y in zip(construction, _centerlines(kept)))
    kept.course.generator.params["band.width"] = 1.6
    kept.reset()
    set_first = TrackVectorEnv(E, "cpu", seed=6)
    set_first.course.generator.params["band.width"] = 1.6
    set_first.reset()
    assert np.all(set_first.course.generator.params["band.width"].numpy() == np.float32(1.6))
    drawn = _centerlines(set_first)
    assert all(x.shape != y.shape or not np.array_equal(x, y) for x, y in zip(construction, drawn))
    assert all(np.array_equal(x, y) for x, y in zip(_centerlines(kept), drawn))
    kept.close()
    set_first.close()


def test_graph_replay_equals_eager_step():
    replay = TrackVectorEnv(E, "cpu", seed=7, max_episode_steps=25)
    eager = TrackVectorEnv(E, "cpu", seed=7, max_episode_steps=25, capture=False)
    assert replay.graph is not None and eager.graph is None
    for env in (replay, eager):
        env.reset(seed=7)
    for a in _random_actions(E, 60, seed=1):
        for x, y in zip(replay.step(a)[:4], eager.step(a)[:4]):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "action, error, match",
    [
        (np.zeros((E, 3), np.float32), ValueError, r"shape \(4, 2\).*got \(4, 3\)"),
        (np.zeros(2, np.float32), ValueError, r"shape \(4, 2\)"),
        (np.zeros((E, 2), np.int64), TypeError, "real floating.*int64"),
        (np.zeros((E, 2), np.complex64), TypeError, "real floating"),
        (np.array([[0.0, np.nan]] + [[0.0, 0.0]] * (E - 1), np.float32), ValueError, r"NaN in env\(s\) \[0\]"),
    ],
)
def test_bad_actions_raise_and_leave_the_env_unchanged(action, error, match):
    env, twin = TrackVectorEnv(E, "cpu", seed=8), TrackVectorEnv(E, "cpu", seed=8)
    env.reset()
    twin.reset()
    a = _random_actions(E, 1)[0]
    env.step(a)
    twin.step(a)
    with pytest.raises(error, match=match):
        env.step(action)
    for x, y in zip(env.step(a)[:4], twin.step(a)[:4]):
        np.testing.assert_array_equal(x, y)


def test_out_of_range_actions_are_clipped():
    env, twin = TrackVectorEnv(E, "cpu", seed=8), TrackVectorEnv(E, "cpu", seed=8)
    env.reset()
    twin.reset()
    big = np.tile(np.array([[5.0, np.inf]], np.float64), (E, 1))
    for _ in range(3):
        for x, y in zip(env.step(big)[:4], twin.step(np.ones((E, 2), np.float32))[:4]):
            np.testing.assert_array_equal(x, y)


def test_step_before_reset_raises():
    with pytest.raises(RuntimeError, match="reset"):
        TrackVectorEnv(E, "cpu", seed=0).step(np.zeros((E, 2), np.float32))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(num_envs=0), ValueError, "num_envs"),
        (dict(max_episode_steps=0), ValueError, "max_episode_steps"),
        (dict(laps=0), ValueError, "laps"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(render_mode="ansi"), ValueError, "render_mode"),
        (dict(car="kart"), ValueError, "car"),
        (dict(track="big"), TypeError, "TrackGenConfig"),
        (dict(checkpoint_spacing=0.0), ValueError, "checkpoint_spacing"),
        # closer than the centreline's points: no more progress, and 1e-6 m took gigabytes
        (dict(checkpoint_spacing=0.05), ValueError, r"checkpoint_spacing must be >= the centreline's point spacing "
                                                     r"\(0.1 m\).* got 0.05"),
        (dict(lookahead_horizon=1e3), ValueError, r"lookahead_horizon must be <= the longest loop these tracks hold "
                                                  r"\(25.15 m\).* got 1000"),
        (dict(off_track_penalty=-1.0), ValueError, "off_track_penalty"),
        (dict(device="tpu"), ValueError, "device"),
        (dict(reset_options=True), TypeError, "reset_options"),
    ],
)
def test_bad_config_values_raise_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        TrackVectorEnv(**{"num_envs": 1, "device": "cpu", **kwargs})


def test_the_default_checkpoint_spacing_is_never_below_the_point_spacing():
    """2 * max_speed * dt of a slow car (0.08 m) is under the 0.1 m point spacing: the default
    is then the point spacing (a given 0.08 is refused)."""
    import dataclasses

    from trackgen_env.envs.car import CAR_PRESETS

    slow = dataclasses.replace(CAR_PRESETS["rc10"], max_speed=0.8)
    assert TrackVectorEnv(1, "cpu", car=slow).checkpoint_spacing == pytest.approx(0.1)
    assert TrackVectorEnv(1, "cpu").checkpoint_spacing == pytest.approx(0.6)
    with pytest.raises(ValueError, match="checkpoint_spacing must be >= the centreline's point spacing"):
        TrackVectorEnv(1, "cpu", car=slow, checkpoint_spacing=0.08)


def test_bad_reset_arguments_raise():
    env = TrackVectorEnv(1, "cpu", seed=0)
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-3)
    with pytest.raises(ValueError, match="options"):
        env.reset(options={"x": 1})
    env.reset(seed=0)  # still usable


def test_pure_pursuit_laps_at_least_95_percent_of_256_tracks():
    """One batched run: each env's first episode must be a completed lap without touching an edge."""
    n = 256
    env = TrackVectorEnv(n, "cpu", seed=2026, max_episode_steps=600)
    controller = PurePursuit(env.car)
    obs, _ = env.reset()
    outcome = np.full(n, "", dtype=object)
    for _ in range(600):
        obs, _, terminated, truncated, info = env.step(controller(obs))
        for e in np.flatnonzero((terminated | truncated) & (outcome == "")):
            outcome[e] = "lap" if info["laps"][e] >= 1 and not info["off_track"][e] else "fail"
        if (outcome != "").all():
            break
    assert (outcome == "lap").mean() >= 0.95, dict(zip(*np.unique(outcome, return_counts=True)))


def test_render_returns_one_rgb_frame_per_env():
    env = TrackVectorEnv(2, "cpu", seed=0, render_mode="rgb_array")
    env.reset()
    frames = env.render()
    assert len(frames) == 2
    assert all(f.dtype == np.uint8 and f.ndim == 3 and f.shape[2] == 3 for f in frames)
    assert frames[0].std() > 0


def test_a_given_centreline_is_driven_in_every_env():
    a = np.linspace(0, 2 * np.pi, 120, endpoint=False)
    circuit = np.stack([80 * np.cos(a), 50 * np.sin(a), np.full(120, 6.0), np.full(120, 6.0)], axis=1)
    env = TrackVectorEnv(2, "cpu", car="full", centerline=circuit, seed=0)
    obs, _ = env.reset()
    tracks = env.tracks()
    np.testing.assert_array_equal(tracks[0]["centerline"], tracks[1]["centerline"])
    np.testing.assert_allclose(obs[:, 5], 6.0, rtol=1e-3)  # the CSV's half width
    controller = PurePursuit(env.car)
    for _ in range(400):
        obs, _, terminated, _, info = env.step(controller(obs))
        if terminated.all():
            break
    assert info["laps"].tolist() == [1, 1] and not info["off_track"].any()


def test_track_and_centerline_together_are_refused():
    from trackgen_env import TrackGenConfig

    with pytest.raises(TypeError, match="either track= .* or centerline="):
        TrackVectorEnv(1, "cpu", track=TrackGenConfig(), centerline=np.ones((5, 4)))
