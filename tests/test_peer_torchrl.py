"""TorchRL's ``check_env_specs`` on the envs: the single env (``gymnasium.make``) through ``GymWrapper``,
``GymEnv(id)`` and ``GymEnv(id, num_envs=2)`` (TorchRL's own vectorisation: Gymnasium's
``AsyncVectorEnv`` of single envs, in subprocesses), and the native vector env in SAME_STEP through
``GymWrapper`` (batched, ``batch_size [E]``).

TorchRL takes an env whose ``env.unwrapped`` has ``num_envs`` for a batched one: the single env
must not have it (nor the other vector-only attributes), or the specs are built batched and the
check fails with "The shapes of the spec ... mismatch".
"""

from __future__ import annotations

import gymnasium as gym
import pytest

pytest.importorskip("torchrl")
import torch
from torchrl.envs.libs.gym import GymEnv, GymWrapper
from torchrl.envs.utils import check_env_specs

import trackgen_env  # noqa: F401

IDS = {"TrackGen-Track-v0": (38, 2), "TrackGen-Gates-v0": (44, 4)}


@pytest.mark.parametrize("env_id", IDS)
def test_the_single_env_has_no_vector_attributes(env_id):
    env = gym.make(env_id, device="cpu", seed=0)
    for name in ("num_envs", "single_observation_space", "single_action_space", "autoreset_mode"):
        assert not hasattr(env.unwrapped, name), name
        with pytest.raises(AttributeError, match="vector_env"):  # where to read it
            getattr(env.unwrapped, name)
    assert env.unwrapped.vector_env.num_envs == 1
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_specs_on_gym_wrapper_of_the_single_env(env_id):
    env = GymWrapper(gym.make(env_id, device="cpu", seed=0))
    assert env.batch_size == torch.Size([])
    check_env_specs(env, seed=0)
    obs_dim, act_dim = IDS[env_id]
    rollout = env.rollout(3)
    assert rollout["observation"].shape == (3, obs_dim) and rollout["action"].shape == (3, act_dim)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_specs_on_gym_env_of_the_id(env_id):
    env = GymEnv(env_id)  # (GymEnv's device= is TorchRL's: the env picks its own Warp device)
    assert env.batch_size == torch.Size([])
    check_env_specs(env, seed=0)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_specs_on_gym_env_of_two_envs(env_id):
    # the subprocesses (TorchRL starts them by spawning) import the package from the id's "module:" part
    env = GymEnv(f"trackgen_env:{env_id}", num_envs=2)
    assert env.batch_size == torch.Size([2])
    check_env_specs(env, seed=0)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_check_env_specs_on_the_native_vector_env_in_same_step(env_id):
    env = GymWrapper(gym.make_vec(env_id, num_envs=2, device="cpu", seed=0, autoreset_mode="SameStep",
                                  max_episode_steps=3))
    assert env.batch_size == torch.Size([2])
    check_env_specs(env, seed=0)
    obs_dim, _ = IDS[env_id]
    rollout = env.rollout(5, break_when_any_done=False)  # through the episode ends (3 steps)
    assert rollout["observation"].shape == (2, 5, obs_dim)
    assert rollout["next", "done"].any()
    env.close()
