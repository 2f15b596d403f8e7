"""Train Stable-Baselines3 PPO on the TrackGen envs (``python -m trackgen_env train --trainer sb3``).

``train`` runs PPO (Schulman et al., "Proximal Policy Optimization Algorithms", 2017, as
implemented by Stable-Baselines3; Raffin et al., JMLR 2021) on one native vector env
through :class:`~trackgen_env.integrations.sb3.SB3VecEnv`, with ``VecMonitor`` (episode returns,
lengths and laps to ``monitor.csv``) and ``VecNormalize`` (observation and reward
normalisation), a tqdm progress bar and TensorBoard logs, and writes into ``--out``:

* ``model.zip``: the PPO model (``PPO.load``);
* ``vecnormalize.pkl``: the normalisation statistics (``VecNormalize.load``), needed to run the policy;
* ``monitor.csv``: one line per finished training episode (return ``r``, length ``l``, ``laps``, ...);
* ``train.json``: the env, its arguments, the seed, the resolved env and policy devices, the
  env steps requested and trained (whole rollouts), torch's thread count, the PPO settings
  and the wall time;
* ``learning_curve.png``: episode return and lap rate vs env steps (:func:`plot_learning_curve`);
* ``spec.json``: with ``spec=`` (``--spec FILE.json``, plugins' registry ``--plugin module:attr``),
  the env's pipeline spec (``PipelineSpec.from_dict`` rebuilds the same courses), also in
  ``train.json`` with the plugin reference, so ``eval`` runs on the same pipeline.

The run's files are read back by :mod:`.runs`; ``eval`` is :mod:`.evaluation`.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import warp as wp

from ..core.checks import check_int, check_seed, fold_seed, resolve_device
from ..demos import progress_disabled
from ..pipeline import PipelineSpec, Registry, default_registry, presets
from .runs import VECNORMALIZE, policy_torch_device, torch_threads_for, using_torch_threads
from .sb3 import make_sb3_vec_env, require_sb3


__all__ = ["ENV_IDS", "PPO_DEFAULTS", "ENV_DEFAULTS", "SPEC_ENVS", "TRAIN_PRESETS", "TRAINING_ONLY_TRACK_KWARGS",
           "train_preset", "load_registry", "spec_env_kwargs", "check_env_id", "LinearSchedule", "learning_rate",
           "minibatch_size", "train", "plot_learning_curve"]

#: The envs ``train`` and ``eval`` know, with the per-episode info keys they record.
#: ``TrackGen-Race-v0``'s envs are its cars (``num_envs`` courses x ``num_agents``): a car's episode is its race,
#: and its final ``rank`` (1 = winner) and ``finished`` are recorded with its laps.
ENV_IDS = {"TrackGen-Track-v0": ("laps",), "TrackGen-Gates-v0": ("laps", "gates_passed"),
           "TrackGen-Race-v0": ("laps", "rank", "finished")}

#: PPO settings of ``train`` (SB3 names). A batch of 16 envs x 256 steps = 4096 transitions,
#: 8 minibatches of 512, 10 epochs; separate 64-64 tanh actor and critic (as CleanRL's
#: ``ppo_continuous_action``, which learns to lap these tracks in ~150k steps).
PPO_DEFAULTS: dict[str, Any] = {
    "n_steps": 256,
    "batch_size": 512,
    "n_epochs": 10,
    "learning_rate": 3e-4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_range": 0.2,
    "ent_coef": 0.0,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
}


#: Per-env defaults of ``train`` over :data:`PPO_DEFAULTS`: ``num_envs``, PPO overrides
#: (``ppo``), policy arguments (``policy``: SB3 ``policy_kwargs``) and env arguments (``env``).
#: The gates drone needs its own (measured, ``docs/gates-env.md``): the initial policy
#: std ``exp(-1) = 0.37`` (std 1 is +-8 rad/s of body-rate noise, under which even the
#: reference controller crashes), training starts at random gates half the time
#: (Kaufmann et al. 2023: gate passes appear in the first rollouts; ``eval`` always
#: flies from the standard start), and 64 envs x 256 steps (16384 transitions, 8
#: minibatches of 2048) so one batch holds hundreds of gate passes and crashes.
#: gamma 0.99 (a horizon of ~2 s, two gates ahead) and no entropy bonus: the std
#: stays where the policy needs it without one.
ENV_DEFAULTS: dict[str, dict[str, Any]] = {
    "TrackGen-Track-v0": {"num_envs": 16, "ppo": {}, "policy": {}, "env": {}},
    "TrackGen-Gates-v0": {
        "num_envs": 64,
        "ppo": {"n_steps": 256, "batch_size": 2048, "gamma": 0.99, "ent_coef": 0.0},
        "policy": {"log_std_init": -1.0},
        "env": {"start": "random_gate", "random_start_prob": 0.5},
    },
    "TrackGen-Race-v0": {"num_envs": 8, "ppo": {}, "policy": {}, "env": {"num_agents": 2}},
}


#: The env of each spec family, and the constructor argument that takes the spec.
SPEC_ENVS = {"track": ("TrackGen-Track-v0", "track"), "gates": ("TrackGen-Gates-v0", "gates")}


def _circuit_courses(num_envs: int, device: str | None) -> PipelineSpec:
    """The circuit recipes' courses (``TRAIN_PRESETS``)."""
    return presets.circuit(width=1.2, width_range=(0.9, 1.5), num_envs=num_envs, device=device)


