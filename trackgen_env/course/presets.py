"""The presets' argument checks and component lists (``Course.track`` / ``Course.gates``).

Everything here runs before any generator is built: a refused argument leaves nothing
behind (spec, "Checks before anything is built").
"""

from __future__ import annotations

import math
import warnings
from numbers import Real

import numpy as np

from .. import tools
from ..core.checks import check_float, check_int, first_bad
from ..generators import GateGenConfig, TrackGenConfig
from ..pipeline import Params, PipelineSpec, build
from ..pipeline.registry import registry_or_default
from ..tools.course_size import construction_bound
from .order import as_component_list, sort_components
from .streams import check_stream

__all__ = ["TrackPreset", "GatesPreset", "check_gate_width", "source_family", "preset_for_family", "WIDTH_PARAM"]

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

    def __init__(self, source, *, seeds, stream, registry=None):
        family, self.kind = source_family(source)
        if family is not None and family != self.family:
            raise TypeError(
                f"Course.{self.family} takes a {self.family} source, got a {family} one: use "
                f"{preset_for_family(family)}"
            )
        if self.kind == "built" and (seeds is not None or stream is not None or registry is not None):
            raise TypeError(
                "seeds=, stream= and registry= configure the generator a preset builds; this source is a built "
                "generator: pass them when you build it"
            )
        if registry is not None and self.kind != "spec":
            raise TypeError(f"registry= holds the plugin stages of a spec; a {type(source).__name__} has none: "
                            f"pass a PipelineSpec (config.to_spec()) or leave registry= out")
        registry_or_default(registry)  # the type, before anything is built
        check_stream(stream)
        self.source, self.seeds, self.stream, self.registry = source, seeds, stream, registry

    def _finish(self, own: list, extra) -> None:
        extra = as_component_list(extra, "extra")
        self.components = sort_components(own + extra)

    def generator(self):
        """The source when built, else the generator built from it (with seeds=, stream= and registry=)."""
        if self.kind == "built":
            return self.source
        spec = self.source if self.kind == "spec" else self.source.to_spec()
        return build(spec, registry=self.registry, seeds=self.seeds, stream=self.stream)


class TrackPreset(_Preset):
    """``Course.track``'s arguments, checked; ``components`` in execution order.

    Raises:
        TypeError / ValueError: see ``Course.track``.
    """

    family = "track"

    def __init__(self, source, *, checkpoint_spacing, collision=None, max_checkpoints=None, heightfield=None,
                 size_hi=None, extra=(), seeds=None, stream=None, registry=None):
        super().__init__(source, seeds=seeds, stream=stream, registry=registry)
        spacing = check_float("checkpoint_spacing", checkpoint_spacing, lo=0.0, lo_open=True)
        self.size_hi = None if size_hi is None else check_float("size_hi", size_hi, lo=0.0, lo_open=True)
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
                f'collision must be None, "segments", "sdf" or a component, got {type(collision).__name__} '
                f'{collision!r}'
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
            is_sdf = isinstance(collision, tools.BandCollision) and collision.backend == "sdf"
            self._sdf = collision if is_sdf else None
        self._heightfield, self._own_heightfield = _heightfield_component(heightfield)
        if self._heightfield is not None:
            own.append(self._heightfield)
        self._finish(own, extra)


    def check_resolution(self, generator) -> None:
        """Warn (one ``UserWarning`` each) when a grid of the course's components (the preset's
        slots and ``extra``) does not cover the largest course the generator can draw:
        ``size_hi`` when given, else a ``"layout.size"`` randomizer's construction hi, else the
        construction size (the larger of the two when both are known).

        * ``BandCollision("sdf")``: its grid spans each env's band with ``resolution - 9``
          cells, and a procedural band lies inside the course square, so at size ``S`` a
          cell is at most ``S / (resolution - 9)``. It is too coarse when that exceeds half
          the narrowest band's half width (``"band.width"``'s lo / 4): the bilinear
          clearance then blurs the band edges by more than that.
        * ``HeightFieldBake``: its fixed square (``size``, or the construction bound it reads)
          is smaller than ``S``: the courses beyond it would read the grid's edge. The
          preset's own bake (``heightfield=True`` / an int) is given ``size = S`` here,
          before it attaches, so it always covers ``S``.
        """
        largest = construction_bound(generator, "layout.size", "hi")
        if self.size_hi is not None:
            largest = self.size_hi if largest is None else max(largest, self.size_hi)
        if largest is None:
            return
        if self._own_heightfield:
            self._heightfield.size = largest
        width_lo = construction_bound(generator, "band.width", "lo")
        for c in self.components:
            if isinstance(c, tools.BandCollision) and c.backend == "sdf" and width_lo is not None:
                cell = largest / (c.resolution - 9)
                if cell > width_lo / 4:
                    need = math.floor(4 * largest / width_lo) + 10  # cells strictly under the bound
                    fix = (f'collision=tools.BandCollision("sdf", resolution={need})' if c is self._sdf else
                           f'build {c.name!r} with resolution={need}')
                    warnings.warn(
                        f'the "sdf" collision grid of {c.name!r}, {c.resolution} nodes per side, has cells of up to '
                        f"{cell:.3g} m at the largest course size {largest:g} m, coarser than half the narrowest "
                        f"band's "
                        f"half width ({width_lo / 4:.3g} m): pass {fix} (or more)",
                        stacklevel=4,
                    )
            covered = c.covered_size(generator) if isinstance(c, tools.HeightFieldBake) else None
            if covered is not None and covered < largest:
                fix = (f"heightfield=tools.HeightFieldBake(size={largest:g}) (or size_hi={largest:g} to Course.track "
                       "for its own)" if c is self._heightfield else f"build {c.name!r} with size={largest:g}")
                warnings.warn(
                    f"the height field {c.name!r} covers a course square of {covered:g} m, but the generator can draw "
                    f"courses up to {largest:g} m: pass {fix}",
                    stacklevel=4,
                )


