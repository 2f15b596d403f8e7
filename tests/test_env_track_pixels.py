"""TrackGen-Track-v0 with ``obs_type="pixels"``: CarRacing-v3's egocentric frame, its spaces, the
car's fixed pixel, the band against a host rasterisation, every autoreset mode, torch, wrappers."""

import hashlib
import math
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import trackgen_env  # noqa: F401
from trackgen_env.envs import TrackVectorEnv
from trackgen_env.envs.render import EGO_CAR_COL, EGO_CAR_ROW, EGO_SIZE

GRASS = (70, 125, 60)
CAR = (215, 40, 40)


def _actions(E, k):
    # steer left and right, throttle on: the cars leave the band now and then (terminations)
    return np.tile([0.6 * math.sin(0.4 * k), 0.8], (E, 1)).astype(np.float32)


def _host(x):
    return x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)


def _is(frame, color):
    return np.all(frame == np.array(color, np.uint8), axis=-1)


def _host_band(track, pose, pixels_per_metre):
    """``[96, 96]`` (inside, margin): each pixel centre's distance to the band's capsules (the
    union of its segments thickened by the larger half width), as (d <= r) and (|d - r|) in pixels."""
    rows, cols = np.mgrid[0:EGO_SIZE, 0:EGO_SIZE] + 0.5
    ahead = (EGO_CAR_ROW + 0.5 - rows) / pixels_per_metre
    left = (EGO_CAR_COL + 0.5 - cols) / pixels_per_metre
    c, s = math.cos(pose[2]), math.sin(pose[2])
    p = np.stack([pose[0] + c * ahead - s * left, pose[1] + s * ahead + c * left], -1).reshape(-1, 1, 2)
    a = track["centerline"].astype(np.float64)
    b = np.roll(a, -1, axis=0)
    hw = track["half_width"]
    r = np.maximum(hw, np.roll(hw, -1))
    ab = b - a
    t = np.clip(np.sum((p - a) * ab, -1) / np.maximum(np.sum(ab * ab, -1), 1e-12), 0.0, 1.0)
    gap = np.linalg.norm(p - (a + t[..., None] * ab), axis=-1) - r  # [pixels, segments]
    d = gap.min(axis=1).reshape(EGO_SIZE, EGO_SIZE) * pixels_per_metre
    return d <= 0.0, np.abs(d)


def _check_frames(env, obs):
    """Every env's frame: the car at its fixed pixel, the band where the host draws it (but near its edges)."""
    obs = _host(obs)
    assert obs.shape == (env.num_envs, EGO_SIZE, EGO_SIZE, 3) and obs.dtype == np.uint8
    for e, (pose, track) in enumerate(zip(env.car_pose(), env.tracks())):
        frame = obs[e]
        car = _is(frame, CAR)
        assert car[EGO_CAR_ROW - 2: EGO_CAR_ROW + 3, EGO_CAR_COL - 1: EGO_CAR_COL + 2].all(), f"env {e}"
        inside, margin = _host_band(track, pose, env.pixels_per_metre)
        drawn = ~_is(frame, GRASS)
        wrong = (inside != drawn) & ~car
        assert np.all(margin[wrong] <= 1.5), f"env {e}: {np.count_nonzero(wrong)} pixels off the band's edges"
        assert np.count_nonzero(wrong) <= 4 * EGO_SIZE, f"env {e}"


def test_the_spaces_are_carracings_and_the_frame_of_a_fixed_pose_is_pinned():
    env = TrackVectorEnv(2, "cpu", seed=3, obs_type="pixels")
    assert env.single_observation_space == gymnasium.spaces.Box(0, 255, (96, 96, 3), np.uint8)
    assert env.observation_space.shape == (2, 96, 96, 3) and env.observation_space.dtype == np.uint8
    assert env.pixels_per_metre == pytest.approx(EGO_CAR_ROW / env.lookahead_horizon)
    obs, _ = env.reset(seed=3)
    assert env.observation_space.contains(obs)
    _check_frames(env, obs)
    digest = hashlib.sha256(obs.tobytes()).hexdigest()[:16]
    assert digest == "8ecae8c820d3b801", digest
    # the band covers a good share of the view: an empty frame would pass the host check too
    assert 0.05 < np.mean(_is(obs, (120, 120, 120))) < 0.8
    assert np.any(_is(obs, (235, 235, 235)))  # the edges
    env.close()