def _env_courses(num_envs: int, device: str | None) -> None:
    """The env's own generated courses (no spec)."""
    return None


#: ``"race"``'s env: two cars per course on the race env's default tracks, one lap, the race over when
#: the first car finishes; the reward is each car's progress reward (a contact ends both cars' races).
_RACE_ENV = {"num_agents": 2}

_CIRCUIT_ENV = {"max_episode_steps": 2500, "friction_range": (0.85, 1.15)}
#: PPO's learning rate falls linearly to 0 over the run (CleanRL's ``anneal_lr``): at a constant
#: rate the policy kept moving to the end and its lap rate fell late in the run (the final
#: snapshot then lapped 64-93% of held-out tracks over three seeds; with the schedule 92-93%)
_CIRCUIT_PPO = {"learning_rate": "lin_3e-4"}

#: Training recipes of ``train(preset=NAME)`` (``train --preset NAME``): the courses (a spec
#: builder ``f(num_envs, device) -> PipelineSpec``), env arguments and PPO arguments over
#: :data:`PPO_DEFAULTS` (``"ppo"``, under ``train``'s ``ppo_kwargs``).
#: ``"circuit"``, the recipe that transfers to real circuits (``docs/training.md``, "A recipe
#: that transfers"): circuit-like tracks (``presets.circuit``: ~270-410 widths a lap, long
#: straights into slow corners as tight as 0.55 widths) at 1:10 scale, with the band width
#: drawn per env and per track in [0.9, 1.5] m around the 1.2 m that ``eval --circuits`` then
#: scales the real circuits to (their mean width is 12.2 m: 1:10). The shape is drawn in
#: widths, so the width draw randomises the scale of the whole track against the car too (a
#: 0.9 m track is a 0.75x copy of the 1.2 m one, and 25% narrower for the car). The narrowest
#: band keeps every corner drivable by the rc10 car: its body sweeps a circle of 0.88 m at
#: full lock (no reverse gear), and a 0.55-width corner's outer edge is at 1.05 widths, 0.95 m
#: on a 0.9 m band (on the 0.6 m band of the recipe's 0.8 m version, 0.63 m: a third of those
#: tracks held a corner the car cannot drive). A lap takes ~1050-1900 steps at racing speed,
#: so the time limit is 2500 steps (125 s), not the default 1000 that stops most laps before
#: the line. Each episode drives with the car's friction scaled by a draw in [0.85, 1.15)
#: (``friction_range``: grip the policy does not observe, so it learns a margin that holds
#: over the range). PPO keeps its defaults but for the learning rate, 3e-4 falling linearly to
#: 0 over the run (``_CIRCUIT_PPO``; every circuit recipe).
#: ``"circuit_random_start"``: the same, with every episode starting at a random checkpoint
#: (``random_start``), up to 0.5 rad (29 deg) off the track direction (``start_yaw``) at a speed
#: in [0, 2) m/s (``start_speed``), and cut after 100 steps (5 s) without a new checkpoint
#: (``stall_steps``), so that training shows the policy standing starts in corners, which the
#: circuit recipe's episodes (all from the start line) never do; an option beside the recipe,
#: not the recipe (``docs/randomisation-and-curricula.md``, "Random starts and stalled episodes").
#: ``"circuit_car_dr"``: the circuit recipe with the car's motor and brakes (``accel_range``:
#: ``max_accel``, ``max_brake`` x [0.8, 1.2)) and its steering lock (``steer_range``: ``max_steer``
#: x [0.95, 1.05)) drawn per episode too, unobserved as the grip: a policy that holds over a
#: +-20% motor and brake (an RC car's battery charge and gearing) and a +-5% servo. The steering
#: range stays narrow because the least lock sets the car's turning circle: at 0.95 x 0.45 rad
#: the rc10's body sweeps 0.91 m at full lock, inside the 0.945 m outer edge of the family's
#: tightest corner on the narrowest (0.9 m) band; at 0.9 x it sweeps 0.95 m and would not make
#: that corner. An option beside the recipe: with the recipe's schedule one 4M-step seed laps 19
#: of the 19 real circuits cleanly at 1.2 m and 17 at true 1:10 (docs/training.md).
#: ``"race"``: self-play on ``TrackGen-Race-v0`` (``_RACE_ENV``; rsl_rl only): one shared policy drives
#: every car of every course, so each car races copies of the policy (``docs/race-env.md``).
TRAIN_PRESETS: dict[str, dict[str, Any]] = {
    "circuit": {"spec": _circuit_courses, "env": _CIRCUIT_ENV, "ppo": _CIRCUIT_PPO, "env_id": "TrackGen-Track-v0"},
    "circuit_random_start": {
        "spec": _circuit_courses,
        "env": {**_CIRCUIT_ENV, "random_start": True, "start_yaw": 0.5, "start_speed": (0.0, 2.0), "stall_steps": 100},
        "ppo": _CIRCUIT_PPO,
        "env_id": "TrackGen-Track-v0",
    },
    "circuit_car_dr": {
        "spec": _circuit_courses,
        "env": {**_CIRCUIT_ENV, "accel_range": (0.8, 1.2), "steer_range": (0.95, 1.05)},
        "ppo": _CIRCUIT_PPO,
        "env_id": "TrackGen-Track-v0",
    },
    "race": {"spec": _env_courses, "env": _RACE_ENV, "ppo": {}, "env_id": "TrackGen-Race-v0"},
}

