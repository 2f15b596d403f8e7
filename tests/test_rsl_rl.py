"""The rsl_rl adapter's contract (``trackgen_env.integrations.rsl_rl``): what rsl_rl's ``OnPolicyRunner`` reads."""

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("rsl_rl")

import trackgen_env  # noqa: F401,E402
from gymnasium.vector import AutoresetMode  # noqa: E402
from trackgen_env.integrations.rsl_rl import RslRlVecEnv, make_rsl_rl_vec_env  # noqa: E402
from trackgen_env.integrations.train_rsl_rl import RSL_RL_CONFIG  # noqa: E402

E = 8


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _env(**kwargs):
    return make_rsl_rl_vec_env("TrackGen-Track-v0", E, seed=5, device="cpu", **kwargs)


def test_outputs_are_torch_tensors_on_the_envs_device():
    venv = _env()
    try:
        obs = venv.get_observations()
        assert set(obs.keys()) == {"policy"} and obs["policy"].shape == (E, 38) and obs["policy"].dtype == torch.float32
        obs, reward, dones, extras = venv.step(torch.zeros(E, 2))
        for t in (obs["policy"], reward, dones, extras["time_outs"]):
            assert isinstance(t, torch.Tensor) and t.device == torch.device("cpu")
        assert reward.shape == (E,) and dones.shape == (E,) and extras["time_outs"].dtype == torch.bool
        assert venv.num_envs == E and venv.num_actions == 2 and venv.device == torch.device("cpu")
    finally:
        venv.close()


def test_observations_are_copies_that_the_next_step_does_not_overwrite():
    """The env's torch outputs are views of its buffers; rsl_rl keeps the observation it acted on
    until after the next step: a view would then hold the next observation."""
    venv = _env()
    try:
        first = venv.get_observations()
        kept = first["policy"].clone()
        after, *_ = venv.step(torch.tensor([[0.0, 1.0]]).repeat(E, 1))
        stepped = after["policy"].clone()
        assert not torch.equal(stepped, kept)  # the car moved: the observation changed
        assert torch.equal(first["policy"], kept)
        venv.step(torch.tensor([[0.0, 1.0]]).repeat(E, 1))
        assert torch.equal(after["policy"], stepped)
    finally:
        venv.close()


def test_rsl_rls_storage_holds_the_observation_each_action_was_taken_in():
    """Through rsl_rl's own PPO.act / process_env_step: storage row t is the observation before step t."""
    from rsl_rl.algorithms import PPO

    venv = _env()
    try:
        cfg = {**RSL_RL_CONFIG, "num_steps_per_env": 3, "multi_gpu": None,
               "obs_groups": {"actor": ["policy"], "critic": ["policy"]}}
        obs = venv.get_observations()
        ppo = PPO.construct_algorithm(obs, venv, cfg, "cpu")
        seen = []
        for _ in range(3):
            seen.append(obs["policy"].clone())
            with torch.inference_mode():
                actions = ppo.act(obs)
                obs, rewards, dones, extras = venv.step(actions)
                ppo.process_env_step(obs, rewards, dones, extras)
        for t in range(3):
            assert torch.equal(ppo.storage.observations["policy"][t], seen[t]), t
    finally:
        venv.close()


def test_dones_are_terminated_or_truncated_and_a_time_limit_is_a_time_out():
    venv = _env(max_episode_steps=3)
    try:
        for step in range(3):
            _, _, dones, extras = venv.step(torch.zeros(E, 2))  # at rest: no edge is touched
        assert dones.dtype == torch.long and dones.tolist() == [1] * E
        assert extras["time_outs"].tolist() == [True] * E
        _, _, dones, extras = venv.step(torch.zeros(E, 2))
        assert dones.tolist() == [0] * E and not extras["time_outs"].any()
    finally:
        venv.close()


def test_a_termination_is_done_but_not_a_time_out():
    venv = _env(max_episode_steps=1000)
    try:
        full_lock = torch.tensor([[1.0, 1.0]]).repeat(E, 1)  # full throttle, full lock: off the band soon
        ended = torch.zeros(E, dtype=torch.bool)
        for _ in range(200):
            _, _, dones, extras = venv.step(full_lock)
            assert not (extras["time_outs"] & (dones == 0)).any()
            ended |= dones.bool()
            assert not extras["time_outs"][dones.bool()].any()  # the edge ends them, not the time limit
            if ended.all():
                break
        assert ended.all()
    finally:
        venv.close()


