"""Outputs of the envs: torch views (``output="torch"``) and Gymnasium's vector wrappers on the NumPy outputs."""

import importlib.util

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import vector as vw

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env.envs.gates import GatesVectorEnv
from trackgen_env.envs.track import TrackVectorEnv

torch = pytest.importorskip("torch")


def _actions(num_envs, dim, steps, seed=0):
    a = np.random.default_rng(seed).uniform(-1, 1, (steps, num_envs, dim)).astype(np.float32)
    a[..., 1 if dim == 2 else 0] = np.abs(a[..., 1 if dim == 2 else 0])
    return a


@pytest.mark.parametrize("cls, dim", [(TrackVectorEnv, 2), (GatesVectorEnv, 4)])
def test_torch_output_equals_numpy_output(cls, dim):
    ref = cls(3, "cpu", seed=1, max_episode_steps=9)
    env = cls(3, "cpu", seed=1, max_episode_steps=9, output="torch")
    obs_r, _ = ref.reset()
    obs_t, info = env.reset()
    assert isinstance(obs_t, torch.Tensor) and obs_t.dtype == torch.float32 and obs_t.device.type == "cpu"
    np.testing.assert_array_equal(obs_t.numpy(), obs_r)
    for a in _actions(3, dim, 25):
        out_r = ref.step(a)
        out_t = env.step(torch.from_numpy(a))
        for x, y in zip(out_r[:4], out_t[:4]):
            assert isinstance(y, torch.Tensor) and y.shape == x.shape
            np.testing.assert_array_equal(y.numpy(), x)
        for key, value in out_r[4].items():
            np.testing.assert_array_equal(out_t[4][key].numpy(), value)


def test_torch_outputs_are_views_overwritten_by_the_next_step():
    env = TrackVectorEnv(2, "cpu", seed=2, output="torch")
    obs0, _ = env.reset()
    obs1, reward1, *_ = env.step(np.ones((2, 2), np.float32))
    kept = obs1.clone()
    obs2, reward2, *_ = env.step(np.ones((2, 2), np.float32))
    assert obs2.data_ptr() == obs1.data_ptr() == obs0.data_ptr() and reward2.data_ptr() == reward1.data_ptr()
    assert not torch.equal(obs1, kept)  # the same buffer, now holding step 2
    np.testing.assert_array_equal(obs1.numpy(), env._obs.numpy())


