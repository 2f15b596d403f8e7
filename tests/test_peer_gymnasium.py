"""Gymnasium's own vector and vector-wrapper tests, run on the native vector envs of both ids.

Ported from Gymnasium's repository (``tests/vector/test_vector_env.py``,
``tests/vector/test_autoreset_mode.py``, ``tests/wrappers/vector/test_record_episode_statistics.py``,
``test_normalize_observation.py``, ``test_normalize_reward.py``, ``test_record_video.py``) with
their assertions. Where Gymnasium compares two vectorisers (``AsyncVectorEnv`` with
``SyncVectorEnv``, a vector wrapper with sub-envs wrapped one by one), here the native env
(``gymnasium.make_vec(id)``: one graph steps every env) is compared with ``SyncVectorEnv`` over the
single env (``gymnasium.make(id)``), in every autoreset mode. The tests on Gymnasium's scripted
test envs (counting observations, reward 1 per step) that cannot run on a course env are left
out; the sizes (envs, steps) are small.

The adaptations, each a deliberate difference that docs/envs.md documents, named where used:

* ``SEEDS``: ``reset(seed=s)`` gives env ``i`` the courses of ``hash(s, i)`` in the native env and
  seed ``s + i`` (the courses of ``hash(s + i, 0)``) in ``SyncVectorEnv``. The native env of a
  comparison is reset with those per-env seeds (``reset(seed=[...])`` takes them as given); and
  ``np_random_seed`` is the vector env's one seed, not Sync's tuple (Gymnasium's
  ``test_random_seeding_basics`` and ``test_random_seeds_set_at_retrieval`` are not ported).
* ``FINAL_OBS``: under SAME_STEP ``info["final_obs"]`` is one ``[E, obs_dim]`` float32 array,
  meaningful where ``info["_final_obs"]``; ``SyncVectorEnv``'s is an object array holding None
  elsewhere. The native one is put in that form before the comparison.
* ``REWARD_DTYPE``: the native rewards are float32 (``SyncVectorEnv`` stores float64); the values
  are the same (the single env's float reward is the float32 value).
* ``MASKED_RESET``: a masked reset takes no seed, needs one full ``reset()`` first, and draws
  each masked env's next course (``advance=True``).
* ``SHARED``: the envs are one object (``SharedEnvCalls``): ``set_attr`` sets one value for all
  envs (per-env values must be equal).

The tests of ``tests/vector/test_sync_vector_env.py`` run on the native env and on a
``ShardedVectorEnv`` (``sharded``).
"""

from __future__ import annotations

import importlib.util
import os
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers.vector import (
    NormalizeObservation,
    NormalizeReward,
    RecordEpisodeStatistics,
    RecordVideo,
)

import trackgen_env  # noqa: F401
from trackgen_env.envs import ShardedVectorEnv
from trackgen_env.core.seeding import env_seeds

IDS = ("TrackGen-Track-v0", "TrackGen-Gates-v0")
MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED)
#: (num_envs, sharded): the native env of one and of 3 envs, and a ShardedVectorEnv of 3 envs in 2 shards
SIZES = ((1, False), (3, False), (3, True))
SIZE_IDS = ("1", "3", "3-sharded")
EPISODE = 4  # max_episode_steps: the episodes end (truncated, or earlier) within the steps run


def native_env(env_id, num_envs, autoreset_mode=AutoresetMode.NEXT_STEP, *, sharded=False, **kwargs):
    """``gymnasium.make_vec(env_id)``, or (``sharded``) a ``ShardedVectorEnv`` of 2 shards (one env's outputs)."""
    kwargs = {"device": "cpu", "seed": 0, "max_episode_steps": EPISODE, "autoreset_mode": autoreset_mode, **kwargs}
    if sharded:
        return ShardedVectorEnv(env_id, num_envs, 2, **kwargs)
    return gym.make_vec(env_id, num_envs=num_envs, **kwargs)


def sync_env(env_id, num_envs, autoreset_mode=AutoresetMode.NEXT_STEP, wrappers=None, **kwargs):
    """``SyncVectorEnv`` over ``gym.make(env_id)``, episodes truncated at ``EPISODE`` steps (Gymnasium's
    ``TimeLimit``, which ``gym.make`` adds for ``max_episode_steps``), as the native env's own limit."""
    return SyncVectorEnv([lambda: _single(env_id, wrappers, **kwargs) for _ in range(num_envs)],
                         autoreset_mode=autoreset_mode)


