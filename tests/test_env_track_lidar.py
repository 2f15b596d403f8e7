"""TrackGen-Track-v0 with ``obs_type="lidar"``: the layout, the spaces, every autoreset mode, torch, the arguments."""

import math
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from test_tools_lidar import reference_ranges

import trackgen_env  # noqa: F401
from trackgen_env.envs import TrackVectorEnv
from trackgen_env.envs.track import LIDAR_MOTION_FIELDS, OBS_FIELDS

B = 48


def _actions(E, k):
    # steer left and right, throttle on: the cars leave the band now and then (terminations)
    return np.tile([0.6 * math.sin(0.4 * k), 0.8], (E, 1)).astype(np.float32)


def _host(x):
    return x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)


def _check_against_the_pose(env, obs):
    """The observed ranges are a NumPy ray cast from each car's pose on its track."""
    obs = _host(obs)
    poses, tracks = env.car_pose(), env.tracks()
    r = env.course.result
    normal = r.normal.numpy()
    for e, (pose, track) in enumerate(zip(poses, tracks)):
        n = len(track["half_width"])
        ref = reference_ranges(track["centerline"], normal[e, :n, :2], track["half_width"], pose[:2], pose[2],
                               env.beam_angles, env.lidar_range)
        np.testing.assert_allclose(obs[e, :B], ref, rtol=1e-4, err_msg=f"env {e}")


@pytest.mark.parametrize("mode", ["NextStep", "SameStep", "Disabled"])
@pytest.mark.parametrize("output", ["numpy", "torch"])
def test_every_autoreset_mode_observes_the_ranges_from_the_pose_and_the_state_envs_motion(mode, output):
    E = 3
    kw = dict(seed=5, max_episode_steps=6, autoreset_mode=mode, output=output)
    lidar = TrackVectorEnv(E, "cpu", obs_type="lidar", num_beams=B, **kw)
    state = TrackVectorEnv(E, "cpu", **kw)
    assert lidar.observation_space.shape == (E, B + 3) and lidar.single_observation_space.shape == (B + 3,)
    obs, _ = lidar.reset(seed=5)
    obs_s, _ = state.reset(seed=5)
    _check_against_the_pose(lidar, obs)
    ended = 0
    for k in range(14):
        if mode == "Disabled" and k % 7 == 6:
            m = np.array([True, False, True])
            obs, _ = lidar.reset(options={"reset_mask": m})
            obs_s, _ = state.reset(options={"reset_mask": m})
        else:
            out, out_s = lidar.step(_actions(E, k)), state.step(_actions(E, k))
            obs, obs_s = out[0], out_s[0]
            for a, b in zip(out[1:4], out_s[1:4]):  # reward, terminated, truncated: the same episodes
                np.testing.assert_array_equal(_host(a), _host(b))
            ended += int(_host(out[2]).sum() + _host(out[3]).sum())
            if mode == "SameStep" and "final_obs" in out[4]:
                final = _host(out[4]["final_obs"])
                assert final.shape == (E, B + 3) and np.all(np.isfinite(final))
        o = _host(obs)
        assert np.all(np.isfinite(o)) and lidar.observation_space.contains(o.astype(np.float32))
        _check_against_the_pose(lidar, o)
        # after the ranges, the car's own motion: the state observation's first entries
        np.testing.assert_array_equal(o[:, B:], _host(obs_s)[:, :len(LIDAR_MOTION_FIELDS)])
    assert ended > 0
    assert LIDAR_MOTION_FIELDS == OBS_FIELDS[:3] == ("speed", "yaw_rate", "steer")
    lidar.close()
    state.close()


def test_the_single_env_passes_check_env():
    env = gymnasium.make("TrackGen-Track-v0", device="cpu", seed=0, obs_type="lidar", num_beams=64)
    assert env.observation_space.shape == (67,)
    np.testing.assert_array_equal(env.observation_space.low[:64], 0.0)
    np.testing.assert_array_equal(env.observation_space.high[:64], np.float32(30.0))
    assert env.unwrapped.beam_angles.shape == (64,)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    # the motion entries (speed, yaw rate, steer) are unbounded, as the state observation's
    assert [str(w.message) for w in caught if "Box observation space m" not in str(w.message)] == []
    env.close()


def test_defaults_are_f1tenth_gyms_and_the_range_scales_with_the_full_size_car():
    env = TrackVectorEnv(1, "cpu", seed=0, obs_type="lidar")
    assert (env.num_beams, env.lidar_fov, env.lidar_range, env.lidar_noise_std) == (1080, 4.71, 30.0, 0.0)
    np.testing.assert_allclose(env.beam_angles, np.linspace(-2.355, 2.355, 1080), atol=1e-6)
    with pytest.raises(ValueError):
        env.beam_angles[0] = 1.0  # read-only
    with pytest.raises(AttributeError, match="num_beams"):
        env.num_beams = 10
    env.close()
    full = TrackVectorEnv.__new__(TrackVectorEnv)
    full.car = trackgen_env.envs.car.car_params("full")
    full._check_sensor("lidar", None, None, None, None)  # the full-size car's braking distance from 85 m/s
    assert full.lidar_range == pytest.approx(85.0**2 / 30.0)
    state = TrackVectorEnv(1, "cpu", seed=0)
    assert state.obs_type == "state" and state.beam_angles is None and state.num_beams is None
    state.close()


def test_noise_is_deterministic_per_seed():
    def run(seed):
        env = TrackVectorEnv(2, "cpu", seed=seed, obs_type="lidar", num_beams=32, lidar_noise_std=0.02)
        obs = [env.reset(seed=seed)[0]] + [env.step(_actions(2, k))[0] for k in range(3)]
        env.close()
        return np.stack(obs)
    a, b, c = run(1), run(1), run(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[:, :, :32], c[:, :, :32])
    assert a[:, :, :32].min() >= 0.0 and a[:, :, :32].max() <= 30.0


@pytest.mark.parametrize("kwargs, error, match", [
    ({"obs_type": "camera"}, ValueError, "obs_type"),
    ({"obs_type": 1}, TypeError, "obs_type"),
    ({"num_beams": 64}, ValueError, "obs_type='lidar'"),
    ({"lidar_noise_std": 0.1}, ValueError, "obs_type='lidar'"),
    ({"obs_type": "lidar", "num_beams": 0}, ValueError, "num_beams"),
    ({"obs_type": "lidar", "num_beams": 64.0}, TypeError, "num_beams"),
    ({"obs_type": "lidar", "lidar_fov": 7.0}, ValueError, "lidar_fov"),
    ({"obs_type": "lidar", "lidar_range": 0.0}, ValueError, "lidar_range"),
    ({"obs_type": "lidar", "lidar_noise_std": -1.0}, ValueError, "lidar_noise_std"),
])
def test_bad_sensor_arguments_are_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        TrackVectorEnv(1, "cpu", seed=0, **kwargs)