#: Track env arguments of training only: ``eval`` drives from the start line at rest, to the
#: time limit alone, with the car's own motor and steering (``eval --circuits`` its own
#: friction too), whatever the training run started from or drew.
TRAINING_ONLY_TRACK_KWARGS = ("random_start", "start_yaw", "start_speed", "stall_steps", "accel_range", "steer_range")


def train_preset(name: str, num_envs: int,
                 device: str | None = None) -> tuple[str, PipelineSpec | None, dict[str, Any]]:
    """The env id, course spec (``num_envs`` envs on ``device``; None: the env's own courses) and env
    arguments of the recipe ``name``.

    Raises:
        ValueError: ``name`` is not one of :data:`TRAIN_PRESETS`.
    """
    if name not in TRAIN_PRESETS:
        raise ValueError(f"preset must be one of {sorted(TRAIN_PRESETS)}, got {name!r}")
    recipe = TRAIN_PRESETS[name]
    return recipe["env_id"], recipe["spec"](num_envs, device), dict(recipe["env"])


def load_registry(reference: str) -> Registry:
    """The plugin registry named by ``"module:attribute"`` (``--plugin``): ``attribute`` of the
    importable ``module``, a :class:`~trackgen_env.pipeline.Registry` (e.g. ``"plugin_stage:REGISTRY"``
    with ``examples/`` on ``PYTHONPATH``; importing the module registers its stages).

    Raises:
        ValueError: not ``"module:attribute"``, no such attribute, or not a Registry.
        ImportError: the module cannot be imported.
    """
    module_name, _, attribute = str(reference).partition(":")
    if not module_name or not attribute:
        raise ValueError(f"a plugin registry is named 'module:attribute' (e.g. plugin_stage:REGISTRY), got "
                         f"{reference!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"the plugin registry {reference!r} (--plugin): cannot import {module_name!r} ({exc}); put "
                          f"its folder on PYTHONPATH (e.g. PYTHONPATH=examples for plugin_stage:REGISTRY)") from exc
    if not hasattr(module, attribute):
        raise ValueError(f"module {module_name!r} has no attribute {attribute!r} (the plugin registry {reference!r})")
    registry = getattr(module, attribute)
    if not isinstance(registry, Registry):
        raise ValueError(f"{reference!r} must be a pipeline.Registry, got {type(registry).__name__}")
    return registry


