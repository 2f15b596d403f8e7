"""``DiscCollision``: a point body against the two posts of every gate of a gate course."""

from __future__ import annotations

import warp as wp

from ..core.checks import check_float
from ..core.polyline import BIG, Y_AXIS, line_count
from ..core.types import GATE_FIELDS, Contacts
from .component import Component, ComponentContext
from .contacts import allocate_contacts, no_course
from .contract import InputSpec

__all__ = ["DiscCollision"]

wp.set_module_options({"enable_backward": False})


@wp.func
def _post_distance(p: wp.vec3, axis: wp.vec3, radius: float, top: float) -> float:
    """Signed distance from ``p`` to the vertical capped cylinder of ``radius`` whose axis
    passes through ``axis`` (x, y), from z = 0 to z = ``top`` (< 0 inside)."""
    dx = p[0] - axis[0]
    dy = p[1] - axis[1]
    a = wp.sqrt(dx * dx + dy * dy) - radius
    b = wp.max(-p[2], p[2] - top)
    return wp.min(wp.max(a, b), 0.0) + wp.sqrt(wp.max(a, 0.0) * wp.max(a, 0.0) + wp.max(b, 0.0) * wp.max(b, 0.0))


@wp.kernel
def _disc_collision(
    envs_per_thread: int,
    step_mask: wp.array(dtype=wp.int32),
    position: wp.array(dtype=wp.vec3),
    valid: wp.array(dtype=wp.int32),
    gate_position: wp.array2d(dtype=wp.vec3),
    gate_orientation: wp.array2d(dtype=wp.quat),
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    num_gates: wp.array(dtype=wp.int32),
    radius: float,
    # outputs
    hit: wp.array(dtype=wp.int32),
    distance: wp.array(dtype=float),
):
    thread = wp.tid()
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, position.shape[0])):
        if step_mask[e] == 0:
            continue  # not one of this step's envs (Course.step(mask=))
        n = line_count(num_gates, valid, gate_position.shape[1], e)
        if n == 0:
            no_course(e, hit, distance)
            continue
        p = position[e]
        if not wp.isfinite(p):  # a NaN or infinite position is a hit, as in the other collisions
            distance[e] = wp.nan
            hit[e] = 1
            continue
        offset = 0.5 * gate_width[e] + radius
        half_h = 0.5 * gate_height[e]
        best = float(BIG)
        for i in range(n):
            c = gate_position[e, i]
            lateral = wp.quat_rotate(gate_orientation[e, i], Y_AXIS)
            top = c[2] + half_h
            best = wp.min(best, _post_distance(p, c + offset * lateral, radius, top))
            best = wp.min(best, _post_distance(p, c - offset * lateral, radius, top))
        distance[e] = best
        hit[e] = wp.where(best <= 0.0, 1, 0)


class DiscCollision(Component):
    """Contact of each env's point body with the gates' posts, every step.

    Each gate stands on two posts: vertical cylinders of radius ``r`` beside its opening,
    axes at ``centre +- (gate_width / 2 + r) * lateral`` (lateral = the gate's local +y),
    from the ground (z = 0) to the top of the opening (``centre z + gate_height / 2``).
    ``distance`` is the least signed distance from ``position`` to a post (capped-cylinder
    distance; < 0 inside) and ``hit = distance <= 0``. Only posts count: the ground
    (z <= 0) and the course bounds are the env's business. An invalid env (``valid == 0``)
    reads ``hit = 1``, ``distance = 0`` (as ``BandCollision``: an env without a course
    ends its episode), and a NaN or infinite ``position`` ``hit = 1``, ``distance`` NaN (as
    the other collisions). For a body of radius ``b``, test ``distance < b``.

    Input: ``position`` ``[E] vec3`` [m] (required).

    Args:
        r: post radius [m], a number > 0.
        name, after: see :class:`~trackgen_env.tools.Component`.

    Attributes:
        result: :class:`~trackgen_env.core.types.Contacts`, ``hit`` ``[E] int32``,
            ``distance`` ``[E] float32`` [m].

    Raises:
        TypeError: ``r`` is not a number (a bool is refused). ValueError: ``r <= 0`` or not finite.
    """

    inputs = (InputSpec("position", wp.vec3),)
    requires = GATE_FIELDS

    def __init__(self, r: float, *, name: str = "collision", after=()):
        self.radius = check_float("r (the post radius)", r, lo=0.0, lo_open=True)
        super().__init__(name, after=after)
        self._contacts: Contacts | None = None

    def attach(self, ctx: ComponentContext) -> None:
        self._contacts = allocate_contacts(ctx.num_envs, ctx.device)

    def step(self, ctx: ComponentContext) -> None:
        src, out = ctx.source(self), self._contacts
        ctx.launch_step(
            _disc_collision,
            [self.bound["position"], ctx.result.valid, src.gate_position, src.gate_orientation, src.gate_width,
             src.gate_height, src.num_gates, self.radius, out.hit, out.distance],
        )

    @property
    def result(self) -> Contacts | None:
        return self._contacts

    def __repr__(self) -> str:
        return f"DiscCollision({self.radius}, name={self.name!r})"
