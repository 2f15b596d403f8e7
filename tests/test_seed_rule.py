"""One seed rule (``checks.check_seed``): every entry point that takes a seed accepts and refuses the same ones.

A seed is an int in ``[0, 2**64)``; per-env seeds (used as given) are ints in ``[0, 2**32)``.
"""

import numpy as np
import pytest

from trackgen_env.__main__ import main
from trackgen_env.core.checks import check_seed, fold_seed
from trackgen_env.envs import TrackVectorEnv
from trackgen_env.envs.sharded import _shard_seeds
from trackgen_env.envs.single import TrackEnv
from trackgen_env.integrations import train as train_module
from trackgen_env.core.seeding import PerEnvSeededRNG, SeedState, env_seeds

ACCEPTED = [0, 7, 2**31, 2**32, 2**64 - 1, np.uint64(2**64 - 1), np.int64(5)]
REFUSED_VALUES = [-1, 2**64, 2**70, np.int64(-3)]
REFUSED_TYPES = [1.5, True, "3", np.float32(2.0)]
# an int32 array: the device's bits
PER_ENV_ACCEPTED = [[0, 2**32 - 1], np.array([1, 2], np.uint32), np.array([-1, 5], np.int32)]
PER_ENV_REFUSED = [[-1, 0], [2**32, 0], [1, 2, 3]]


@pytest.fixture(scope="module")
def env():
    return TrackVectorEnv(2, "cpu", seed=0)


@pytest.fixture(scope="module")
def single():
    return TrackEnv("cpu", seed=0)


def _entry_points(env, single):
    """Every way a user hands the library one int seed."""
    return {
        "check_seed": lambda s: check_seed(s),
        "env.reset": lambda s: env.reset(seed=s),
        "TrackEnv.reset": lambda s: single.reset(seed=s),
        "env_seeds": lambda s: env_seeds(s, 2),
        "SeedState": lambda s: SeedState(2, "cpu", seeds=s),
        "PerEnvSeededRNG": lambda s: PerEnvSeededRNG(2, s, device="cpu"),
        "ShardedVectorEnv": lambda s: _shard_seeds(s, 2, [(0, 1), (1, 2)]),
    }


@pytest.mark.parametrize("seed", ACCEPTED, ids=repr)
def test_every_entry_point_accepts_the_same_seeds(env, single, seed):
    for name, take in _entry_points(env, single).items():
        take(seed)  # no error
    assert np.array_equal(env_seeds(seed, 2), env_seeds(int(seed), 2))


@pytest.mark.parametrize("seed", REFUSED_VALUES, ids=repr)
def test_every_entry_point_refuses_the_same_out_of_range_seeds(env, single, seed):
    for name, take in _entry_points(env, single).items():
        with pytest.raises(ValueError, match=r"an int in \[0, 2\*\*64\)"):
            take(seed)
    with pytest.raises(ValueError, match=r"an int in \[0, 2\*\*64\)"):
        TrackVectorEnv(2, "cpu", seed=seed)


@pytest.mark.parametrize("seed", REFUSED_TYPES, ids=repr)
def test_every_entry_point_refuses_the_same_non_int_seeds(env, single, seed):
    for name, take in _entry_points(env, single).items():
        with pytest.raises(TypeError, match=r"an int in \[0, 2\*\*64\)"):
            take(seed)


@pytest.mark.parametrize("seeds", PER_ENV_ACCEPTED, ids=repr)
def test_per_env_seeds_are_accepted_alike(env, seeds):
    env.reset(seed=seeds)
    state = SeedState(2, "cpu", seeds=seeds)
    rng = PerEnvSeededRNG(2, seeds, device="cpu")
    expected = np.asarray(seeds).astype(np.int64).astype(np.uint32).view(np.int32)
    assert np.array_equal(state.seeds.numpy(), expected) and np.array_equal(rng.seeds.numpy(), expected)


@pytest.mark.parametrize("seeds", PER_ENV_REFUSED, ids=repr)
def test_per_env_seeds_are_refused_alike(env, seeds):
    for take in (lambda s: env.reset(seed=s), lambda s: SeedState(2, "cpu", seeds=s),
                 lambda s: PerEnvSeededRNG(2, s, device="cpu"), lambda s: _shard_seeds(s, 2, [(0, 2)])):
        with pytest.raises(ValueError, match=r"2 ints in \[0, 2\*\*32\)"):
            take(seeds)


def test_the_sb3_wrapper_takes_the_same_seeds():
    pytest.importorskip("stable_baselines3")
    from trackgen_env.integrations.sb3 import make_sb3_vec_env

    venv = make_sb3_vec_env("TrackGen-Track-v0", 1, device="cpu", seed=0)
    assert venv.seed(2**64 - 1) == [2**64 - 1]
    with pytest.raises(ValueError, match=r"an int in \[0, 2\*\*64\)"):
        venv.seed(2**64)
    with pytest.raises(ValueError, match=r"an int in \[0, 2\*\*64\)"):
        venv.seed(-1)
    venv.close()


@pytest.mark.parametrize("seed", [2**31, 2**64 - 1])
def test_train_accepts_a_seed_the_env_accepts(tmp_path, seed):
    # the seed passes; the bad torch_threads checked after it is what is refused
    with pytest.raises(ValueError, match="torch_threads"):
        train_module.train("TrackGen-Track-v0", 64, num_envs=2, seed=seed, device="cpu", out=tmp_path, torch_threads=0)


@pytest.mark.parametrize("seed", [-1, 2**64])
def test_train_refuses_a_seed_the_env_refuses(tmp_path, seed):
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*64\)"):
        train_module.train("TrackGen-Track-v0", 64, num_envs=2, seed=seed, device="cpu", out=tmp_path)


def test_fold_seed_keeps_32_bit_seeds_and_folds_larger_ones():
    assert fold_seed(0) == 0 and fold_seed(2**32 - 1) == 2**32 - 1
    assert 0 <= fold_seed(2**64 - 1) < 2**32 and fold_seed(2**32) != fold_seed(0)


@pytest.mark.parametrize("command", [["demo"], ["train", "--steps", "64"], ["eval", "model.zip"]])
def test_the_cli_accepts_and_refuses_the_same_seeds(command, capsys):
    for seed in (2**31, 2**64 - 1):
        # the seed passes: what is refused is the option after it
        rc = main([*command, "--seed", str(seed), "--device", "no-such-device"])
        assert rc == 2 and "--device must be one of" in capsys.readouterr().err
    if command == ["demo"]:  # a refusal that comes after every seed check
        rc = main(["demo", "--seed", str(2**63), "--env", "gates", "--track-csv", "x.csv"])
        assert rc == 2 and "--track-csv drives a real circuit" in capsys.readouterr().err
    for seed in (-1, 2**64):
        rc = main([*command, "--seed", str(seed), "--device", "cpu"])
        assert rc == 2 and "--seed must be an int in [0, 2**64)" in capsys.readouterr().err
