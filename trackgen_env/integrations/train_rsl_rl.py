"""Train rsl_rl's PPO on thousands of envs (``python -m trackgen_env train --trainer rsl_rl``, the default).

The fast path: one native vector env of thousands of envs, its zero-copy torch outputs fed to
rsl_rl's ``OnPolicyRunner`` through :class:`~trackgen_env.integrations.rsl_rl.RslRlVecEnv` (SAME_STEP
auto-reset, copies of the outputs rsl_rl keeps), on the env's device, with no NumPy round trip.
rsl_rl brings PPO with empirical observation normalisation, the adaptive learning rate (KL
target), TensorBoard logging, the TorchScript / ONNX export of the policy, and its multi-GPU mode
(``torchrun``; on CPU processes over gloo). ``train_rsl_rl`` writes into ``out``:

* ``policy.pt``: the deterministic policy, TorchScript (observation normaliser included):
  ``torch.jit.load("policy.pt")(obs)`` gives the actions; ``eval`` runs it;
* ``policy.onnx``: the same policy as ONNX (input ``obs``, output ``actions``);
* ``model.pt``: rsl_rl's checkpoint (actor, critic, optimiser: ``OnPolicyRunner.load``);
* ``monitor.csv``: one line per finished training episode (return ``r``, length ``l``, wall
  seconds ``t``, ``laps``, ...), SB3's ``VecMonitor`` format;
* ``train.json``: the trainer, env, its arguments, the seed, the devices, the env steps
  requested and trained, the rsl_rl configuration, the wall time and the env-steps/s;
* ``learning_curve.png``; ``tb/``: rsl_rl's TensorBoard logs (``Episode/laps``, ``Episode/lap_rate``, ...).

Recipes (:data:`RSL_RL_RECIPES`, :data:`RSL_RL_PRESETS`) carry the env count and the step budget
with the PPO settings; each preset of :data:`~trackgen_env.integrations.train.TRAIN_PRESETS` names
the trainers it has a recipe for (:data:`PRESET_TRAINERS`).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import warp as wp

from ..core.checks import check_int, check_seed, resolve_device
from ..pipeline import PipelineSpec
from ..core.seeding import env_seeds
from . import rsl_rl as adapter  # its OnPolicyRunner is built on first use (rsl_rl is optional)
from .rsl_rl import make_rsl_rl_vec_env, require_rsl_rl
from .train import ENV_DEFAULTS, SPEC_ENVS, check_env_id, spec_env_kwargs, plot_learning_curve, train, train_preset
from .runs import using_torch_threads, torch_threads_for

__all__ = ["TRAINERS", "PRESET_TRAINERS", "RSL_RL_CONFIG", "RSL_RL_RECIPES", "RSL_RL_PRESETS", "SB3_STEPS",
           "resolve_trainer", "default_steps", "train_rsl_rl", "rank_seeds", "run_trainer", "check_run_folder"]

#: The trainers of ``train --trainer``; the first is the default.
TRAINERS = ("rsl_rl", "sb3")

#: The trainers each preset has a recipe for; the first is the preset's own (``train --preset NAME``).
PRESET_TRAINERS = {"circuit": ("rsl_rl", "sb3"), "circuit_random_start": ("sb3",), "circuit_car_dr": ("sb3",),
                   "race": ("rsl_rl",)}

#: The step budget of the SB3 recipes (``--trainer sb3`` without ``--steps``): per env, and per preset.
SB3_STEPS = {"TrackGen-Track-v0": 2_000_000, "TrackGen-Gates-v0": 6_000_000, "TrackGen-Race-v0": 2_000_000,
             "circuit": 4_000_000, "circuit_random_start": 4_000_000, "circuit_car_dr": 4_000_000}

#: rsl_rl's runner configuration (its ``train_cfg`` dict) under every recipe: separate 64-64 ELU
#: actor and critic with rsl_rl's empirical observation normalisation, a Gaussian policy of
#: state-independent std, PPO with the adaptive learning rate (KL target 0.01).
RSL_RL_CONFIG: dict[str, Any] = {
    "num_steps_per_env": 32,
    "save_interval": 10**9,  # the run saves its own checkpoint at the end (model.pt)
    "obs_groups": {"actor": ["policy"], "critic": ["policy"]},
    "check_for_nan": True,
    "logger": "tensorboard",
    "algorithm": {
        "class_name": "PPO", "num_learning_epochs": 5, "num_mini_batches": 4, "clip_param": 0.2, "gamma": 0.99,
        "lam": 0.95, "value_loss_coef": 1.0, "entropy_coef": 0.0, "learning_rate": 1e-3, "max_grad_norm": 1.0,
        "use_clipped_value_loss": True, "schedule": "adaptive", "desired_kl": 0.01,
    },
    "actor": {
        "class_name": "MLPModel", "hidden_dims": [64, 64], "activation": "elu", "obs_normalization": True,
        "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0, "std_type": "scalar"},
    },
    "critic": {"class_name": "MLPModel", "hidden_dims": [64, 64], "activation": "elu", "obs_normalization": True},
}

#: Per env: the env count, the step budget, overrides of :data:`RSL_RL_CONFIG` (``"cfg"``, merged key by
#: key) and env arguments (``"env"``). The gates drone keeps the SB3 recipe's start distribution and a
#: small initial std (full-range body-rate noise keeps it tumbling: ``docs/gates-env.md``).
RSL_RL_RECIPES: dict[str, dict[str, Any]] = {
    "TrackGen-Track-v0": {"num_envs": 1024, "steps": 2_000_000, "cfg": {}, "env": {}},
    "TrackGen-Gates-v0": {
        "num_envs": 2048, "steps": 5_000_000,  # 8M steps took 106 s; ~93% of its training episodes lapped after 4M
        "cfg": {"num_steps_per_env": 32, "actor": {"distribution_cfg": {"init_std": 0.37}}},
        "env": dict(ENV_DEFAULTS["TrackGen-Gates-v0"]["env"]),
    },
    # num_envs courses of two cars: the batch is the 2 * num_envs cars
    "TrackGen-Race-v0": {"num_envs": 512, "steps": 2_000_000, "cfg": {},
                         "env": dict(ENV_DEFAULTS["TrackGen-Race-v0"]["env"])},
}

#: Per preset with an rsl_rl recipe: the env count, the step budget and config overrides; the
#: courses and env arguments are the preset's (:data:`~trackgen_env.integrations.train.TRAIN_PRESETS`).
#: ``"circuit"``: 2048 envs x 32 steps (65,536 transitions an iteration, 5 epochs of 4 minibatches) for
#: 8M steps, the KL target halved to 0.005 (at 0.01 the adaptive rate sat at rsl_rl's cap of 1e-2, and
#: a run that lapped ~90% of its tracks from 3.5M steps fell to 35% after 7M), 32-32 actor and critic
#: (the update, not the env, bounds the speed: 64-64 trained at 50k env-steps/s, 32-32 at 62k, and
#: left the track less often on the real circuits; ``benchmarks/NOTES.md``).
RSL_RL_PRESETS: dict[str, dict[str, Any]] = {
    "circuit": {"num_envs": 2048, "steps": 8_000_000,
                "cfg": {"num_steps_per_env": 32, "algorithm": {"desired_kl": 0.005},
                        "actor": {"hidden_dims": [32, 32]}, "critic": {"hidden_dims": [32, 32]}}},
    "race": {"num_envs": 256, "steps": 8_000_000, "cfg": {"num_steps_per_env": 32}},
}


def resolve_trainer(trainer: str | None, preset: str | None) -> str:
    """The trainer of a run: ``trainer`` when given, else the preset's own, else ``"rsl_rl"``.

    Raises:
        ValueError: an unknown trainer, or a preset without a recipe for it.
    """
    if trainer is not None and trainer not in TRAINERS:
        raise ValueError(f"trainer must be one of {list(TRAINERS)}, got {trainer!r}")
    if preset is None:
        return trainer or TRAINERS[0]
    if preset not in PRESET_TRAINERS:
        raise ValueError(f"preset must be one of {sorted(PRESET_TRAINERS)}, got {preset!r}")
    if trainer is not None and trainer not in PRESET_TRAINERS[preset]:
        raise ValueError(f"the preset {preset!r} has a recipe for {' and '.join(PRESET_TRAINERS[preset])} only, got "
                         f"--trainer {trainer} (drop --trainer to run its own)")
    return trainer or PRESET_TRAINERS[preset][0]


def default_steps(trainer: str, env_id: str, preset: str | None = None) -> int:
    """The step budget of a recipe (``train`` without ``--steps``)."""
    if trainer == "sb3":
        return SB3_STEPS[preset or env_id]
    return (RSL_RL_PRESETS[preset] if preset is not None else RSL_RL_RECIPES[env_id])["steps"]


def _merge(base: dict, over: dict) -> dict:
    """``base`` with ``over`` merged in key by key (nested dicts merged, other values replaced); a copy."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        out[key] = (
            _merge(out[key], value)
            if isinstance(value, dict) and isinstance(out.get(key), dict)
            else copy.deepcopy(value)
        )
    return out