def spec_env_kwargs(env_id: str, spec, plugin: str | None) -> dict[str, Any]:
    """The env arguments of a spec (and its plugins' registry), checked against the env."""
    if spec is None:
        if plugin is not None:
            raise ValueError("a plugin registry (--plugin) holds the stages of a spec: pass the spec too (--spec)")
        return {}
    if not isinstance(spec, PipelineSpec):
        raise TypeError(f"spec must be a pipeline.PipelineSpec or None, got {type(spec).__name__}")
    want, argument = SPEC_ENVS[spec.family]
    if want != env_id:
        raise ValueError(f"the spec is of the {spec.family} family, which {want} drives: pass --env {want} (got "
                         f"{env_id})")
    registry = load_registry(plugin) if plugin is not None else None
    _check_stages(spec, registry, plugin)
    return {argument: spec, **({"registry": registry} if registry is not None else {})}


def _check_stages(spec: PipelineSpec, registry: Registry | None, plugin: str | None) -> None:
    """Refuse a spec naming a stage its registry lacks (a plugin stage without ``--plugin``)
    before any env is built, with the fix instead of the build's KeyError."""
    reg = default_registry() if registry is None else registry
    known = reg.names(spec.family)
    unknown = [name for name in spec.stages if name not in known]
    if unknown:
        where = f"the plugin registry {plugin!r}" if plugin is not None else "the built-in stages (no --plugin given)"
        raise ValueError(
            f"the spec's stages {unknown} are not in {where}; the known {spec.family} stages are {known}. "
            "A spec with plugin stages needs the registry that holds them: pass --plugin module:REGISTRY "
            "(plugin= in the API), e.g. --plugin plugin_stage:REGISTRY with examples/ on PYTHONPATH"
        )


def check_env_id(env_id: str) -> None:
    if env_id not in ENV_IDS:
        raise ValueError(f"env must be one of {sorted(ENV_IDS)}, got {env_id!r}")


#: ``train.json``'s ``"vecnormalize"``: what :func:`train` normalised and the file of the statistics.
class LinearSchedule:
    """A learning rate falling linearly from ``initial`` to 0 over the run (SB3 calls it with the
    progress remaining, 1 -> 0), as CleanRL's PPO (``anneal_lr``) and the SB3 zoo's ``lin_<value>``."""

    def __init__(self, initial: float):
        self.initial = initial

    def __call__(self, progress_remaining: float) -> float:
        return self.initial * progress_remaining

    def __repr__(self) -> str:
        return f"lin_{self.initial:g}"