def test_torch_actions_are_clipped_on_the_device_and_checked_for_shape_and_dtype():
    env, twin = (TrackVectorEnv(2, "cpu", seed=3, output="torch") for _ in range(2))
    env.reset()
    twin.reset()
    big = torch.tensor([[5.0, float("inf")], [-3.0, 0.5]], dtype=torch.float64)
    obs, *_ = env.step(big)
    ref, *_ = twin.step(np.clip(big.numpy(), -1, 1).astype(np.float32))
    torch.testing.assert_close(obs, ref, rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        env.step(torch.zeros(2, 3))
    with pytest.raises(TypeError, match="real floating"):
        env.step(torch.zeros(2, 2, dtype=torch.int64))


def test_torch_same_step_always_holds_final_obs_with_its_mask():
    env = GatesVectorEnv(2, "cpu", seed=4, max_episode_steps=2, output="torch", autoreset_mode="SameStep")
    env.reset()
    hover = np.tile(np.float32([env.quadrotor.hover_action, 0, 0, 0]), (2, 1))
    _, _, _, truncated, info = env.step(hover)
    assert info["_final_obs"].tolist() == [False, False] and info["final_obs"].shape == (2, 44)
    obs, _, _, truncated, info = env.step(hover)
    assert truncated.tolist() == [True, True] and info["_final_obs"].tolist() == [True, True]
    assert info["final_info"]["_laps"].tolist() == [True, True]
    assert not torch.equal(info["final_obs"], obs)


def test_torch_masked_reset_returns_views_and_the_reset_mask():
    env = TrackVectorEnv(2, "cpu", seed=6, output="torch", autoreset_mode="Disabled")
    env.reset()
    env.step(np.ones((2, 2), np.float32))
    obs, info = env.reset(options={"reset_mask": np.array([False, True])})
    assert isinstance(obs, torch.Tensor) and obs[1, 0].item() == 0.0 and obs[0, 0].item() > 0.0  # env 1 at rest
    assert info["_laps"].tolist() == [False, True] and info["_off_track"].dtype == torch.bool


@pytest.mark.parametrize("cls, dim", [(TrackVectorEnv, 2), (GatesVectorEnv, 4)])
def test_the_masked_reset_recipe_works_with_torch_outputs(cls, dim):
    """``reset(options={"reset_mask": terminated | truncated})`` with torch outputs: before the fix a bool
    tensor was refused (TypeError: must be a bool NumPy array, got Tensor)."""
    env = cls(3, "cpu", seed=6, output="torch", autoreset_mode="Disabled", max_episode_steps=2)
    ref = cls(3, "cpu", seed=6, autoreset_mode="Disabled", max_episode_steps=2)
    env.reset()
    ref.reset()
    actions = np.zeros((3, dim), np.float32)
    for _ in range(2):
        _, _, terminated, truncated, _ = env.step(torch.from_numpy(actions))
        ref.step(actions)
    done = terminated | truncated
    assert isinstance(done, torch.Tensor) and done.dtype == torch.bool and bool(done.all())
    done[1] = False  # a real mask: env 1 stays where it ended
    obs, info = env.reset(options={"reset_mask": done})
    want, _ = ref.reset(options={"reset_mask": np.array([True, False, True])})
    np.testing.assert_array_equal(obs.numpy(), want)
    assert info["_laps"].tolist() == [True, False, True]


@pytest.mark.parametrize("mask, error, match", [
    (lambda: torch.tensor([1, 0, 1]), TypeError,
     r"bool NumPy array or a bool torch tensor, got a torch tensor of dtype torch.int64"),
    (lambda: torch.tensor([1.0, 0.0, 1.0]), TypeError,
     r"bool NumPy array or a bool torch tensor, got a torch tensor of dtype torch.float32"),
    (lambda: torch.tensor([True, False]), ValueError, r"shape `\(3,\)`, got \(2,\)"),
    (lambda: torch.ones((3, 1), dtype=torch.bool), ValueError, r"shape `\(3,\)`, got \(3, 1\)"),
    (lambda: torch.zeros(3, dtype=torch.bool), ValueError, "at least one True"),
])
def test_a_bad_torch_reset_mask_is_refused_and_the_env_unchanged(mask, error, match):
    env = TrackVectorEnv(3, "cpu", seed=6, output="torch", autoreset_mode="Disabled")
    ref = TrackVectorEnv(3, "cpu", seed=6, autoreset_mode="Disabled")
    actions = np.full((3, 2), 0.5, np.float32)
    for e in (env, ref):
        e.reset()
        e.step(actions)
    with pytest.raises(error, match=match):
        env.reset(options={"reset_mask": mask()})
    np.testing.assert_array_equal(env.step(actions)[0].numpy(), ref.step(actions)[0])


def test_an_unknown_output_is_refused():
    with pytest.raises(ValueError, match="output"):
        TrackVectorEnv(1, "cpu", seed=0, output="jax")


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device for torch")
@pytest.mark.parametrize("cls, dim", [(TrackVectorEnv, 2), (GatesVectorEnv, 4)])
@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_torch_step_on_cuda_does_not_synchronise(cls, dim, mode):
    env = cls(64, "cuda:0", seed=5, max_episode_steps=5, output="torch", autoreset_mode=mode)
    obs, _ = env.reset()
    assert obs.device.type == "cuda"
    actions = torch.from_numpy(_actions(64, dim, 1)[0]).cuda()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(12):  # episodes end at steps 5 and 10
            obs, reward, terminated, truncated, info = env.step(actions)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert obs.device.type == reward.device.type == terminated.device.type == "cuda"
    assert torch.isfinite(obs).all()


# -- Gymnasium's vector wrappers on the NumPy outputs ---------------------------------------------
def test_record_episode_statistics_counts_episodes_in_same_step_mode():
    env = vw.RecordEpisodeStatistics(
        gymnasium.make_vec("TrackGen-Track-v0", num_envs=2, device="cpu", seed=0, max_episode_steps=4,
                           autoreset_mode=AutoresetMode.SAME_STEP)
    )
    env.reset(seed=0)
    lengths = []
    for _ in range(12):
        _, _, _, _, info = env.step(np.zeros((2, 2), np.float32))
        if "episode" in info:
            lengths += info["episode"]["l"][info["_episode"]].tolist()
    assert lengths == [4] * 6  # no autoreset step: an episode every 4 steps


def test_normalize_observation_and_reward_wrappers_run_on_top():
    env = gymnasium.make_vec("TrackGen-Track-v0", num_envs=4, device="cpu", seed=1, max_episode_steps=20)
    env = vw.NormalizeReward(vw.NormalizeObservation(env), gamma=0.99)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (4, 38) and obs.dtype == np.float32
    for a in _actions(4, 2, 30, seed=1):
        obs, reward, terminated, truncated, _ = env.step(a)
        assert np.isfinite(obs).all() and np.isfinite(reward).all()
    inner = env.env  # NormalizeObservation
    assert inner.obs_rms.count > 30 and np.all(inner.obs_rms.var[:1] > 0)
    assert abs(float(obs[:, 0].mean())) < 5.0  # speed, normalised


def test_clip_action_wrapper_clips_before_the_env():
    env = vw.ClipAction(gymnasium.make_vec("TrackGen-Gates-v0", num_envs=2, device="cpu", seed=2))
    twin = GatesVectorEnv(2, "cpu", seed=2)
    env.reset(seed=2)
    twin.reset(seed=2)
    a = np.array([[3.0, -2.0, 0.1, 9.0], [-7.0, 0.5, 2.0, -0.2]], np.float32)
    for x, y in zip(env.step(a)[:4], twin.step(np.clip(a, -1, 1))[:4]):
        np.testing.assert_array_equal(x, y)


@pytest.mark.skipif(importlib.util.find_spec("moviepy") is None, reason="RecordVideo needs moviepy (not installed)")
def test_record_video_writes_a_video_of_the_first_env(tmp_path):
    env = vw.RecordVideo(
        gymnasium.make_vec("TrackGen-Track-v0", num_envs=2, device="cpu", seed=3, max_episode_steps=8,
                           render_mode="rgb_array", render_size=64),
        str(tmp_path / "videos"), episode_trigger=lambda k: k == 0, record_first_only=True,
    )
    env.reset(seed=3)
    for _ in range(10):
        env.step(np.zeros((2, 2), np.float32))
    env.close()
    assert list((tmp_path / "videos").glob("*.mp4"))


def test_record_video_frame_capture_works_without_moviepy():
    """What RecordVideo does per frame (its _capture_frame), on our render(): a Sequence of num_envs frames."""
    env = gymnasium.make_vec("TrackGen-Track-v0", num_envs=3, device="cpu", seed=4, render_mode="rgb_array",
                             render_size=48)
    env.reset(seed=4)
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == env.num_envs
    grid = np.array(frames)
    assert grid.shape == (3, 48, 48, 3) and grid.dtype == np.uint8


def test_the_envs_page_examples_run(tmp_path, monkeypatch):
    """docs/envs.md's examples as written, each in a fresh namespace (each imports what it uses),
    with a small num_envs (the RecordVideo one only where moviepy is installed)."""
    import pathlib
    import re

    monkeypatch.chdir(tmp_path)  # the RecordVideo example writes ./videos

    page = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "envs.md").read_text()
    # the rest: test_env_wrappers, test_env_single
    make, same_step, disabled, wrappers = re.findall(r"```python\n(.*?)```", page, re.S)[:4]
    exec(make.replace("num_envs=1024", "num_envs=4"), {})
    exec(same_step.replace("num_envs=16", "num_envs=4"), {})
    exec(disabled.replace("num_envs=64", "num_envs=4"), {})
    if importlib.util.find_spec("moviepy") is not None:
        exec(wrappers.replace("num_envs=16", "num_envs=2"), {})


def test_a_bfloat16_torch_action_steps_a_numpy_env_as_its_float32_values():
    torch = pytest.importorskip("torch")
    a, b = (TrackVectorEnv(2, "cpu", seed=0) for _ in range(2))
    for env in (a, b):
        env.reset(seed=0)
    action = torch.tensor([[0.5, 1.0], [-0.25, 0.75]], dtype=torch.bfloat16)
    np.testing.assert_array_equal(a.step(action)[0], b.step(action.float().numpy())[0])
