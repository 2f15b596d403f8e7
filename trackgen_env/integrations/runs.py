"""A training run's files, read back: its policy file in a run's folder, ``train.json``, the SB3
observation statistics, either trainer's policy as ``obs -> actions``, and torch's device and threads for
a policy.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

import warp as wp

from ..core.checks import check_int, resolve_device
from .rsl_rl import load_policy


__all__ = ["VECNORMALIZE", "model_file", "read_train_record", "observation_stats", "unusable_file", "run_trainer_of",
           "load_run_policy", "load_model", "load_observation_stats", "policy_torch_device",
           "torch_threads_for", "using_torch_threads"]

VECNORMALIZE = {"file": "vecnormalize.pkl", "norm_obs": True, "norm_reward": True, "clip_obs": 10.0}


def model_file(path: str | os.PathLike) -> Path:
    """The policy file that ``path`` names: the file itself, or the one in a run's folder (``train``'s ``out``):
    ``policy.pt`` of an rsl_rl run, ``model.zip`` of an SB3 run.

    Raises:
        FileNotFoundError: no such file, or a folder with neither.
    """
    path = Path(path)
    if path.is_dir():
        for name in ("policy.pt", "model.zip"):
            if (path / name).is_file():
                return path / name
        raise FileNotFoundError(f"no policy.pt or model.zip in the folder {str(path)!r} (expected the folder of a run, "
                                f"where `train` writes them, or the policy file itself)")
    if not path.is_file():
        raise FileNotFoundError(
            f"no model at {str(path)!r} (expected the policy.pt or model.zip written by `train`, or "
            f"the folder of its run)"
        )
    return path


def read_train_record(model_path: str | os.PathLike) -> dict[str, Any]:
    """The ``train.json`` beside ``model_path`` (``{}`` when there is none).

    Raises:
        ValueError: the file is not a JSON object, or a field ``eval`` reads has the wrong type
            (naming the file and the field).
        OSError: it cannot be read.
    """
    path = Path(model_path).with_name("train.json")
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: expected the JSON record that train writes, "
                         f"but the file is not JSON ({exc})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}: expected the JSON object that train writes, got a {type(record).__name__}")
    _check_record(record, path)
    return record


#: the fields of ``train.json`` that ``eval`` reads, and the JSON type each must have
_RECORD_FIELDS = {"env_id": str, "seed": int, "num_envs": int, "env_kwargs": dict, "spec": dict, "plugin": str,
                  "vecnormalize": dict, "trainer": str, "rsl_rl": dict}
#: the fields that may also be null
_NULLABLE = ("spec", "plugin", "vecnormalize")


def _check_record(record: dict, path: Path) -> None:
    """Refuse a ``train.json`` whose fields ``eval`` reads have the wrong JSON types (naming the field)."""
    for name, kind in _RECORD_FIELDS.items():
        if name not in record or (record[name] is None and name in _NULLABLE):
            continue
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"{path}: field {name!r} must be a JSON {kind.__name__}, got {value!r} (a train.json "
                             "that train did not write, or edited)"[:300])
    if "seed" in record and "num_envs" not in record:
        raise ValueError(f"{path}: a record with a 'seed' also needs the training run's 'num_envs' (eval checks that "
                         "its courses are held out)")
    if "num_envs" in record and record["num_envs"] < 1:
        raise ValueError(f"{path}: field 'num_envs' must be >= 1, got {record['num_envs']}")


def observation_stats(model_path: str | os.PathLike, record: dict[str, Any]) -> Path | None:
    """The ``vecnormalize.pkl`` the policy of ``model_path`` needs, or None when it runs on raw observations.

    The rule follows what ``train.json`` (``record``) says: a run that records ``"vecnormalize"``
    with ``norm_obs`` needs the file; a record without the key (written before train recorded
    it) or no record at all runs without the file if it is missing, with a warning.

    Raises:
        FileNotFoundError: the record says the run normalised observations and the file is missing.
    """
    path = Path(model_path).with_name(VECNORMALIZE["file"])
    if path.is_file():
        return path
    said = record.get("vecnormalize")
    if said is not None and said.get("norm_obs"):
        raise FileNotFoundError(
            f"no {path}: the run's train.json records that the policy was trained on normalised observations, "
            f"and {VECNORMALIZE['file']} holds the statistics it needs (copy it beside {Path(model_path).name})")
    if said is None:
        warnings.warn(f"no {path}: running the policy on raw observations (a policy trained with train needs the "
                      "normalisation statistics of its run, written beside model.zip)", RuntimeWarning, stacklevel=3)
    return None


def unusable_file(path, what: str, expected: str, model_path, exc: Exception) -> ValueError:
    """The error for a file of a run that cannot be loaded (damaged, another run's, no such format):
    naming the file, what it should hold and the loader's own message."""
    detail = str(exc).removeprefix("Error: ")  # SB3 prefixes its own
    written = ("that train wrote" if Path(path).name == Path(model_path).name else
               f"that train wrote beside {Path(model_path).name}")
    return ValueError(f"{path}: cannot load {what} ({type(exc).__name__}: {detail}); expected the {expected} "
                      f"{written}")


#: the policy file of each trainer's run, by suffix
_POLICY_FILES = {".zip": "sb3", ".pt": "rsl_rl"}


def run_trainer_of(model_path, record: dict[str, Any]) -> str:
    """The trainer whose policy ``model_path`` is: ``"sb3"`` for a ``model.zip``, ``"rsl_rl"`` for a ``.pt``
    (``policy.pt``, TorchScript, or ``model.pt``, the runner's checkpoint), checked against the run's ``train.json``
    (``record``; a record without ``"trainer"`` is an SB3 run's).

    Raises:
        ValueError: another kind of file, or one of the trainer that ``train.json`` does not record.
    """
    path = Path(model_path)
    trainer = _POLICY_FILES.get(path.suffix)
    if trainer is None:
        raise ValueError(f"{path}: expected the policy of a run, model.zip (--trainer sb3) or policy.pt / model.pt "
                         f"(--trainer rsl_rl), got a {path.suffix or 'suffixless'} file")
    recorded = record.get("trainer", "sb3") if record else trainer
    if recorded != trainer:
        raise ValueError(f"{path} is a {trainer} policy, but {path.with_name('train.json')} records a {recorded} run: "
                         f"pass that run's own policy ({'model.zip' if recorded == 'sb3' else 'policy.pt'})")
    return trainer


def load_run_policy(model_path, record: dict[str, Any], policy_device: str, stats: Path | None):
    """A run's deterministic policy: ``(act(obs [N, D] NumPy) -> [N, A] actions, observation shape)``, of either
    trainer (:func:`run_trainer_of`): an SB3 ``model.zip`` with its observation statistics (``stats``,
    :func:`observation_stats`), or an rsl_rl ``policy.pt`` / ``model.pt``.

    Raises:
        ValueError: a file its trainer cannot load (naming it).
    """
    if run_trainer_of(model_path, record) == "rsl_rl":
        act, obs_dim, _ = load_policy(model_path, policy_device, (record.get("rsl_rl") or {}).get("actor"))
        return act, (obs_dim,)
    model = load_model(model_path, policy_device)
    # without its venv: normalize_obs needs none
    normalize = None if stats is None else load_observation_stats(stats, model_path, model.observation_space.shape)

    def act(obs):
        o = normalize.normalize_obs(obs) if normalize is not None else obs
        return model.predict(o, deterministic=True)[0]

    return act, model.observation_space.shape


def load_model(model_path, policy_device: str):
    """``PPO.load`` of ``model_path`` on ``policy_device``.

    Raises:
        ValueError: the file is no model SB3 can load (naming the file).
    """
    from stable_baselines3 import PPO

    try:
        return PPO.load(model_path, device=policy_device)
    except Exception as exc:  # SB3 raises ValueError for a non-zip, KeyError / pickle errors for others
        raise unusable_file(model_path, "the PPO model", "model.zip", model_path, exc) from exc


def load_observation_stats(path, model_path, observation_shape: tuple[int, ...]):
    """The ``VecNormalize`` that :func:`train` pickled at ``path`` (without its venv: ``set_venv`` or
    ``normalize_obs`` use it), checked against the policy's ``observation_shape``.

    Raises:
        ValueError: the file cannot be loaded (empty, damaged, another kind of pickle) or holds the
            statistics of other observations (another run's), naming the file.
    """
    import pickle

    try:
        with open(path, "rb") as f:
            stats = pickle.load(f)
        shape = stats.obs_rms.mean.shape  # a VecNormalize's: else another kind of pickle
        if shape != tuple(observation_shape):
            raise ValueError(f"statistics of {shape} observations for a policy of {tuple(observation_shape)}")
    except Exception as exc:  # whatever pickle or a foreign object raises
        raise unusable_file(path, "the run's observation statistics", VECNORMALIZE["file"], model_path, exc) from exc
    return stats


def policy_torch_device(device: str | None) -> str:
    """The policy's torch device for a Warp env device: CUDA next to a CUDA env, else the CPU."""
    return "cuda" if wp.get_device(resolve_device(device)).is_cuda else "cpu"


def torch_threads_for(policy_device: str, torch_threads: int | None = None) -> int | None:
    """torch's intra-op thread count for a policy on ``policy_device``: ``torch_threads`` when given, else
    1 on the CPU (as CleanRL's scripts do) and None (torch's default, unchanged) on CUDA.

    Why 1 on the CPU: the 64-64 MLP policy gains nothing from more threads, and torch's idle
    OpenMP threads spin beside the env (Warp runs CPU kernels on one thread) and beside other
    busy processes (measured in docs/training.md, "torch threads": up to several times faster with one).

    Raises:
        ValueError, TypeError: ``torch_threads`` not None or an int >= 1.
    """
    if torch_threads is not None:
        return check_int("torch_threads", torch_threads, lo=1)
    return 1 if policy_device == "cpu" else None


@contextlib.contextmanager
def using_torch_threads(count: int | None):
    """Run the block with ``torch.set_num_threads(count)`` (None: unchanged), then restore the caller's count."""
    import torch

    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
