"""``docs/trainers.md``: every recipe runs as written, and the two hazards it is about are real.

The hazards: under NEXT_STEP a trainer stores the reset step (action ignored, reward 0) as a
transition; with ``output="torch"`` a trainer that keeps the env's views holds the next observation."""

import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import trackgen_env  # noqa: F401,E402
from gymnasium.vector import AutoresetMode  # noqa: E402

DOC = Path(__file__).resolve().parent.parent / "docs" / "trainers.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
LIBRARIES = ("rsl_rl", "skrl", "torchrl")


def _library(block: str) -> str:
    """The library a recipe imports (``from skrl...``, ``from trackgen_env.integrations.rsl_rl ...``)."""
    return next(name for name in LIBRARIES if re.search(rf"^(from|import) \S*\b{name}\b", block, re.M))


def test_the_page_has_a_recipe_for_each_library():
    assert sorted(_library(b) for b in BLOCKS) == ["rsl_rl", "skrl", "torchrl"]


@pytest.mark.parametrize("block", BLOCKS, ids=_library)
def test_each_recipe_runs_as_written(block):
    pytest.importorskip(_library(block))
    before = torch.get_num_threads()
    try:
        exec(compile(block, f"{DOC.name}:{_library(block)}", "exec"), {"__name__": "recipe"})
    finally:
        torch.set_num_threads(before)


FORWARD = np.tile(
    np.array([[0.0, 1.0]], dtype=np.float32), (4, 1)
)  # straight ahead, full throttle: progress every step


def test_skrl_records_no_reset_step_with_the_wrapper_and_does_with_its_own_under_next_step():
    pytest.importorskip("skrl")
    from skrl.envs.wrappers.torch import wrap_env
    from trackgen_env.integrations.skrl import make_skrl_env

    ours = make_skrl_env("TrackGen-Track-v0", 4, seed=0, device="cpu", max_episode_steps=4)
    stock = wrap_env(gym.make_vec("TrackGen-Track-v0", num_envs=4, vectorization_mode="vector_entry_point",
                                  device="cpu", max_episode_steps=4), wrapper="gymnasium")
    try:
        rewards = {}
        for name, env in (("ours", ours), ("stock", stock)):
            env.reset()
            rewards[name] = [env.step(torch.as_tensor(FORWARD))[1].flatten() for _ in range(12)]
        assert all((r > 0).all() for r in rewards["ours"])  # every stored step moved the car
        assert sum(int((r == 0).sum()) for r in rewards["stock"]) == 2 * 4  # NEXT_STEP's reset steps, 2 per env
    finally:
        ours.close()
        stock.close()


def test_skrl_wrapper_hands_out_copies_and_refuses_next_step():
    pytest.importorskip("skrl")
    from trackgen_env.integrations.skrl import SkrlWrapper, make_skrl_env

    env = make_skrl_env("TrackGen-Track-v0", 4, seed=0, device="cpu")
    try:
        first, _ = env.reset()
        kept = first.clone()
        env.step(torch.as_tensor(FORWARD))
        assert torch.equal(first, kept)
        assert env.device == torch.device("cpu") and env.num_envs == 4
    finally:
        env.close()
    next_step = gym.make_vec("TrackGen-Track-v0", num_envs=2, vectorization_mode="vector_entry_point", device="cpu",
                             output="torch")
    try:
        with pytest.raises(ValueError, match="SAME_STEP"):
            SkrlWrapper(next_step)
    finally:
        next_step.close()


def test_torchrl_rollouts_of_torch_views_repeat_the_last_step_which_is_why_the_recipe_keeps_numpy():
    pytest.importorskip("torchrl")
    from torchrl.envs import GymWrapper

    def rollout(output):
        env = GymWrapper(gym.make_vec("TrackGen-Track-v0", num_envs=4, vectorization_mode="vector_entry_point",
                                      device="cpu", autoreset_mode=AutoresetMode.SAME_STEP, output=output))
        try:
            return env.rollout(6, break_when_any_done=False)["observation"]
        finally:
            env.close()

    views, arrays = rollout("torch"), rollout("numpy")
    assert torch.equal(views[:, 0], views[:, 5])  # every step reads the env's buffer as it is now
    assert not torch.equal(arrays[:, 0], arrays[:, 5])
