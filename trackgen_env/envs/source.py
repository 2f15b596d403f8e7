"""The generated-course argument of the envs (``track=`` / ``gates=``): a config or a spec.

An env takes its family's config (``TrackGenConfig`` / ``GateGenConfig``) or a
:class:`~trackgen_env.pipeline.PipelineSpec` of its family (``presets.track(...)``, a spec
with plugin stages, ``PipelineSpec.from_dict`` of a saved one) with the ``registry`` that
holds its plugins. The env's ``num_envs`` and ``device`` replace the source's.
"""

from __future__ import annotations

import dataclasses

from ..pipeline import PipelineSpec, build
from ..pipeline.registry import registry_or_default

__all__ = ["generated_source"]

#: each family's given-course source, and how an env is given that course instead
_GIVEN = {"track": ("centerline", "a given circuit, pass its [N, 4] points as centerline= "
                                  "(TrackVectorEnv(centerline=points), which writes the inputs)"),
          "gates": ("layout", "a given race layout, pass it as layout= (GatesVectorEnv(layout=load_gate_layout(path)), "
                              "which writes the inputs)")}


def generated_source(value, *, argument: str, family: str, config_cls: type, registry, num_envs: int, device,
                     seed) -> tuple:
    """``(source for the Course preset, its seeds= keywords, the config or spec kept)``.

    Args:
        value: a ``config_cls`` or a ``family`` PipelineSpec (``num_envs`` / ``device``
            replaced by the env's).
        argument: the constructor argument's name, for messages (``"track"``).
        registry: a :class:`~trackgen_env.pipeline.Registry` for a spec's plugin stages, or
            None (the default registry).
        seed: the env's seed (of the generator's per-env streams).

    Returns:
        A config with its ``seeds=`` keywords, or the spec's program (built without its first
        generation, which the course runs) with none.

    Raises:
        TypeError: ``value`` neither a ``config_cls`` nor a PipelineSpec; a spec of another
            family; ``registry`` given with a config, or not a Registry.
        ValueError: a config or spec of the family's given source (``source="centerline"`` /
            ``"layout"``): its inputs stay empty in the env, so every env would hold no course.
        KeyError / ValueError: as ``pipeline.build`` (an unknown stage, a parameter out of its bounds).
    """
    registry_or_default(registry)  # the type, before anything is built
    given, instead = _GIVEN[family]
    source = value.settings.get("source") if isinstance(value, PipelineSpec) else getattr(value, "source", None)
    if source == given:
        raise ValueError(f'{argument}= must generate its courses: a source="{given}" config or spec has inputs that '
                         f"the env never writes, so every env would hold no course (valid = 0); to drive {instead} "
                         "instead")
    if isinstance(value, PipelineSpec):
        if value.family != family:
            raise TypeError(f"{argument}= takes a {family} PipelineSpec, got a {value.family} one "
                            f"(presets.{family}(...) builds a {family} spec)")
        spec = dataclasses.replace(value, num_envs=num_envs, device=str(device))
        return build(spec, registry=registry, seeds=seed, prepare=False), {}, spec
    if not isinstance(value, config_cls):
        raise TypeError(f"{argument} must be a {config_cls.__name__}, a {family} PipelineSpec or None, "
                        f"got {type(value).__name__}")
    if registry is not None:
        raise TypeError(f"registry= holds the plugin stages of a PipelineSpec; {argument}= is a {config_cls.__name__} "
                        f"(pass {argument}=config.to_spec().with_stage(...) to use plugins)")
    config = dataclasses.replace(value, num_envs=num_envs, device=str(device))
    return config, {"seeds": seed}, config
