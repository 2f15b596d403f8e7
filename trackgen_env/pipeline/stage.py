"""``Stage`` and ``Param``: the steps a :class:`~trackgen_env.pipeline.program.Program` runs.

A stage is one step of the retry loop's body (spec, "Regeneration"): it reads fields of
the working set (``ctx.fields``) that earlier stages wrote, launches its kernels for the
envs still pending, and writes its own fields. The program runs the stages of a spec in
order, round after round, then commits the masked envs' staged rows into the result::

    class Shift(pipeline.Stage):
        name = "acme.shift"                      # a plugin's name is namespaced
        family = "track"                         # or None: any family
        params = (pipeline.Param("dz", 0.0, -5.0, 5.0, "[m] height offset"),)
        reads = writes = ("centerline",)

        def enqueue(self, ctx, pending):
            wp.launch(_shift, ctx.fields["centerline"].shape, inputs=[pending, ctx.params["acme.shift.dz"]],
                      outputs=[ctx.fields["centerline"]], device=ctx.device)

Rules a stage keeps (the built-ins do): skip envs whose ``pending`` is 0 (the masked
commit keeps unmasked envs bit-identical anyway, but a pending env must not see a stage
twice per round); never allocate or read device data back in ``enqueue`` (it is recorded
into graphs) unless the stage is registered with ``capturable=False``; set ``ctx.ok[e] = 0``
to reject an env's draw (it then draws again, up to ``max_retries`` times).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from numbers import Real

import numpy as np

from ..core.checks import first_bad
from ..core.seeding import plugin_stage_stream
from .launches import Launches

#: ``Param.stream``: the declared randomizer offsets are ``[0, DECLARED_STREAMS)``; the hashed ones lie above
DECLARED_STREAMS = 256

# a parameter's name within its stage (matched whole: fullmatch)
_PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

__all__ = ["Param", "Stage", "Family", "check_ordered", "check_settings"]


@dataclass(frozen=True)
class Param:
    """A stage parameter, addressed ``"stage.param"`` (``"layout.size"``).

    Attributes:
        name: the parameter's name within its stage (``"size"``).
        default: its construction value when a spec adds the stage.
        lo, hi: the declared bounds: every construction value, randomize range and live set
            must lie in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``), and finite.

    Raises (at construction, so a stage class with a bad declaration fails where it is defined):
        TypeError: a name that is not a str; a default or bound that is not a number (a bool, a str), ``dynamic`` /
            ``lo_open`` not bools, ``stream`` neither an int nor None.
        ValueError: a name that is no identifier (``"Bad Name"``), a NaN default or bound, ``lo > hi``,
            or a default outside the bounds.
        doc: what it sets, with its unit.
        dynamic: True: a live ``[E] float32`` array (``generator.params[...]``) that a
            curriculum may set and ``with_randomize`` may draw; False: a construction value
            only (read from ``ctx.spec.params``).
        lo_open: the lower bound is excluded.
        stream: the random stream offset of its randomizer (``Stream.RANDOMIZE + stream``), an
            int in ``[0, DECLARED_STREAMS)`` = ``[0, 256)`` (the built-ins declare 0-7); None
            (plugins): an offset in ``[256, 256 + 2**19)`` from a CRC-32 of the full name, so it does
            not depend on the other parameters of the spec. Two parameters of one program that
            share a stream are refused at build.
    """

    name: str
    default: float
    lo: float = -math.inf
    hi: float = math.inf
    doc: str = ""
    dynamic: bool = True
    lo_open: bool = False
    stream: int | None = None

    def __post_init__(self):
        """Refuse a declaration that could never hold (checked when the stage class is defined)."""
        if not isinstance(self.name, str):
            raise TypeError(f"Param name must be a str, got {type(self.name).__name__} {self.name!r}")
        if not _PARAM_NAME.fullmatch(self.name):
            raise ValueError(f"Param name must be an identifier ([A-Za-z_][A-Za-z0-9_]*: it is addressed "
                             f"'stage.{self.name}'), got {self.name!r}")
        for what in ("default", "lo", "hi"):
            value = getattr(self, what)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real):
                raise TypeError(f"Param {self.name!r}: {what} must be a number, got {type(value).__name__} {value!r}")
            if math.isnan(value):
                raise ValueError(f"Param {self.name!r}: {what} must be a number, got NaN")
            object.__setattr__(self, what, float(value))
        if self.lo > self.hi or (self.lo_open and self.lo == self.hi):
            raise ValueError(f"Param {self.name!r}: the bounds need lo < hi (lo <= hi when closed), "
                             f"got lo={_num(self.lo)}, hi={_num(self.hi)}")
        for what in ("dynamic", "lo_open"):
            if not isinstance(getattr(self, what), bool):
                raise TypeError(f"Param {self.name!r}: {what} must be a bool, got {getattr(self, what)!r}")
        if self.stream is not None and (isinstance(self.stream, bool) or not isinstance(self.stream, int)):
            raise TypeError(f"Param {self.name!r}: stream must be an int or None, got {self.stream!r}")
        if self.stream is not None and not 0 <= self.stream < DECLARED_STREAMS:
            raise ValueError(f"Param {self.name!r}: stream must be an offset in [0, {DECLARED_STREAMS}) (the built-ins "
                             f"declare 0-7), or None for one from a hash of the name, got {self.stream}")
        self.check(f"Param {self.name!r}: the default", self.default)

    def bounds(self) -> str:
        """The bounds as an interval; an infinite bound is open (``(0, inf)``, ``(-inf, 2]``)."""
        left = "(" if self.lo_open or math.isinf(self.lo) else "["
        right = ")" if math.isinf(self.hi) else "]"
        return f"{left}{_num(self.lo)}, {_num(self.hi)}{right}"

    def check(self, what: str, values, *, per_env: bool = False, float32: bool = False) -> None:
        """Raise ValueError naming ``what`` unless every value lies within the bounds
        (``per_env``: ``values`` are one per env, and the message names the first bad env;
        ``float32``: ``values`` as a float32 array holds them, against the bounds as it would hold
        them: ``pi / 4`` is stored as 0.785398185 and meets ``[0, pi / 4]``)."""
        v = np.asarray(values, dtype=np.float64)
        lo, hi = self.lo, self.hi
        if float32:
            with np.errstate(over="ignore"):
                lo, hi = float(np.float32(lo)), float(np.float32(hi))
        below = v <= lo if self.lo_open else v < lo
        bad = below | (v > hi) | ~np.isfinite(v)
        if np.any(bad):
            if v.ndim == 0:
                got = _num(float(v))
            elif per_env:
                got = first_bad(v, bad)
            else:
                got = f"{_num(float(v[bad].ravel()[0]))} (among {v.size} values)"
            raise ValueError(f"{what} must be finite and in {self.bounds()}, got {got}")

    def check_set(self, name: str, values) -> None:
        """A ``Params`` validator: refuse a live set outside the bounds (its values as the float32
        array holds them)."""
        self.check(f"params[{name!r}]", values, per_env=True, float32=True)


def _num(x: float) -> str:
    """A number as a person writes it: ``0.8``, ``inf``, ``-1``."""
    return f"{x:g}"


class Stage:
    """Base class of a pipeline stage (subclass it; register it with ``Registry.register``).

    Class attributes:
        name: the stage's name; a plugin's is namespaced: dotted identifiers,
            ``namespace.name`` (``"acme.banking"``), each part ``[a-z_][a-z0-9_]*``.
        family: ``"track"``, ``"gates"``, or None (a stage for any family).
        params: declared :class:`Param` s, addressed ``f"{name}.{param.name}"``.
        reads: a tuple of working-set fields (``ctx.fields``) or generator inputs it reads: an
            earlier stage must write each (checked at build).
        writes: a tuple of working-set fields it writes (allocated in :meth:`allocate`).
        draws: whether it draws random numbers (a pipeline where no stage draws gets no
            retries: another round would rebuild the same course). A plugin stage draws from
            its own streams, :meth:`random_stream`.
        valid_hint: where a user looks when most of its draws are rejected (the end of the
            low-valid-rate warning); None: the family's config docstring.
        ordered: pairs ``(lo, hi)`` of its parameters' short names that bound one range
            (``("corners_lo", "corners_hi")``): the build refuses a spec where ``lo`` exceeds
            ``hi`` or could once drawn (a randomize range of either), and a live set of one
            that would put it past the other's present value in any env (:func:`check_ordered`).

    A stage instance belongs to one program (it may keep its launch settings).
    """

    name: str = ""
    family: str | None = None
    params: tuple[Param, ...] = ()
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    draws: bool = False
    valid_hint: str | None = None
    ordered: tuple[tuple[str, str], ...] = ()

    def input_info(self, ctx) -> dict:
        """Generator inputs this stage reads (``name -> InputInfo``), which the program allocates."""
        return {}

    def allocate(self, ctx) -> None:
        """Allocate the fields it writes (``ctx.field(name, shape, dtype)``) and its scratch
        (``ctx.scratch(shape, dtype)``: valid inside its own ``enqueue`` only)."""

    def enqueue(self, ctx, pending) -> None:
        """Launch the stage's kernels for the envs where ``pending [E] int32`` is nonzero.

        The program calls it inside a round, after :meth:`StageContext.begin_round`. On the CPU the
        built-in stages visit the envs that it listed (``ctx.pending_envs``): a built-in stage
        enqueued by hand, outside the program's rounds, needs ``ctx.begin_round()`` after
        ``ctx.pending`` is written."""
        raise NotImplementedError(f"stage {self.name!r} does not implement enqueue(ctx, pending)")

    def launch(self, kernel, dim, *, inputs, outputs=(), device) -> None:
        """``wp.launch(kernel, dim, inputs=..., outputs=..., device=...)`` for ``enqueue``, replayed
        from its first recording while every argument is unchanged (:class:`~trackgen_env.pipeline.
        launches.Launches`: an eager round then skips the argument packing)."""
        launches = self.__dict__.get("_launches")
        if launches is None:
            launches = self._launches = Launches()
        launches.launch(kernel, dim, inputs=inputs, outputs=outputs, device=device)

    @classmethod
    def random_stream(cls) -> int:
        """The first of this stage's own random streams (:func:`~trackgen_env.seeding.plugin_stage_stream`
        of its name): attempt ``a`` (``ctx.attempt[e]``) draws its numbers with
        ``seeding.uniform(seeding.random_key(seeds[e], counters[e], random_stream + a), i)`` (``ctx.seeds``),
        so a rejected draw is followed by a fresh one and each env's draws depend on its seed and
        counter only. Pass it to the kernel as an int. Two drawing stages of one program whose
        names hash to the same streams are refused at build (rename one). The built-in layout
        stages draw from ``Stream.LAYOUT`` instead.
        """
        return plugin_stage_stream(cls.name)

    @classmethod
    def full_params(cls) -> dict[str, Param]:
        """``"stage.param" -> Param`` of this stage."""
        return {f"{cls.name}.{p.name}": p for p in cls.params}


class Family:
    """What a course family adds around its stages: its result, capacities, commit and settings.

    The built-ins are ``stages.track_family.TRACK`` and ``stages.gates_family.GATES``.

    Attributes:
        name: ``"track"`` / ``"gates"``.
        config_name: the config class that documents the ranges (for messages).
        commit_reads: the working-set fields the commit copies into the result: the
            stages of a spec must write each (checked at build).
        in_place_fields: the result fields the stages may write in place (the working set's
            field is then the result's array: no staged copy, no commit copy) when every
            stage of the program is a built-in, which writes only its pending envs' rows.
            A program with a plugin stage stages every field (``ctx.in_place`` is empty).
    """

    name: str = ""
    config_name: str = ""
    commit_reads: tuple[str, ...] = ()
    in_place_fields: tuple[str, ...] = ()

    def check(self, spec) -> None:
        """Raise TypeError / ValueError for a bad or missing structural setting of ``spec``."""

    def result_fields(self, spec) -> dict:
        """``field -> (shape, dtype, fill)`` of the result (``fill``: ``"zeros"`` or ``"identity"``)."""
        raise NotImplementedError

    def make_result(self, arrays: dict):
        """The result dataclass over ``arrays`` (``field -> wp.array``)."""
        raise NotImplementedError

    def layout(self, spec):
        """The capacities (``TrackLayout`` / ``GateLayout``)."""
        raise NotImplementedError

    def commit(self, ctx, result, mask, use_mask: int) -> None:
        """Launch the masked copy of the staged rows into ``result`` (and ``generation += 1``);
        the fields of ``ctx.in_place`` are already there."""
        raise NotImplementedError


def check_ordered(what: str, lo_name: str, hi_name: str, lo, hi) -> None:
    """Raise ValueError naming ``what`` and both parameters unless ``lo <= hi`` (numbers or
    per-env arrays: in every env)."""
    lo, hi = np.broadcast_arrays(np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64))
    bad = lo > hi
    if np.any(bad):
        where = "" if lo.ndim == 0 else f" (env {int(np.flatnonzero(bad)[0])})"
        raise ValueError(f"{what} needs {lo_name} <= {hi_name}, got {lo_name}={_num(float(lo[bad].ravel()[0]))} "
                         f"and {hi_name}={_num(float(hi[bad].ravel()[0]))}{where}")


def check_settings(spec, names) -> None:
    """Refuse a spec whose settings are not exactly ``names`` (a hand-written or edited JSON spec).

    Raises:
        ValueError: the missing and unknown settings.
    """
    missing, unknown = [n for n in names if n not in spec.settings], sorted(set(spec.settings) - set(names))
    if missing or unknown:
        raise ValueError(f"a {spec.family} spec's settings are {list(names)}; missing {missing}, unknown {unknown}")
