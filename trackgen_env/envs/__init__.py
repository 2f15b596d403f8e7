"""Gymnasium envs over generated courses, registered on ``import trackgen_env``.

Each id has a ``vector_entry_point`` (the native vector env: ``gymnasium.make_vec(id, num_envs=N)``)
and an ``entry_point`` (one env as a ``gymnasium.Env``, :mod:`trackgen_env.envs.single`:
``gymnasium.make(id)``, and ``gymnasium.make_vec(id, N, vectorization_mode="sync")`` over it).
"""

import gymnasium

from .config import GatesRewardConfig, GatesStartConfig, RandomizationConfig, TrackRewardConfig, TrackStartConfig
from .gates import GatesVectorEnv
from .race import RaceVectorEnv
from .sharded import ShardedVectorEnv
from .single import GatesEnv, TrackEnv
from .track import TrackVectorEnv

__all__ = ["register_envs", "TrackVectorEnv", "GatesVectorEnv", "RaceVectorEnv", "TrackEnv", "GatesEnv",
           "ShardedVectorEnv", "TrackStartConfig", "RandomizationConfig", "TrackRewardConfig", "GatesStartConfig",
           "GatesRewardConfig"]

#: id -> (entry_point, vector_entry_point)
ENTRY_POINTS = {
    "TrackGen-Track-v0": ("trackgen_env.envs.single:TrackEnv", "trackgen_env.envs.track:TrackVectorEnv"),
    "TrackGen-Gates-v0": ("trackgen_env.envs.single:GatesEnv", "trackgen_env.envs.gates:GatesVectorEnv"),
    # no one-car face (its entry point says so): a race is several cars; PettingZoo's face is
    # trackgen_env.integrations.pettingzoo
    "TrackGen-Race-v0": ("trackgen_env.envs.race:no_single_env", "trackgen_env.envs.race:RaceVectorEnv"),
}


def register_envs() -> None:
    """Register the envs with Gymnasium (idempotent)."""
    for env_id, (entry_point, vector_entry_point) in ENTRY_POINTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point, vector_entry_point=vector_entry_point)