def _single(env_id, wrappers, **kwargs):
    env = gym.make(env_id, device="cpu", seed=0, max_episode_steps=EPISODE, disable_env_checker=True, **kwargs)
    for wrapper in wrappers or ():
        env = wrapper(env)
    return env


def sync_seeds(seed: int, num_envs: int) -> list[int]:
    """SEEDS: the per-env seeds of ``SyncVectorEnv.reset(seed=seed)`` as the native env takes them."""
    return [int(env_seeds(seed + i, 1)[0]) for i in range(num_envs)]


def as_sync_final_obs(info: dict) -> dict:
    """FINAL_OBS: the native SAME_STEP ``final_obs`` as ``SyncVectorEnv``'s object array."""
    if "final_obs" not in info:
        return info
    objects = np.full(len(info["_final_obs"]), None, dtype=object)
    for i in np.flatnonzero(info["_final_obs"]):
        objects[i] = info["final_obs"][i]
    return {**info, "final_obs": objects}


# -- tests/vector/test_vector_env.py -------------------------------------------------------------
@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("num_envs, sharded", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("autoreset_mode", MODES)
def test_vector_env_equal(env_id, num_envs, sharded, autoreset_mode, num_steps=10):
    """Gymnasium's async-vs-sync equality, native-vs-sync here: at ``num_envs=1`` with no adaptation
    but SEEDS (none: one env's seed is the same), FINAL_OBS and REWARD_DTYPE (the info arrays are
    compared dtype for dtype: the single env's info scalars batch into the native dtypes)."""
    # the name Gymnasium's test gives the other side
    async_env = native_env(env_id, num_envs, autoreset_mode, sharded=sharded)
    sync_env_ = sync_env(env_id, num_envs, autoreset_mode)

    assert async_env.num_envs == sync_env_.num_envs
    assert async_env.observation_space == sync_env_.observation_space
    assert async_env.single_observation_space == sync_env_.single_observation_space
    assert async_env.action_space == sync_env_.action_space
    assert async_env.single_action_space == sync_env_.single_action_space

    async_observations, async_infos = async_env.reset(seed=sync_seeds(0, num_envs))  # SEEDS
    sync_observations, sync_infos = sync_env_.reset(seed=0)
    assert np.all(async_observations == sync_observations)
    assert data_equivalence(async_infos, sync_infos)

    async_env.action_space.seed(0)
    ended = 0
    for _ in range(num_steps):
        actions = async_env.action_space.sample()
        assert actions in sync_env_.action_space

        (async_observations, async_rewards, async_terminations, async_truncations,
         async_infos) = async_env.step(actions)
        (sync_observations, sync_rewards, sync_terminations, sync_truncations,
         sync_infos) = sync_env_.step(actions)

        assert np.all(async_observations == sync_observations)
        assert np.all(async_rewards == sync_rewards)  # REWARD_DTYPE: float32 against float64, equal values
        assert np.all(async_terminations == sync_terminations)
        assert np.all(async_truncations == sync_truncations)
        assert data_equivalence(as_sync_final_obs(async_infos), sync_infos)  # FINAL_OBS

        done = async_terminations | async_truncations
        ended += int(done.sum())
        if autoreset_mode is AutoresetMode.DISABLED and done.any():  # as Gymnasium's DISABLED tests do
            async_observations, async_infos = async_env.reset(options={"reset_mask": done})
            sync_observations, sync_infos = sync_env_.reset(options={"reset_mask": done})
            assert np.all(async_observations == sync_observations)
            assert data_equivalence(async_infos, sync_infos)
    assert ended >= num_envs  # the comparison went through episode ends

    async_env.close()
    sync_env_.close()


@pytest.mark.parametrize("env_id", IDS)
def test_vector_obs_action_spaces(env_id, num_envs=3):
    envs = native_env(env_id, num_envs)
    obs, _ = envs.reset()
    assert obs in envs.observation_space
    obs, _, _, _, _ = envs.step(envs.action_space.sample())
    assert obs in envs.observation_space  # (Gymnasium's test steps; the obs it returns is in the space too)
    envs.close()


@pytest.mark.parametrize("env_id", IDS)
def test_partial_reset(env_id):
    """MASKED_RESET: Gymnasium resets the masked envs with the seeds of the first reset and finds its
    observations again; here the masked envs draw their next courses, which SyncVectorEnv's
    unseeded masked reset draws too: the reset observations are compared with its."""
    envs = native_env(env_id, 3, AutoresetMode.DISABLED)
    reference = sync_env(env_id, 3, AutoresetMode.DISABLED)
    reset_obs, _ = envs.reset(seed=sync_seeds(0, 3))
    assert np.all(reset_obs == reference.reset(seed=0)[0])

    envs.action_space.seed(123)
    for _ in range(3):
        actions = envs.action_space.sample()
        step_obs, *_ = envs.step(actions)
        reference.step(actions)

    mask = np.array([True, True, False])
    reset_mask_obs, _ = envs.reset(options={"reset_mask": mask})
    assert np.all(reset_mask_obs[:2] == reference.reset(options={"reset_mask": mask})[0][:2])
    assert np.all(reset_mask_obs[2] == step_obs[2])

    envs.close()
    reference.close()


@pytest.mark.parametrize("env_id", IDS)
def test_partial_reset_failure(env_id):
    envs = native_env(env_id, 3, AutoresetMode.DISABLED)

    # MASKED_RESET: the first reset resets every env (Gymnasium's test resets with an all-True mask)
    envs.reset()

    # Reset with all trues
    envs.reset(options={"reset_mask": np.array([True, True, True])})

    # Reset with mask of an incorrect shape
    with pytest.raises(ValueError, match=re.escape("`options['reset_mask']` must have shape `(3,)`, got (1,)")):
        envs.reset(options={"reset_mask": np.array([True])})

    with pytest.raises(ValueError, match=re.escape("`options['reset_mask']` must have shape `(3,)`, got (4,)")):
        envs.reset(options={"reset_mask": np.array([True, True, False, False])})

    with pytest.raises(ValueError, match=re.escape("`options['reset_mask']` must have shape `(3,)`, got (1, 3)")):
        envs.reset(options={"reset_mask": np.array([[True, True, True]])})

    with pytest.raises(ValueError, match=re.escape(
            "`options['reset_mask']` must contain a boolean array with at least one True value, "
            "got reset_mask=[False False False]")):
        envs.reset(options={"reset_mask": np.array([False, False, False])})

    with pytest.raises(TypeError, match=re.escape("`options['reset_mask']` must have `dtype=np.bool_`, got int64")):
        envs.reset(options={"reset_mask": np.array([1, 1, 0])})

    with pytest.raises(TypeError, match=re.escape("`options['reset_mask']` must have `dtype=np.bool_`, got float64")):
        envs.reset(options={"reset_mask": np.array([1.0, 1.0, 0.0])})
    envs.close()


@pytest.mark.parametrize("env_id", IDS)
def test_action_count_compatibility(env_id):
    """Test that the number of actions is compatible with the number of environments."""
    num_envs = 4
    envs = native_env(env_id, num_envs, AutoresetMode.DISABLED)

    envs.reset()

    correct_actions = envs.action_space.sample()
    assert len(correct_actions) == num_envs

    obs, rewards, terminations, truncations, _infos = envs.step(correct_actions)
    assert len(obs) == num_envs
    assert len(rewards) == num_envs
    assert len(terminations) == num_envs
    assert len(truncations) == num_envs

    with pytest.raises(ValueError):
        envs.step(correct_actions[: num_envs - 1])

    with pytest.raises(ValueError):
        envs.step(np.concatenate([correct_actions, correct_actions[:1]]))

    with pytest.raises(TypeError):
        envs.step(0)

    envs.close()


# -- tests/vector/test_sync_vector_env.py -------------------------------------------------------
VECTORISERS = pytest.mark.parametrize("sharded", (False, True), ids=("native", "sharded"))


@pytest.mark.parametrize("env_id", IDS)
@VECTORISERS
def test_metadata_vector_env(env_id, sharded):
    """The vector env's metadata does not mutate the single env's (class-level) metadata."""
    envs_1 = native_env(env_id, 2, AutoresetMode.NEXT_STEP, sharded=sharded)
    envs_2 = native_env(env_id, 2, AutoresetMode.SAME_STEP, sharded=sharded)

    assert envs_1.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert envs_2.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    assert "autoreset_mode" not in gym.make(env_id, device="cpu").metadata

    envs_1.close()
    envs_2.close()


@pytest.mark.parametrize("env_id", IDS)
@VECTORISERS
def test_reset_vector_env(env_id, sharded):
    env = native_env(env_id, 3, sharded=sharded)
    observations, _infos = env.reset()
    env.close()

    assert isinstance(env.observation_space, gym.spaces.Box)
    assert isinstance(observations, np.ndarray)
    assert observations.dtype == env.observation_space.dtype
    assert observations.shape == (3,) + env.single_observation_space.shape
    assert observations.shape == env.observation_space.shape


@pytest.mark.parametrize("env_id", IDS)
@VECTORISERS
@pytest.mark.parametrize("use_single_action_space", [True, False])
def test_step_vector_env(env_id, sharded, use_single_action_space):
    env = native_env(env_id, 3, sharded=sharded)
    env.reset()

    assert isinstance(env.single_action_space, gym.spaces.Box)
    assert isinstance(env.action_space, gym.spaces.Box)

    if use_single_action_space:
        actions = [env.single_action_space.sample() for _ in range(3)]
    else:
        actions = env.action_space.sample()
    observations, rewards, terminations, truncations, _ = env.step(actions)

    env.close()

    assert isinstance(env.observation_space, gym.spaces.Box)
    assert isinstance(observations, np.ndarray)
    assert observations.dtype == env.observation_space.dtype
    assert observations.shape == (3,) + env.single_observation_space.shape
    assert observations.shape == env.observation_space.shape

    assert isinstance(rewards, np.ndarray)
    assert isinstance(rewards[0], (float, np.floating))
    assert rewards.ndim == 1
    assert rewards.size == 3

    assert isinstance(terminations, np.ndarray)
    assert terminations.dtype == np.bool_
    assert terminations.ndim == 1
    assert terminations.size == 3

    assert isinstance(truncations, np.ndarray)
    assert truncations.dtype == np.bool_
    assert truncations.ndim == 1
    assert truncations.size == 3


@pytest.mark.parametrize("env_id", IDS)
@VECTORISERS
def test_render_vector(env_id, sharded):
    envs = native_env(env_id, 3, render_mode="rgb_array", render_size=16, sharded=sharded)
    assert envs.render_mode == "rgb_array"

    envs.reset()
    rendered_frames = envs.render()
    assert isinstance(rendered_frames, tuple)
    assert len(rendered_frames) == envs.num_envs
    assert all(isinstance(frame, np.ndarray) for frame in rendered_frames)
    envs.close()

    envs = native_env(env_id, 3, sharded=sharded)
    assert envs.render_mode is None
    envs.close()


@pytest.mark.parametrize("env_id", IDS)
@VECTORISERS
def test_call_vector_env(env_id, sharded):
    """Gymnasium's test calls CartPole's ``render`` (an ``rgb_array_list``) and reads ``gravity``; here
    ``render`` and ``laps`` (a setting every env shares)."""
    env = native_env(env_id, 4, render_mode="rgb_array", render_size=16, laps=2, sharded=sharded)
    _ = env.reset()
    images = env.call("render")
    laps = env.call("laps")

    env.close()

    assert isinstance(images, tuple)
    assert len(images) == 4
    for i in range(4):
        assert isinstance(images[i], np.ndarray)

    assert isinstance(laps, tuple)
    assert len(laps) == 4
    for i in range(4):
        assert isinstance(laps[i], int)
        assert laps[i] == 2


@pytest.mark.parametrize("env_id", IDS)
@VECTORISERS
def test_set_attr_vector_env(env_id, sharded):
    """SHARED (as the SB3 adapter's): the envs share their attributes, so Gymnasium's per-env values
    (``[9.81, 3.72, 8.87, 1.62]``) are one value here (and different ones raise ValueError)."""
    env = native_env(env_id, 4, render_mode="rgb_array", sharded=sharded)
    env.set_attr("render_size", [24, 24, 24, 24])
    render_size = env.get_attr("render_size")
    assert render_size == (24, 24, 24, 24)
    with pytest.raises(ValueError, match="the envs share one attribute"):
        env.set_attr("render_size", [24, 32, 24, 24])
    assert env.get_attr("render_size") == (24, 24, 24, 24)

    env.close()


# -- call, get_attr, set_attr against SyncVectorEnv's answers -------------------------------------
@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("sharded", (False, True), ids=("native", "sharded"))
def test_call_get_attr_set_attr_answer_as_sync_vector_envs(env_id, sharded, num_envs=2):
    """Gymnasium's Sync/Async vector envs have them, and trainers use them (skrl renders with
    ``env.call("render")``): per env, as ``SyncVectorEnv`` over the single env answers."""
    envs = native_env(env_id, num_envs, render_mode="rgb_array", render_size=32, sharded=sharded)
    reference = sync_env(env_id, num_envs, render_mode="rgb_array", render_size=32)
    envs.reset(seed=sync_seeds(0, num_envs))  # SEEDS
    reference.reset(seed=0)

    frames, expected = envs.call("render"), reference.call("render")
    assert isinstance(frames, tuple) and len(frames) == num_envs
    assert data_equivalence(frames, expected)
    for name in ("render_mode", "render_size", "action_space", "observation_space", "laps", "device"):
        assert envs.get_attr(name) == reference.get_attr(name), name
    assert envs.call("render_frames", 1)[0].shape == (1, 32, 32, 3)  # a method of the vector env, called once

    envs.set_attr("render_size", 16)  # one value for every env
    reference.set_attr("render_size", [16] * num_envs)
    assert envs.get_attr("render_size") == reference.get_attr("render_size") == (16,) * num_envs
    assert envs.call("render")[0].shape == (16, 16, 3)
    envs.set_attr("render_mode", [None] * num_envs)
    assert envs.call("render") == (None,) * num_envs
    match = "Values must be a list or tuple with length equal to the number of environments"
    with pytest.raises(ValueError, match=match):
        envs.set_attr("render_size", [16] * (num_envs + 1))
    with pytest.raises(ValueError, match="the envs share one attribute"):
        envs.set_attr("render_size", [16, 32])
    with pytest.raises(AttributeError, match="read-only|fixed at their construction"):  # refused, not ignored
        envs.set_attr("max_episode_steps", 9)
    with pytest.raises(AttributeError):
        envs.get_attr("no_such_attribute")
    envs.close()
    reference.close()


# -- tests/vector/test_autoreset_mode.py ---------------------------------------------------------
@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("autoreset_mode", MODES)
def test_autoreset_metadata(env_id, autoreset_mode):
    envs = native_env(env_id, 2, autoreset_mode)
    assert envs.metadata["autoreset_mode"] == autoreset_mode
    envs.close()

    envs = native_env(env_id, 2, autoreset_mode.value)
    assert envs.metadata["autoreset_mode"] == autoreset_mode
    envs.close()


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("autoreset_mode", MODES)
def test_make_vec_autoreset(env_id, autoreset_mode):
    """Gymnasium's test writes the env's own mode back into the metadata: accepted (nothing changes);
    another mode is refused (the step graph was recorded for the construction's), where it was
    accepted and ignored (RecordEpisodeStatistics reads the key)."""
    # a vector entry point takes its arguments as kwargs, not vector_kwargs (Gymnasium's make_vec refuses those)
    envs = gym.make_vec(env_id, num_envs=1, device="cpu", autoreset_mode=autoreset_mode)
    envs.metadata["autoreset_mode"] = autoreset_mode
    envs.metadata["autoreset_mode"] = autoreset_mode.value
    assert envs.metadata["autoreset_mode"] is autoreset_mode
    for other in set(MODES) - {autoreset_mode}:
        for write in (lambda other=other: envs.metadata.__setitem__("autoreset_mode", other),
                      lambda other=other: envs.metadata.update(autoreset_mode=other.value),
                      lambda: envs.metadata.pop("autoreset_mode"), lambda: envs.metadata.__delitem__("autoreset_mode"),
                      envs.metadata.clear):
            with pytest.raises(TypeError, match=r"metadata\['autoreset_mode'\] is fixed at construction"):
                write()
    assert envs.metadata["autoreset_mode"] is autoreset_mode and envs.unwrapped.autoreset_mode is autoreset_mode
    envs.metadata["render_fps"] = 7  # the other keys are plain entries (video wrappers read render_fps)
    assert RecordEpisodeStatistics(envs).metadata["autoreset_mode"] is autoreset_mode
    envs.close()
    sharded = native_env(env_id, 2, autoreset_mode, sharded=True)
    sharded.metadata["autoreset_mode"] = autoreset_mode
    with pytest.raises(TypeError, match=r"metadata\['autoreset_mode'\] is fixed at construction"):
        sharded.metadata["autoreset_mode"] = next(iter(set(MODES) - {autoreset_mode}))
    sharded.close()


@pytest.mark.parametrize("sharded", (False, True), ids=("native", "sharded"))
def test_skrl_renders_the_envs_through_call(sharded):
    """skrl's Gymnasium wrapper renders a vector env with ``env.call("render")``."""
    pytest.importorskip("skrl")
    torch = pytest.importorskip("torch")
    from skrl.envs.wrappers.torch import wrap_env

    envs = native_env("TrackGen-Track-v0", 2, render_mode="rgb_array", render_size=16, sharded=sharded)
    wrapped = wrap_env(envs, wrapper="gymnasium")
    wrapped.reset()
    wrapped.step(torch.zeros(2, 2))
    frames = wrapped.render()
    assert len(frames) == 2 and all(f.shape == (16, 16, 3) and f.dtype == np.uint8 for f in frames)
    assert np.array_equal(np.stack(frames), envs.render_frames())
    wrapped.close()


# -- tests/wrappers/vector/test_record_episode_statistics.py ---------------------------------------
@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("num_envs", (1, 3))
def test_record_episode_statistics(env_id, num_envs, num_steps=10):
    wrapper_vector_env = RecordEpisodeStatistics(native_env(env_id, num_envs))
    vector_wrapper_env = sync_env(env_id, num_envs, wrappers=(gym.wrappers.RecordEpisodeStatistics,))

    assert wrapper_vector_env.action_space == vector_wrapper_env.action_space
    assert wrapper_vector_env.observation_space == vector_wrapper_env.observation_space
    assert wrapper_vector_env.single_action_space == vector_wrapper_env.single_action_space
    assert wrapper_vector_env.single_observation_space == vector_wrapper_env.single_observation_space

    assert wrapper_vector_env.num_envs == vector_wrapper_env.num_envs

    wrapper_vector_obs, wrapper_vector_info = wrapper_vector_env.reset(seed=sync_seeds(123, num_envs))  # SEEDS
    vector_wrapper_obs, vector_wrapper_info = vector_wrapper_env.reset(seed=123)

    assert data_equivalence(wrapper_vector_obs, vector_wrapper_obs)
    assert data_equivalence(wrapper_vector_info, vector_wrapper_info)

    wrapper_vector_env.action_space.seed(0)
    episodes = 0
    for _ in range(1, num_steps + 1):
        action = wrapper_vector_env.action_space.sample()
        (wrapper_vector_obs, wrapper_vector_reward, wrapper_vector_terminated, wrapper_vector_truncated,
         wrapper_vector_info) = wrapper_vector_env.step(action)
        (vector_wrapper_obs, vector_wrapper_reward, vector_wrapper_terminated, vector_wrapper_truncated,
         vector_wrapper_info) = vector_wrapper_env.step(action)

        assert data_equivalence(wrapper_vector_obs, vector_wrapper_obs)
        assert data_equivalence(wrapper_vector_reward.astype(np.float64), vector_wrapper_reward)  # REWARD_DTYPE
        assert data_equivalence(wrapper_vector_terminated, vector_wrapper_terminated)
        assert data_equivalence(wrapper_vector_truncated, vector_wrapper_truncated)

        if "episode" in wrapper_vector_info:
            episodes += 1
            wrapper_vector_time = wrapper_vector_info["episode"].pop("t")
            vector_wrapper_time = vector_wrapper_info["episode"].pop("t")
            assert wrapper_vector_time.shape == vector_wrapper_time.shape
            assert wrapper_vector_time.dtype == vector_wrapper_time.dtype

            vector_wrapper_info["episode"].pop("_l")
            vector_wrapper_info["episode"].pop("_r")
            vector_wrapper_info["episode"].pop("_t")

        assert data_equivalence(wrapper_vector_info, vector_wrapper_info)
    assert episodes > 0

    wrapper_vector_env.close()
    vector_wrapper_env.close()


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("autoreset_mode", MODES)
def test_episode_statistics_with_autoreset_mode(env_id, autoreset_mode, num_envs=2, num_steps=12):
    """Gymnasium's test env gives reward 1 per step and fixed-length episodes; here the recorded
    statistics are checked against each episode's own return and length, counted beside."""
    envs = RecordEpisodeStatistics(native_env(env_id, num_envs, autoreset_mode))

    envs.reset(seed=123)
    envs.action_space.seed(0)
    returns, lengths = np.zeros(num_envs), np.zeros(num_envs, int)
    episode_returns, episode_lengths = [], []
    autoreset = np.zeros(num_envs, bool)
    for _ in range(num_steps):
        actions = envs.action_space.sample()
        _, rewards, terminations, truncations, infos = envs.step(actions)
        if autoreset_mode is AutoresetMode.NEXT_STEP:  # the step after an end is the reset: not counted
            returns, lengths = np.where(autoreset, 0, returns), np.where(autoreset, 0, lengths)
        counted = ~autoreset if autoreset_mode is AutoresetMode.NEXT_STEP else np.ones(num_envs, bool)
        returns, lengths = returns + np.where(counted, rewards, 0), lengths + counted

        dones = np.logical_or(terminations, truncations)
        if np.any(dones):
            assert "episode" in infos
            assert np.allclose(infos["episode"]["r"][dones], returns[dones], rtol=1e-5)
            assert np.all(infos["episode"]["l"][dones] == lengths[dones])
            episode_returns += list(returns[dones])
            episode_lengths += list(lengths[dones])
            returns, lengths = np.where(dones, 0, returns), np.where(dones, 0, lengths)
            if autoreset_mode == AutoresetMode.DISABLED:
                envs.reset(options={"reset_mask": np.copy(dones)})
        autoreset = dones

    assert envs.episode_count > num_envs
    assert np.allclose(np.array(envs.return_queue), episode_returns, rtol=1e-5)
    assert np.all(np.array(envs.length_queue) == episode_lengths)
    envs.close()


# -- tests/wrappers/vector/test_normalize_observation.py -------------------------------------------
@pytest.mark.parametrize("env_id", IDS)
def test_update_running_mean(env_id):
    env = NormalizeObservation(native_env(env_id, 2))

    # Default value is True
    assert env.update_running_mean

    env.reset()
    for _ in range(10):
        env.step(env.action_space.sample())

    # Disable updating the running mean
    env.update_running_mean = False
    copied_rms_mean = np.copy(env.obs_rms.mean)
    copied_rms_var = np.copy(env.obs_rms.var)

    for _ in range(5):
        env.step(env.action_space.sample())

    assert np.all(copied_rms_mean == env.obs_rms.mean)
    assert np.all(copied_rms_var == env.obs_rms.var)

    # Re-enable updating the running mean
    env.update_running_mean = True

    for _ in range(5):
        env.step(env.action_space.sample())

    assert np.any(copied_rms_mean != env.obs_rms.mean)
    assert np.any(copied_rms_var != env.obs_rms.var)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_observation_space_and_dtype(env_id):
    vec_env = NormalizeObservation(native_env(env_id, 2))

    assert vec_env.single_observation_space.dtype == np.float32
    assert np.all(vec_env.single_observation_space.low == -np.inf)
    assert np.all(vec_env.single_observation_space.high == np.inf)

    obs, _ = vec_env.reset(seed=123)
    assert obs.dtype == np.float32

    obs, *_ = vec_env.step(vec_env.action_space.sample())
    assert obs.dtype == np.float32
    vec_env.close()


# -- tests/wrappers/vector/test_normalize_reward.py ------------------------------------------------
@pytest.mark.parametrize("env_id", IDS)
def test_equivalence_with_wrapper(env_id, n_steps=12):
    """The vector NormalizeReward on the native env of one env against NormalizeReward on the single
    env in SyncVectorEnv (SEEDS: one env's seed is the same; both draw the same actions)."""
    per_env = sync_env(env_id, 1, wrappers=(gym.wrappers.NormalizeReward,))
    per_env.reset(seed=42)
    per_env.action_space.seed(0)
    for _ in range(n_steps):
        per_env.step(per_env.action_space.sample())

    vec_env = NormalizeReward(native_env(env_id, 1))
    vec_env.reset(seed=42)
    vec_env.action_space.seed(0)
    for _ in range(n_steps):
        vec_env.step(vec_env.action_space.sample())

    assert vec_env.return_rms.count == per_env.envs[0].return_rms.count
    assert np.allclose(vec_env.return_rms.mean, per_env.envs[0].return_rms.mean, rtol=1e-4)
    assert np.allclose(vec_env.return_rms.var, per_env.envs[0].return_rms.var, rtol=1e-4)
    per_env.close()
    vec_env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_same_step_autoreset_updates_return_rms(env_id, n_envs=2, n_steps=10):
    """SAME_STEP first-after-done rewards must update return_rms and start a new return."""
    env = NormalizeReward(native_env(env_id, n_envs, AutoresetMode.SAME_STEP))

    env.reset(seed=123)
    ended = False
    for _ in range(n_steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        dones = np.logical_or(terminated, truncated)
        if np.any(dones):
            ended = True
            assert np.all(env.accumulated_reward[dones] == 0)

    # Every step is a real environment step under SAME_STEP.
    assert np.isclose(env.return_rms.count, n_steps * n_envs)
    assert ended
    env.close()


# -- tests/wrappers/vector/test_record_video.py ----------------------------------------------------
@pytest.mark.skipif(importlib.util.find_spec("moviepy") is None, reason="RecordVideo needs moviepy")
@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("autoreset_mode", MODES)
def test_video_folder_and_filenames(env_id, autoreset_mode, tmp_path, name_prefix="video-prefix", n_envs=2):
    video_folder = str(tmp_path / "custom_video_folder")
    envs = native_env(env_id, n_envs, autoreset_mode, render_mode="rgb_array", render_size=32)
    envs = RecordVideo(envs, video_folder=video_folder, name_prefix=name_prefix,
                       episode_trigger=lambda x: x in [1, 4], step_trigger=lambda x: x in [0, 12],
                       video_aspect_ratio=(1, 1))

    envs.reset(seed=123)
    envs.action_space.seed(123)
    for _ in range(30):  # episodes of at most EPISODE steps: env 0's fifth has begun
        actions = envs.action_space.sample()
        _, _, terminations, truncations, _ = envs.step(actions)

        autoresets = np.logical_or(terminations, truncations)
        if autoreset_mode == AutoresetMode.DISABLED and np.any(autoresets):
            envs.reset(options={"reset_mask": autoresets})

    envs.close()

    assert os.path.isdir(video_folder)
    mp4_files = {file for file in os.listdir(video_folder) if file.endswith(".mp4")}
    assert mp4_files == {
        "video-prefix-step-0.mp4",  # step triggers
        "video-prefix-step-12.mp4",
        "video-prefix-episode-1.mp4",  # episode triggers
        "video-prefix-episode-4.mp4",
    }


# -- NumpyToTorch (tests/wrappers/vector/test_array_conversion.py converts a generic env) ---------
@pytest.mark.skipif(importlib.util.find_spec("array_api_compat") is None, reason="NumpyToTorch needs array-api-compat")
@pytest.mark.parametrize("env_id", IDS)
def test_numpy_to_torch_gives_the_numpy_envs_outputs_as_tensors(env_id, num_envs=2):
    torch = pytest.importorskip("torch")
    from gymnasium.wrappers.vector import NumpyToTorch

    envs = NumpyToTorch(native_env(env_id, num_envs, AutoresetMode.SAME_STEP))
    twin = native_env(env_id, num_envs, AutoresetMode.SAME_STEP)
    obs, info = envs.reset(seed=1)
    expected, expected_info = twin.reset(seed=1)
    assert isinstance(obs, torch.Tensor) and np.array_equal(obs.numpy(), expected)
    assert all(np.array_equal(info[k].numpy(), v) for k, v in expected_info.items())
    twin.action_space.seed(0)
    for _ in range(6):
        action = twin.action_space.sample()
        out = envs.step(torch.from_numpy(action))
        ref = twin.step(action)
        for got, want in zip(out[:4], ref[:4]):
            assert isinstance(got, torch.Tensor) and np.array_equal(got.numpy(), want)
        assert set(out[4]) == set(ref[4])
        assert all(np.array_equal(out[4][k].numpy(), v) for k, v in ref[4].items() if not isinstance(v, dict))
    envs.close()
    twin.close()