def learning_rate(value):
    """The SB3 ``learning_rate`` of a setting: a number (constant), ``"lin_<number>"``
    (:class:`LinearSchedule`, the SB3 zoo's notation, which ``train.json`` records as it is), or
    an SB3 schedule (a callable of the progress remaining, recorded by its ``repr``).

    Raises:
        ValueError: another string, or a rate that is not a positive finite number.
    """
    if callable(value):  # an SB3 schedule of the caller's own (recorded by its repr)
        return value
    if isinstance(value, str) and not value.startswith("lin_"):
        raise ValueError(f"learning_rate must be a number or 'lin_<number>' (linear to 0), got {value!r}")
    linear = isinstance(value, str)
    try:
        rate = float(value[4:] if linear else value)
    except (TypeError, ValueError):
        rate = math.nan
    if isinstance(value, bool) or not (math.isfinite(rate) and rate > 0.0):
        raise ValueError(f"learning_rate must be a positive number or 'lin_<positive number>', got {value!r}")
    return LinearSchedule(rate) if linear else rate


def minibatch_size(batch_size: int, rollout: int) -> int:
    """The default minibatch for a rollout of ``rollout`` transitions (``num_envs * n_steps``): the
    largest divisor of ``rollout`` not above ``batch_size``, so every minibatch is whole (SB3
    warns of a truncated last one) and a rollout smaller than ``batch_size`` (few envs) is one."""
    if rollout <= batch_size:
        return rollout
    return max(d for d in range(1, batch_size + 1) if rollout % d == 0)


def _rollout_steps(steps: int, num_envs: int, n_steps: int) -> int:
    """The env steps SB3's ``learn(steps)`` trains: whole rollouts of ``num_envs * n_steps``, at least one."""
    rollout = num_envs * n_steps
    return max(1, math.ceil(steps / rollout)) * rollout


def _progress_callback(total: int, enabled: bool):
    """A tqdm progress bar over env steps (SB3's ``progress_bar=True`` also needs ``rich``)."""
    from stable_baselines3.common.callbacks import BaseCallback
    from tqdm.auto import tqdm

    class TqdmCallback(BaseCallback):
        def _on_training_start(self) -> None:
            self.bar = tqdm(total=total, unit="step", unit_scale=True, disable=progress_disabled(enabled),
                            dynamic_ncols=True)

        def _on_step(self) -> bool:
            self.bar.update(self.training_env.num_envs)
            return True

        def _on_training_end(self) -> None:
            self.bar.close()

    return TqdmCallback()


