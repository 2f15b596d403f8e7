"""The track family's built-in ``banking`` stage: corners tilted into the turn.

Runs after ``resample`` (``TrackGenConfig(banking=b > 0)`` adds it), per env and point::

    bank  = -max_bank * clamp(kappa * R_min, -1, 1)        R_min = min_turn_radius_factor * half_width
    normal <- cos(bank) * normal + sin(bank) * (tangent x normal)

``kappa`` is the signed x-y curvature (> 0 turning left) and ``R_min`` the least turn
radius a track accepts, so the bank grows with the curvature and reaches ``max_bank`` in
the tightest corner the checks allow; a straight stays level. The normal turns about the
tangent (a rotation: it stays unit and perpendicular to the tangent), downwards on the
inside of the corner, so the band's cross-section ``centerline + l * normal``, ``|l| <=
half_width``, rises towards the outside. ``tangent x normal`` is the road's unbanked up
axis (``+z`` on a level road), so the cross-section's height is ``z + l * sin(bank) *
cos(slope)``. Curvature is continuous along the spline (C2), so is the bank.
"""

from __future__ import annotations

import math

import warp as wp

from ...core import env_loop
from ..stage import Param, Stage

__all__ = ["Banking", "MAX_BANK"]

wp.set_module_options({"enable_backward": False})

#: [rad] the largest bank angle (45 deg)
MAX_BANK = math.pi / 4.0


@wp.kernel
def _bank(
    envs_per_thread: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    max_retries: int,
    lanes: int,
    max_bank: wp.array(dtype=float),
    min_turn_radius_factor: float,
    num_points: wp.array(dtype=wp.int32),
    tangent: wp.array2d(dtype=wp.vec3),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    normal: wp.array2d(dtype=wp.vec3),
):
    thread, lane = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        # exactly the rows resample wrote this round (the normal is tilted in place: a row it
        # skipped still holds an earlier round's tilt)
        if pending[e] == 0 or (ok[e] == 0 and attempt[e] < max_retries) or num_points[e] < 1:
            continue
        for j in range(lane, normal.shape[1], lanes):
            bank = -max_bank[e] * wp.clamp(curvature[e, j] * min_turn_radius_factor * half_width[e, j], -1.0, 1.0)
            n = normal[e, j]
            normal[e, j] = wp.cos(bank) * n + wp.sin(bank) * wp.cross(tangent[e, j], n)


class Banking(Stage):
    """Tilts the normal about the tangent, by up to ``banking.max_bank`` [rad] in the tightest corners."""

    name, family = "banking", "track"
    params = (Param("max_bank", 0.0, 0.0, MAX_BANK, "[rad] bank angle in the tightest corner", stream=6),)
    reads = ("num_points", "tangent", "curvature", "half_width", "normal")
    writes = ("normal",)

    def allocate(self, ctx):
        # threads per env: one on the CPU (a serial loop), a warp's worth on CUDA (resample's)
        points = ctx.settings["max_points"]
        self.lanes = 1 if ctx.device.is_cpu else min(64, points)

    def enqueue(self, ctx, pending):
        f = ctx.fields
        threads, per = env_loop.shape(ctx.device, ctx.num_envs)
        wp.launch(
            _bank, (threads, self.lanes),
            inputs=[per, pending, ctx.pending_envs, ctx.num_pending, ctx.ok, ctx.attempt, ctx.max_retries, self.lanes,
                    ctx.params["banking.max_bank"],
                    ctx.settings["min_turn_radius_factor"], f["num_points"], f["tangent"], f["curvature"],
                    f["half_width"]],
            outputs=[f["normal"]], device=ctx.device,
        )
