"""trackgen_env: GPU-native procedurally generated racing courses and Gymnasium vector envs.

Generators (``TrackGenerator``, ``GateGenerator``) build batches of courses in Warp
kernels; components (``trackgen_env.tools``) run beside a simulation; a
``trackgen_env.course.Course`` ties them together; ``gymnasium.make_vec("TrackGen-Track-v0")``
and ``"TrackGen-Gates-v0"`` are the ready envs.
"""

from .warp_log import quiet_warp_log

quiet_warp_log()  # before any module of the package loads; TRACKGEN_WARP_VERBOSE=1 keeps Warp's log

from . import seeding, tools
from .envs import register_envs
from .generators import GateGenConfig, GateGenerator, TrackGenConfig, TrackGenerator
from .seeding import PerEnvSeededRNG, SeedState

register_envs()

__all__ = [
    "TrackGenConfig",
    "TrackGenerator",
    "GateGenConfig",
    "GateGenerator",
    "SeedState",
    "PerEnvSeededRNG",
    "seeding",
    "tools",
]
__version__ = "0.1.0"