def rank_seeds(seed: int, rank: int, world_size: int, num_envs: int):
    """The course seeds of one process of a ``torchrun`` run: the int ``seed`` alone (env ``i``: ``hash(seed,
    i)``), else ``rank``'s slice of ``env_seeds(seed, world_size * num_envs)`` (pairwise distinct: no two
    processes share a course stream; the first rank's are not those of a one-process run)."""
    if world_size == 1:
        return seed
    return env_seeds(seed, world_size * num_envs)[rank * num_envs: (rank + 1) * num_envs]


def check_run_folder(out: str | os.PathLike, trainer: str) -> None:
    """Refuse an ``--out`` folder that holds a run of the other trainer (its files would mix with this run's).

    Raises:
        ValueError: ``out/train.json`` records another trainer, or ``out`` holds the other trainer's model.
    """
    out = Path(out)
    record = out / "train.json"
    found = None
    if record.is_file():
        try:
            found = json.loads(record.read_text()).get("trainer", "sb3")
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
            found = None
    if found is None:
        found = "sb3" if (out / "model.zip").is_file() else "rsl_rl" if (out / "policy.pt").is_file() else None
    if found is not None and found != trainer:
        raise ValueError(f"--out {out} holds a run of the {found} trainer; a {trainer} run there would mix its files "
                         f"with that run's: pass another --out (or remove the folder)")


