"""Gymnasium's vector wrappers on the envs in each autoreset mode: docs/envs.md's table is computed here.

Each wrapper runs on ``TrackGen-Track-v0`` (2 envs at rest, episodes truncated every 3 steps, 7
steps; under DISABLED the ended envs are reset with ``reset_mask``) in NEXT_STEP, SAME_STEP and
DISABLED with NumPy outputs, and in NEXT_STEP with ``output="torch"``. A cell says what happened:
``yes`` (it ran and its check held), ``yes, warns`` (the same, with a warning from the wrapper),
``refused (E)`` (the wrapper raised E when constructed), ``fails (E)`` (E raised while stepping),
``wrong`` (it ran, its check did not hold). The test compares the table with the one between the
markers in docs/envs.md; ``python tests/test_env_wrappers.py`` prints the table to paste there.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import tempfile
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from gymnasium.wrappers import vector as vw

import trackgen_env  # noqa: F401

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "envs.md"
BEGIN = "<!-- wrapper table: computed by tests/test_env_wrappers.py -->"
END = "<!-- end of wrapper table -->"
STEPS, EPISODE = 7, 3
COLUMNS = (
    ("NEXT_STEP", AutoresetMode.NEXT_STEP, "numpy"),
    ("SAME_STEP", AutoresetMode.SAME_STEP, "numpy"),
    ("DISABLED", AutoresetMode.DISABLED, "numpy"),
    ('`output="torch"` (NEXT_STEP)', AutoresetMode.NEXT_STEP, "torch"),
)


def _episode_lengths(info) -> list[int]:
    if "episode" not in info:
        return []
    ended = np.asarray(info["_episode"], dtype=bool)
    return np.asarray(info["episode"]["l"])[ended].astype(int).tolist()


def _four_episodes_of_3_steps(env, run) -> bool:
    return run["lengths"] == [EPISODE] * 4


def _finite(env, run) -> bool:
    return all(np.isfinite(np.asarray(x)).all() for x in run["obs"] + run["rewards"])


def _obs_statistics_updated(env, run) -> bool:
    return _finite(env, run) and env.obs_rms.count > STEPS


def _video_written(env, run) -> bool:
    env.close()
    return any(pathlib.Path(env.video_folder).glob("*.mp4"))


#: name in the table -> (wrap(env, folder) -> wrapped env, check(wrapped, run) -> bool, takes torch actions)
WRAPPERS = {
    "`RecordEpisodeStatistics`": (lambda env, _: vw.RecordEpisodeStatistics(env), _four_episodes_of_3_steps, False),
    "`NormalizeObservation`": (lambda env, _: vw.NormalizeObservation(env), _obs_statistics_updated, False),
    "`NormalizeReward`": (lambda env, _: vw.NormalizeReward(env), _finite, False),
    "`ClipAction`": (lambda env, _: vw.ClipAction(env), _finite, False),
    "`RecordVideo`": (lambda env, folder: vw.RecordVideo(env, folder, episode_trigger=lambda k: k == 0,
                                                         record_first_only=True), _video_written, False),
    "`NumpyToTorch(RecordEpisodeStatistics(env))`": (lambda env, _: vw.NumpyToTorch(vw.RecordEpisodeStatistics(env)),
                                                     _four_episodes_of_3_steps, True),
}


def _cell(name: str, mode: AutoresetMode, output: str) -> str:
    wrap, check, torch_actions = WRAPPERS[name]
    env = gymnasium.make_vec("TrackGen-Track-v0", num_envs=2, device="cpu", seed=0, max_episode_steps=EPISODE,
                             autoreset_mode=mode, output=output, render_mode="rgb_array", render_size=32)
    action = np.zeros((2, 2), np.float32)
    if torch_actions or output == "torch":
        import torch

        action = torch.from_numpy(action)
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            wrapped = wrap(env, str(pathlib.Path(folder) / "videos"))
        except Exception as exc:  # noqa: BLE001 - the table records what the wrapper raised
            return f"refused ({type(exc).__name__})"
        run = {"obs": [], "rewards": [], "lengths": []}
        try:
            wrapped.reset(seed=0)
            for _ in range(STEPS):
                obs, reward, terminated, truncated, info = wrapped.step(action)
                run["obs"].append(obs)
                run["rewards"].append(reward)
                # read now: RecordEpisodeStatistics' info["_episode"] is its own array, which a
                # masked reset clears in place
                run["lengths"] += _episode_lengths(info)
                done = np.asarray(terminated, dtype=bool) | np.asarray(truncated, dtype=bool)
                if mode is AutoresetMode.DISABLED and done.any():
                    wrapped.reset(options={"reset_mask": done})
            ok = check(wrapped, run)
        except Exception as exc:  # noqa: BLE001
            return f"fails ({type(exc).__name__})"
        finally:
            env.close()
        warned = any(issubclass(w.category, UserWarning) for w in caught)
    return ("yes, warns" if warned else "yes") if ok else "wrong"


def compute_table() -> str:
    """The Markdown table of every wrapper in every column (see the module docstring)."""
    rows = ["| Wrapper | " + " | ".join(c[0] for c in COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for name in WRAPPERS:
        rows.append(f"| {name} | " + " | ".join(_cell(name, mode, output) for _, mode, output in COLUMNS) + " |")
    return "\n".join(rows)


def documented_table() -> str:
    page = DOCS.read_text()
    start, stop = page.index(BEGIN) + len(BEGIN), page.index(END)
    return page[start:stop].strip()


@pytest.mark.skipif(importlib.util.find_spec("moviepy") is None, reason="RecordVideo needs moviepy (not installed)")
@pytest.mark.skipif(importlib.util.find_spec("array_api_compat") is None,
                    reason="NumpyToTorch needs array-api-compat (pip install 'gymnasium[torch]')")
def test_the_wrapper_table_of_docs_envs_md_is_what_the_wrappers_do():
    pytest.importorskip("torch")
    table = compute_table()
    assert documented_table() == table, f"docs/envs.md's wrapper table is out of date; the table is:\n\n{table}\n"


@pytest.mark.skipif(importlib.util.find_spec("array_api_compat") is None,
                    reason="NumpyToTorch needs array-api-compat (pip install 'gymnasium[torch]')")
def test_the_numpy_to_torch_example_gives_torch_outputs_and_episode_statistics():
    """docs/envs.md's answer for torch outputs under Gymnasium's NumPy wrappers (issue 9, item 11)."""
    import re

    import torch

    block = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)[4]
    assert "NumpyToTorch" in block
    ns = {}  # the block imports what it uses
    exec(block.replace("num_envs=16", "num_envs=2, max_episode_steps=3"), ns)
    envs = ns["envs"]
    obs, _ = envs.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.shape == (2, 38)
    for _ in range(3):
        obs, reward, terminated, truncated, info = envs.step(torch.zeros(2, 2))
    assert isinstance(reward, torch.Tensor) and bool(truncated.all())
    assert torch.equal(info["episode"]["l"], torch.tensor([3, 3])) and bool(info["_episode"].all())
    envs.close()


if __name__ == "__main__":
    sys.stdout.write(compute_table() + "\n")
