"""Gymnasium vector envs over generated courses, registered on ``import trackgen_env``."""

import gymnasium

from .gates import GatesVectorEnv
from .track import TrackVectorEnv

__all__ = ["register_envs", "TrackVectorEnv", "GatesVectorEnv"]

_ENVS = {
    "TrackGen-Track-v0": "trackgen_env.envs.track:TrackVectorEnv",
    "TrackGen-Gates-v0": "trackgen_env.envs.gates:GatesVectorEnv",
}


def register_envs() -> None:
    """Register the envs with Gymnasium (idempotent)."""
    for env_id, entry_point in _ENVS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, vector_entry_point=entry_point)
