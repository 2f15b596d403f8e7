"""``Course.bind``: routing every input to its declarers, validated, then applied atomically."""

from __future__ import annotations

import contextlib

import warp as wp

from ..tools.contract import POSITIONAL_INPUTS, restore_probes, take_probes, validate_inputs, warn_stale

__all__ = ["POSITIONAL_INPUTS", "route_inputs", "apply_bindings"]



def route_inputs(course, args: tuple, arrays: dict) -> dict[str, dict[str, wp.array]]:
    """``component name -> {input name: array}`` for every component with inputs; checks everything.

    Raises:
        TypeError: too many positional arrays or one given twice, a generator input name,
            an unknown name, a missing required input, a non-``wp.array``, a wrong dtype.
        ValueError: a wrong shape or device.
    """
    if len(args) > len(POSITIONAL_INPUTS):
        raise TypeError(f"bind() takes at most {len(POSITIONAL_INPUTS)} positional arrays "
                        f"{POSITIONAL_INPUTS}, got {len(args)}")
    arrays = dict(arrays)
    for name, arr in zip(POSITIONAL_INPUTS, args):
        if name in arrays:
            raise TypeError(f"bind() got multiple values for {name!r}")
        arrays[name] = arr
    declared = course._ctx.inputs
    gen_inputs = getattr(course.generator, "input_info", None) or {}
    for name in arrays:
        if name in gen_inputs:
            raise TypeError(
                f"{name!r} is an input of the generator, not of a component, and the course does not bind it: "
                f"write course.generator.inputs[{name!r}] in place (a stable array that every regeneration and "
                f"every replay reads), e.g. wp.copy(course.generator.inputs[{name!r}], src) on the "
                "regeneration's stream, then regenerate()"
            )
        if name not in declared and name not in POSITIONAL_INPUTS:
            raise TypeError(
                f"bind() got an unknown input {name!r}; the component inputs of this course are "
                f"{sorted(declared)} (position, orientation, half_extents and box_position are accepted on every "
                f"course)"
            )
    routed, missing = {}, []
    for c in course._bind_order:
        routed[c.name] = validate_inputs(c, arrays, num_envs=course.num_envs, device=course.device, missing=missing)
    if missing:
        raise TypeError(f"bind() is missing required inputs: {', '.join(missing)}")
    return routed


def apply_bindings(order, bind_order, previous: dict | None, routed: dict) -> dict:
    """Bind ``routed`` to every component of ``bind_order``; returns the new bindings.

    Warns :class:`RebindAfterCaptureWarning` once, when the bind succeeded, if a capture recorded
    ``step()`` of a component since the last bind. If a component's ``bind`` raises, every component bound
    by this call (the one that raised included) gets ``previous`` back (no arrays on a
    first bind), the probes are restored (a later rebind still warns), and the error
    propagates.
    """
    # cleared here, so that the components' own bind does not warn again; warned once it is done
    stale = take_probes(order, stacklevel=None)
    done = []
    try:
        for c in bind_order:
            done.append(c)
            c.bind(**routed[c.name])
    except BaseException:
        for c in done:
            with contextlib.suppress(Exception):  # the original error is the one to report
                # previous arrays, or none at all when this was the first bind
                c.bind(**(previous[c.name] if previous is not None else {}))
        restore_probes(order, stale)
        raise
    warn_stale(stale, stacklevel=3)
    return routed
