"""Attributes after construction: read-only where the step graph or a buffer was built from them, live
where the next call uses them; never silently ignored (issue 9, item 5)."""

import dataclasses

import gymnasium
import numpy as np
import pytest
import warp as wp

import trackgen_env  # noqa: F401  (registers the envs)
from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv
from trackgen_env.envs.base import CourseVectorEnv

if not wp.is_cpu_available():  # a GPU host's Warp without its CPU compiler: the lists below build CPU envs
    pytest.skip("builds CPU envs at collection, and this Warp has no CPU backend", allow_module_level=True)

ENVS = [TrackVectorEnv, GatesVectorEnv]
_BUILT = {cls: cls(2, "cpu", seed=0) for cls in ENVS}  # 2 envs: no memory probes, cheap
READ_ONLY = [(cls, name) for cls, env in _BUILT.items() for name in sorted(env._frozen)]


@pytest.mark.parametrize("cls, name", READ_ONLY, ids=[f"{c.__name__}.{n}" for c, n in READ_ONLY])
def test_every_read_only_attribute_refuses_a_new_value_and_keeps_its_own(cls, name):
    env = cls(2, "cpu", seed=0)
    before = getattr(env, name)
    with pytest.raises(AttributeError, match=rf"{cls.__name__}\.{name} is read-only: it is fixed at construction"):
        setattr(env, name, object())
    with pytest.raises(AttributeError, match="read-only"):
        delattr(env, name)
    assert getattr(env, name) is before


@pytest.mark.parametrize("cls", ENVS)
def test_every_constructor_argument_is_kept_read_only_or_live_or_declared_not_kept(cls):
    """A new constructor argument cannot be forgotten: it must land in an attribute this
    mechanism covers, or be declared in ``argument_attributes`` as kept by none."""
    env = _BUILT[cls]
    mapping = {**CourseVectorEnv.argument_attributes, **cls.argument_attributes}
    for arg in cls.constructor_arguments():
        attribute = mapping.get(arg, arg)
        if attribute is None:
            assert arg in ("seed", "capture"), f"{arg} is kept by no attribute"
            continue
        assert attribute in env._frozen or attribute in cls.live_fields, f"{arg} -> {attribute} is neither"
        if attribute in env._frozen:
            with pytest.raises(AttributeError, match=rf"build a new env with .*{arg}="):
                setattr(env, attribute, None)


@pytest.mark.parametrize("cls, names", [
    (TrackVectorEnv, ["car", "lookahead_horizon", "checkpoint_spacing", "off_track_penalty", "num_lookahead",
                      "max_episode_steps", "laps", "track_config", "state", "course", "graph", "observation_space",
                      "metadata", "info_fields"]),
    (GatesVectorEnv, ["quadrotor", "bar_thickness", "gates_config", "gate_bonus", "bounds_margin", "drone",
                      "position", "half_extents", "course", "graph", "action_space"]),
])
def test_the_reported_attributes_are_read_only(cls, names):
    """The attributes issue 9 found accepted and ignored, and what they derive."""
    assert set(names) <= _BUILT[cls]._frozen


def test_the_car_and_the_configs_are_frozen_all_the_way_down():
    env = TrackVectorEnv(2, "cpu", seed=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.car.max_steer = 0.1
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.track_config.width = 2.0
    for name, value in (("params", env.car), ("speed", env.state.speed), ("num_envs", 3)):
        with pytest.raises(AttributeError, match=f"CarState.{name} is read-only"):
            setattr(env.state, name, value)
    gates = GatesVectorEnv(2, "cpu", seed=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        gates.quadrotor.mass = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        gates.gates_config.gate_width = 3.0


@pytest.mark.parametrize("cls", ENVS)
def test_render_size_and_render_mode_are_live_and_checked(cls):
    env = cls(2, "cpu", seed=0, render_mode="rgb_array", render_size=32)
    env.reset(seed=0)
    assert env.render()[0].shape == (32, 32, 3)
    env.render_size = 48
    assert env.render()[0].shape == (48, 48, 3) and env.render_frames().shape == (2, 48, 48, 3)
    with pytest.raises(ValueError, match="render_size must be in"):
        env.render_size = 8
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        env.render_mode = "ansi"
    assert env.render_size == 48 and env.render_mode == "rgb_array"
    env.render_mode = None
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


def test_new_attributes_and_gymnasium_bookkeeping_stay_settable():
    env = TrackVectorEnv(2, "cpu", seed=0)
    env.my_note = 1  # not ours: nothing reads it
    env.spec = None  # gymnasium.make_vec sets it after construction
    env.np_random = np.random.default_rng(0)
    assert env.my_note == 1


# -- the single env (gymnasium.make): the vector env's attributes, live or read-only as there -------
SINGLE = {TrackVectorEnv: "TrackGen-Track-v0", GatesVectorEnv: "TrackGen-Gates-v0"}
_SINGLE_BUILT = {cls: gymnasium.make(env_id, device="cpu", seed=0).unwrapped for cls, env_id in SINGLE.items()}


@pytest.mark.parametrize("cls, name", READ_ONLY, ids=[f"{SINGLE[c]}.{n}" for c, n in READ_ONLY])
def test_the_single_env_refuses_every_read_only_attribute_of_its_vector_env(cls, name):
    """Before the fix ``gymnasium.make(...).unwrapped.laps = 3`` was accepted and ignored."""
    env = _SINGLE_BUILT[cls]
    assert name in env.vector_env._frozen  # the one-env vector env freezes what the 2-env one does
    if name in ("num_envs", "single_observation_space", "single_action_space", "autoreset_mode"):
        # a vector env's own: not an attribute of the single env (test_peer_torchrl.py), and not settable there
        assert not hasattr(env, name)
        with pytest.raises(AttributeError, match=rf"{type(env).__name__}\.{name} is read-only"):
            setattr(env, name, object())
        assert not hasattr(env, name)
        return
    before = getattr(env, name)
    with pytest.raises(AttributeError, match=rf"{type(env).__name__}\.{name} is read-only"):
        setattr(env, name, object())
    with pytest.raises(AttributeError, match="read-only"):
        delattr(env, name)
    assert getattr(env, name) is before
    if name in ("laps", "max_episode_steps", "car"):
        assert before is getattr(env.vector_env, name)
        with pytest.raises(AttributeError, match=rf"build a new env with {name}="):
            setattr(env, name, None)


@pytest.mark.parametrize("env_id", SINGLE.values())
def test_the_single_env_passes_render_mode_and_render_size_to_its_vector_env(env_id):
    env = gymnasium.make(env_id, device="cpu", seed=0, render_mode="rgb_array")
    env.reset(seed=0)
    single = env.unwrapped
    assert env.render().shape == (256, 256, 3)
    single.render_size = 64
    assert single.vector_env.render_size == 64 and env.render().shape == (64, 64, 3)
    with pytest.raises(ValueError, match="render_size must be in"):
        single.render_size = 8
    with pytest.raises(ValueError, match="render_mode must be None or one of"):
        single.render_mode = "ansi"
    assert single.render_size == 64 and single.render_mode == "rgb_array"
    single.render_mode = None
    assert single.vector_env.render_mode is None and env.render_mode is None
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None
    env.close()
    # and the other way: built without a render mode, one set afterwards renders
    env = gymnasium.make(env_id, device="cpu", seed=0)
    env.reset(seed=0)
    env.unwrapped.render_mode = "rgb_array"
    assert env.render().shape == (256, 256, 3)
