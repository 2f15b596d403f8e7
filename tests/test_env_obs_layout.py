"""The observation tables of the env docstrings, docs/gates-env.md and the README follow the one layout definition
(``OBS_FIELDS`` of each env module, whose offsets the observation kernels use)."""

from __future__ import annotations

import pathlib
import re

import pytest

from trackgen_env.envs import gates, track

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _index_cells(text: str, heading: str) -> list[str]:
    """The first-column cells of the first ``| Index | Observation ...`` table after ``heading``
    (continuation rows skipped)."""
    text = text[text.index(heading):]
    rows = re.search(r"\| Index\s*\| Observation.*?\n((?:\s*\|.*\n)+)", text).group(1).splitlines()
    cells = [row.strip().split("|")[1].strip() for row in rows]
    return [c for c in cells if c and not set(c) <= {"-"}]


def _ranges(fields) -> list[str]:
    return [f"{lo}" if hi == lo + 1 else f"{lo}-{hi - 1}" for _, lo, hi in fields]


@pytest.mark.parametrize("source", ["docstring", "docs/gates-env.md"])
def test_gates_observation_table_follows_obs_fields(source):
    text = gates.GatesVectorEnv.__doc__ if source == "docstring" else (ROOT / source).read_text()
    assert _index_cells(text, "Observation") == _ranges(gates.OBS_FIELDS)
    assert gates.OBS_FIELDS[-1][2] == gates.OBS_DIM == gates.GatesVectorEnv(1, "cpu").single_observation_space.shape[0]


@pytest.mark.parametrize("source", ["docstring", "README.md"])
def test_track_observation_table_follows_obs_fields(source):
    text = track.TrackVectorEnv.__doc__ if source == "docstring" else (ROOT / source).read_text()
    cells = _index_cells(text, "Observation")
    k = track.OBS_LOOKAHEAD
    assert cells == [str(i) for i in range(len(track.OBS_FIELDS))] + [f"{k} + 3k, {k + 1} + 3k", f"{k + 2} + 3k"]