def train_rsl_rl(
    env_id: str = "TrackGen-Track-v0",
    steps: int | None = None,
    *,
    num_envs: int | None = None,
    seed: int = 0,
    device: str | None = None,
    out: str | os.PathLike = "out/rsl_rl_track",
    logdir: str | os.PathLike | None = None,
    progress: bool = True,
    cfg: dict[str, Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    torch_threads: int | None = None,
    spec: PipelineSpec | None = None,
    plugin: str | None = None,
    preset: str | None = None,
) -> Path:
    """Train rsl_rl's PPO on ``env_id`` for ``steps`` env steps (all envs, all processes) and save it under ``out``.

    Under ``torchrun`` (``WORLD_SIZE`` > 1) every process runs this with the same arguments: each
    builds its own ``num_envs`` envs on its device (``cuda:<LOCAL_RANK>``, or the CPU) on its own
    seeds (:func:`rank_seeds`), rsl_rl keeps the policy identical on every process, and rank 0 writes
    ``out``.

    Args:
        env_id: ``"TrackGen-Track-v0"`` or ``"TrackGen-Gates-v0"``.
        steps: env steps to train for (>= 1; None: the recipe's budget), rounded up to whole iterations
            of ``num_envs x num_steps_per_env`` per process; ``train.json`` records both.
        num_envs: envs per process (None: the recipe's).
        seed: seed of the courses, torch and NumPy; in [0, 2**31). The same seed gives the same policy
            (one CPU process).
        device: the env's Warp device; the policy runs on the same device.
        out: the run's folder. logdir: TensorBoard folder (default ``out/tb``).
        progress: print rsl_rl's per-iteration log.
        cfg: overrides of the recipe's rsl_rl configuration (:data:`RSL_RL_CONFIG`), merged key by key.
        env_kwargs: env arguments over the recipe's.
        torch_threads: torch's threads (default 1 with the policy on the CPU).
        spec, plugin: courses of a pipeline spec (as :func:`~trackgen_env.integrations.train.train`).
        preset: a preset with an rsl_rl recipe (:data:`RSL_RL_PRESETS`).

    Returns:
        The path of ``policy.pt``.

    Raises:
        ValueError: an unknown env or preset (or one without an rsl_rl recipe), ``steps``/``num_envs``
            out of range, a bad seed, a spec of the other family.
        ImportError: rsl-rl-lib is missing.
    """
    check_env_id(env_id)
    recipe = RSL_RL_RECIPES[env_id]
    recipe_env = dict(recipe["env"])
    if preset is not None:
        resolve_trainer("rsl_rl", preset)
        if spec is not None or plugin is not None:
            raise ValueError("a preset sets the courses: pass preset or spec (and plugin), not both")
        preset_env = train_preset(preset, 1)[0]
        if preset_env != env_id:
            raise ValueError(f"the preset {preset!r} trains {preset_env}, got env {env_id}")
        recipe = RSL_RL_PRESETS[preset]
    world_size, rank = int(os.getenv("WORLD_SIZE", "1")), int(os.getenv("RANK", "0"))
    if num_envs is None:
        num_envs = spec.num_envs if spec is not None and preset is None else recipe["num_envs"]
    check_int("num_envs", num_envs, lo=1)
    if preset is not None:
        _, spec, recipe_env = train_preset(preset, num_envs, device)
    if steps is None:
        steps = recipe["steps"]
    check_int("steps", steps, lo=1)
    check_seed(seed, name="seed", none=False)
    spec_kwargs = spec_env_kwargs(env_id, spec, plugin)
    env_kwargs = {**recipe_env, **(env_kwargs or {})}
    clash = sorted(set(spec_kwargs) & set(env_kwargs))
    if clash:
        raise ValueError(f"spec= (and plugin=) set the env arguments {clash}: do not pass them in env_kwargs too")
    train_cfg = _merge(_merge(RSL_RL_CONFIG, recipe["cfg"]), cfg or {})
    if device is None and world_size > 1 and wp.is_cuda_available():
        device = f"cuda:{int(os.getenv('LOCAL_RANK', '0'))}"
    env_device = str(wp.get_device(resolve_device(device)))
    policy_device = env_device  # the env's torch outputs are on it
    threads = torch_threads_for("cpu" if env_device == "cpu" else "cuda", torch_threads)
    require_rsl_rl()
    import torch

    out = Path(out)
    logdir = Path(logdir) if logdir is not None else out / "tb"
    quiet = contextlib.nullcontext() if progress and rank == 0 else contextlib.redirect_stdout(io.StringIO())
    with using_torch_threads(threads) as used_threads, quiet:
        np.random.seed(seed + rank)
        torch.manual_seed(seed)  # the initial weights (rank 0's are broadcast under torchrun)
        venv = make_rsl_rl_vec_env(env_id, num_envs, seed=rank_seeds(seed, rank, world_size, num_envs),
                                   monitor=rank == 0, device=env_device, **env_kwargs, **spec_kwargs)
        # the batch is the vector env's envs: for the race env, its num_envs courses x num_agents cars
        per_iteration = venv.num_envs * int(train_cfg["num_steps_per_env"])
        iterations = max(1, math.ceil(steps / (per_iteration * world_size)))
        try:
            if rank == 0:
                out.mkdir(parents=True, exist_ok=True)  # once the env is built: a refused spec leaves no folder
            runner = adapter.OnPolicyRunner(venv, copy.deepcopy(train_cfg), log_dir=str(logdir) if rank == 0 else None,
                                    device=policy_device)
            torch.manual_seed(seed + rank)  # each process samples its own actions and minibatches
            start = time.perf_counter()
            runner.learn(num_learning_iterations=iterations)
            wall = time.perf_counter() - start
            trained = iterations * per_iteration * world_size
            if runner.is_distributed:
                torch.distributed.barrier()  # every process has trained
            if rank == 0:
                _save(runner, venv, out, logdir, {
                    "trainer": "rsl_rl", "env_id": env_id, "steps": trained, "steps_requested": steps,
                    "rollout_steps": per_iteration * world_size, "num_envs": num_envs, "world_size": world_size,
                    "seed": seed, "device": env_device, "policy_device": policy_device, "torch_threads": used_threads,
                    "env_kwargs": env_kwargs, "rsl_rl": train_cfg, "wall_time_s": round(wall, 1),
                    "env_steps_per_s": round(trained / wall), "preset": preset, "vecnormalize": None,
                    "rsl_rl_version": _version(),
                }, spec, plugin, env_id)
            if runner.is_distributed:
                # the others wait for rank 0's files, then every process leaves the group together: a process
                # that exits with the group alive (rsl_rl leaves it so) can abort in gloo's teardown
                torch.distributed.barrier()
                torch.distributed.destroy_process_group()
        finally:
            venv.close()
    return out / "policy.pt"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rsl-rl-lib")
    except PackageNotFoundError:
        return "unknown"


def _embed_onnx_weights(path: Path) -> None:
    """One self-contained ONNX file: torch's exporter writes the weights beside it (``policy.onnx.data``),
    which a copy of ``policy.onnx`` alone would lose."""
    import onnx

    data = path.with_name(path.name + ".data")
    if data.exists():
        onnx.save_model(onnx.load(str(path)), str(path), save_as_external_data=False)
        data.unlink()


def _save(runner, venv, out: Path, logdir: Path, record: dict, spec, plugin, env_id: str) -> None:
    """Rank 0's files of the run (the module docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    runner.save(str(out / "model.pt"))
    for stale in logdir.glob("model_*.pt"):  # the runner's own checkpoints: model.pt holds the last one
        stale.unlink()
    runner.export_policy_to_jit(str(out), "policy.pt")
    try:
        runner.export_policy_to_onnx(str(out), "policy.onnx")
        _embed_onnx_weights(out / "policy.onnx")
        record["onnx"] = "policy.onnx"
    except Exception as exc:  # ONNX export needs the onnx package: the TorchScript policy is the run's policy
        for name in ("policy.onnx", "policy.onnx.data"):
            (out / name).unlink(missing_ok=True)
        record["onnx"] = f"not exported ({type(exc).__name__}: {str(exc)[:200]})"
    if spec is not None:
        built = getattr(venv.env.unwrapped, SPEC_ENVS[spec.family][1] + "_config")
        record.update(spec=built.to_dict(), plugin=plugin)
        (out / "spec.json").write_text(json.dumps(built.to_dict(), indent=2) + "\n")
    else:
        (out / "spec.json").unlink(missing_ok=True)
    (out / "train.json").write_text(json.dumps(record, indent=2, default=_json_value) + "\n")
    venv.write_monitor(out / "monitor.csv")
    plot_learning_curve(out / "monitor.csv", out / "learning_curve.png", title=f"rsl_rl PPO on {env_id}")


def _json_value(value):
    """JSON for the env arguments' tuples and NumPy scalars."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def run_trainer(trainer: str, env_id: str, steps: int | None, *, preset: str | None = None, **kwargs) -> Path:
    """Train with ``trainer`` (``"rsl_rl"`` or ``"sb3"``), ``steps`` defaulting to the recipe's budget
    (:func:`default_steps`); the other arguments are those of :func:`train_rsl_rl` and
    :func:`~trackgen_env.integrations.train.train` alike. Returns the run's policy file."""
    trainer = resolve_trainer(trainer, preset)
    if steps is None:
        steps = default_steps(trainer, env_id, preset)
    if trainer == "sb3":
        return train(env_id, steps, preset=preset, **kwargs)
    return train_rsl_rl(env_id, steps, preset=preset, **kwargs)

