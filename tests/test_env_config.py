"""The grouped constructor arguments (:mod:`trackgen_env.envs.config`): a group is its flat keywords."""

from __future__ import annotations

import dataclasses

import gymnasium
import numpy as np
import pytest

import trackgen_env  # noqa: F401 (registers the envs)
from trackgen_env.envs import (GatesRewardConfig, GatesStartConfig, GatesVectorEnv, RandomizationConfig,
                               TrackRewardConfig, TrackStartConfig, TrackVectorEnv)

TRACK_GROUPS = {"start_config": TrackStartConfig, "randomization_config": RandomizationConfig,
                "reward_config": TrackRewardConfig}
GATES_GROUPS = {"start_config": GatesStartConfig, "reward_config": GatesRewardConfig}
TRACK_FLAT = {"random_start": True, "start_yaw": 0.4, "start_speed": (0.5, 2.0), "friction_range": (0.8, 1.2),
              "steer_range": (0.9, 1.0), "off_track_penalty": 3.0}
GATES_FLAT = {"start": "random_gate", "random_start_prob": 0.7, "start_speed": (0.5, 1.0), "gate_bonus": 4.0,
              "approach_penalty": 0.1}


def _groups(groups: dict, flat: dict) -> dict:
    """The flat keywords as their groups."""
    out = {}
    for argument, cls in groups.items():
        names = {f.name for f in dataclasses.fields(cls)}
        out[argument] = cls(**{k: v for k, v in flat.items() if k in names})
    return out


def _rollout(env, steps: int = 30):
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    out = [obs]
    for _ in range(steps):
        action = rng.uniform(-1, 1, (env.num_envs, env.single_action_space.shape[0])).astype(np.float32)
        obs, reward, term, trunc, _ = env.step(action)
        out += [obs, reward, term, trunc]
    env.close()
    return out


@pytest.mark.parametrize("cls, groups, flat", [(TrackVectorEnv, TRACK_GROUPS, TRACK_FLAT),
                                               (GatesVectorEnv, GATES_GROUPS, GATES_FLAT)])
def test_a_group_is_its_flat_keywords(cls, groups, flat):
    by_keyword = cls(4, "cpu", seed=3, **flat)
    by_group = cls(4, "cpu", seed=3, **_groups(groups, flat))
    for argument in groups:
        assert getattr(by_keyword, argument) == getattr(by_group, argument)
    for name, value in flat.items():
        assert getattr(by_group, name) == (tuple(value) if isinstance(value, tuple) else value)
    for a, b in zip(_rollout(by_keyword), _rollout(by_group)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("cls, groups", [(TrackVectorEnv, TRACK_GROUPS), (GatesVectorEnv, GATES_GROUPS)])
def test_the_defaults_are_the_groups_defaults_and_the_groups_are_read_only(cls, groups):
    env = cls(2, "cpu", seed=0)
    try:
        for argument, group in groups.items():
            kept = getattr(env, argument)
            assert kept == group()
            for field in dataclasses.fields(group):
                assert getattr(env, field.name) == getattr(kept, field.name)
            with pytest.raises(dataclasses.FrozenInstanceError):
                kept.__setattr__(dataclasses.fields(group)[0].name, None)
            with pytest.raises(AttributeError, match=f"{argument}="):
                setattr(env, argument, group())
    finally:
        env.close()


@pytest.mark.parametrize("cls, argument, group, keyword", [
    (TrackVectorEnv, "start_config", TrackStartConfig(), {"start_yaw": 0.1}),
    (TrackVectorEnv, "randomization_config", RandomizationConfig(), {"accel_range": (0.9, 1.1)}),
    (TrackVectorEnv, "reward_config", TrackRewardConfig(), {"off_track_penalty": 2.0}),
    (GatesVectorEnv, "start_config", GatesStartConfig(), {"start": "random_gate"}),
    (GatesVectorEnv, "reward_config", GatesRewardConfig(), {"crash_penalty": 1.0}),
])
def test_a_group_and_one_of_its_keywords_together_are_refused(cls, argument, group, keyword):
    with pytest.raises(TypeError, match=f"either {argument}=.*{next(iter(keyword))}.*not both"):
        cls(2, "cpu", seed=0, **{argument: group}, **keyword)


def test_a_group_of_another_type_is_refused_and_bad_values_name_their_keyword():
    with pytest.raises(TypeError, match="start_config must be a TrackStartConfig or None, got GatesStartConfig"):
        TrackVectorEnv(2, "cpu", seed=0, start_config=GatesStartConfig())
    with pytest.raises(ValueError, match="start_yaw"):
        TrackVectorEnv(2, "cpu", seed=0, start_config=TrackStartConfig(start_yaw=-1.0))
    with pytest.raises(ValueError, match="gate_bonus"):
        GatesVectorEnv(2, "cpu", seed=0, reward_config=GatesRewardConfig(gate_bonus=-1.0))


def test_groups_pass_through_make_vec_and_make():
    envs = gymnasium.make_vec("TrackGen-Track-v0", num_envs=2, seed=0,
                              start_config=TrackStartConfig(random_start=True, start_speed=(0.5, 1.0)))
    assert envs.unwrapped.start_config.random_start and envs.unwrapped.start_speed == (0.5, 1.0)
    envs.close()
    env = gymnasium.make("TrackGen-Gates-v0", reward_config=GatesRewardConfig(gate_bonus=5.0))
    assert env.unwrapped.reward_config.gate_bonus == 5.0 and env.unwrapped.gate_bonus == 5.0
    env.close()


def test_the_envs_page_grouped_arguments_example_runs():
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "envs.md").read_text()
    section = page[page.index("## Grouped arguments"):]
    block = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    namespace: dict = {}
    exec(compile(block, "docs/envs.md", "exec"), namespace)
    envs = namespace["envs"]
    assert envs.unwrapped.start_config == TrackStartConfig(random_start=True, start_speed=(0.5, 2.0))
    assert envs.unwrapped.friction_range == (0.8, 1.2)
    envs.close()
