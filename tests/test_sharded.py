"""ShardedVectorEnv: shards stepped in threads give exactly one env's outputs for the same seeds."""

import gymnasium
import numpy as np
import pytest

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env.envs.sharded import ShardedVectorEnv


def _same(a, b):
    assert np.array_equal(a[0], b[0])
    for x, y in zip(a[1:4], b[1:4]):
        assert np.array_equal(x, y)
    info_a, info_b = a[-1], b[-1]
    assert info_a.keys() == info_b.keys()
    for key in info_a:
        assert np.array_equal(info_a[key], info_b[key]), key


@pytest.mark.parametrize("env_id", ["TrackGen-Track-v0", "TrackGen-Gates-v0"])
def test_shards_equal_one_env_of_the_same_seeds_step_for_step(env_id):
    E = 7
    one = gymnasium.make_vec(env_id, num_envs=E, seed=3, device="cpu")
    sharded = ShardedVectorEnv(env_id, E, 3, seed=3, device="cpu")
    assert [b - a for a, b in sharded.bounds] == [2, 2, 3]
    assert sharded.observation_space == one.observation_space and sharded.action_space == one.action_space
    o1, i1 = one.reset()
    o2, i2 = sharded.reset()
    assert np.array_equal(o1, o2) and i1.keys() == i2.keys()
    rng = np.random.default_rng(0)
    ended = 0
    for step in range(80):
        if step == 40:  # reseeding maps the seed over the shards as one env does
            assert np.array_equal(one.reset(seed=11)[0], sharded.reset(seed=11)[0])
        a = rng.uniform(-1, 1, one.action_space.shape).astype(np.float32)
        r1 = one.step(a)
        _same(r1, sharded.step(a))
        ended += int((r1[2] | r1[3]).sum())
    assert ended > 0  # auto-resets happened inside the shards too
    one.close()
    sharded.close()


def test_a_masked_reset_touching_one_shard_leaves_the_others_as_one_env_does():
    kw = dict(device="cpu", autoreset_mode="Disabled")
    one = gymnasium.make_vec("TrackGen-Track-v0", num_envs=6, seed=5, **kw)
    sharded = ShardedVectorEnv("TrackGen-Track-v0", 6, 2, seed=5, **kw)
    one.reset()
    sharded.reset()
    a = np.tile(np.float32([[0.3, 0.8]]), (6, 1))
    for _ in range(5):
        _same(one.step(a), sharded.step(a))
    mask = np.array([False, True, False, False, False, False])  # in shard 0 only
    o1, i1 = one.reset(options={"reset_mask": mask})
    o2, i2 = sharded.reset(options={"reset_mask": mask})
    assert np.array_equal(o1, o2)
    assert np.array_equal(i1["_laps"], i2["_laps"])
    _same(one.step(a), sharded.step(a))


def test_bad_arguments_are_refused_before_any_shard_steps():
    with pytest.raises(ValueError, match="num_shards"):
        ShardedVectorEnv("TrackGen-Track-v0", 2, 3, seed=0, device="cpu")
    with pytest.raises(ValueError, match="output must be 'numpy'"):
        ShardedVectorEnv("TrackGen-Track-v0", 2, 2, seed=0, device="cpu", output="torch")
    with pytest.raises(ValueError, match="3 ints"):
        ShardedVectorEnv("TrackGen-Track-v0", 3, 2, seed=[1, 2], device="cpu")
    env = ShardedVectorEnv("TrackGen-Track-v0", 4, 2, seed=0, device="cpu")
    obs, _ = env.reset()
    with pytest.raises(ValueError, match=r"actions must have shape \(4, 2\)"):
        env.step(np.zeros((3, 2), np.float32))
    assert np.array_equal(env.step(np.zeros((4, 2), np.float32))[0][:, 3:], obs[:, 3:])  # nothing moved before
    env.close()
