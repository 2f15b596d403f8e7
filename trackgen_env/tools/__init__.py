"""Components: what a course runs beside the simulation (checkpoints, progress, collision, ...)."""

from .component import Component, ComponentContext, InputSpec, check_component
from .checkpoints import CheckpointSampler, Checkpoints
from .collision import BandCollision
from .localizer import Localizer
from .progress import Progress
from .gates import CenterlineFromGates, DiscCollision, FrameCollision, GateCheckpoints

__all__ = ["Component", "ComponentContext", "InputSpec", "check_component"]
__all__ += ["Checkpoints", "CheckpointSampler", "Progress", "BandCollision", "Localizer"]
__all__ += ["GateCheckpoints", "CenterlineFromGates", "DiscCollision", "FrameCollision"]
