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
from dataclasses import dataclass

import numpy as np

__all__ = ["Param", "Stage", "Family", "check_settings"]


@dataclass(frozen=True)
class Param:
    """A stage parameter, addressed ``"stage.param"`` (``"layout.size"``).

    Attributes:
        name: the parameter's name within its stage (``"size"``).
        default: its construction value when a spec adds the stage.
        lo, hi: the declared bounds: every construction value, randomize range and live set
            must lie in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``).
        doc: what it sets, with its unit.
        dynamic: True: a live ``[E] float32`` array (``generator.params[...]``) that a
            curriculum may set and ``with_randomize`` may draw; False: a construction value
            only (read from ``ctx.spec.params``).
        lo_open: the lower bound is excluded.
        stream: the random stream offset of its randomizer (``Stream.RANDOMIZE + stream``);
            None (plugins): derived from a hash of the full name, so it does not depend on
            the other parameters of the spec.
    """

    name: str
    default: float
    lo: float = -math.inf
    hi: float = math.inf
    doc: str = ""
    dynamic: bool = True
    lo_open: bool = False
    stream: int | None = None

    def bounds(self) -> str:
        return f"{'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}]"

    def check(self, what: str, values) -> None:
        """Raise ValueError naming ``what`` unless every value lies within the bounds."""
        v = np.asarray(values, dtype=np.float64)
        below = v <= self.lo if self.lo_open else v < self.lo
        if np.any(below) or np.any(v > self.hi) or not np.all(np.isfinite(v)):
            raise ValueError(f"{what} must be finite and in {self.bounds()}, got {values!r}")

    def check_set(self, name: str, values) -> None:
        """A ``Params`` validator: refuse a live set outside the bounds."""
        self.check(f"params[{name!r}]", values)


class Stage:
    """Base class of a pipeline stage (subclass it; register it with ``Registry.register``).

    Class attributes:
        name: the stage's name; a plugin's is namespaced (``"acme.banking"``).
        family: ``"track"``, ``"gates"``, or None (a stage for any family).
        params: declared :class:`Param` s, addressed ``f"{name}.{param.name}"``.
        reads: working-set fields (``ctx.fields``) or generator inputs it reads: an
            earlier stage must write each (checked at build).
        writes: working-set fields it writes (allocated in :meth:`allocate`).
        draws: whether it draws random numbers (a pipeline where no stage draws gets no
            retries: another round would rebuild the same course).

    A stage instance belongs to one program (it may keep its launch settings).
    """

    name: str = ""
    family: str | None = None
    params: tuple[Param, ...] = ()
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    draws: bool = False

    def input_info(self, ctx) -> dict:
        """Generator inputs this stage reads (``name -> InputInfo``), which the program allocates."""
        return {}

    def allocate(self, ctx) -> None:
        """Allocate the fields it writes and its scratch (``ctx.field(name, shape, dtype)``)."""

    def enqueue(self, ctx, pending) -> None:
        """Launch the stage's kernels for the envs where ``pending [E] int32`` is nonzero."""
        raise NotImplementedError(f"stage {self.name!r} does not implement enqueue(ctx, pending)")

    @classmethod
    def full_params(cls) -> dict[str, Param]:
        """``"stage.param" -> Param`` of this stage."""
        return {f"{cls.name}.{p.name}": p for p in cls.params}


class Family:
    """What a course family adds around its stages: its result, capacities, commit and settings.

    The built-ins are ``stages.track.TRACK`` and ``stages.gates.GATES``.

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


def check_settings(spec, names) -> None:
    """Refuse a spec whose settings are not exactly ``names`` (a hand-written or edited JSON spec).

    Raises:
        ValueError: the missing and unknown settings.
    """
    missing, unknown = [n for n in names if n not in spec.settings], sorted(set(spec.settings) - set(names))
    if missing or unknown:
        raise ValueError(f"a {spec.family} spec's settings are {list(names)}; missing {missing}, unknown {unknown}")
