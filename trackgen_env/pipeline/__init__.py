"""Generator pipelines: specs, live parameters, presets, and ``build``."""

from . import presets
from .gates_config import GateGenConfig
from .params import Params
from .spec import PipelineSpec
from .track_config import TrackGenConfig

__all__ = ["PipelineSpec", "Params", "presets", "build", "Program", "TrackGenConfig", "GateGenConfig", "register_family"]

# family name -> generator class. The generators layer (above this one) registers its classes
# when it is imported, and importing any part of the package imports it (``trackgen_env``'s
# ``__init__``), so ``build`` never needs to import upward.
_FAMILIES: dict[str, type] = {}


class Program:
    """Base class of built generators (``TrackGenerator``, ``GateGenerator``)."""


def register_family(family: str, cls: type) -> None:
    """Make ``build`` construct ``cls(spec, seeds=..., stream=...)`` for specs of ``family``."""
    _FAMILIES[family] = cls


def build(spec: PipelineSpec, *, seeds=None, stream=None, prepare: bool = True) -> Program:
    """Build the generator of ``spec`` and, with ``prepare=True``, run its first generation.

    Raises:
        TypeError: ``spec`` is not a PipelineSpec.
        ValueError: no generator is registered for ``spec.family``.
    """
    if not isinstance(spec, PipelineSpec):
        raise TypeError(f"build() takes a PipelineSpec, got {type(spec).__name__}")
    if spec.family not in _FAMILIES:
        raise ValueError(f"no generator for family {spec.family!r}; known: {sorted(_FAMILIES)}")
    return _FAMILIES[spec.family](spec, seeds=seeds, stream=stream, prepare=prepare)
