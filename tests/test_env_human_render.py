"""``render_mode="human"``: a pygame window showing the frames ``render_mode="rgb_array"`` draws
(run headless here: SDL's dummy video driver)."""

import sys

import gymnasium as gym
import numpy as np
import pytest

from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv
from trackgen_env.envs.viewer import HUMAN_ENVS, tile

pygame = pytest.importorskip("pygame")


@pytest.fixture(autouse=True)
def headless(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    yield
    pygame.display.quit()


def _window_image() -> np.ndarray:
    return pygame.surfarray.array3d(pygame.display.get_surface()).swapaxes(0, 1)


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
def test_step_and_reset_show_the_first_envs_frames_in_a_window(cls):
    env = cls(4, "cpu", seed=0, render_mode="human", render_size=32)
    env.reset()
    assert _window_image().shape == (66, 66, 3)  # 2 x 2 tiles of 32 pixels, 2 between them
    env.step(np.zeros((4, *env.single_action_space.shape), np.float32))
    shown = _window_image()
    assert np.array_equal(shown, tile(env.render_frames()))  # the frames rgb_array draws
    assert shown[:32, :32].any() and not np.array_equal(shown[:32, :32], shown[:32, 34:])  # two envs, two courses
    assert env.render() is None  # human mode draws; it returns nothing, as Gymnasium's envs
    env.close()
    assert not pygame.display.get_init() or pygame.display.get_surface() is None


def test_a_large_vector_env_shows_its_first_16_envs_and_leaving_human_mode_closes_the_window():
    env = gym.make_vec("TrackGen-Track-v0", num_envs=20, device="cpu", seed=0, render_mode="human", render_size=16)
    env.reset()
    assert HUMAN_ENVS == 16 and _window_image().shape == (4 * 18 - 2, 4 * 18 - 2, 3)
    env.render_mode = "rgb_array"
    assert pygame.display.get_surface() is None
    assert len(env.render()) == 20
    env.close()


def test_the_single_env_shows_its_frame():
    env = gym.make("TrackGen-Track-v0", device="cpu", render_mode="human", render_size=48)
    env.reset(seed=1)
    env.step(np.zeros(2, np.float32))
    assert _window_image().shape == (48, 48, 3)
    assert env.render() is None
    env.close()


def test_without_pygame_human_mode_names_the_extra_and_rgb_array_still_works(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygame", None)  # import pygame raises ImportError
    with pytest.raises(ImportError, match=r'pip install -e "\.\[human\]"'):
        TrackVectorEnv(2, "cpu", seed=0, render_mode="human")
    env = TrackVectorEnv(2, "cpu", seed=0, render_mode="rgb_array", render_size=16)
    with pytest.raises(ImportError, match="pygame"):
        env.render_mode = "human"
    assert env.render_mode == "rgb_array" and len(env.render()) == 2


def test_the_envs_page_human_example_runs():
    import pathlib
    import re

    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "envs.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if 'render_mode="human"' in b]
    ns = {}
    exec(block.replace("range(400)", "range(3)").replace("seed=0)", 'seed=0, device="cpu", render_size=32)'), ns)
    assert ns["envs"].closed


def test_the_sharded_env_refuses_a_window_and_says_what_to_use():
    from trackgen_env.envs import ShardedVectorEnv

    with pytest.raises(ValueError, match='no render_mode="human".*render_mode="rgb_array"'):
        ShardedVectorEnv("TrackGen-Track-v0", 2, 2, seed=0, device="cpu", render_mode="human")
    env = ShardedVectorEnv("TrackGen-Track-v0", 2, 2, seed=0, device="cpu", render_mode="rgb_array", render_size=16)
    assert env.metadata["render_modes"] == ["rgb_array"]
    with pytest.raises(ValueError, match='no render_mode="human"'):
        env.render_mode = "human"
    assert env.render_mode == "rgb_array"
    env.close()


def test_without_a_display_the_window_is_not_seen_and_the_warning_says_what_to_use(monkeypatch):
    if not sys.platform.startswith("linux"):
        pytest.skip("the display variables are Linux's")
    for name in ("SDL_VIDEODRIVER", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    pygame.display.quit()
    with pytest.warns(UserWarning, match=r'no display.*render_mode="rgb_array".*RecordVideo'):
        env = TrackVectorEnv(1, "cpu", seed=0, render_mode="human", render_size=16)
        env.reset()
    assert pygame.display.get_driver() == "dummy"
    env.close()