def test_same_step_reset_every_transition_had_its_action_applied():
    """Against the NEXT_STEP env of the same seed: where it spends a step on the reset (action
    ignored, reward 0), the adapter's ending step already returns the new episode's first
    observation, and its next transition is the new episode's first real one."""
    limit, steps = 4, 10
    action = np.tile(np.array([[0.1, 0.6]], dtype=np.float32), (E, 1))
    venv = _env(max_episode_steps=limit)
    ref = gym.make_vec("TrackGen-Track-v0", num_envs=E, vectorization_mode="vector_entry_point", device="cpu",
                       max_episode_steps=limit, autoreset_mode=AutoresetMode.NEXT_STEP)
    try:
        ref.reset(seed=5)
        ref_obs, ref_rewards = [], []
        for _ in range(steps + 2):
            o, r, *_ = ref.step(action)
            ref_obs.append(o)
            ref_rewards.append(r)
        adapter_obs, adapter_rewards = [], []
        for _ in range(steps):
            o, r, d, _ = venv.step(torch.as_tensor(action))
            adapter_obs.append(o["policy"].numpy().copy())
            adapter_rewards.append(r.numpy().copy())
        # NEXT_STEP: steps 0-3 the episode, step 4 the reset transition, steps 5-8 the next episode
        np.testing.assert_array_equal(adapter_obs[3], ref_obs[4])  # the new episode's first observation
        assert np.all(ref_rewards[4] == 0.0)  # the reset transition NEXT_STEP would store
        np.testing.assert_array_equal(adapter_rewards[4], ref_rewards[5])  # the adapter's: a real transition
        np.testing.assert_array_equal(adapter_obs[7], ref_obs[9])
        assert np.all(adapter_rewards[4] != 0.0)
    finally:
        venv.close()
        ref.close()


def test_the_adapter_refuses_next_step_and_numpy_outputs():
    next_step = gym.make_vec("TrackGen-Track-v0", num_envs=2, vectorization_mode="vector_entry_point", device="cpu",
                             output="torch")
    numpy_out = gym.make_vec("TrackGen-Track-v0", num_envs=2, vectorization_mode="vector_entry_point", device="cpu",
                             autoreset_mode=AutoresetMode.SAME_STEP)
    try:
        with pytest.raises(ValueError, match="SAME_STEP"):
            RslRlVecEnv(next_step)
        with pytest.raises(ValueError, match='output="torch"'):
            RslRlVecEnv(numpy_out)
        with pytest.raises(TypeError, match="sets autoreset_mode itself"):
            make_rsl_rl_vec_env("TrackGen-Track-v0", 2, autoreset_mode=AutoresetMode.SAME_STEP)
    finally:
        next_step.close()
        numpy_out.close()


def test_random_episode_lengths_are_refused_with_the_reason():
    venv = _env()
    try:
        with pytest.raises(ValueError, match="init_at_random_ep_len"):
            venv.episode_length_buf = torch.zeros(E, dtype=torch.long)
    finally:
        venv.close()


def test_episode_statistics_reach_rsl_rls_tensorboard_log(tmp_path, capsys):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from trackgen_env.integrations.rsl_rl import OnPolicyRunner

    venv = _env(max_episode_steps=5, monitor=True)
    try:
        cfg = {**RSL_RL_CONFIG, "num_steps_per_env": 8}
        runner = OnPolicyRunner(venv, cfg, log_dir=str(tmp_path), device="cpu")
        runner.learn(num_learning_iterations=2)
    finally:
        venv.close()
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert "Episode/laps" in tags and "Episode/lap_rate" in tags
    assert "Mean episode lap_rate" in capsys.readouterr().out
    # 2 iterations x 8 steps with 5-step episodes: 3 ends per env
    assert len(venv.episodes) == 3 * E and {row["l"] for row in venv.episodes} == {5}
