"""What the track env's docs say about the default tracks is what the default config produces."""

import dataclasses
import pathlib
import re

import numpy as np

from trackgen_env import TrackGenConfig, TrackGenerator
from trackgen_env.envs.track import TrackVectorEnv

README = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_the_stated_loop_length_is_the_default_configs_mean_loop_length():
    gen = TrackGenerator(dataclasses.replace(TrackGenConfig(), num_envs=512, device="cpu"), seeds=0)
    valid = gen.result.valid.numpy() != 0
    lengths = gen.result.loop_length.numpy()[valid]
    stated = [float(m) for m in re.findall(r"~(\d+) m\s+loops?", TrackVectorEnv.__doc__)]
    stated += [float(m) for m in re.findall(r"~(\d+) m loop", README)]
    assert len(stated) >= 3 and "~10 m" not in TrackVectorEnv.__doc__
    for value in stated:
        assert abs(value - lengths.mean()) <= 0.5, (value, lengths.mean())
    low, high = (float(x) for x in re.search(r"loops \((\d+)-(\d+) m\)", TrackVectorEnv.__doc__).groups())
    assert low <= np.percentile(lengths, 5) and np.percentile(lengths, 95) <= high
