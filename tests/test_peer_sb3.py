"""Stable-Baselines3's own checks on the envs: ``check_env`` on the single env (``gymnasium.make``) with
its render check, and SB3's VecEnv tests (``tests/test_vec_envs.py`` of its repository) through the
SB3 adapter (``trackgen_env.integrations.sb3``), compared step for step with SB3's ``DummyVecEnv``
over the single env, under SB3's VecEnv wrappers.

Adaptations, each a documented difference, named where used:

* ``SEEDS``: env ``i`` of the native env takes the courses of ``hash(s, i)`` for a seed ``s``;
  ``DummyVecEnv`` seeds env ``i`` with ``s + i``. The comparisons build the native env with the
  per-env seeds that make its env ``i`` the single env of seed ``s + i``.
* ``SHARED``: the adapter's envs are one vector env, so ``set_attr`` sets an attribute for every env
  only, and ``set_options`` takes one options dict for all envs (``SB3VecEnv``'s docstring).
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

import trackgen_env  # noqa: F401
from trackgen_env.integrations.sb3 import make_sb3_vec_env
from trackgen_env.core.seeding import env_seeds

IDS = ("TrackGen-Track-v0", "TrackGen-Gates-v0")
N_ENVS = 3
EPISODE = 4  # max_episode_steps: every env ends within the steps run
VEC_ENV_WRAPPERS = [None, VecNormalize, VecFrameStack]


def _wrap(vec_env, vec_env_wrapper):
    if vec_env_wrapper is None:
        return vec_env
    if vec_env_wrapper == VecFrameStack:
        return vec_env_wrapper(vec_env, n_stack=2)
    return vec_env_wrapper(vec_env)


def adapter(env_id, seed=0, **kwargs):
    """The adapter of ``N_ENVS`` envs whose env ``i`` is the single env of seed ``seed + i`` (SEEDS)."""
    seeds = [int(env_seeds(seed + i, 1)[0]) for i in range(N_ENVS)]
    return make_sb3_vec_env(env_id, N_ENVS, device="cpu", seed=seeds, max_episode_steps=EPISODE, **kwargs)


def dummy(env_id, seed=0, **kwargs):
    return DummyVecEnv([lambda i=i: gym.make(env_id, device="cpu", seed=seed + i, max_episode_steps=EPISODE, **kwargs)
                        for i in range(N_ENVS)])


# -- stable_baselines3.common.env_checker.check_env -----------------------------------------------
@pytest.mark.parametrize("env_id", IDS)
def test_sb3_check_env_with_the_render_check(env_id):
    """The render check renders, closes the env, and the checker then resets and steps it (as
    CartPole and Pendulum allow): ``reset()`` reopens a closed single env."""
    env = gym.make(env_id, device="cpu", seed=0, render_mode="rgb_array", render_size=32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the unbounded observation Box (as MuJoCo's envs)
        check_env(env, skip_render_check=False)
    assert env.render().shape == (32, 32, 3)  # the env the checker reopened renders
    env.close()


# -- tests/test_vec_envs.py ----------------------------------------------------------------------
@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("vec_env_wrapper", VEC_ENV_WRAPPERS)
def test_the_adapter_steps_as_dummy_vec_env(env_id, vec_env_wrapper, num_steps=10):
    """SB3's ``test_vecenv_terminal_obs`` asks that ``terminal_observation`` arrive on the done
    step only; here every output of the adapter equals ``DummyVecEnv``'s over the single env, step
    for step (the terminal observations and ``TimeLimit.truncated`` among them), under each wrapper."""
    vec_env = _wrap(adapter(env_id), vec_env_wrapper)
    reference = _wrap(dummy(env_id), vec_env_wrapper)
    assert vec_env.observation_space == reference.observation_space
    assert vec_env.action_space == reference.action_space
    np.testing.assert_array_equal(vec_env.reset(), reference.reset())
    rng = np.random.default_rng(0)
    dones = 0
    for _ in range(num_steps):
        actions = rng.uniform(-1, 1, (N_ENVS, *vec_env.action_space.shape)).astype(np.float32)
        obs_b, rew_b, done_b, info_b = vec_env.step(actions)
        ref_obs, ref_rew, ref_done, ref_info = reference.step(actions)
        np.testing.assert_array_equal(obs_b, ref_obs)
        np.testing.assert_array_equal(rew_b, ref_rew)
        assert rew_b.dtype == ref_rew.dtype and obs_b.dtype == ref_obs.dtype
        np.testing.assert_array_equal(done_b, ref_done)
        assert len(obs_b) == len(done_b) == len(info_b) == N_ENVS
        for done, info, ref in zip(done_b, info_b, ref_info, strict=True):
            if not done:
                assert "terminal_observation" not in info
            assert set(info) == set(ref)
            for key, value in ref.items():
                assert np.array_equal(info[key], value), key
        dones += int(done_b.sum())
    assert dones >= N_ENVS
    vec_env.close()
    reference.close()


@pytest.mark.parametrize("env_id", IDS)
def test_vec_deterministic(env_id):
    vec_env = adapter(env_id)
    vec_env.seed(3)
    obs = vec_env.reset()
    vec_env.seed(3)
    new_obs = vec_env.reset()
    assert np.allclose(new_obs, obs)
    # Test with VecNormalize (VecEnvWrapper should call self.venv.seed())
    vec_normalize = VecNormalize(vec_env)
    vec_normalize.seed(3)
    obs = vec_env.reset()
    vec_normalize.seed(3)
    new_obs = vec_env.reset()
    assert np.allclose(new_obs, obs)
    vec_normalize.close()


@pytest.mark.parametrize("env_id", IDS)
def test_vec_seeding(env_id):
    n_envs = 3
    vec_env = adapter(env_id)
    # (drawn from NumPy's global RNG and the action space's: seeded here so that the run is the same each time)
    np.random.seed(0)
    vec_env.action_space.seed(0)
    # Seed with no argument
    vec_env.seed()
    obs = vec_env.reset()
    for _ in range(5):  # (one step in SB3's test: the car starts at rest and earns 0 on its first step)
        _, rewards, _, _ = vec_env.step(np.array([vec_env.action_space.sample() for _ in range(n_envs)]))
    # Seed should be different per env
    assert not np.allclose(obs[0], obs[1])
    assert not np.allclose(rewards[0], rewards[1])
    assert not np.allclose(obs[1], obs[2])
    assert not np.allclose(rewards[1], rewards[2])
    vec_env.close()


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("vec_env_wrapper", VEC_ENV_WRAPPERS)
def test_vecenv_custom_calls(env_id, vec_env_wrapper):
    """Test access to methods/attributes of vectorized environments (SHARED where marked)."""
    vec_env = _wrap(adapter(env_id, render_mode="rgb_array", render_size=16), vec_env_wrapper)

    # Test seed method
    vec_env.seed(0)
    vec_env.reset()

    # Test render method call
    array_explicit_mode = vec_env.render(mode="rgb_array")
    # test render without argument (new gym API style)
    array_implicit_mode = vec_env.render()
    assert np.array_equal(array_implicit_mode, array_explicit_mode)

    # test warning if you try different render mode
    with pytest.warns(UserWarning):
        vec_env.render(mode="something_else")

    # Set a new attribute, on the last wrapper and on the env
    assert not vec_env.has_attr("dummy")
    vec_env.set_attr("dummy", 12)
    assert vec_env.get_attr("dummy") == [12] * N_ENVS

    env_method_results = vec_env.env_method("render_frames", 1, indices=None)
    assert len(env_method_results) == N_ENVS
    for env_idx in range(N_ENVS):
        assert env_method_results[env_idx].shape == (1, 16, 16, 3)

    # Call env_method on a subset of the VecEnv
    env_method_subset = vec_env.env_method("render_frames", 1, indices=[0, 2])
    assert len(env_method_subset) == 2

    # Test to change value for all the environments
    setattr_result = vec_env.set_attr("dummy1", 42, indices=None)
    getattr_result = vec_env.get_attr("dummy1")
    assert setattr_result is None
    assert getattr_result == [42 for _ in range(N_ENVS)]
    with pytest.raises(ValueError, match="only be set for all envs"):  # SHARED
        vec_env.set_attr("dummy1", 0, indices=0)

    # Checks that options are correctly passed (SHARED: one dict for all envs; the env takes
    # reset_mask only, which needs autoreset_mode=DISABLED: any other is refused at once)
    with pytest.raises(ValueError, match="takes no options but reset_mask"):
        vec_env.set_options({"hello": 1})
    with pytest.raises(ValueError, match="one options dict for all envs"):
        vec_env.set_options([{"hello": 1}, {"other_option": 2}, {"hello": 1}])

    vec_env.close()
