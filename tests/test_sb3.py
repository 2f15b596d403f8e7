"""The Stable-Baselines3 adapter (trackgen_env.integrations.sb3.SB3VecEnv) against SB3's VecEnv contract.

SB3's env_checker does not check VecEnvs, so these tests spell the contract out: spaces,
step shapes and dtypes, the per-env infos, terminal_observation / TimeLimit.truncated on
done (SAME_STEP final observations reach terminal_observation exactly), seeding, the
attribute API, SB3's VecEnv wrappers on top, and PPO on a 16-env adapter. A tiny scripted
SAME_STEP vector env pins the exact sequence; the real envs check the rest.
"""

import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper
from gymnasium.vector.utils import batch_space

pytest.importorskip("stable_baselines3")
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize  # noqa: E402

import trackgen_env  # noqa: E402,F401
from trackgen_env.integrations.sb3 import SB3VecEnv, make_sb3_vec_env  # noqa: E402


class ScriptedSameStepEnv(VectorEnv):
    """Env ``i`` runs episodes of ``3 + i`` steps; even episodes terminate, odd ones truncate.

    obs = (i, step in episode, episode number, seed or -1) float32, reward = 1, info
    ``"laps"`` = episode number; SAME_STEP autoreset in Gymnasium's format.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs=3):
        self.num_envs = num_envs
        self.render_mode = None
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (4,), np.float32)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.single_action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.length = 3 + np.arange(num_envs)
        self.calls = []

    def _obs(self):
        i = np.arange(self.num_envs)
        return np.stack([i, self.t, self.episode, np.full(self.num_envs, self.seed)], axis=1).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        self.calls.append(("reset", seed, options))
        self.seed = -1 if seed is None else seed
        self.t = np.zeros(self.num_envs, np.int64)
        self.episode = np.zeros(self.num_envs, np.int64)
        return self._obs(), {}

    def step(self, actions):
        self.t += 1
        done = self.t >= self.length
        terminated = done & (self.episode % 2 == 0)
        truncated = done & (self.episode % 2 == 1)
        every = np.ones(self.num_envs, bool)
        info = {"laps": self.episode.copy(), "_laps": every}
        if done.any():
            info["final_obs"] = np.where(done[:, None], self._obs(), 0.0).astype(np.float32)
            info["_final_obs"] = done.copy()
            info["final_info"] = {"laps": np.where(done, self.episode, 0), "_laps": done.copy()}
            info["_final_info"] = done.copy()
            self.t[done] = 0
            self.episode[done] += 1
            info["laps"] = self.episode.copy()
        return self._obs(), np.ones(self.num_envs, np.float32), terminated, truncated, info


class Recorder(VectorWrapper):
    """Keeps the wrapped env's last step return (to compare with what the adapter gives SB3)."""

    def step(self, actions):
        self.last = self.env.step(actions)
        return self.last


def track_adapter(num_envs=4, **kwargs):
    kwargs.setdefault("seed", 3)
    return make_sb3_vec_env("TrackGen-Track-v0", num_envs, device="cpu", **kwargs)


# -- the exact sequence, on the scripted env ---------------------------------------------------


def test_adapter_is_an_sb3_vec_env_with_the_single_spaces():
    venv = SB3VecEnv(ScriptedSameStepEnv(3))
    assert isinstance(venv, VecEnv)
    assert venv.num_envs == 3
    assert venv.observation_space == spaces.Box(-np.inf, np.inf, (4,), np.float32)
    assert venv.action_space == spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert venv.render_mode is None


