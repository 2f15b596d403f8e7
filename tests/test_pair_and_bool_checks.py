"""Every (lo, hi) pair and every bool argument is checked by checks.py's one rule: the same
refusal, in the same words, wherever it is given."""

import numpy as np
import pytest

from trackgen_env.envs import GatesVectorEnv, TrackVectorEnv
from trackgen_env.pipeline import presets

PAIRS = [
    ("friction_range", lambda v: TrackVectorEnv(2, "cpu", seed=0, friction_range=v)),
    ("accel_range", lambda v: TrackVectorEnv(2, "cpu", seed=0, accel_range=v)),
    ("steer_range", lambda v: TrackVectorEnv(2, "cpu", seed=0, steer_range=v)),
    ("start_speed", lambda v: TrackVectorEnv(2, "cpu", seed=0, start_speed=v)),
    ("start_speed", lambda v: GatesVectorEnv(2, "cpu", seed=0, start_speed=v)),
    ("start_distance", lambda v: GatesVectorEnv(2, "cpu", seed=0, start_distance=v)),
    ("width_range", lambda v: presets.circuit(width_range=v, device="cpu")),
]
BOOLS = [
    ("random_start", lambda v: TrackVectorEnv(2, "cpu", seed=0, random_start=v)),
    ("capture", lambda v: TrackVectorEnv(2, "cpu", seed=0, capture=v)),
    ("capture", lambda v: GatesVectorEnv(2, "cpu", seed=0, capture=v)),
]


@pytest.mark.parametrize("name, make", PAIRS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(PAIRS)])
def test_a_pair_is_refused_alike_everywhere(name, make):
    for bad in (0.5, (0.5,), (0.5, 1.0, 1.5), "ab"):
        with pytest.raises(TypeError, match=rf"^{name} must be (None or )?a \(lo, hi\) pair.*, got "):
            make(bad)
    with pytest.raises(ValueError, match=rf"^{name} needs lo <= hi, got \(1.0, 0.5\)$"):
        make((1.0, 0.5))
    with pytest.raises(ValueError, match=rf"^{name}\[0\] must be finite, got nan$"):
        make((float("nan"), 1.0))
    with pytest.raises(TypeError, match=rf"^{name}\[1\] must be a number, got str"):
        make((0.5, "1"))


@pytest.mark.parametrize("name, make", BOOLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BOOLS)])
def test_a_bool_is_refused_alike_everywhere(name, make):
    for bad in (1, 0.0, "yes", None):
        with pytest.raises(TypeError, match=rf"^{name} must be a bool, got {type(bad).__name__} "):
            make(bad)
    make(np.bool_(True))  # a NumPy bool is a bool