def _heightfield_component(value) -> tuple:
    """``Course.track``'s heightfield slot -> ``(component or None, whether the preset built it)``:
    None / False (none), True (``HeightFieldBake()``), an int (its resolution) or a component
    named ``"heightfield"``."""
    if value is None or (isinstance(value, (bool, np.bool_)) and not value):
        return None, False
    if isinstance(value, (bool, np.bool_)):
        return tools.HeightFieldBake(), True
    if isinstance(value, (int, np.integer)):
        return tools.HeightFieldBake(int(value)), True
    if not _is_component(value):
        raise TypeError(f"heightfield must be None, a bool, an int resolution or a component, "
                        f"got {type(value).__name__} {value!r}")
    if getattr(value, "name", None) != "heightfield":
        raise ValueError(
            f"Course.track: a component in the heightfield slot must be named 'heightfield' (it is "
            f"course.heightfield), got {getattr(value, 'name', None)!r}: put it under another name in extra"
        )
    return value, False


class GatesPreset(_Preset):
    """``Course.gates``'s arguments, checked; ``components`` in execution order.

    Raises:
        TypeError / ValueError: see ``Course.gates``.
    """

    family = "gates"

    def __init__(self, source, *, collision=None, samples_per_gate=8, localize_window=None, extra=(), seeds=None,
                 stream=None, registry=None):
        super().__init__(source, seeds=seeds, stream=stream, registry=registry)
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
        check_gate_width(self.source)
        own = [tools.GateCheckpoints(), tools.CenterlineFromGates(samples), tools.Progress()]
        if radius is not None:
            own.append(tools.DiscCollision(radius))
        elif collision is not None:
            own.append(_slot_component(collision, "Course.gates"))
        own.append(tools.Localizer(warm_window=localize_window, source="centerline"))
        self._finish(own, extra)

    @staticmethod
    def guard_width(generator) -> None:
        """Make ``generator.params[WIDTH_PARAM] = v`` refuse a width <= 0 from now on."""
        params = getattr(generator, "params", None)
        if isinstance(params, Params) and WIDTH_PARAM in params:
            params.add_validator(WIDTH_PARAM, _refuse_nonpositive_width)


def check_gate_width(source, *,
                     fix: str = f"pass gate_width= (presets.gates defaults to 0) or randomize {WIDTH_PARAM!r} "
                                             "with a lo > 0") -> None:
    """Refuse a gate source whose construction width is 0 (a randomized width: its lo must be > 0).

    Args:
        source: a ``GateGenConfig``, a gates ``PipelineSpec`` or a built generator with a ``spec``;
            anything else is left to the preset's own checks.
        fix: what the message tells the caller to pass instead.

    Raises:
        ValueError: the width (or the randomizer's lo) is <= 0, naming it and ``fix``.
    """
    spec = source if isinstance(source, PipelineSpec) else getattr(source, "spec", None)
    if isinstance(source, GateGenConfig):
        lo, what = float(source.gate_width), "the construction gate_frames.gate_width"
    elif isinstance(spec, PipelineSpec) and WIDTH_PARAM in spec.params:
        if WIDTH_PARAM in spec.randomize:
            lo, what = spec.randomize[WIDTH_PARAM][0], f"the randomizer's lo of {WIDTH_PARAM}"
        else:
            lo, what = spec.params[WIDTH_PARAM], f"the construction {WIDTH_PARAM}"
    else:
        return
    if lo <= 0:
        raise ValueError(f"{what} is {lo}: a gate of width <= 0 can never be passed; {fix}")


def _refuse_nonpositive_width(name: str, values) -> None:
    bad = np.asarray(values) <= 0
    if np.any(bad):
        raise ValueError(f"params[{name!r}] must be > 0 on a gate course (a width-0 gate can never be passed), "
                         f"got {first_bad(values, bad)}")
