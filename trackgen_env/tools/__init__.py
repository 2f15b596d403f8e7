"""Components: what a course runs beside the simulation (checkpoints, progress, collision, ...).

One module per component, holding its kernels; :mod:`.contract` checks the component
contract for ``course/`` and for :class:`ComponentContext` alike.
"""

from .band_collision import BandCollision
from .centerline_from_gates import CenterlineFromGates
from .check import check_component
from .checkpoints import CheckpointSampler, Checkpoints
from .component import Component, ComponentContext
from .contract import InputSpec
from .disc_collision import DiscCollision
from .frame_collision import FrameCollision
from .gate_checkpoints import GateCheckpoints
from .heightfield import HeightField, HeightFieldBake
from .lidar import Lidar
from .localizer import Localizer
from .progress import Progress

__all__ = ["Component", "ComponentContext", "InputSpec", "check_component"]
__all__ += ["Checkpoints", "CheckpointSampler", "Progress", "BandCollision", "Localizer"]
__all__ += ["GateCheckpoints", "CenterlineFromGates", "DiscCollision", "FrameCollision", "HeightFieldBake",
            "HeightField"]
__all__ += ["Lidar"]
