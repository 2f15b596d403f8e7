"""The one interface of the bodies a course env moves: the car (:class:`~trackgen_env.envs.car.CarState`)
and the quadrotor (:class:`~trackgen_env.envs.quadrotor.Quadrotor`).

:class:`~trackgen_env.envs.base.CourseVectorEnv` binds a body's pose to its course once and steps
it at every env step through this interface alone; what differs between bodies (a car's speed
along its heading and its ground, a quadrotor's velocity and body rates) stays inside them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import warp as wp

__all__ = ["Body"]


@runtime_checkable
class Body(Protocol):
    """A batch of ``num_envs`` bodies on one Warp device, as a course env steps them.

    Attributes (stable ``wp.array``, env axis first, written in place):
        position: ``[E]`` vec3 [m], world frame, z up.
        orientation: ``[E]`` quat (x, y, z, w), body to world.
        half_extents: ``[E]`` vec3 [m], the body box's half extents.
        elapsed: ``[E]`` int32 steps since the env's last reset.
    """

    num_envs: int
    position: wp.array
    orientation: wp.array
    half_extents: wp.array
    elapsed: wp.array

    def pose(self) -> dict[str, wp.array]:
        """``{"position", "orientation", "half_extents"}``: the arrays :meth:`Course.bind
        <trackgen_env.course.Course.bind>` binds, which the course's components read."""
        ...

    def step(self, action: wp.array, reset_mask: wp.array, start_position: wp.array, start_orientation: wp.array,
             *, start_velocity: wp.array | None = None, reset_only: bool = False) -> None:
        """Put the masked envs at their start pose (at ``start_velocity``, None: at rest) and, unless
        ``reset_only``, advance the others one control step under ``action``. Capturable: launches
        only, no host sync."""
        ...
