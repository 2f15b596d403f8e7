"""Generator pipelines: stages, the registry, specs, live parameters, presets, and ``build``.

``build(spec, registry=...)`` turns a :class:`PipelineSpec` into a :class:`Program`: the
retry loop, masked commit and generation counter over the spec's straight-line list of
stages (``docs/pipelines.md``).
"""

from . import presets
from .params import Params
from .program import Program, StageContext
from .protocol import Producer
from .registry import FAMILIES, Registry, default_registry
from .spec import PipelineSpec
from .stage import Family, Param, Stage

__all__ = ["PipelineSpec", "Params", "Param", "Stage", "StageContext", "Family", "Registry", "default_registry",
           "FAMILIES", "presets", "build", "Program", "Producer"]


def build(spec: PipelineSpec, *, registry: Registry | None = None, seeds=None, stream=None, prepare: bool = True,
          out=None) -> Program:
    """Build the program of ``spec`` and, with ``prepare=True``, run its first generation.

    Args:
        spec: the recipe (``presets.track(...)``, ``config.to_spec()``, ``PipelineSpec.from_dict``).
        registry: where its stage names are looked up (the default registry when None).
        seeds, stream, prepare, out: as :class:`Program`.

    Raises:
        As :class:`Program`: unknown stages (KeyError), parameters out of their declared
        bounds, unmet reads and bad ``out=`` arrays (ValueError), each naming the stage or field.
    """
    return Program(spec, registry=registry, seeds=seeds, stream=stream, prepare=prepare, out=out)
