"""``gymnasium.make`` of the registered ids: one env as a ``gymnasium.Env`` (trackgen_env.envs.single)."""

import warnings

import gymnasium
import numpy as np
import pytest
import warp as wp
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import trackgen_env  # noqa: F401
from trackgen_env.envs import GatesEnv, TrackEnv, TrackVectorEnv

IDS = {"TrackGen-Track-v0": (TrackEnv, 38, 2), "TrackGen-Gates-v0": (GatesEnv, 44, 4)}
# the one warning class left: the observation Box is unbounded (-inf, inf), as the vector env's (and
# Gymnasium's MuJoCo envs'): its entries (lookahead points, velocities) have no natural bound to declare
_UNBOUNDED = "A Box observation space m"


def _checker_warnings(env) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("env_id", IDS)
def test_make_gives_a_gymnasium_env_that_passes_check_env(env_id):
    env = gymnasium.make(env_id, device="cpu", seed=0, render_mode="rgb_array")
    cls, obs_dim, act_dim = IDS[env_id]
    assert isinstance(env.unwrapped, cls) and env.spec.id == env_id and env.render_mode == "rgb_array"
    assert env.observation_space == gymnasium.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
    assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, (act_dim,), np.float32)
    assert "autoreset_mode" not in env.metadata and env.metadata["render_modes"] == ["rgb_array", "human"]
    others = [m for m in _checker_warnings(env.unwrapped) if _UNBOUNDED not in m]
    assert others == []
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_reset_and_step_return_unbatched_outputs(env_id):
    env = gymnasium.make(env_id, device="cpu", seed=1)
    vec = env.unwrapped.vector_env
    obs, info = env.reset(seed=1)
    assert obs.shape == env.observation_space.shape and obs.dtype == np.float32
    assert info and all(not k.startswith("_") and np.isscalar(v) for k, v in info.items())
    obs, reward, terminated, truncated, info = env.step(np.zeros(env.action_space.shape, np.float32))
    assert obs.shape == env.observation_space.shape and obs.dtype == np.float32
    assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
    assert set(info) == {name for name, _ in vec.info_fields}
    assert vec.num_envs == 1 and vec.autoreset_mode is AutoresetMode.DISABLED and vec.output == "numpy"
    env.close()


def test_the_single_env_drives_the_same_course_as_env_0_of_the_vector_env():
    env = TrackEnv("cpu", seed=5)
    twin = TrackVectorEnv(1, "cpu", seed=5, autoreset_mode="Disabled")
    np.testing.assert_array_equal(env.reset(seed=5)[0], twin.reset(seed=5)[0][0])
    a = np.array([0.2, 0.6], np.float32)
    for _ in range(5):
        np.testing.assert_array_equal(env.step(a)[0], twin.step(a[None])[0][0])


def test_after_the_episode_ends_step_warns_once_and_does_not_move_until_reset():
    env = TrackEnv("cpu", seed=2, max_episode_steps=3)
    env.reset(seed=2)
    zero = np.zeros(2, np.float32)
    for _ in range(3):
        last = env.step(zero)
    assert last[3] is True  # truncated at the time limit
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        again = env.step(np.ones(2, np.float32))
        env.step(np.ones(2, np.float32))
    assert len([w for w in caught if "call reset()" in str(w.message)]) == 1
    np.testing.assert_array_equal(again[0], last[0])
    assert again[1:4] == (0.0, False, True) and again[4] == last[4]
    obs, _ = env.reset()  # a new episode on a new track; step works again
    assert env.step(zero)[3] is False


@pytest.mark.parametrize("ended", [False, True])
def test_step_checks_the_action_and_the_closed_env_in_the_vector_envs_order_after_the_end_too(ended):
    env = TrackEnv("cpu", seed=2, max_episode_steps=2)
    env.reset(seed=2)
    zero = np.zeros(2, np.float32)
    if ended:
        env.step(zero)
        assert env.step(zero)[3] is True
    # the vector env's messages: dtype before shape, then NaN
    for bad, error, match in [("abc", TypeError, "got dtype <U3"),
                              (np.zeros(2, np.int64), TypeError, "got dtype int64"),
                              (np.zeros(3, np.float32), ValueError, r"shape \(2,\)"),
                              (np.array([np.nan, 0.0], np.float32), ValueError, "NaN")]:
        with pytest.raises(error, match=match):
            env.step(bad)
    env.close()
    with pytest.raises(RuntimeError, match="the env is closed"):
        env.step(zero)
    with pytest.raises(RuntimeError, match="the env is closed"):
        env.step("abc")  # closed comes first, as on a live step


def test_render_returns_one_frame():
    env = gymnasium.make("TrackGen-Track-v0", device="cpu", seed=0, render_mode="rgb_array", render_size=32)
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (32, 32, 3) and frame.dtype == np.uint8


