"""``PipelineSpec``: a generator's recipe as data, named stages with ``"stage.param"`` parameters.

A spec is what a config compiles to (``TrackGenConfig.to_spec()``, ``presets.track(...)``)
and what ``build(spec)`` turns into a program. It is immutable (``with_stage``,
``with_params`` and ``with_randomize`` return new specs) and JSON-safe::

    spec = presets.track(num_envs=64, device="cpu").with_randomize({"band.width": (0.6, 1.0)})
    json.dump(spec.to_dict(), open("spec.json", "w"))          # next to a training run
    same = PipelineSpec.from_dict(json.load(open("spec.json")))  # rebuilds the same courses

* ``settings``: the structural fields (capacities, retry bound, source, ...), frozen at build.
* ``params``: every stage parameter's construction value, ``"stage.param" -> float``. On a
  built program each dynamic one is an ``[E] float32`` device array
  (``program.params[name]``) that every regeneration reads: a curriculum may set it
  between regenerations, per env or for all.
* ``randomize``: ``"stage.param" -> (lo, hi)``; the program draws the value per env, per
  generation, from the env's own random stream, uniformly in ``[lo, hi)``.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from ..core.checks import check_float, check_int
from .registry import FAMILIES, Registry, registry_or_default

__all__ = ["PipelineSpec"]

_KEYS = ("family", "num_envs", "device", "settings", "stages", "params", "randomize")


@dataclass(frozen=True)
class PipelineSpec:
    """A generator recipe.

    Attributes:
        family: ``"track"`` or ``"gates"``.
        num_envs: number of envs ``E``.
        device: the Warp device name (``"cpu"``, ``"cuda:0"``).
        settings: structural fields by name (numbers, strings: JSON-safe).
        stages: stage names in execution order.
        params: ``"stage.param" -> float`` construction values of the stages' parameters.
        randomize: ``"stage.param" -> (lo, hi)`` per-env, per-generation draws.
    """

    family: str
    num_envs: int
    device: str
    settings: Mapping[str, Any]
    stages: tuple[str, ...]
    params: Mapping[str, float]
    randomize: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def __post_init__(self):
        # the one validation path of a spec: the constructor, from_dict, replace() and every
        # with_* edit pass through here, so build only ever sees a well-formed spec
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {sorted(FAMILIES)}, got {self.family!r}")
        object.__setattr__(self, "num_envs", check_int("num_envs", self.num_envs, lo=1))
        if self.device is not None and not isinstance(self.device, str):
            raise TypeError(f"device must be a Warp device name (str) or None, got {type(self.device).__name__} "
                            f"{self.device!r}")
        for key in ("settings", "params", "randomize"):
            value = getattr(self, key)
            if not isinstance(value, Mapping):
                raise TypeError(f"a spec's {key!r} must be a mapping (dict), got {type(value).__name__} {value!r}")
        stages = self.stages
        if not isinstance(stages, (tuple, list)) or not all(isinstance(n, str) for n in stages):
            raise TypeError(f"a spec's 'stages' must be a list or tuple of stage names (str), got {stages!r}")
        dupes = sorted({n for n in stages if list(stages).count(n) > 1})
        if dupes:
            raise ValueError(f"a spec's stages must be distinct; {dupes} appear more than once in {list(stages)}")
        object.__setattr__(self, "stages", tuple(stages))
        bad = [k for k in self.settings if not isinstance(k, str)]
        if bad:
            raise TypeError(f"a spec's settings are named by str, got the key {bad[0]!r} ({type(bad[0]).__name__})")
        # a NumPy scalar as its Python number: to_dict stays JSON-safe
        object.__setattr__(self, "settings", MappingProxyType(
            {k: v.item() if isinstance(v, np.generic) else v for k, v in self.settings.items()}))
        object.__setattr__(self, "params", MappingProxyType(
            {_check_key("params", k): _check_value(k, v) for k, v in self.params.items()}))
        randomize = {}
        for name, pair in self.randomize.items():
            if _check_key("randomize", name) not in self.params:
                near = difflib.get_close_matches(name, self.params, n=1)
                typo = f" ({near[0]!r} among them looks like a typo of it)" if near else ""
                raise ValueError(f"randomize names {name!r}, which is not a parameter of the spec; its parameters "
                                 f"are {sorted(self.params)}{typo}")
            randomize[name] = _check_pair(name, pair)
        object.__setattr__(self, "randomize", MappingProxyType(randomize))

    # -- data ---------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """A JSON-safe dict (``json.dumps`` takes it; :meth:`from_dict` rebuilds the spec)."""
        return {"family": self.family, "num_envs": self.num_envs, "device": self.device,
                "settings": dict(self.settings), "stages": list(self.stages), "params": dict(self.params),
                "randomize": {k: list(v) for k, v in self.randomize.items()}}

    @classmethod
    def from_dict(cls, data: Mapping) -> "PipelineSpec":
        """The spec of :meth:`to_dict`'s dict (e.g. read back from JSON).

        Raises:
            TypeError: not a mapping; an entry of the wrong type (``stages`` not a list of
                str, ``params`` / ``randomize`` / ``settings`` not mappings, a parameter value
                or range bound that is not a number, ``num_envs`` not an int, ``device``
                neither a str nor None).
            ValueError: a missing or unknown key; an unknown family, ``num_envs < 1``,
                duplicate stages, a non-finite value, a range that is not a ``(lo, hi)``
                pair with ``lo <= hi`` or names no parameter of the spec (the constructor's
                checks, which every spec passes).
            TypeError / ValueError: a setting of the wrong type or range, as ``build`` refuses
                it (the family's checks: ``"max_points": 251.0`` is not an int).
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"from_dict() takes a mapping, got {type(data).__name__}")
        missing, unknown = [k for k in _KEYS if k not in data], sorted(set(data) - set(_KEYS))
        if missing or unknown:
            raise ValueError(f"a spec dict has the keys {list(_KEYS)}; missing {missing}, unknown {unknown}")
        spec = cls(data["family"], data["num_envs"], data["device"], data["settings"], data["stages"],
                   data["params"], data["randomize"])
        # the settings' types and ranges, as build checks them (on any machine: not the device,
        # which a spec saved on a GPU host names and an env replaces)
        FAMILIES[spec.family].check(replace(spec, device=None))
        return spec

    def __hash__(self) -> int:
        # the dataclass hash would hash the mapping proxies (unhashable): hash their items, so
        # that equal specs (equal fields) hash alike and a spec can key a dict or a cache
        return hash((self.family, self.num_envs, self.device, _frozen(self.settings), self.stages,
                     _frozen(self.params), _frozen(self.randomize)))

    def __repr__(self) -> str:
        return (f"PipelineSpec(family={self.family!r}, num_envs={self.num_envs}, device={self.device!r}, "
                f"stages={self.stages!r}, params={dict(self.params)!r}, randomize={dict(self.randomize)!r}, "
                f"settings={dict(self.settings)!r})")

    # -- edits --------------------------------------------------------------------------------
    def _check_name(self, name) -> None:
        if not isinstance(name, str) or name not in self.params:
            raise KeyError(f"unknown parameter {name!r}; the parameters of this {self.family} spec are "
                           f"{sorted(self.params)}")

    def with_stage(self, name: str, *, after: str | None = None, before: str | None = None,
                   params: Mapping[str, float] | None = None, registry: Registry | None = None) -> "PipelineSpec":
        """A copy with the stage ``name`` inserted after the stage ``after``, or before the stage
        ``before`` (``before=spec.stages[0]``: first); at the end when neither is given.

        Its declared parameters join ``params`` at their defaults, then ``params``
        (``{"param": value}`` or ``{"stage.param": value}``) sets construction values.

        Raises:
            TypeError: ``params`` neither None nor a mapping; both ``after`` and ``before``; a
                ``name``, ``after`` or ``before`` that is not a str; ``registry`` neither None nor a
                ``Registry``.
            KeyError: ``name`` is not in ``registry`` (the default registry when None), or
                ``params`` names a parameter the stage does not declare.
            ValueError: ``name`` is already a stage of the spec, or ``after`` / ``before`` is not one.
        """
        reg = registry_or_default(registry)
        if not isinstance(name, str):
            raise TypeError(f"with_stage takes a stage's name (a str), got {type(name).__name__} {name!r}")
        for what, at in (("after", after), ("before", before)):
            if at is not None and not isinstance(at, str):
                raise TypeError(f"with_stage({name!r}) {what}= takes a stage's name (a str) or None, got "
                                f"{type(at).__name__} {at!r}")
        cls, _ = reg.lookup(name, self.family)
        if name in self.stages:
            raise ValueError(f"stage {name!r} is already in the spec: {self.stages}")
        if after is not None and before is not None:
            raise TypeError(f"with_stage({name!r}) takes after= or before=, not both: got after={after!r}, "
                            f"before={before!r}")
        for what, at in (("after", after), ("before", before)):
            if at is not None and at not in self.stages:
                raise ValueError(f"{what}={at!r} is not a stage of the spec: {self.stages}")
        if before is not None:
            at = self.stages.index(before)
        else:
            at = len(self.stages) if after is None else self.stages.index(after) + 1
        declared = cls.full_params()
        values = {**self.params, **{full: p.default for full, p in declared.items()}}
        for key, value in _check_mapping("with_stage", {} if params is None else params, "'param' -> value",
                                         "params= ").items():
            full = key if key in declared else f"{name}.{key}"
            if full not in declared:
                raise KeyError(f"stage {name!r} declares no parameter {key!r}; its parameters are {sorted(declared)}")
            values[full] = _check_value(full, value)
        return replace(self, stages=self.stages[:at] + (name,) + self.stages[at:], params=values)

    def with_params(self, values: Mapping[str, float]) -> "PipelineSpec":
        """A copy with new construction values: ``{"stage.param": value}``.

        Raises:
            TypeError: ``values`` not a mapping (a list of pairs: pass ``dict(pairs)``).
            KeyError: an unknown parameter name. TypeError/ValueError: a non-finite value.
        """
        params = dict(self.params)
        for name, value in _check_mapping("with_params", values, "'stage.param' -> value").items():
            self._check_name(name)
            params[name] = _check_value(name, value)
        return replace(self, params=params)

    def with_randomize(self, ranges: Mapping[str, tuple[float, float]]) -> "PipelineSpec":
        """A copy that draws each named parameter per env, per generation, in ``[lo, hi)``.

        Any dynamic parameter of any stage of the spec (a plugin's too) may be drawn;
        ``build`` checks the range against the parameter's declared bounds.

        Raises:
            TypeError: ``ranges`` not a mapping (a list of pairs: pass ``dict(pairs)``).
            KeyError: an unknown parameter name. ValueError: not a pair, or ``lo > hi``.
        """
        randomize = dict(self.randomize)
        for name, pair in _check_mapping("with_randomize", ranges, "'stage.param' -> (lo, hi)").items():
            self._check_name(name)
            randomize[name] = _check_pair(name, pair)
        return replace(self, randomize=randomize)

    def without_randomize(self, *names: str) -> "PipelineSpec":
        """A copy in which the named parameters are no longer drawn: each takes its construction
        value (``params``) in every env again.

        Raises:
            TypeError: a name that is no str (a list of names: pass them as arguments).
            KeyError: an unknown parameter name. ValueError: a parameter the spec does not draw,
                or one named twice.
        """
        randomize = dict(self.randomize)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"without_randomize() takes parameter names ('stage.param', ...), got "
                                f"{type(name).__name__} {name!r}" + (" (pass the names as arguments: *names)"
                                                                      if isinstance(name, (list, tuple)) else ""))
            self._check_name(name)
            if names.count(name) > 1:
                raise ValueError(f"without_randomize(): {name!r} is named {names.count(name)} times")
            if name not in randomize:
                raise ValueError(f"without_randomize(): {name!r} is not randomized (randomized: "
                                 f"{sorted(self.randomize)})")
            del randomize[name]
        return replace(self, randomize=randomize)

    def construction_value(self, name: str, bound: str = "value") -> float:
        """A parameter's construction value; with ``bound="hi"``/``"lo"`` a randomizer's bound
        when one draws it (the largest/smallest value a generation can use).

        Raises:
            KeyError: an unknown parameter name.
        """
        self._check_name(name)
        if name in self.randomize and bound in ("lo", "hi"):
            return self.randomize[name][0 if bound == "lo" else 1]
        return self.params[name]


