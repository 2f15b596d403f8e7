"""``examples/ppo_multigpu.py`` under torchrun: 2 CPU processes (gloo), disjoint courses, identical weights."""

import re

import numpy as np
import pytest

pytest.importorskip("torch")

from torchrun import REPO, run_torchrun, warm  # noqa: E402
from trackgen_env.core.seeding import env_seeds  # noqa: E402

NUM_ENVS = 4
LINE = re.compile(
    r"^rank=(?P<rank>\d+) world_size=(?P<world>\d+) course_fingerprint=(?P<fingerprint>\w+) weights=(?P<weights>\w+) "
    r"env_seeds=(?P<seeds>[-\d,]+) courses=(?P<courses>[\w,]+)$",
    re.MULTILINE,
)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """The result line of each rank of a tiny 2-process run, parsed (``tests/torchrun.py``: the checkout's
    package, kernels compiled once before, each rank's output in its own files)."""
    warm()
    outputs = run_torchrun([
        str(REPO / "examples" / "ppo_multigpu.py"),
        "--device", "cpu", "--seed", "3", "--num-envs", str(NUM_ENVS), "--num-steps", "16",
        "--total-timesteps", "256", "--num-minibatches", "2", "--update-epochs", "2",
    ], tmp_path_factory.mktemp("torchrun"))  # fmt: skip
    for out in outputs:  # each rank ran this checkout's package
        assert f"trackgen_env={REPO / 'trackgen_env'}" in out, out[-2000:]
    found = sorted((m.groupdict() for out in outputs for m in LINE.finditer(out)), key=lambda d: int(d["rank"]))
    assert [int(d["rank"]) for d in found] == [0, 1], "\n".join(out[-2000:] for out in outputs)
    return found


def test_torchrun_ranks_train_on_disjoint_courses(ranks):
    courses = [set(r["courses"].split(",")) for r in ranks]
    assert all(len(c) == NUM_ENVS for c in courses)  # distinct within a rank too
    assert courses[0].isdisjoint(courses[1])
    assert ranks[0]["fingerprint"] != ranks[1]["fingerprint"]


def test_torchrun_ranks_use_their_slice_of_the_seeds(ranks):
    expected = env_seeds(3, 2 * NUM_ENVS)
    for r in ranks:
        k = int(r["rank"])
        assert [int(s) for s in r["seeds"].split(",")] == expected[k * NUM_ENVS : (k + 1) * NUM_ENVS].tolist()


def test_torchrun_ranks_end_with_identical_weights(ranks):
    """Broadcast initial weights + averaged gradients keep every rank's policy the same."""
    assert ranks[0]["weights"] == ranks[1]["weights"]


def test_rank_seed_slices_are_disjoint_at_scale():
    """``env_seeds(s, n)`` is injective in the env index (a bijection of 32-bit ints), so rank slices never
    share a seed."""
    for seed in (0, 1, 2**40 + 7):
        seeds = env_seeds(seed, 64 * 4096)  # e.g. 64 ranks x 4096 envs
        assert np.unique(seeds).size == seeds.size
