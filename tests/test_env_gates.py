"""TrackGen-Gates-v0 (GatesVectorEnv): Gymnasium conformance, NEXT_STEP autoreset, seeding,
bad input, and the reference controller flying generated courses."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env import GateGenConfig
from trackgen_env.envs.controllers import CourseLinePilot
from trackgen_env.envs.gates import OBS_DIM, GatesVectorEnv

FLYABLE_GATE_FRACTION = 0.9  # issue 4: >= 90 % of the gates of 256 courses, no collision


def _hover(env, value=None):
    a = np.zeros((env.num_envs, 4), np.float32)
    a[:, 0] = env.quadrotor.hover_action if value is None else value
    return a


def test_make_vec_builds_the_registered_env():
    env = gymnasium.make_vec("TrackGen-Gates-v0", num_envs=2, device="cpu", seed=0)
    assert isinstance(env.unwrapped, GatesVectorEnv)
    assert env.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    obs, _ = env.reset(seed=1)
    assert obs.shape == (2, OBS_DIM)


def test_spaces_dtypes_and_shapes_of_every_return(device):
    env = GatesVectorEnv(3, device, seed=0)
    assert env.single_action_space == gymnasium.spaces.Box(-1.0, 1.0, (4,), np.float32)
    assert env.action_space.shape == (3, 4) and env.action_space.dtype == np.float32
    assert env.single_observation_space.shape == (OBS_DIM,)
    assert env.observation_space.shape == (3, OBS_DIM) and env.observation_space.dtype == np.float32
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == (3, OBS_DIM) and env.observation_space.contains(obs)
    assert isinstance(info, dict)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert obs.dtype == np.float32 and obs.shape == (3, OBS_DIM) and env.observation_space.contains(obs)
    assert reward.dtype == np.float32 and reward.shape == (3,)
    assert terminated.dtype == np.bool_ and terminated.shape == (3,)
    assert truncated.dtype == np.bool_ and truncated.shape == (3,)
    for key, dtype in (("gates_passed", np.int32), ("laps", np.int32), ("collision", np.bool_),
                       ("out_of_bounds", np.bool_),
                       ("missed_gate", np.bool_)):
        assert info[key].dtype == dtype and info[key].shape == (3,)
        assert info["_" + key].dtype == np.bool_ and info["_" + key].all()


def test_reset_observation_is_the_start_pose_at_rest_facing_the_next_gate():
    env = GatesVectorEnv(4, "cpu", seed=5)
    obs, _ = env.reset(seed=5)
    state = env.drone_state()
    courses = env.courses()
    np.testing.assert_array_equal(obs[:, 0:3], 0.0)  # at rest
    np.testing.assert_array_equal(obs[:, 12:15], 0.0)
    np.testing.assert_array_equal(obs[:, 40:44], 0.0)
    np.testing.assert_allclose(obs[:, 15], state["position"][:, 2])
    for e in range(4):
        rot = obs[e, 3:12].reshape(3, 3)
        np.testing.assert_allclose(rot @ rot.T, np.eye(3), atol=1e-5)
        # the mean of the next gate's corners, back in the world frame, is gate 0 (ahead of the start)
        centre = state["position"][e] + rot @ obs[e, 16:28].reshape(4, 3).mean(axis=0)
        np.testing.assert_allclose(centre, courses[e]["gate_position"][0], atol=1e-4)
        second = state["position"][e] + rot @ obs[e, 28:40].reshape(4, 3).mean(axis=0)
        np.testing.assert_allclose(second, courses[e]["gate_position"][1], atol=1e-4)
        width = np.linalg.norm(obs[e, 16:19] - obs[e, 19:22])
        assert width == pytest.approx(courses[e]["gate_width"], rel=1e-4)


def _observed_gate_centre(env, obs, e, first=16):
    position = env.drone_state()["position"][e]
    return position + obs[e, 3:12].reshape(3, 3) @ obs[e, first:first + 12].reshape(4, 3).mean(axis=0)


def test_next_gate_advances_from_the_start_gate_through_the_course():
    """Gate 0 is the first gate counted from the standard start; then each gate Progress expects next,
    and the lap ends through the last gate (issue 13: gate 0 counts)."""
    env = GatesVectorEnv(1, "cpu", seed=9)
    pilot = CourseLinePilot(env)
    obs, _ = env.reset(seed=9)
    gates = env.courses()[0]["gate_position"]
    seen = [0]
    for _ in range(env.max_episode_steps):
        obs, _, terminated, truncated, info = env.step(pilot(obs))
        if terminated[0] or truncated[0]:
            break
        centre = _observed_gate_centre(env, obs, 0)
        k = int(np.argmin(np.linalg.norm(gates - centre, axis=1)))
        np.testing.assert_allclose(centre, gates[k], atol=1e-3)
        if k != seen[-1]:
            seen.append(k)
        assert info["gates_passed"][0] == len(seen) - 1
    assert seen == list(range(len(gates)))
    assert terminated[0] and info["laps"][0] == 1 and info["gates_passed"][0] == len(gates)


def test_next_step_autoreset_exact_sequence_after_truncation():
    """Truncation at step 3; step 4 ignores the action and returns the first observation of a new course."""
    env = GatesVectorEnv(2, "cpu", seed=3, max_episode_steps=3)
    obs0, _ = env.reset(seed=3)
    first_courses = env.courses()
    expected_end = [(False, False), (False, False), (False, True)]
    for terminated_expected, truncated_expected in expected_end:
        obs, reward, terminated, truncated, _ = env.step(_hover(env))
        assert terminated.tolist() == [terminated_expected] * 2
        assert truncated.tolist() == [truncated_expected] * 2
    assert not np.array_equal(obs, obs0)
    big = np.ones((2, 4), np.float32)  # ignored on the autoreset step
    obs, reward, terminated, truncated, info = env.step(big)
    assert reward.tolist() == [0.0, 0.0]
    assert terminated.tolist() == [False, False] and truncated.tolist() == [False, False]
    assert info["gates_passed"].tolist() == [0, 0]
    np.testing.assert_array_equal(obs[:, 0:3], 0.0)
    np.testing.assert_array_equal(obs[:, 40:44], 0.0)
    new_courses = env.courses()
    for e in range(2):
        assert not np.array_equal(new_courses[e]["gate_position"], first_courses[e]["gate_position"])
    np.testing.assert_allclose(obs[:, 15], env.drone_state()["position"][:, 2])
    # the episode goes on normally afterwards
    obs, reward, terminated, truncated, _ = env.step(_hover(env))
    assert not terminated.any() and not truncated.any()
    assert np.all(obs[:, 40] == np.float32(env.quadrotor.hover_action))


def test_ground_crash_terminates_with_the_crash_penalty_then_autoresets():
    env = GatesVectorEnv(1, "cpu", seed=4, crash_penalty=5.0)
    obs, _ = env.reset(seed=4)
    z0 = float(obs[0, 15])
    # zero thrust from rest: the drone falls ~g t^2 / 2 (a little less with drag) and hits z = 0
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(_hover(env, -1.0))
        if terminated[0]:
            break
    assert terminated[0] and not truncated[0]
    assert info["collision"][0] and not info["out_of_bounds"][0]
    assert obs[0, 15] <= 0.0 and reward[0] <= -5.0 + 0.5
    obs, reward, terminated, truncated, _ = env.step(_hover(env, -1.0))
    assert reward[0] == 0.0 and not terminated[0] and not truncated[0]
    assert obs[0, 15] > 0.0 and obs[0, 15] != z0  # restarted on a new course


def test_reset_with_seed_is_reproducible_after_earlier_episodes():
    env = GatesVectorEnv(3, "cpu", seed=0, max_episode_steps=20)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-1, 1, size=(30, 3, 4)).astype(np.float32)

    def rollout():
        out = [env.reset(seed=11)[0]]
        for a in actions:
            out.append(env.step(a)[:4])
        return out

    first = rollout()
    for a in actions:  # more episodes in between
        env.step(a)
    second = rollout()
    other = GatesVectorEnv(3, "cpu", seed=11, max_episode_steps=20)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[0], other.reset()[0])
    for x, y in zip(first[1:], second[1:]):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


def test_reset_without_seed_draws_new_courses():
    env = GatesVectorEnv(2, "cpu", seed=0)
    env.reset()
    before = env.courses()
    env.reset()
    after = env.courses()
    assert not np.array_equal(before[0]["gate_position"], after[0]["gate_position"])


def test_recorded_and_eager_steps_agree():
    rng = np.random.default_rng(1)
    actions = rng.uniform(-1, 1, size=(40, 4, 4)).astype(np.float32)
    envs = [GatesVectorEnv(4, "cpu", seed=2, max_episode_steps=15, capture=c) for c in (True, False)]
    assert envs[0].graph is not None and envs[1].graph is None
    outs = [[env.reset(seed=2)[0]] + [env.step(a)[:4] for a in actions] for env in envs]
    for x, y in zip(*outs):
        for u, v in zip(x if isinstance(x, tuple) else (x,), y if isinstance(y, tuple) else (y,)):
            np.testing.assert_array_equal(u, v)


def test_out_of_range_actions_are_clipped():
    envs = [GatesVectorEnv(2, "cpu", seed=6) for _ in range(2)]
    for env in envs:
        env.reset(seed=6)
    a = np.array([[5.0, -np.inf, 2.0, 0.5], [-3.0, np.inf, -7.0, -0.5]], np.float64)
    out_big = envs[0].step(a)
    out_clipped = envs[1].step(np.clip(a, -1, 1).astype(np.float32))
    for u, v in zip(out_big[:4], out_clipped[:4]):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize(
    "bad, error",
    [
        (np.zeros((2, 3), np.float32), ValueError),
        (np.zeros((3, 4), np.float32), ValueError),
        (np.zeros(8, np.float32), ValueError),
        (np.zeros((2, 4), np.int64), TypeError),
        (np.zeros((2, 4), np.complex64), TypeError),
        (np.array([[0.0, 0.0, np.nan, 0.0], [0.0] * 4], np.float32), ValueError),
    ],
)
def test_bad_actions_raise_and_leave_the_env_unchanged(bad, error):
    env = GatesVectorEnv(2, "cpu", seed=7)
    env.reset(seed=7)
    env.step(_hover(env))
    before = env.drone_state()
    with pytest.raises(error):
        env.step(bad)
    after = env.drone_state()
    for key in before:
        np.testing.assert_array_equal(before[key], after[key])
    obs, *_ = env.step(_hover(env))
    assert np.all(np.isfinite(obs))


def test_step_before_reset_raises():
    env = GatesVectorEnv(1, "cpu", seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(_hover(env))


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"num_envs": 0}, ValueError),
        ({"num_envs": 2.0}, TypeError),
        ({"max_episode_steps": 0}, ValueError),
        ({"laps": 0}, ValueError),
        ({"seed": -1}, ValueError),
        ({"seed": 1.5}, TypeError),  # no int at all, as num_envs and the limits
        ({"render_mode": "ansi"}, ValueError),
        ({"quadrotor": {"mass": 1.0}}, TypeError),
        ({"gates": {"gate_width": 1.0}}, TypeError),
        ({"gates": GateGenConfig(gate_width=0.0)}, ValueError),
        ({"gate_bonus": -1.0}, ValueError),
        ({"crash_penalty": float("nan")}, ValueError),
        ({"body_rate_penalty": "0.1"}, TypeError),
        ({"bounds_margin": 0.0}, ValueError),
        ({"bar_thickness": 0.0}, ValueError),
        ({"device": "tpu"}, ValueError),
    ],
)
def test_bad_config_raises(kwargs, error):
    args = {"num_envs": 2, "device": "cpu", "seed": 0} | kwargs
    with pytest.raises(error):
        GatesVectorEnv(**args)


def test_gates_the_drone_cannot_pass_are_refused():
    """An opening at most the drone's level cross-section (0.16 m x 0.06 m for the default
    QuadrotorParams) can never be flown through: refused at construction (a randomizer's lo too),
    live (nothing written), and a smaller quadrotor is accepted; a race layout with a gate
    wholly below the ground (z = 0) is refused, one partly above it is not."""
    from trackgen_env.envs.quadrotor import QuadrotorParams
    from trackgen_env.generators.gate_layouts import RaceLayout
    from trackgen_env.pipeline import presets

    for gates, match in ((GateGenConfig(gate_width=0.05, gate_height=0.05),
                          r"gate_width\) must be larger .*\(0.16 m wide"),
                         (GateGenConfig(gate_width=0.6, gate_height=0.06), r"gate_height\) .* got a height of 0.06 m"),
                         (presets.gates(gate_width=0.6).with_randomize({"gate_frames.gate_width": (0.1, 0.6)}),
                          r"got a width of 0.1 m")):
        with pytest.raises(ValueError, match=match):
            GatesVectorEnv(2, "cpu", gates=gates, seed=0)
    small = QuadrotorParams(half_extents=(0.04, 0.04, 0.02))
    GatesVectorEnv(2, "cpu", gates=GateGenConfig(gate_width=0.1, gate_height=0.1), quadrotor=small, seed=0).close()
    env = GatesVectorEnv(4, "cpu", seed=0)
    params = env.course.generator.params
    with pytest.raises(ValueError, match=r"params\['gate_frames.gate_height'\] .* got a height of 0.01 m \(env 2\)"):
        params["gate_frames.gate_height"] = [0.6, 0.6, 0.01, 0.6]
    with pytest.raises(ValueError, match=r"params\['gate_frames.gate_width'\] must be larger than the drone"):
        params["gate_frames.gate_width"] = 0.16
    assert np.all(params["gate_frames.gate_width"].numpy() == np.float32(0.6))
    assert np.all(params["gate_frames.gate_height"].numpy() == np.float32(0.6))
    params["gate_frames.gate_width"] = 0.17
    env.close()

    level = np.tile([0.0, 0.0, 0.0, 1.0], (4, 1))
    square = np.array([[0.0, 0.0, 1.0], [5.0, 0.0, 1.0], [5.0, 5.0, 1.0], [0.0, 5.0, 1.0]])
    sunk = square.copy()
    sunk[2, 2] = -0.31  # its top edge at -0.01 m
    with pytest.raises(ValueError, match=r"gate 2's opening lies below the ground .* z = -0.01 m.*NED"):
        GatesVectorEnv(2, "cpu", layout=RaceLayout(sunk, level, np.full(4, 0.6), np.full(4, 0.6)))
    sunk[2, 2] = -0.29  # its top edge above the ground
    GatesVectorEnv(2, "cpu", layout=RaceLayout(sunk, level, np.full(4, 0.6), np.full(4, 0.6))).close()
    low = square.copy()
    low[0, 2] = -0.1  # gate 0's opening reaches above the floor, but the start (at its height) does not
    with pytest.raises(ValueError, match=r"the start, behind gate 0 .* lies at or below the ground"):
        GatesVectorEnv(2, "cpu", layout=RaceLayout(low, level, np.full(4, 1.5), np.full(4, 1.5)))
    with pytest.raises(ValueError,
                       match=r"layout: gate 1's opening \(the course flies the smallest\) .* width of 0.1 m"):
        GatesVectorEnv(2, "cpu", layout=RaceLayout(square, level, np.array([0.6, 0.1, 0.6, 0.6]), np.full(4, 0.6)))
    # a layout written live: both openings are checked before either is written
    from trackgen_env.generators.gate_layouts import write_gate_layout

    flown = GatesVectorEnv(2, "cpu", layout=RaceLayout(square, level, np.full(4, 0.6), np.full(4, 0.6)))
    params = flown.course.generator.params
    with pytest.raises(ValueError, match=r"gate_height'\] must be larger"):
        write_gate_layout(flown.course.generator, RaceLayout(square, level, np.full(4, 0.5), np.full(4, 0.05)))
    assert np.all(params["gate_frames.gate_width"].numpy() == np.float32(0.6))
    flown.close()


def test_bad_reset_arguments_raise_and_leave_the_env_usable():
    env = GatesVectorEnv(1, "cpu", seed=0)
    with pytest.raises(ValueError):
        env.reset(seed=-3)
    with pytest.raises(ValueError):
        env.reset(options={"reset_mask": [1]})
    obs, _ = env.reset(seed=0)
    assert np.all(np.isfinite(obs))


def test_saturating_random_actions_keep_every_output_finite():
    env = GatesVectorEnv(256, "cpu", seed=8, max_episode_steps=200)
    rng = np.random.default_rng(8)
    obs, _ = env.reset(seed=8)
    ended = 0
    for _ in range(1000):
        obs, reward, terminated, truncated, _ = env.step(rng.choice([-1.0, 1.0], size=(256, 4)).astype(np.float32))
        assert np.all(np.isfinite(obs)) and np.all(np.isfinite(reward))
        ended += int((terminated | truncated).sum())
    assert ended > 256  # the drones crash and the envs autoreset many times
    for arr in env.drone_state().values():
        assert np.all(np.isfinite(arr))


def test_reference_controller_flies_256_generated_courses():
    """Issue 4, flyable: >= 90 % of the gates of 256 courses passed, no collision (first episode of each env)."""
    num_envs = 256
    env = GatesVectorEnv(num_envs, "cpu", seed=2024)
    pilot = CourseLinePilot(env)
    obs, _ = env.reset(seed=2024)
    gates_per_course = np.array([len(c["gate_position"]) for c in env.courses()]) * env.laps
    done = np.zeros(num_envs, bool)
    passed = np.zeros(num_envs, np.int64)
    crashed = np.zeros(num_envs, bool)
    rewards = np.zeros(num_envs)
    for _ in range(env.max_episode_steps):
        obs, reward, terminated, truncated, info = env.step(pilot(obs))
        rewards += np.where(done, 0.0, reward)
        end = (terminated | truncated) & ~done
        passed[end] = info["gates_passed"][end]
        crashed[end] = info["collision"][end] | info["out_of_bounds"][end]
        done |= end
        if done.all():
            break
    assert done.all()
    assert passed.sum() >= FLYABLE_GATE_FRACTION * gates_per_course.sum()
    assert not crashed.any()
    # the episode return holds the gate bonuses on top of the distance flown towards the gates
    assert np.all(rewards > env.gate_bonus * passed)


def test_reward_is_progress_minus_the_body_rate_penalty():
    """Hovering in place earns ~0; spinning in yaw in place earns -body_rate_penalty * |w|."""
    env = GatesVectorEnv(1, "cpu", seed=10, body_rate_penalty=0.01)
    env.reset(seed=10)
    for _ in range(5):
        _, reward, *_ = env.step(_hover(env))
        assert abs(reward[0]) < 1e-4
    spin = _hover(env)
    spin[:, 3] = 1.0
    for _ in range(5):
        obs, reward, *_ = env.step(spin)
    rate = np.linalg.norm(obs[0, 12:15])
    assert rate > 1.0
    assert reward[0] == pytest.approx(-0.01 * rate, abs=1e-4)


def test_gate_pass_earns_the_gate_bonus():
    env = GatesVectorEnv(1, "cpu", seed=12, gate_bonus=3.0)
    pilot = CourseLinePilot(env)
    obs, _ = env.reset(seed=12)
    passes = 0
    last = 0
    for _ in range(env.max_episode_steps):
        obs, reward, terminated, truncated, info = env.step(pilot(obs))
        if info["gates_passed"][0] > last:
            passes += 1
            assert reward[0] > 3.0 - 0.2  # the bonus, plus progress of at most ~speed * dt either way
        else:
            assert reward[0] < 0.2  # progress alone: at most ~speed * dt
        last = info["gates_passed"][0]
        if terminated[0] or truncated[0]:
            break
    assert passes == len(env.courses()[0]["gate_position"])  # gate 0 counts from the standard start


def test_leaving_the_bounds_terminates_with_the_crash_penalty():
    env = GatesVectorEnv(1, "cpu", seed=13, bounds_margin=1.0, crash_penalty=2.0)
    env.reset(seed=13)
    top = env.courses()[0]["gate_position"][:, 2].max() + 1.0
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(_hover(env, 1.0))  # full thrust, straight up
        if terminated[0]:
            break
    assert terminated[0] and info["out_of_bounds"][0] and not info["collision"][0]
    assert obs[0, 15] > top
    assert reward[0] < -2.0 + 0.5


def test_demo_flies_and_writes_the_3d_picture(tmp_path, capsys):
    from trackgen_env.__main__ import main

    code = main(["demo", "--env", "gates", "--num-envs", "4", "--steps", "40", "--device", "cpu",
                 "--seed", "1", "--out", str(tmp_path), "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    for line in ("gates passed:", "collisions:", "throughput:"):
        assert line in out
    picture = tmp_path / "gates.png"
    assert picture.exists() and picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_record_episode_statistics_wrapper_sees_each_episode_once():
    env = gymnasium.wrappers.vector.RecordEpisodeStatistics(
        gymnasium.make_vec("TrackGen-Gates-v0", num_envs=2, device="cpu", seed=0, max_episode_steps=10)
    )
    env.reset(seed=0)
    lengths = []
    for _ in range(22):
        _, _, _, _, info = env.step(np.zeros((2, 4), np.float32))  # hover
        if "episode" in info:
            lengths += info["episode"]["l"][info["_episode"]].tolist()
    assert lengths == [10, 10, 10, 10]  # steps 10 and 21 (step 11 is the autoreset step)


def test_the_reference_pilot_refuses_what_it_cannot_fly_naming_it():
    from trackgen_env.envs.controllers import ControllerGains, CourseLinePilot
    from trackgen_env.envs.track import TrackVectorEnv

    with pytest.raises(TypeError, match="CourseLinePilot flies a gates env .*got TrackVectorEnv; for the track env use "
                                        "PurePursuit"):
        CourseLinePilot(TrackVectorEnv(2, "cpu", seed=0))
    with pytest.raises(TypeError, match="got str"):
        CourseLinePilot("env")
    env = GatesVectorEnv(2, "cpu", seed=0)
    with pytest.raises(TypeError, match="gains must be a ControllerGains .*got dict"):
        CourseLinePilot(env, gains={"speed": 3.0})
    with pytest.raises(ValueError, match="max_tilt"):
        ControllerGains(max_tilt=5.0)
    env.close()