def test_step_sequence_gives_sb3_dones_infos_and_terminal_observations():
    venv = SB3VecEnv(ScriptedSameStepEnv(2))
    obs = venv.reset()
    np.testing.assert_array_equal(obs, [[0, 0, 0, -1], [1, 0, 0, -1]])
    actions = np.zeros((2, 2), np.float32)
    expected_done = {3: [True, False], 4: [False, True], 6: [True, False]}
    for t in range(1, 7):
        obs, rewards, dones, infos = venv.step(actions)
        assert obs.shape == (2, 4) and obs.dtype == np.float32
        assert rewards.shape == (2,) and rewards.dtype == np.float32
        assert dones.shape == (2,) and dones.dtype == bool
        assert isinstance(infos, list) and len(infos) == 2 and all(isinstance(i, dict) for i in infos)
        np.testing.assert_array_equal(dones, expected_done.get(t, [False, False]))
        for i in range(2):
            if dones[i]:
                # the new episode's first obs; the final one in terminal_observation; the final step's info
                ep = infos[i]["laps"]
                np.testing.assert_array_equal(obs[i], [i, 0, ep + 1, -1])
                np.testing.assert_array_equal(infos[i]["terminal_observation"], [i, 3 + i, ep, -1])
                assert infos[i]["TimeLimit.truncated"] == (ep % 2 == 1)
            else:
                assert "terminal_observation" not in infos[i] and infos[i]["TimeLimit.truncated"] is False
                assert not any(k.startswith("_") or k.startswith("final") for k in infos[i])  # DummyVecEnv's keys
    # env 0's second episode (3 steps) truncated at t = 6
    assert infos[0]["TimeLimit.truncated"] is True


def test_seed_is_passed_to_the_next_reset_only():
    env = ScriptedSameStepEnv(2)
    venv = SB3VecEnv(env)
    assert venv.seed(11) == [11, 11]
    assert venv.reset()[0, 3] == 11
    assert venv.reset()[0, 3] == -1
    assert [c[1] for c in env.calls] == [11, None]


def test_seed_none_draws_a_valid_env_seed():
    venv = SB3VecEnv(ScriptedSameStepEnv(2))
    (s, _) = venv.seed(None)
    assert isinstance(s, int) and 0 <= s < 2**31


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError), ("a", TypeError), (True, TypeError)])
def test_a_bad_seed_is_refused_at_once_and_keeps_the_seed_before(bad, error):
    env = ScriptedSameStepEnv(2)
    venv = SB3VecEnv(env)
    venv.seed(11)
    with pytest.raises(error, match=r"SB3VecEnv.seed\(seed\) must be"):
        venv.seed(bad)
    assert venv.reset()[0, 3] == 11  # not at the reset, after the refusal


def test_set_options_reach_reset_and_different_per_env_options_are_refused():
    env = ScriptedSameStepEnv(2)
    venv = SB3VecEnv(env)
    venv.set_options({"a": 1})
    venv.reset()
    assert env.calls[-1][2] == {"a": 1}
    venv.set_options({"a": 1})
    with pytest.raises(ValueError, match="one options dict"):  # refused at once, not at the next reset
        venv.set_options([{"a": 1}, {"a": 2}])
    with pytest.raises(ValueError, match=r"one options dict or 2 \(one per env\), got 3"):
        venv.set_options([{"a": 1}] * 3)
    for bad in ("abc", b"ab", 5):
        with pytest.raises(TypeError, match="expected None, an options dict or a list of them"):
            venv.set_options(bad)
    venv.reset()
    assert env.calls[-1][2] == {"a": 1}  # the options set before the refused calls


def test_set_options_are_checked_as_the_envs_reset_checks_them():
    from trackgen_env.integrations.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("TrackGen-Track-v0", 2, device="cpu", seed=0)
    with pytest.raises(ValueError, match="takes no options but reset_mask"):
        venv.set_options({"bogus": 1})
    with pytest.raises(ValueError, match="reset_mask needs autoreset_mode=DISABLED"):
        venv.set_options({"reset_mask": np.ones(2, bool)})
    assert venv.reset().shape[0] == 2  # nothing was stored: the reset takes no options
    venv.close()


def test_get_attr_returns_the_vector_envs_attribute_once_per_index():
    env = ScriptedSameStepEnv(3)
    venv = SB3VecEnv(env)
    assert venv.get_attr("length") == [env.length] * 3
    assert venv.get_attr("length", indices=[0, 2])[1] is env.length
    assert venv.get_attr("num_envs", indices=1) == [3]
    with pytest.raises(IndexError, match=r"\[0, 3\)"):
        venv.get_attr("num_envs", indices=[3])
    with pytest.raises(AttributeError):
        venv.get_attr("no_such_attribute")
    assert venv.has_attr("length") and not venv.has_attr("no_such_attribute")


