"""``train --trainer rsl_rl`` under torchrun: rsl_rl's multi-GPU mode, here 2 CPU processes over gloo."""

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("rsl_rl")

from torchrun import run_torchrun, warm  # noqa: E402
from trackgen_env.integrations.train_rsl_rl import rank_seeds  # noqa: E402
from trackgen_env.core.seeding import env_seeds  # noqa: E402
NUM_ENVS = 8


def test_torchrun_trains_one_policy_on_two_cpu_processes(tmp_path):
    out = tmp_path / "run"
    warm(autoreset_mode="SameStep", output="torch")
    outputs = run_torchrun(["-m", "trackgen_env", "train", "--trainer", "rsl_rl", "--device", "cpu",
                            "--num-envs", str(NUM_ENVS), "--steps", "1024", "--seed", "3", "--out", str(out),
                            "--no-progress"], tmp_path / "logs")
    record = json.loads((out / "train.json").read_text())
    assert record["world_size"] == 2 and record["num_envs"] == NUM_ENVS
    assert record["steps"] == 2 * (2 * NUM_ENVS * 32) and record["rollout_steps"] == 2 * NUM_ENVS * 32
    for name in ("policy.pt", "model.pt", "monitor.csv"):
        assert (out / name).is_file(), name
    assert "saved" in outputs[0] and "saved" not in outputs[1]  # rank 0 reports the run


def test_each_process_drives_its_own_slice_of_the_seeds():
    slices = [rank_seeds(3, r, 2, NUM_ENVS) for r in range(2)]
    assert [s.tolist() for s in slices] == [env_seeds(3, 2 * NUM_ENVS)[:NUM_ENVS].tolist(),
                                            env_seeds(3, 2 * NUM_ENVS)[NUM_ENVS:].tolist()]
    assert set(slices[0].tolist()).isdisjoint(slices[1].tolist())
    assert rank_seeds(3, 0, 1, NUM_ENVS) == 3  # one process: the int seed, as without torchrun