def test_the_frame_does_not_depend_on_render_size_and_the_state_env_has_no_scale():
    frames = []
    for size in (64, 300):
        env = TrackVectorEnv(2, "cpu", seed=1, obs_type="pixels", render_size=size, render_mode="rgb_array")
        frames.append(env.reset(seed=1)[0])
        assert env.render()[0].shape == (size, size, 3)
        env.close()
    np.testing.assert_array_equal(*frames)
    state = TrackVectorEnv(1, "cpu", seed=1)
    assert state.pixels_per_metre is None and state.observation_space.dtype == np.float32
    state.close()


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("output", ["numpy", "torch"])
def test_every_autoreset_mode_draws_each_cars_view(mode, output):
    E = 3
    env = TrackVectorEnv(E, "cpu", seed=5, max_episode_steps=6, autoreset_mode=mode, output=output,
                         obs_type="pixels")
    obs, _ = env.reset(seed=5)
    if output == "torch":
        import torch

        assert obs.dtype == torch.uint8
    _check_frames(env, obs)
    ended = 0
    for k in range(14):
        before = _host(obs).copy()
        if mode == "Disabled" and k % 7 == 6:
            m = np.array([True, False, True])
            obs, _ = env.reset(options={"reset_mask": m})
            # the envs left alone keep their frame (the masked reset draws the reset envs only)
            np.testing.assert_array_equal(_host(obs)[~m], before[~m])
            assert not np.array_equal(_host(obs)[m], before[m])
        else:
            out = env.step(_actions(E, k))
            obs = out[0]
            done = _host(out[2]) | _host(out[3])
            ended += int(done.sum())
            if mode == "SameStep" and done.any():
                final = _host(out[4]["final_obs"])
                assert final.dtype == np.uint8 and final.shape == (E, 96, 96, 3)
                assert _is(final[done][:, EGO_CAR_ROW, EGO_CAR_COL], CAR).all()
                # the ended step's frame, not the restarted episode's
                assert not np.array_equal(final[done], _host(obs)[done])
        _check_frames(env, obs)
    assert ended > 0
    env.close()


def test_the_single_env_passes_check_env_and_gymnasiums_image_wrappers():
    env = gymnasium.make("TrackGen-Track-v0", device="cpu", seed=0, obs_type="pixels")
    assert env.observation_space == gymnasium.spaces.Box(0, 255, (96, 96, 3), np.uint8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []
    stacked = gymnasium.wrappers.FrameStackObservation(
        gymnasium.wrappers.GrayscaleObservation(gymnasium.wrappers.ResizeObservation(env, (64, 64))), 4)
    obs, _ = stacked.reset(seed=0)
    assert obs.shape == (4, 64, 64) and obs.dtype == np.uint8
    for _ in range(3):
        obs, *_ = stacked.step(np.array([0.0, 0.5], np.float32))
    assert obs.shape == (4, 64, 64) and stacked.observation_space.contains(obs)
    assert not np.array_equal(obs[0], obs[-1])  # the car moved
    stacked.close()

    vec = gymnasium.wrappers.vector.ResizeObservation(gymnasium.make_vec("TrackGen-Track-v0", num_envs=2,
                                                                         device="cpu", seed=0, obs_type="pixels"),
                                                      (84, 84))
    obs, _ = vec.reset(seed=0)
    assert obs.shape == (2, 84, 84, 3) and vec.observation_space.contains(obs)
    vec.close()