def test_set_attr_sets_the_shared_attribute_for_all_envs_only():
    env = ScriptedSameStepEnv(3)
    venv = SB3VecEnv(env)
    venv.set_attr("flag", 5)
    venv.set_attr("flag", 6, indices=[2, 0, 1])
    assert env.flag == 6
    with pytest.raises(ValueError, match="all envs"):
        venv.set_attr("flag", 7, indices=[0])
    assert env.flag == 6


def test_env_method_calls_the_vector_env_once():
    env = ScriptedSameStepEnv(3)
    venv = SB3VecEnv(env)
    out = venv.env_method("reset", seed=4, indices=[0, 1])
    assert len(out) == 2 and len(env.calls) == 1 and env.calls[0][1] == 4


def test_env_is_wrapped_looks_through_gymnasium_vector_wrappers():
    venv = SB3VecEnv(Recorder(ScriptedSameStepEnv(2)))
    assert venv.env_is_wrapped(Recorder) == [True, True]
    assert venv.env_is_wrapped(gymnasium.wrappers.vector.RecordEpisodeStatistics, indices=[1]) == [False]


def test_next_step_env_is_refused_with_the_fix():
    env = ScriptedSameStepEnv(2)
    env.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.NEXT_STEP}
    with pytest.raises(ValueError, match="SAME_STEP"):
        SB3VecEnv(env)


def test_non_vector_env_is_refused():
    with pytest.raises(TypeError, match="VectorEnv"):
        SB3VecEnv(gymnasium.make("CartPole-v1"))


def test_vec_monitor_and_vec_normalize_run_on_top():
    venv = VecNormalize(VecMonitor(SB3VecEnv(ScriptedSameStepEnv(2)), info_keywords=("laps",)))
    venv.reset()
    episodes = []
    for _ in range(6):
        obs, rewards, dones, infos = venv.step(np.zeros((2, 2), np.float32))
        assert obs.shape == (2, 4) and np.all(np.abs(obs) <= 10.0)
        episodes += [info["episode"] for info, d in zip(infos, dones) if d]
        for info, d in zip(infos, dones):
            if d:
                assert info["terminal_observation"].shape == (4,)
    assert [(e["r"], e["l"]) for e in episodes] == [(3.0, 3), (4.0, 4), (3.0, 3)]


def test_missing_sb3_gives_an_import_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "stable_baselines3.common.vec_env", None)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[sb3\]" in a source checkout'):
        make_sb3_vec_env("TrackGen-Track-v0", 2)


