"""What the collision components share: their inputs, their ``Contacts`` result, an invalid env.

``BandCollision`` and ``FrameCollision`` test a point or an oriented box
(:data:`BODY_INPUTS`, :class:`BodyArguments`); ``DiscCollision`` a point. Every one of them
writes a :class:`~trackgen_env.core.types.Contacts` (:func:`allocate_contacts`) and reads an
env without a course (invalid, or fewer than 3 points or gates) as a hit at distance 0
(:func:`no_course`), so an env without a course ends its episode.
"""

from __future__ import annotations

import warp as wp

from ..core.types import Contacts
from .contract import InputSpec

__all__ = ["BODY_INPUTS", "BodyArguments", "allocate_contacts", "no_course", "footprint_corner"]

#: A point body at ``position``, or, with both ``orientation`` and ``half_extents`` bound,
#: the oriented box at ``box_position`` (routed from ``position`` when not given).
BODY_INPUTS = (
    InputSpec("position", wp.vec3),
    InputSpec("box_position", wp.vec3, required=False, default="position"),
    InputSpec("orientation", wp.quat, required=False),
    InputSpec("half_extents", wp.vec3, required=False),
)


class BodyArguments:
    """The body arguments of a collision kernel, ``[position, orientation, half_extents, use_box]``,
    from a component's bound :data:`BODY_INPUTS` (allocate at ``attach``)."""

    def __init__(self, device):
        # stand for the unbound box inputs of a point test (the kernels do not read them)
        self._no_orientation = wp.zeros(1, dtype=wp.quat, device=device)
        self._no_half_extents = wp.zeros(1, dtype=wp.vec3, device=device)

    def __call__(self, bound) -> list:
        if "orientation" in bound and "half_extents" in bound:
            return [bound["box_position"], bound["orientation"], bound["half_extents"], 1]
        return [bound["position"], self._no_orientation, self._no_half_extents, 0]


def allocate_contacts(num_envs: int, device) -> Contacts:
    """A zeroed :class:`~trackgen_env.core.types.Contacts` for ``num_envs`` envs."""
    return Contacts(
        hit=wp.zeros(num_envs, dtype=wp.int32, device=device),
        distance=wp.zeros(num_envs, dtype=wp.float32, device=device),
    )


@wp.func
def no_course(e: int, hit: wp.array(dtype=wp.int32), distance: wp.array(dtype=float)):
    """Write env ``e``'s contacts when it has no course: a hit at distance 0."""
    hit[e] = 1
    distance[e] = 0.0


@wp.func
def footprint_corner(c: wp.vec3, rot: wp.quat, h: wp.vec3, i: int) -> wp.vec3:
    """Bottom corner ``i`` (0-3) of the box of centre ``c``, orientation ``rot`` and half extents ``h``."""
    sx = wp.where(i % 2 == 0, 1.0, -1.0)
    sy = wp.where(i < 2, 1.0, -1.0)
    return c + wp.quat_rotate(rot, wp.vec3(sx * h[0], sy * h[1], -h[2]))