def test_close_closes_the_vector_env_and_may_be_called_twice():
    env = TrackEnv("cpu", seed=0)
    env.close()
    assert env.vector_env.closed
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_reset_after_close_reopens_the_env_as_constructed(env_id):
    """A checker (SB3's render check) closes the env and then resets it, as CartPole allows: the
    reset builds the one-env vector env again (it refused: the env is closed)."""
    env = gymnasium.make(env_id, device="cpu", seed=4, render_mode="rgb_array", render_size=32)
    single = env.unwrapped
    zero = np.zeros(env.action_space.shape, np.float32)
    first, first_info = env.reset()
    single.render_size = 48
    for _ in range(3):
        env.step(zero)
    closed = single.vector_env
    env.close()
    assert closed.closed
    for use in (lambda: env.step(zero), env.render):
        with pytest.raises(RuntimeError, match=r"the env is closed .*call reset\(\) to reopen it"):
            use()
    obs, info = env.reset()
    assert single.vector_env is not closed and not single.vector_env.closed
    np.testing.assert_array_equal(obs, first)  # the construction's courses again, as a new env's first reset
    assert info == first_info
    assert env.render().shape == (48, 48, 3)  # the render settings as last set
    assert env.step(zero)[0].shape == env.observation_space.shape  # it steps again
    env.close()
    env.reset(seed=9)  # a seeded reset after close: a fresh env's
    twin = gymnasium.make(env_id, device="cpu", seed=4)
    twin.reset(seed=9)
    np.testing.assert_array_equal(env.step(zero)[0], twin.step(zero)[0])
    env.close()
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_the_info_scalars_batch_into_the_native_envs_dtypes(env_id):
    """SyncVectorEnv batches the single env's info into arrays of the native env's dtypes (Python ints
    gave int64 arrays against the native int32: Gymnasium's data_equivalence failed)."""
    env = gymnasium.make(env_id, device="cpu", seed=0)
    _, info = env.reset(seed=0)
    dtypes = {name: np.dtype(wp.dtype_to_numpy(dtype)) for name, dtype in env.unwrapped.vector_env.info_fields}
    for name, value in info.items():
        assert np.isscalar(value) and np.asarray(value).dtype == dtypes[name], name
    sync = SyncVectorEnv([lambda: gymnasium.make(env_id, device="cpu", seed=0)])
    native = gymnasium.make_vec(env_id, 1, device="cpu", seed=0)
    for sync_info, native_info in ((sync.reset(seed=0)[1], native.reset(seed=0)[1]),
                                   (sync.step(np.zeros((1, *env.action_space.shape), np.float32))[4],
                                    native.step(np.zeros((1, *env.action_space.shape), np.float32))[4])):
        assert {k: v.dtype for k, v in sync_info.items()} == {k: v.dtype for k, v in native_info.items()}


def test_make_time_limit_and_fixed_arguments():
    env = gymnasium.make("TrackGen-Track-v0", device="cpu", seed=0, max_episode_steps=2)  # Gymnasium's TimeLimit
    env.reset(seed=0)
    assert env.step(np.zeros(2, np.float32))[3] is False and env.step(np.zeros(2, np.float32))[3] is True
    for bad in ({"num_envs": 4}, {"autoreset_mode": "SameStep"}, {"output": "torch"}):
        with pytest.raises(TypeError, match="make_vec"):
            TrackEnv("cpu", **bad)
    single = TrackEnv("cpu", seed=0)
    with pytest.raises(RuntimeError, match="call reset"):  # before the action, as the vector env's step
        single.step(np.zeros((1, 2), np.float32))
    single.reset()
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        single.step(np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match="seed must be"):
        TrackEnv("cpu", seed=0).reset(seed=-1)
    with pytest.raises(ValueError, match="no options"):
        TrackEnv("cpu", seed=0).reset(options={"reset_mask": np.ones(1, bool)})


@pytest.mark.parametrize("env_id", IDS)
def test_make_vec_sync_runs_the_single_envs_with_gymnasiums_autoreset(env_id):
    envs = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="sync", device="cpu", max_episode_steps=3)
    assert isinstance(envs, SyncVectorEnv)
    _, obs_dim, act_dim = IDS[env_id]
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (2, obs_dim)
    flags = []
    for _ in range(5):
        obs, reward, terminated, truncated, info = envs.step(np.zeros((2, act_dim), np.float32))
        flags.append(bool((terminated | truncated).any()))
        assert obs.shape == (2, obs_dim) and reward.shape == (2,)
    # the episodes end by step 3 (Gymnasium's TimeLimit, or earlier by a crash); SyncVectorEnv resets them
    assert any(flags)
    envs.close()


def test_the_envs_page_single_env_example_runs():
    import pathlib
    import re

    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "envs.md").read_text()
    block = re.findall(r"```python\n(.*?)```", page, re.S)[5]
    assert "gym.make(" in block
    ns = {}  # the block imports what it uses
    exec(block.replace("range(100)", "range(30)"), ns)
    assert ns["frame"].shape == (256, 256, 3)


def test_a_refused_reset_leaves_the_episode_as_it_was_and_a_numpy_seed_is_an_int():
    env = TrackEnv("cpu", seed=0)
    env.reset(seed=3)
    for _ in range(5):
        obs, *_ = env.step(np.array([0.0, 1.0], np.float32))
    for bad, error, message in (([5], TypeError, "got list \\[5\\]"), (True, TypeError, "got bool True"),
                                (2.0, TypeError, "got float 2.0"), (-1, ValueError, "got -1")):
        with pytest.raises(error, match=r"seed must be None, an int in \[0, 2\*\*64\), " + message):
            env.reset(seed=bad)
    with pytest.raises(TypeError, match="options must be None or a dict, got str 'ab'"):
        env.reset(options="ab")
    after, *_ = env.step(np.array([0.0, 1.0], np.float32))  # the episode went on: the car kept its speed
    twin = TrackEnv("cpu", seed=0)
    twin.reset(seed=3)
    for _ in range(6):
        expected, *_ = twin.step(np.array([0.0, 1.0], np.float32))
    np.testing.assert_array_equal(after, expected)
    np.testing.assert_array_equal(env.reset(seed=np.int64(7))[0], twin.reset(seed=7)[0])
