"""The memory of a construction is estimated before anything is allocated, per part, and a construction
that cannot fit is refused with the estimate and what is available (issue 9, item 12)."""

import time

import numpy as np
import pytest
import warp as wp

from trackgen_env.course import memory
from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv
from trackgen_env.generators import TrackGenConfig

ENVS = [TrackVectorEnv, GatesVectorEnv]


class _Allocations:
    """Counts what Warp's CPU allocator holds (allocated, not yet freed): an independent measure."""

    def __init__(self, monkeypatch):
        alloc = wp.get_device("cpu").default_allocator
        self.live, self.largest = {}, 0
        allocate, deallocate = alloc.allocate, alloc.deallocate

        def counting_allocate(n):
            ptr = allocate(n)
            self.live[ptr] = n
            self.largest = max(self.largest, n)
            return ptr

        def counting_deallocate(ptr, n):
            self.live.pop(ptr, None)
            deallocate(ptr, n)

        monkeypatch.setattr(alloc, "allocate", counting_allocate)
        monkeypatch.setattr(alloc, "deallocate", counting_deallocate)

    @property
    def bytes(self) -> int:
        return sum(self.live.values())


@pytest.mark.parametrize("cls, kwargs", [
    (TrackVectorEnv, {}),
    (TrackVectorEnv, {"track": TrackGenConfig(point_spacing=0.05, max_loop_length=60.0), "num_lookahead": 20}),
    (TrackVectorEnv, {"autoreset_mode": "SameStep", "render_mode": "rgb_array"}),
    (GatesVectorEnv, {}),
])
def test_the_estimate_matches_what_the_construction_allocates(cls, kwargs, monkeypatch):
    E = 96
    estimate = cls.memory_estimate(E, device="cpu", **kwargs)
    counter = _Allocations(monkeypatch)
    env = cls(E, "cpu", seed=0, **kwargs)
    allocated = counter.bytes
    used = env.memory_usage()
    # what Warp holds (the NumPy outputs and the frames come later, at step / render)
    arrays = estimate.total - estimate.parts.get("numpy outputs", 0) - estimate.parts.get("render frames", 0)
    assert 0.8 <= arrays / allocated <= 1.25, (arrays, allocated)
    assert set(used) == set(estimate.parts)
    for name, b in used.items():
        assert 0.8 * b <= estimate.parts[name] <= 1.25 * b + 64, name
    assert {"generator", "checkpoints", "progress", "env buffers"} <= set(used)
    assert estimate.per_env * E <= estimate.total


@pytest.mark.parametrize("cls", ENVS)
def test_a_construction_that_cannot_fit_is_refused_fast_without_a_big_allocation(cls, monkeypatch):
    cls(2, "cpu", seed=0)  # the kernels are loaded: the time is the estimate's
    counter = _Allocations(monkeypatch)
    t = time.perf_counter()
    with pytest.raises(MemoryError, match=rf"{cls.__name__}\(num_envs=100000000\) needs an estimated [0-9.]+ [TGM]iB "
                                          r"of host memory on cpu \(.*generator.*\), more than the [0-9.]+ [TGMK]iB "
                                          r"available: at most ~\d+ envs"):
        cls(10**8, "cpu", seed=0)
    assert time.perf_counter() - t < 1.0
    assert counter.largest < 1 << 20


def test_the_limit_is_what_is_available(monkeypatch):
    estimate = TrackVectorEnv.memory_estimate(512, device="cpu")
    monkeypatch.setattr(memory, "available_bytes", lambda device: estimate.total - 1)
    with pytest.raises(MemoryError, match=f"at most ~{estimate.max_envs(estimate.total - 1)} envs"):
        TrackVectorEnv(512, "cpu", seed=0)
    assert estimate.max_envs(estimate.total - 1) == 511
    monkeypatch.setattr(memory, "available_bytes", lambda device: estimate.total)
    TrackVectorEnv(512, "cpu", seed=0)


def test_available_bytes_on_the_cpu_is_positive_and_at_most_the_physical_memory():
    avail = memory.available_bytes("cpu")
    import os
    assert 0 < avail <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def test_a_course_estimate_matches_the_built_course():
    import dataclasses

    from trackgen_env import tools
    from trackgen_env.course import Course

    def build(e):
        return Course.track(dataclasses.replace(TrackGenConfig(), num_envs=e, device="cpu"), checkpoint_spacing=0.6,
                            collision=tools.BandCollision("segments"), seeds=0)

    est = memory.memory_estimate(build, memory.course_parts, 200, "cpu")
    built = memory.course_parts(build(200))
    assert est.parts == pytest.approx(built, rel=0.01)
    assert np.isclose(est.total, sum(built.values()), rtol=0.01)


@pytest.mark.cuda
def test_the_estimate_matches_the_free_memory_a_cuda_construction_takes():
    if not wp.is_cuda_available():
        pytest.skip("no CUDA device")
    dev = wp.get_device("cuda:0")
    E = 1 << 17
    estimate = TrackVectorEnv.memory_estimate(E, device="cuda:0")
    wp.synchronize_device(dev)
    before = dev.free_memory
    env = TrackVectorEnv(E, "cuda:0", seed=0)
    wp.synchronize_device(dev)
    taken = before - dev.free_memory
    arrays = estimate.total - estimate.parts.get("render frames", 0)
    assert 0.8 <= arrays / taken <= 1.25, (arrays, taken)
    env.close()


def test_a_subclass_with_its_own_constructor_is_estimated_through_its_base():
    class F1TenthEnv(TrackVectorEnv):
        def __init__(self, n):
            super().__init__(n, "cpu", seed=1, car="f1tenth", max_episode_steps=50)

    env = F1TenthEnv(5)
    estimate = F1TenthEnv.memory_estimate(5, device="cpu", car="f1tenth")
    assert estimate.total == pytest.approx(sum(env.memory_usage().values()), rel=0.05)


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
@pytest.mark.parametrize("num_envs, error", [(0, ValueError), (-3, ValueError), (2.0, TypeError), (True, TypeError)])
def test_the_estimate_refuses_the_num_envs_the_constructor_refuses(cls, num_envs, error, monkeypatch):
    def no_probe(*args, **kwargs):
        raise AssertionError("probed before num_envs was checked")

    monkeypatch.setattr(memory, "probe", no_probe)
    with pytest.raises(error, match="num_envs") as estimated:
        cls.memory_estimate(num_envs, device="cpu")
    with pytest.raises(error) as constructed:
        cls(num_envs, "cpu")
    assert str(estimated.value) == str(constructed.value)
    with pytest.raises(error, match="num_envs"):  # the course estimate too
        memory.memory_estimate(no_probe, no_probe, num_envs, "cpu")


@pytest.mark.parametrize("cls", [TrackVectorEnv, GatesVectorEnv])
def test_the_estimate_refuses_an_argument_the_constructor_does_not_take(cls, monkeypatch):
    def no_probe(*args, **kwargs):
        raise AssertionError("probed with an unknown argument")

    monkeypatch.setattr(memory, "probe", no_probe)
    with pytest.raises(TypeError, match=r"does not take: \['cars'\]"):  # a typo of car=
        cls.memory_estimate(4, device="cpu", cars="full")
