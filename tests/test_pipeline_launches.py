"""Eager rounds replay their recorded launches (pipeline.launches): no argument packing per
round, and a replay always runs on the arguments the caller passed."""

from __future__ import annotations

import numpy as np
import warp as wp

from trackgen_env import TrackGenConfig, TrackGenerator
from trackgen_env.pipeline.launches import Launches

DEV = "cpu"


@wp.kernel
def _fill(value: float, out: wp.array(dtype=float)):
    out[wp.tid()] = value


def test_a_generation_packs_each_round_kernel_once(monkeypatch):
    gen = TrackGenerator(TrackGenConfig(num_envs=64, device=DEV), seeds=0)
    reference = gen.result.centerline.numpy().copy()
    packed = []
    real = wp.launch

    def counting(kernel, *args, **kwargs):
        packed.append((kernel.key, kwargs.get("record_cmd", False)))
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(wp, "launch", counting)
    gen.generate(seeds=0)  # the same course again: 13 rounds
    round_kernels = [k for k, _ in packed if k not in ("_advance", "_begin", "_commit_in_place", "_draw")]
    assert round_kernels == [], f"kernels packed again in a later generation: {sorted(set(round_kernels))}"
    assert np.array_equal(gen.result.centerline.numpy(), reference)


def test_a_replay_runs_on_the_arguments_passed():
    launches = Launches()
    a = wp.zeros(4, dtype=float, device=DEV)
    b = wp.zeros(4, dtype=float, device=DEV)
    launches.launch(_fill, 4, inputs=[1.0], outputs=[a], device=DEV)
    launches.launch(_fill, 4, inputs=[1.0], outputs=[a], device=DEV)  # replayed
    assert np.all(a.numpy() == 1.0)
    launches.launch(_fill, 4, inputs=[2.0], outputs=[a], device=DEV)  # another value: recorded again
    assert np.all(a.numpy() == 2.0)
    launches.launch(_fill, 4, inputs=[3.0], outputs=[b], device=DEV)  # another array
    assert np.all(b.numpy() == 3.0) and np.all(a.numpy() == 2.0)
    launches.launch(_fill, 2, inputs=[4.0], outputs=[b], device=DEV)  # another launch size
    assert b.numpy().tolist() == [4.0, 4.0, 3.0, 3.0]
    launches.launch(_fill, 2, inputs=[4], outputs=[a], device=DEV)  # 4 == 4.0, but another type
    assert a.numpy().tolist() == [4.0, 4.0, 2.0, 2.0]