def test_importing_the_package_does_not_import_sb3():
    code = ("import sys, trackgen_env, trackgen_env.integrations.sb3, trackgen_env.integrations.train; "
            "assert 'stable_baselines3' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_make_sb3_vec_env_refuses_an_autoreset_mode():
    with pytest.raises(TypeError, match="SAME_STEP"):
        make_sb3_vec_env("TrackGen-Track-v0", 2, autoreset_mode=AutoresetMode.NEXT_STEP)


# -- the real envs -------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id, obs_dim, act_dim", [("TrackGen-Track-v0", 38, 2), ("TrackGen-Gates-v0", None, 4)])
def test_real_env_step_shapes_and_dtypes(env_id, obs_dim, act_dim):
    venv = make_sb3_vec_env(env_id, 3, device="cpu", seed=1)
    assert isinstance(venv, VecEnv) and venv.num_envs == 3
    assert venv.action_space.shape == (act_dim,)
    if obs_dim is not None:
        assert venv.observation_space.shape == (obs_dim,)
    obs = venv.reset()
    assert obs.shape == (3, *venv.observation_space.shape) and obs.dtype == np.float32
    obs, rewards, dones, infos = venv.step(np.zeros((3, act_dim), np.float32))
    assert obs.shape == (3, *venv.observation_space.shape) and obs.dtype == np.float32
    assert rewards.shape == (3,) and rewards.dtype == np.float32
    assert dones.shape == (3,) and dones.dtype == bool
    assert len(infos) == 3 and all("laps" in i for i in infos)
    venv.close()


def test_truncation_reaches_sb3_with_the_exact_final_observation():
    venv = SB3VecEnv(Recorder(gymnasium.make_vec("TrackGen-Track-v0", num_envs=3, device="cpu", seed=2,
                                                 max_episode_steps=4, autoreset_mode=AutoresetMode.SAME_STEP)))
    first = venv.reset()
    for t in range(4):
        obs, _, dones, infos = venv.step(np.zeros((3, 2), np.float32))  # at rest: only the time limit ends it
    assert dones.all()
    raw_info = venv.env.last[4]
    for i in range(3):
        assert infos[i]["TimeLimit.truncated"] is True
        np.testing.assert_array_equal(infos[i]["terminal_observation"], raw_info["final_obs"][i])
    # the new episode's first observation (a new track) is what SB3 gets as obs
    assert not np.array_equal(obs, np.stack([i["terminal_observation"] for i in infos]))
    assert obs.shape == first.shape


def test_termination_off_track_is_not_a_time_limit_truncation():
    venv = SB3VecEnv(Recorder(gymnasium.make_vec("TrackGen-Track-v0", num_envs=2, device="cpu", seed=2,
                                                 autoreset_mode=AutoresetMode.SAME_STEP)))
    venv.reset()
    full_left = np.tile(np.array([1.0, 1.0], np.float32), (2, 1))
    ended = {}
    for _ in range(200):
        _, _, dones, infos = venv.step(full_left)
        for i in np.flatnonzero(dones):
            ended.setdefault(i, (infos[i], venv.env.last[4]["final_obs"][i]))
        if len(ended) == 2:
            break
    assert len(ended) == 2
    for info, final in ended.values():
        assert info["TimeLimit.truncated"] is False and bool(info["off_track"])
        np.testing.assert_array_equal(info["terminal_observation"], final)


def test_same_seed_reproduces_the_rollout_and_another_seed_does_not():
    venv = track_adapter(4)
    actions = np.tile(np.array([0.1, 0.5], np.float32), (4, 1))

    def rollout(seed):
        venv.seed(seed)
        out = [venv.reset()]
        out += [venv.step(actions)[0] for _ in range(5)]
        return np.stack(out)

    a = rollout(5)
    b = rollout(5)
    c = rollout(6)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_ppo_runs_4096_steps_on_a_16_env_adapter():
    from stable_baselines3 import PPO

    venv = VecNormalize(VecMonitor(track_adapter(16)))
    model = PPO("MlpPolicy", venv, n_steps=256, batch_size=1024, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=4096)
    assert model.num_timesteps == 4096
    venv.close()


def test_torch_output_env_is_refused():
    env = ScriptedSameStepEnv(2)
    env.output = "torch"
    with pytest.raises(ValueError, match='output="numpy"'):
        SB3VecEnv(env)


def test_render_tiles_the_envs_rgb_frames():
    venv = track_adapter(4, render_mode="rgb_array")
    venv.reset()
    frames = venv.get_images()
    assert len(frames) == 4 and frames[0].ndim == 3 and frames[0].dtype == np.uint8
    h, w, _ = frames[0].shape
    assert venv.render().shape == (2 * h, 2 * w, 3)  # SB3 tiles 4 frames 2 x 2
    venv.close()


def test_a_sharded_adapter_renders_as_one_env():
    kw = {"seed": 2, "device": "cpu", "render_mode": "rgb_array"}
    one = make_sb3_vec_env("TrackGen-Track-v0", 4, **kw)
    two = make_sb3_vec_env("TrackGen-Track-v0", 4, num_shards=2, **kw)
    for venv in (one, two):
        venv.reset()
    np.testing.assert_array_equal(np.stack(two.get_images()), np.stack(one.get_images()))
    np.testing.assert_array_equal(two.render(), one.render())
    two.set_attr("render_mode", None)  # live through the adapter, as one env's
    assert all(shard.render_mode is None for shard in two.env.shards)
    one.close()
    two.close()


def test_attributes_are_found_through_gymnasium_vector_wrappers():
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    vec = gymnasium.make_vec("TrackGen-Track-v0", num_envs=2, device="cpu", autoreset_mode=AutoresetMode.SAME_STEP)
    venv = SB3VecEnv(RecordEpisodeStatistics(vec))
    assert venv.get_attr("car") == [vec.unwrapped.car] * 2
    assert venv.get_attr("episode_count") == [0, 0]  # the wrapper's own, outermost first
    venv.set_attr("render_size", 32)
    assert vec.unwrapped.render_size == 32
    assert venv.env_method("check_open") == [None, None]
    with pytest.raises(AttributeError, match="nope"):
        venv.get_attr("nope")
    venv.close()


def test_a_render_mode_set_through_the_adapter_is_followed():
    """The env's render_mode is live: set with set_attr, the adapter's render() follows it."""
    venv = track_adapter(4)
    venv.reset()
    venv.set_attr("render_mode", "rgb_array")
    assert venv.render_mode == "rgb_array" and venv.render().ndim == 3
    venv.set_attr("render_mode", None)
    with pytest.warns(UserWarning, match="no `render_mode`"):
        assert venv.render() is None
    venv.close()


def test_sb3_example_trains_and_drives_new_tracks():
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "examples" / "sb3_ppo_track.py"
    out = subprocess.run([sys.executable, str(script), "--steps", "3072", "--num-envs", "3", "--device", "cpu"],
                         check=True, capture_output=True, text=True, timeout=300)
    assert "laps completed on 3 new tracks" in out.stdout
    assert "mini-batch" not in out.stderr  # 3 x 256 transitions: minibatches of 384, none truncated (SB3 warns)
    assert "torch threads: 1" in out.stdout  # the CPU policy's default (issue 9, item 8)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "MountainCar-v0"])
def test_make_sb3_vec_env_of_another_env_gives_the_sb3vecenv_recipe(env_id):
    """CartPole's vector env takes no autoreset_mode, MountainCar has none: one TypeError with
    the recipe that works (which is then checked)."""
    with pytest.raises(TypeError, match=r"wrap a SAME_STEP vector env of it yourself: SB3VecEnv\(gymnasium.make_vec"):
        make_sb3_vec_env(env_id, 2)
    env = SB3VecEnv(gymnasium.make_vec(env_id, 2, vectorization_mode="sync",
                                       vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}))
    assert env.reset().shape[0] == 2
    env.close()


