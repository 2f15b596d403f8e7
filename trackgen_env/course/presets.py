"""The presets' argument checks and component lists (``Course.track`` / ``Course.gates``).

Everything here runs before any generator is built: a refused argument leaves nothing
behind (spec, "Checks before anything is built").
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np

from .. import tools
from ..checks import check_float, check_int
from ..generators import GateGenConfig, TrackGenConfig
from ..pipeline import Params, PipelineSpec, build
from .order import as_component_list, sort_components

__all__ = ["TrackPreset", "GatesPreset", "source_family", "preset_for_family", "WIDTH_PARAM"]

WIDTH_PARAM = "gate_frames.gate_width"


def preset_for_family(family) -> str:
    return "Course.gates" if family == "gates" else "Course.track"


def source_family(source) -> tuple[str | None, str]:
    """``(family, kind)`` of a preset's source; kind is ``"config"``, ``"spec"`` or ``"built"``.

    Raises:
        TypeError: not a config, a spec, or an object with the generator surface.
    """
    if isinstance(source, TrackGenConfig):
        return "track", "config"
    if isinstance(source, GateGenConfig):
        return "gates", "config"
    if isinstance(source, PipelineSpec):
        return source.family, "spec"
    if callable(getattr(source, "enqueue", None)) and hasattr(source, "result") and hasattr(source, "layout"):
        return getattr(source, "family", None), "built"
    raise TypeError(
        "a preset's source must be a TrackGenConfig / GateGenConfig, a PipelineSpec, or a built generator, "
        f"got {type(source).__name__}"
    )


def _is_component(value) -> bool:
    return not isinstance(value, (str, bytes, Real, type(None))) and hasattr(value, "name")


def _slot_component(value, preset: str):
    if getattr(value, "name", None) != "collision":
        raise ValueError(
            f"{preset}: a component in the collision slot must be named 'collision' (it fills "
            f"StepResult.contacts and course.collision), got {getattr(value, 'name', None)!r}: "
            "put a collision under another name in extra"
        )
    return value


class _Preset:
    """Checked preset arguments: ``components`` (in order) and how to get the generator."""

    family = ""

    def __init__(self, source, *, seeds, stream):
        family, self.kind = source_family(source)
        if family is not None and family != self.family:
            raise TypeError(
                f"Course.{self.family} takes a {self.family} source, got a {family} one: use {preset_for_family(family)}"
            )
        if self.kind == "built" and (seeds is not None or stream is not None):
            raise TypeError(
                "seeds= and stream= configure the generator a preset builds; this source is a built generator: "
                "pass them when you build it"
            )
        self.source, self.seeds, self.stream = source, seeds, stream

    def _finish(self, own: list, extra) -> None:
        extra = as_component_list(extra, "extra")
        self.components = sort_components(own + extra)

    def generator(self):
        """The source when built, else the generator built from it (with seeds= and stream=)."""
        if self.kind == "built":
            return self.source
        spec = self.source if self.kind == "spec" else self.source.to_spec()
        return build(spec, seeds=self.seeds, stream=self.stream)


class TrackPreset(_Preset):
    """``Course.track``'s arguments, checked; ``components`` in execution order.

    Raises:
        TypeError / ValueError: see ``Course.track``.
    """

    family = "track"

    def __init__(self, source, *, checkpoint_spacing, collision=None, max_checkpoints=None, extra=(), seeds=None,
                 stream=None):
        super().__init__(source, seeds=seeds, stream=stream)
        spacing = check_float("checkpoint_spacing", checkpoint_spacing, lo=0.0, lo_open=True)
        if isinstance(max_checkpoints, str) and max_checkpoints == "auto":
            max_checkpoints = None
        if max_checkpoints is not None:
            max_checkpoints = check_int("max_checkpoints", max_checkpoints, lo=3)
        if isinstance(collision, (bool, np.bool_)):
            raise TypeError(f'collision must be None, "segments", "sdf" or a component, got {collision!r}')
        if isinstance(collision, str):
            if collision not in ("segments", "sdf"):
                raise ValueError(f'collision must be None, "segments", "sdf" or a component, got {collision!r}')
        elif collision is not None and not _is_component(collision):
            raise TypeError(
                f'collision must be None, "segments", "sdf" or a component, got {type(collision).__name__} {collision!r}'
                + (" (a post radius is for Course.gates)" if isinstance(collision, Real) else "")
            )
        own = [tools.Checkpoints(spacing, max_checkpoints="auto" if max_checkpoints is None else max_checkpoints),
               tools.Progress()]
        self._sdf = None
        if isinstance(collision, str):
            own.append(tools.BandCollision(collision))
            self._sdf = own[-1] if collision == "sdf" else None
        elif collision is not None:
            own.append(_slot_component(collision, "Course.track"))
        self._finish(own, extra)


    def check_resolution(self, generator) -> None:
        """Warn when the preset's sdf grid is too coarse for the largest course the generator draws.

        The grid spans each env's band (plus a margin) with ``resolution - 9`` cells, so its
        cell ``h`` grows with the course size; at the largest size (a size randomizer's
        construction hi, else the construction size) ``h`` must stay below a quarter of the
        narrowest band width, or the bilinear clearance blurs the band edges.
        """
        spec = getattr(generator, "spec", None)
        if self._sdf is None or not isinstance(spec, PipelineSpec) or "layout.size" not in spec.params:
            return
        size_hi = spec.construction_value("layout.size", "hi")
        width_lo = spec.construction_value("band.width", "lo") if "band.width" in spec.params else None
        if width_lo is None:
            return
        cell = (size_hi + width_lo) / (self._sdf.resolution - 9)
        if cell > width_lo / 4:
            warnings.warn(
                f'the "sdf" collision grid of {self._sdf.resolution} nodes per side has cells of {cell:.3g} m at the '
                f"largest course size {size_hi} m, coarser than a quarter of the band width {width_lo} m: pass "
                f'collision=tools.BandCollision("sdf", resolution=...) with a larger resolution',
                stacklevel=4,
            )


class GatesPreset(_Preset):
    """``Course.gates``'s arguments, checked; ``components`` in execution order.

    Raises:
        TypeError / ValueError: see ``Course.gates``.
    """

    family = "gates"

    def __init__(self, source, *, collision=None, samples_per_gate=8, localize_window=None, extra=(), seeds=None,
                 stream=None):
        super().__init__(source, seeds=seeds, stream=stream)
        samples = check_int("samples_per_gate", samples_per_gate, lo=2)
        if localize_window is not None:
            localize_window = check_int("localize_window", localize_window, lo=1)
        if isinstance(collision, (bool, np.bool_)):
            raise TypeError(f"collision must be None, a post radius > 0 or a component, got {collision!r}")
        if isinstance(collision, str):
            raise ValueError(f"collision must be None, a post radius > 0 or a component, got {collision!r}")
        radius = None
        if isinstance(collision, Real):
            radius = check_float("collision (a post radius)", collision, lo=0.0, lo_open=True)
        elif collision is not None and not _is_component(collision):
            raise TypeError(
                f"collision must be None, a post radius > 0 or a component, got {type(collision).__name__}"
            )
        self._check_width()
        own = [tools.GateCheckpoints(), tools.CenterlineFromGates(samples), tools.Progress()]
        if radius is not None:
            own.append(tools.DiscCollision(radius))
        elif collision is not None:
            own.append(_slot_component(collision, "Course.gates"))
        own.append(tools.Localizer(warm_window=localize_window, source="centerline"))
        self._finish(own, extra)

    def _check_width(self) -> None:
        """Refuse a construction gate width of 0 (a randomized width: its lo must be > 0)."""
        src = self.source
        spec = src if self.kind == "spec" else getattr(src, "spec", None)
        if self.kind == "config":
            lo, what = float(src.gate_width), "the construction gate_frames.gate_width"
        elif isinstance(spec, PipelineSpec) and WIDTH_PARAM in spec.params:
            if WIDTH_PARAM in spec.randomize:
                lo, what = spec.randomize[WIDTH_PARAM][0], f"the randomizer's lo of {WIDTH_PARAM}"
            else:
                lo, what = spec.params[WIDTH_PARAM], f"the construction {WIDTH_PARAM}"
        else:
            return
        if lo <= 0:
            raise ValueError(
                f"{what} is {lo}: a gate of width <= 0 can never be passed; pass gate_width= "
                f"(presets.gates defaults to 0) or randomize {WIDTH_PARAM!r} with a lo > 0"
            )

    @staticmethod
    def guard_width(generator) -> None:
        """Make ``generator.params[WIDTH_PARAM] = v`` refuse a width <= 0 from now on."""
        params = getattr(generator, "params", None)
        if isinstance(params, Params) and WIDTH_PARAM in params:
            params.add_validator(WIDTH_PARAM, _refuse_nonpositive_width)


def _refuse_nonpositive_width(name: str, values) -> None:
    if np.any(np.asarray(values) <= 0):
        raise ValueError(f"params[{name!r}] must be > 0 on a gate course (a width-0 gate can never be passed), got {values!r}")
