"""trackgen_env: GPU-native procedurally generated racing courses and Gymnasium vector envs.

Generators (``TrackGenerator``, ``GateGenerator``) build batches of courses in Warp
kernels; components (``trackgen_env.tools``) run beside a simulation; a
``trackgen_env.course.Course`` ties them together; ``gymnasium.make_vec("TrackGen-Track-v0")``
and ``"TrackGen-Gates-v0"`` are the ready envs.
"""

import sys

from .core.warp_log import quiet_warp_log

quiet_warp_log()  # before any module of the package loads; TRACKGEN_WARP_VERBOSE=1 keeps Warp's log

# The public paths of modules that live in core/: trackgen_env.capture and trackgen_env.exec (the
# spec's track_gen.capture and track_gen.exec) and trackgen_env.seeding import as they always have.
from .core import capture, exec, seeding

sys.modules[f"{__name__}.capture"] = capture
sys.modules[f"{__name__}.exec"] = exec
sys.modules[f"{__name__}.seeding"] = seeding

from . import tools
from .envs import register_envs
from .generators import GateGenConfig, GateGenerator, TrackGenConfig, TrackGenerator
from .core.seeding import PerEnvSeededRNG, SeedState

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