def _check_mapping(method: str, value, entries: str, argument: str = "") -> Mapping:
    """``value`` as given when it is a mapping; else a TypeError naming what was received (a
    list of pairs would fail later as an AttributeError on ``.items``)."""
    if not isinstance(value, Mapping):
        hint = " (for a list of pairs, pass dict(pairs))" if isinstance(value, (list, tuple)) else ""
        raise TypeError(f"{method}() {argument}expected a mapping (dict) of {entries}, got "
                        f"{type(value).__name__} {value!r}{hint}")
    return value


def _check_key(what: str, name) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a spec's {what!r} are keyed by 'stage.param' names (str), got {type(name).__name__} {name!r}")
    return name


def _frozen(value):
    """A hashable value equal to ``value`` where ``value`` compares equal: mappings as frozensets
    of items, lists and tuples as tuples (a spec's settings are JSON-safe)."""
    if isinstance(value, Mapping):
        return frozenset((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _check_value(name: str, value) -> float:
    """A parameter's construction value: a finite real number (not a bool, not a string) -> float."""
    return check_float(f"params[{name!r}]", value)


def _check_pair(name: str, pair) -> tuple[float, float]:
    """A randomize range: a ``(lo, hi)`` pair of finite numbers with ``lo <= hi``."""
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise ValueError(f"randomize[{name!r}] must be a (lo, hi) pair, got {pair!r}")
    lo, hi = check_float(f"randomize[{name!r}][0]", pair[0]), check_float(f"randomize[{name!r}][1]", pair[1])
    if lo > hi:
        raise ValueError(f"randomize[{name!r}] needs lo <= hi, got ({lo}, {hi})")
    return lo, hi
