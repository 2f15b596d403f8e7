"""The one read-only-after-construction mechanism (:mod:`trackgen_env.envs.lifecycle`)."""

from __future__ import annotations

import pytest
import warp as wp

from trackgen_env.envs.base import CourseVectorEnv
from trackgen_env.envs.car import CAR_PRESETS, CarState
from trackgen_env.envs.lifecycle import EVERY_ATTRIBUTE, ReadOnlyAfterConstruction
from trackgen_env.envs.sharded import ShardedVectorEnv
from trackgen_env.envs.single import SingleCourseEnv


@pytest.mark.parametrize("cls", [CourseVectorEnv, SingleCourseEnv, ShardedVectorEnv, CarState])
def test_every_read_only_object_uses_the_one_mechanism(cls):
    assert issubclass(cls, ReadOnlyAfterConstruction)
    own = [k for k in cls.__mro__ if k.__module__.startswith("trackgen_env.") and k is not ReadOnlyAfterConstruction]
    # no class of the package refuses a set its own way beside it
    assert [k for k in own if "__setattr__" in vars(k) or "__delattr__" in vars(k)] == []


class _Thing(ReadOnlyAfterConstruction):
    def __init__(self, frozen):
        self.a = 1
        self.b = 2
        self._freeze(frozen)


def test_frozen_names_refuse_set_and_delete_others_do_not():
    thing = _Thing({"a"})
    with pytest.raises(AttributeError, match=r"_Thing\.a is read-only"):
        thing.a = 3
    with pytest.raises(AttributeError, match="read-only"):
        del thing.a
    thing.b = 3
    del thing.b
    thing.c = 4
    assert thing.a == 1 and thing.c == 4


def test_every_attribute_freezes_new_names_too():
    thing = _Thing(EVERY_ATTRIBUTE)
    for name in ("a", "b", "new"):
        with pytest.raises(AttributeError, match="read-only"):
            setattr(thing, name, 0)


def test_car_state_is_read_only_after_construction():
    state = CarState(CAR_PRESETS["rc10"], 2, wp.get_device("cpu"))
    with pytest.raises(AttributeError, match=r"CarState\.speed is read-only after construction"):
        state.speed = None
    with pytest.raises(AttributeError, match="read-only"):
        state.new_field = 1
