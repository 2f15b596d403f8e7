"""``PipelineSpec``: a generator's recipe, named stages with ``"stage.param"`` parameters.

A spec is what a config compiles to (``TrackGenConfig.to_spec()``, ``presets.track(...)``)
and what ``build(spec)`` turns into a generator. It is immutable: ``with_params`` and
``with_randomize`` return new specs.

* ``params``: the *dynamic* fields, ``"stage.param" -> value``. On a built generator each
  is an ``[E] float32`` device array (``generator.params[name]``) that every regeneration
  reads, so a curriculum may change it between regenerations, per env or for all.
* ``randomize``: ``"stage.param" -> (lo, hi)``; the generator draws the value per env, per
  generation, from the env's own random stream, uniformly in ``[lo, hi)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from ..checks import check_float

__all__ = ["PipelineSpec"]


@dataclass(frozen=True)
class PipelineSpec:
    """A generator recipe.

    Attributes:
        family: ``"track"`` or ``"gates"``.
        config: the validated config (``TrackGenConfig`` / ``GateGenConfig``) holding the
            structural fields (``num_envs``, ``device``, capacities, retry bound, ...).
        stages: stage names in execution order.
        params: ``"stage.param" -> float`` construction values of the dynamic fields.
        randomize: ``"stage.param" -> (lo, hi)`` per-env, per-generation draws.
    """

    family: str
    config: object
    stages: tuple[str, ...]
    params: Mapping[str, float]
    randomize: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "randomize", MappingProxyType(dict(self.randomize)))

    @property
    def num_envs(self) -> int:
        return self.config.num_envs

    @property
    def device(self):
        return self.config.device

    def _check_name(self, name) -> None:
        if not isinstance(name, str) or name not in self.params:
            raise KeyError(f"unknown parameter {name!r}; the parameters of this {self.family} spec are {sorted(self.params)}")

    def with_params(self, values: Mapping[str, float]) -> "PipelineSpec":
        """A copy with new construction values: ``{"stage.param": value}``.

        Raises:
            KeyError: an unknown parameter name. TypeError/ValueError: a non-finite value.
        """
        params = dict(self.params)
        for name, value in values.items():
            self._check_name(name)
            params[name] = check_float(name, value)
        return replace(self, params=params)

    def with_randomize(self, ranges: Mapping[str, tuple[float, float]]) -> "PipelineSpec":
        """A copy that draws each named parameter per env, per generation, in ``[lo, hi)``.

        Raises:
            KeyError: an unknown parameter name. ValueError: not a pair, or ``lo > hi``.
        """
        randomize = dict(self.randomize)
        for name, pair in ranges.items():
            self._check_name(name)
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"randomize[{name!r}] must be a (lo, hi) pair, got {pair!r}")
            lo, hi = check_float(name, pair[0]), check_float(name, pair[1])
            if lo > hi:
                raise ValueError(f"randomize[{name!r}] needs lo <= hi, got ({lo}, {hi})")
            randomize[name] = (lo, hi)
        return replace(self, randomize=randomize)

    def construction_value(self, name: str, bound: str = "value") -> float:
        """A parameter's construction value; with ``bound="hi"``/``"lo"`` a randomizer's bound
        when one draws it (the largest/smallest value a generation can use)."""
        self._check_name(name)
        if name in self.randomize and bound in ("lo", "hi"):
            return self.randomize[name][0 if bound == "lo" else 1]
        return self.params[name]

