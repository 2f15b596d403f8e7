"""Every value in a config's documented range yields a course: >= 99 % valid envs at 64 envs.

Each case sets one field (or the extremes of several) to an end of its documented range, the
others at their defaults; values outside the ranges are refused (tests of each config), and a
combination that fits rarely warns at construction (tested here).
"""

import math
import warnings

import numpy as np
import pytest

from trackgen_env import GateGenConfig, GateGenerator, TrackGenConfig, TrackGenerator
from trackgen_env.pipeline import presets

NUM_ENVS = 64

TRACK_CASES = [
    dict(width=0.01), dict(width=1.3), dict(width=2.0),  # up to size / (2 * min_turn_radius_factor + 1)
    dict(size=4.0), dict(size=100.0),  # the smallest square of the default 0.8 m band; a large one
    dict(point_spacing=0.01), dict(point_spacing=40.0 / 6.0),
    dict(num_control_points=5), dict(num_control_points=20),
    dict(radius_jitter=0.0), dict(radius_jitter=0.7), dict(angle_jitter=0.0), dict(angle_jitter=0.3),
    dict(elevation=2.0), dict(max_loop_length=math.pi * 10.0),
    dict(min_turn_radius_factor=1.0), dict(min_turn_radius_factor=5.75),
    dict(max_retries=12), dict(max_retries=64),
    # the extremes together
    dict(radius_jitter=0.7, angle_jitter=0.3),
    dict(radius_jitter=0.7, angle_jitter=0.3, width=2.0),
    dict(radius_jitter=0.7, angle_jitter=0.3, num_control_points=20),
    dict(radius_jitter=0.7, angle_jitter=0.3, num_control_points=20, max_retries=12),
    dict(radius_jitter=0.7, angle_jitter=0.3, num_control_points=20, width=2.0, max_retries=12),
    dict(radius_jitter=0.7, angle_jitter=0.3, min_turn_radius_factor=5.75),
    dict(radius_jitter=0.7, angle_jitter=0.3, size=4.0, num_control_points=5),
]

GATE_CASES = [  # the ends of each range with the other fields at their defaults (GateGenConfig's docstring)
    dict(size=7.3), dict(size=100.0),
    dict(num_gates=3, max_turn=2.8), dict(num_gates=4, max_turn=2.25), dict(num_gates=5, max_turn=1.95),
    dict(num_gates=6, max_turn=1.8), dict(num_gates=12, size=14.4), dict(num_gates=64, size=150.0, radius_jitter=0.0),
    dict(radius_jitter=0.0), dict(radius_jitter=0.5), dict(angle_jitter=0.0), dict(angle_jitter=0.55),
    dict(altitude_min=0.01), dict(altitude_min=2.5), dict(altitude_max=0.5), dict(altitude_max=3.6),
    dict(gate_width=0.66), dict(gate_height=0.93), dict(min_gate_spacing=0.1), dict(min_gate_spacing=1.87),
    dict(max_turn=1.685), dict(max_turn=3.1), dict(max_climb=0.65), dict(max_climb=5.0),
    dict(start_clearance=0.05), dict(start_clearance=1.1), dict(ground_clearance=0.0), dict(ground_clearance=2.0),
    dict(max_retries=2), dict(max_retries=64),
    # several fields at their joint bounds together
    dict(radius_jitter=0.5, angle_jitter=0.7, max_turn=1.95, size=8.6),
    dict(size=7.3, max_climb=0.75, start_clearance=1.0, min_gate_spacing=1.6),
    dict(gate_width=0.6, min_gate_spacing=1.7, max_turn=1.7, altitude_max=3.4),
    dict(num_gates=4, max_turn=2.25, size=6.0, start_clearance=1.5, max_climb=0.6, altitude_max=2.6),
]


def _rate(gen) -> float:
    return float(gen.result.valid.numpy().mean())


@pytest.mark.parametrize("kwargs", TRACK_CASES, ids=str)
def test_documented_track_values_yield_valid_tracks(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no low-valid-rate warning either
        gen = TrackGenerator(TrackGenConfig(num_envs=NUM_ENVS, device="cpu", **kwargs), seeds=0)
    assert _rate(gen) >= 0.99


@pytest.mark.parametrize("kwargs", GATE_CASES, ids=str)
def test_documented_gate_values_yield_valid_courses(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        gen = GateGenerator(GateGenConfig(num_envs=NUM_ENVS, device="cpu", **kwargs), seeds=0)
    assert _rate(gen) >= 0.99


def test_track_width_refusal_says_expected_and_received():
    with pytest.raises(ValueError,
                       match=r"width must be <= size / \(2 \* min_turn_radius_factor \+ 1\) = 2 m for size 10 m .*got "
                             r"width 2.5"):
        TrackGenConfig(width=2.5)


def test_construction_warns_once_with_the_measured_valid_rate():
    # a live parameter escapes the config's ranges: half the envs get an impossible band
    spec = presets.track(num_envs=8, device="cpu").with_randomize({"band.width": (0.8, 0.8)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gen = TrackGenerator(spec, seeds=0)
    assert not [w for w in caught if issubclass(w.category, UserWarning)]
    spec = presets.track(num_envs=8, device="cpu").with_randomize({"band.width": (3.2, 3.3)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gen = TrackGenerator(spec, seeds=0)
        gen.generate()  # later generations do not read back or warn
    low = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(low) == 1 and low[0].startswith("only 0 of 8 envs (0.0%) hold a valid track course")


def test_the_warning_counts_the_valid_envs():
    # a live size drawn below the config's range: 7 gates 1.5 m apart fit a 4-6 m disc only sometimes
    spec = presets.gates(num_envs=64, device="cpu").with_randomize({"layout.size": (4.0, 6.0)})
    with pytest.warns(UserWarning, match=r"only \d+ of 64 envs \(\d+\.\d%\)") as record:
        gen = GateGenerator(spec, seeds=0)
    valid = int(np.count_nonzero(gen.result.valid.numpy()))
    assert 0 < valid < 64
    assert f"only {valid} of 64 envs ({100 * valid / 64:.1f}%)" in str(record[0].message)