def test_a_sharded_adapter_steps_as_one_envs_adapter():
    """make_sb3_vec_env(num_shards=2): the envs split over two threads, with the same obs, rewards,
    dones and infos as one env's adapter of the same seed (auto-resets included); set_options is
    checked as the env's reset checks it."""
    kw = dict(device="cpu", seed=0)
    one = make_sb3_vec_env("TrackGen-Track-v0", 8, **kw)
    two = make_sb3_vec_env("TrackGen-Track-v0", 8, num_shards=2, **kw)
    assert type(two.env).__name__ == "ShardedVectorEnv" and two.env.num_shards == 2
    one.seed(3)
    two.seed(3)
    assert np.array_equal(one.reset(), two.reset())
    rng = np.random.default_rng(0)
    dones = 0
    for _ in range(120):
        action = np.stack([rng.uniform(-1, 1, 8), np.ones(8)], axis=1).astype(np.float32)  # full throttle: off the band
        a, b = one.step(action), two.step(action)
        for x, y in zip(a[:3], b[:3]):
            assert np.array_equal(x, y)
        for ia, ib in zip(a[3], b[3]):
            assert ia.keys() == ib.keys()
            assert all(np.array_equal(ia[k], ib[k]) for k in ia)
        dones += int(a[2].sum())
    assert dones > 0
    assert two.get_attr("car") == one.get_attr("car")  # a setting every shard holds alike
    with pytest.raises(ValueError, match="reset_mask"):
        two.set_options({"reset_mask": np.ones(3, bool)})
    with pytest.raises(ValueError, match="num_shards"):
        make_sb3_vec_env("TrackGen-Track-v0", 8, num_shards=9, **kw)
    one.close()
    two.close()
