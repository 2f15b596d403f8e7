"""render_mode="rgb_array": per-env top-down frames drawn on the device (trackgen_env.envs.render)."""

import numpy as np
import pytest

from trackgen_env.envs.gates import GatesVectorEnv
from trackgen_env.envs.track import TrackVectorEnv

CAR = (215, 40, 40)
GRASS = (70, 125, 60)
BAND = (120, 120, 120)
GATE, NEXT_GATE, DRONE = (255, 140, 0), (60, 220, 80), (235, 50, 50)


def _has(frame, color):
    return bool(np.all(frame == np.array(color, np.uint8), axis=-1).any())


def _pixel_of(frame, color):
    rows, cols = np.nonzero(np.all(frame == np.array(color, np.uint8), axis=-1))
    return rows.mean(), cols.mean()


def test_track_frames_are_a_tuple_of_uint8_images_one_per_env(device):
    env = TrackVectorEnv(3, device, seed=0, render_mode="rgb_array", render_size=96)
    env.reset()
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == 3
    for f in frames:
        assert f.shape == (96, 96, 3) and f.dtype == np.uint8
        assert _has(f, GRASS) and _has(f, BAND) and _has(f, CAR)
    assert not np.array_equal(frames[0], frames[1])  # each env's own track


def test_the_car_is_drawn_where_it_drives():
    env = TrackVectorEnv(1, "cpu", seed=1, render_mode="rgb_array", render_size=128)
    env.reset()
    before = _pixel_of(env.render()[0], CAR)
    for _ in range(15):
        env.step(np.array([[0.0, 1.0]], np.float32))
    after = _pixel_of(env.render()[0], CAR)
    assert np.hypot(after[0] - before[0], after[1] - before[1]) > 3.0


def test_frames_are_fresh_host_arrays():
    env = TrackVectorEnv(2, "cpu", seed=2, render_mode="rgb_array", render_size=32)
    env.reset()
    first = env.render()
    kept = first[0].copy()
    for _ in range(10):
        env.step(np.array([[0.0, 1.0]] * 2, np.float32))
    env.render()
    np.testing.assert_array_equal(first[0], kept)


def test_render_frames_draws_only_the_first_envs():
    env = TrackVectorEnv(4, "cpu", seed=3, render_mode="rgb_array", render_size=40)
    env.reset()
    some = env.render_frames(2)
    assert some.shape == (2, 40, 40, 3)
    np.testing.assert_array_equal(some, np.stack(env.render()[:2]))
    with pytest.raises(ValueError, match="num"):
        env.render_frames(5)


def test_render_without_render_mode_warns_and_returns_none():
    env = TrackVectorEnv(1, "cpu", seed=0)
    env.reset()
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


def test_gates_frames_show_the_gates_the_next_gate_and_the_drone(device):
    env = GatesVectorEnv(2, device, seed=4, render_mode="rgb_array", render_size=96)
    env.reset()
    frames = env.render()
    assert len(frames) == 2
    for f in frames:
        assert f.shape == (96, 96, 3) and f.dtype == np.uint8
        top, side = f[:72], f[72:]
        for part in (top, side):
            assert _has(part, GATE) and _has(part, NEXT_GATE) and _has(part, DRONE)


def test_a_bad_render_size_is_refused():
    with pytest.raises(ValueError, match="render_size"):
        GatesVectorEnv(1, "cpu", seed=0, render_mode="rgb_array", render_size=8)


def test_plot_progress_writes_a_png(tmp_path):
    from trackgen_env.demos import viz

    x = np.arange(50) * 1000
    path = viz.plot_progress({"PPO": (x, np.linspace(0, 5, 50)), "random": (x, np.zeros(50))}, tmp_path / "c.png",
                             smooth=5, title="laps")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.endswith("c.png")
    with pytest.raises(ValueError, match="one length"):
        viz.plot_progress({"bad": (x, x[:3])}, tmp_path / "d.png")