def _episode_stats_callback(keys: tuple[str, ...]):
    """Logs, per rollout, the mean of each info key over the episodes that ended (``rollout/<key>``)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class EpisodeStats(BaseCallback):
        def _on_rollout_start(self) -> None:
            self.values = {k: [] for k in keys}

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"]):
                if done:
                    for k in keys:
                        if k in info:
                            self.values[k].append(float(info[k]))
            return True

        def _on_rollout_end(self) -> None:
            for k, v in self.values.items():
                if v:
                    self.logger.record(f"rollout/{k}", float(np.mean(v)))
            if self.values.get("laps"):
                self.logger.record("rollout/lap_rate", float(np.mean(np.asarray(self.values["laps"]) >= 1)))

    return EpisodeStats()


def train(
    env_id: str = "TrackGen-Track-v0",
    steps: int = 2_000_000,
    *,
    num_envs: int | None = None,
    seed: int = 0,
    device: str | None = None,
    out: str | os.PathLike = "out/ppo_track",
    logdir: str | os.PathLike | None = None,
    progress: bool = True,
    ppo_kwargs: dict[str, Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    torch_threads: int | None = None,
    callbacks: list | None = None,
    spec: PipelineSpec | None = None,
    plugin: str | None = None,
    preset: str | None = None,
) -> Path:
    """Train PPO on ``env_id`` for ``steps`` env steps (all envs together) and save it under ``out``.

    Args:
        env_id: ``"TrackGen-Track-v0"`` or ``"TrackGen-Gates-v0"``.
        steps: env steps to train for (>= 1), rounded up to whole rollouts of ``num_envs *
            n_steps`` (SB3 collects whole rollouts); ``train.json`` records both
            (``steps_requested``, ``steps``).
        num_envs: envs in the one vector env (>= 1; None: the spec's, else the env's :data:`ENV_DEFAULTS`).
        seed: seed of the training courses (env ``i``: ``hash(seed, i)``), torch and NumPy; in [0, 2**64) (NumPy's
            global seed takes it folded into 32 bits).
        device: the env's Warp device (None: ``cuda:0`` when present, else ``cpu``); the
            policy runs on CUDA next to a CUDA env, else on the CPU.
        out: folder for ``model.zip``, ``vecnormalize.pkl``, ``monitor.csv``, ``train.json``.
        logdir: TensorBoard log folder (default ``out/tb``).
        progress: show a tqdm progress bar.
        ppo_kwargs: overrides of :data:`PPO_DEFAULTS`, the env's :data:`ENV_DEFAULTS` and the
            preset's ``"ppo"`` (SB3 ``PPO`` arguments; ``learning_rate`` a number or
            ``"lin_<number>"``, linear to 0 over the run: :func:`learning_rate`). Without a
            ``batch_size`` here, the default one is fitted to the rollout (:func:`minibatch_size`:
            whole minibatches, at most the rollout with few envs); ``train.json`` records the one used.
        env_kwargs: env constructor arguments over the env's :data:`ENV_DEFAULTS` (e.g.
            ``max_episode_steps``).
        torch_threads: torch's thread count while training (:func:`torch_threads_for`: default 1
            with the policy on the CPU, torch's own on CUDA); the caller's count is restored after.
        callbacks: extra SB3 callbacks (e.g. ``CheckpointCallback`` for a learning curve of evaluations).
        spec: a :class:`~trackgen_env.pipeline.PipelineSpec` of the env's family (``track=`` /
            ``gates=`` of the env; its ``num_envs`` is the default of ``num_envs``, ``device``
            replaces its device: env ``i``'s courses depend on ``(seed, i)`` only). The run
            saves it as ``spec.json`` (the env's, ``PipelineSpec.from_dict`` rebuilds the same
            courses) and records it in ``train.json``, where ``eval`` finds it.
        plugin: ``"module:attribute"``, the registry of the spec's plugin stages (:func:`load_registry`),
            recorded in ``train.json``.
        preset: a :data:`TRAIN_PRESETS` recipe (``"circuit"``): its spec (with ``num_envs``
            envs, default the env's :data:`ENV_DEFAULTS`) and env arguments, under ``env_kwargs``
            (which override them); recorded in ``train.json`` (``"preset"``) beside the spec.

    Returns:
        The path of ``model.zip``.

    Raises:
        ValueError: an unknown env, ``steps``/``num_envs``/``torch_threads`` out of range, or a bad ``seed``;
            a spec of the other family, a ``plugin`` without a spec or that names no Registry, a
            spec naming a stage that the registry (``plugin``'s, else the built-ins) lacks, a
            spec with ``env_kwargs`` that set the courses too (``track`` / ``gates`` / ``registry``);
            an unknown ``preset``, or one with ``spec`` / ``plugin``, or of another env.
        TypeError: a ``steps``/``num_envs``/``torch_threads`` that is not an int; a ``spec`` that is not one.
        ImportError: stable-baselines3 is missing (:data:`~trackgen_env.integrations.sb3.SB3_INSTALL_HINT`), or the
            plugin's module.
    """
    check_env_id(env_id)
    defaults = ENV_DEFAULTS[env_id]
    recipe_ppo = {}
    if preset is not None:
        if spec is not None or plugin is not None:
            raise ValueError("a preset sets the courses: pass preset or spec (and plugin), not both")
        preset_env = train_preset(preset, 1)[0]
        if preset_env != env_id:
            raise ValueError(f"the preset {preset!r} trains {preset_env}, got env {env_id}")
        if num_envs is None:
            num_envs = defaults["num_envs"]
        check_int("num_envs", num_envs, lo=1)
        _, spec, recipe_env = train_preset(preset, num_envs, device)
        recipe_ppo = dict(TRAIN_PRESETS[preset].get("ppo", {}))
        env_kwargs = {**recipe_env, **(env_kwargs or {})}
    spec_kwargs = spec_env_kwargs(env_id, spec, plugin)
    clash = sorted(set(spec_kwargs) & set(env_kwargs or {}))
    if clash:
        raise ValueError(f"spec= (and plugin=) set the env arguments {clash}: do not pass them in env_kwargs too")
    if num_envs is None:
        num_envs = defaults["num_envs"] if spec is None else spec.num_envs
    check_int("steps", steps, lo=1)
    check_int("num_envs", num_envs, lo=1)
    check_seed(seed, name="seed", none=False)
    hyper = {**PPO_DEFAULTS, **defaults["ppo"], **recipe_ppo, **(ppo_kwargs or {})}
    if "batch_size" not in (ppo_kwargs or {}):  # the default, fitted to this rollout; a given one as given
        hyper["batch_size"] = minibatch_size(int(hyper["batch_size"]), num_envs * int(hyper["n_steps"]))
    rate = learning_rate(hyper["learning_rate"])  # ValueError before anything is written
    env_device = str(wp.get_device(resolve_device(device)))
    policy_device = policy_torch_device(env_device)
    threads = torch_threads_for(policy_device, torch_threads)
    require_sb3()  # the install hint, not a bare "No module named"
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import CallbackList
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    out = Path(out)
    logdir = Path(logdir) if logdir is not None else out / "tb"
    env_kwargs = {**defaults["env"], **(env_kwargs or {})}
    recorded_kwargs = dict(env_kwargs)  # JSON-safe: the spec is recorded as data, the registry as its name
    env_kwargs.update(spec_kwargs)
    policy_kwargs = {"net_arch": {"pi": [64, 64], "vf": [64, 64]}, "activation_fn": torch.nn.Tanh, **defaults["policy"]}

    total = _rollout_steps(steps, num_envs, int(hyper["n_steps"]))

    with using_torch_threads(threads) as used_threads:
        venv = make_sb3_vec_env(env_id, num_envs, device=env_device, seed=seed, **env_kwargs)
        out.mkdir(parents=True, exist_ok=True)  # once the env is built: a refused spec leaves no folder
        venv = VecMonitor(venv, filename=str(out / "monitor.csv"), info_keywords=ENV_IDS[env_id])
        venv = VecNormalize(venv, norm_obs=VECNORMALIZE["norm_obs"], norm_reward=VECNORMALIZE["norm_reward"],
                            clip_obs=VECNORMALIZE["clip_obs"], gamma=hyper["gamma"])
        model = PPO("MlpPolicy", venv, seed=fold_seed(seed), device=policy_device, tensorboard_log=str(logdir),
                    policy_kwargs=policy_kwargs, verbose=0, **{**hyper, "learning_rate": rate})
        start = time.perf_counter()
        callbacks = CallbackList([_progress_callback(total, progress), _episode_stats_callback(ENV_IDS[env_id]),
                                  *(callbacks or [])])
        model.learn(total_timesteps=total, callback=callbacks, tb_log_name="ppo")
        wall = time.perf_counter() - start

        model_path = out / "model.zip"
        model.save(model_path)
        venv.save(str(out / VECNORMALIZE["file"]))
        record = {
            "trainer": "sb3",
            "env_id": env_id,
            "steps": int(model.num_timesteps),
            "steps_requested": steps,
            "rollout_steps": num_envs * int(hyper["n_steps"]),
            "num_envs": num_envs,
            "seed": seed,
            "device": env_device,
            "policy_device": policy_device,
            "torch_threads": used_threads,
            "env_kwargs": recorded_kwargs,
            # as given (a number, "lin_<number>"); a caller's own schedule by its repr
            "ppo": {
                **hyper,
                "learning_rate": repr(rate) if callable(hyper["learning_rate"]) else hyper["learning_rate"],
            },
            "policy": {k: v for k, v in policy_kwargs.items() if k != "activation_fn"},
            "wall_time_s": round(wall, 1),
            "env_steps_per_s": round(model.num_timesteps / wall),
            "preset": preset,
            "vecnormalize": VECNORMALIZE,  # eval refuses to run the policy without the file
        }
        if spec is not None:
            built = venv.get_attr(SPEC_ENVS[spec.family][1] + "_config")[0]  # the env's: its num_envs and device
            record.update(spec=built.to_dict(), plugin=plugin)
            (out / "spec.json").write_text(json.dumps(built.to_dict(), indent=2) + "\n")
        else:
            (out / "spec.json").unlink(missing_ok=True)  # an earlier run's, into the same folder: not this run's
        (out / "train.json").write_text(json.dumps(record, indent=2) + "\n")
        venv.close()
    plot_learning_curve(out / "monitor.csv", out / "learning_curve.png", title=f"PPO on {env_id}")
    return model_path


def plot_learning_curve(monitor_csv: str | os.PathLike, png: str | os.PathLike, *, window: int = 200,
                        title: str = "") -> None:
    """Plot episode return, (gates) gates passed per episode, lap rate and steps per lap vs env steps
    from a ``VecMonitor`` CSV into ``png``.

    The x axis is the env steps of the episodes finished so far (cumulative episode
    lengths, in the order the episodes ended); the curves are trailing means over the last
    ``window`` episodes, at most a tenth of those in the CSV (a short run's curve follows its
    latest episodes), of the raw returns (before ``VecNormalize``). A panel with no episode to
    show (no lap completed yet) says so. Writes nothing when the CSV holds no episode.
    """
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(monitor_csv) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    if not rows:
        return
    steps = np.cumsum([int(r["l"]) for r in rows])
    ret = np.array([float(r["r"]) for r in rows])
    series = [("episode return", ret, np.ones(len(rows), bool))]
    if "gates_passed" in rows[0]:
        series.append(("gates passed per episode", np.array([float(r["gates_passed"]) for r in rows]),
                       np.ones(len(rows), bool)))
    if "laps" in rows[0]:
        lapped = np.array([float(r["laps"]) for r in rows]) >= 1
        series.append(("lap completion rate", lapped.astype(float), np.ones(len(rows), bool)))
        # the episode length of the episodes that completed their laps: the lap time in steps
        series.append(("steps per completed lap", np.array([float(r["l"]) for r in rows]), lapped))
    # a short run's curve follows its episodes: a window of at most a tenth of them (a 200-episode
    # mean over a run of 300 would be one flat point, far below its latest episodes)
    w = max(1, min(window, len(rows) // 10))
    fig, axes = plt.subplots(len(series), 1, figsize=(7, 2.4 * len(series)), sharex=True, squeeze=False)
    for ax, (name, y, keep) in zip(axes[:, 0], series):
        x, y = steps[keep], y[keep]
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        if y.size == 0:
            ax.text(0.5, 0.5, f"no episode completed its laps yet ({len(rows)} episodes)", transform=ax.transAxes,
                    ha="center", va="center", color="tab:gray")
            continue
        k = min(w, y.size)
        # the trailing mean over the last k episodes (over the first ones while fewer have ended)
        total = np.cumsum(y)
        count = np.minimum(np.arange(1, y.size + 1), k)
        smooth = (total - np.concatenate([np.zeros(k), total[:-k]])[: y.size]) / count
        ax.plot(x, y, ".", ms=1, alpha=0.15, color="tab:gray")
        ax.plot(x, smooth, color="tab:blue")
    # finished episodes only: the steps of the episodes still running at the end are not on the axis
    axes[-1, 0].set_xlabel(f"env steps of the finished episodes (curves: mean over the last {w} episodes)")
    if title:
        axes[0, 0].set_title(title)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
