"""CUDA-only paths: torch outputs on torch's default stream, and drivers without conditional nodes."""

import numpy as np
import pytest
import warp as wp

from trackgen_env.core import exec as exec_modes
from trackgen_env.course import Course
from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv
from trackgen_env.pipeline import presets

HAS_CUDA = wp.get_cuda_device_count() > 0
cuda = [pytest.mark.cuda, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")]


def test_conditional_nodes_are_refused_inside_unconditional_and_always_allowed_on_the_cpu():
    assert exec_modes.conditional_allowed("cpu")
    with exec_modes.unconditional():
        assert not exec_modes.conditional_allowed("cpu") and not exec_modes.conditional_allowed()


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
def test_torch_output_resets_and_reseeds_on_torchs_default_stream(cls):
    pytest.importorskip("torch")
    env = cls(num_envs=8, device="cuda:0", seed=1, output="torch")
    env.reset()
    first, _ = env.reset(seed=3)
    first = first.clone()
    env.step(np.zeros((8, env.single_action_space.shape[0]), np.float32))
    env.reset()
    again, _ = env.reset(seed=3)
    assert (again == first).all()


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
def test_a_driver_without_conditional_nodes_records_the_fixed_bound(monkeypatch):
    monkeypatch.setattr(wp, "is_conditional_graph_supported", lambda: False)
    eager = Course.track(presets.track(num_envs=16, device="cuda:0"), checkpoint_spacing=0.6, seeds=5)
    replay = Course.track(presets.track(num_envs=16, device="cuda:0"), checkpoint_spacing=0.6, seeds=5)
    mask = wp.array(np.arange(16) % 3 == 0, dtype=wp.int32, device="cuda:0")
    with wp.ScopedCapture(device="cuda:0") as capture:
        replay.regenerate(mask=mask, advance=True)
    for _ in range(2):
        eager.regenerate(mask=mask, advance=True)
        wp.capture_launch(capture.graph)
    assert np.array_equal(eager.result.centerline.numpy(), replay.result.centerline.numpy())
    env = TrackVectorEnv(num_envs=8, device="cuda:0", seed=2, max_episode_steps=5)
    assert env.graph is not None
    env.reset()
    for _ in range(12):  # through two auto-resets
        env.step(np.zeros((8, 2), np.float32))
