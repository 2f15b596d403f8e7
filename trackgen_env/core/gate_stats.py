"""Gate-layout statistics: the scale-free measures of a drone-racing gate course (NumPy, host).

The same measures, computed the same way, for a real layout (a
:class:`~trackgen_env.generators.gate_layouts.RaceLayout`) and for a generated batch (a
:class:`~trackgen_env.core.types.GateResult`, read back to the host), so a generated gate
family can be compared with real race layouts. A course is its gates in race order, closed
(the last gate leads back to the first); leg ``k`` runs from gate ``k`` to gate ``k + 1``.

Every length is measured in gate sizes ``s`` (the course's mean opening, ``(width + height)
/ 2`` averaged over its gates), so a 0.4 m Crazyflie course and a 1.5 m racing course of
the same shape give the same numbers:

* ``leg_min`` / ``leg_median`` / ``leg_max``: leg length (centre to centre) / ``s``.
* ``turn_median`` / ``turn_max`` [deg]: the turn at each gate, the angle between its incoming
  and outgoing legs (0 straight on, 90 a square's corner, 180 a hairpin that flies back).
* ``climb_max`` / ``dive_max`` [deg]: the steepest leg up / down, ``atan2(dz, horizontal)``
  (0 when no leg climbs or dives; 90 straight up or down, as between stacked gates).
* ``relative_yaw_max`` [deg]: the largest heading change of the gate normals from one gate
  to the next (horizontal headings; 180 a gate flown the opposite way to the one before).
* ``reversals``: consecutive gates whose normals' headings differ by more than
  ``REVERSAL_ANGLE`` (a course that turns back between them).
* ``stacked``: pairs of gates (any two, not only consecutive ones) stacked one above the
  other: centres less than ``s`` apart horizontally and at least ``s`` apart vertically
  (the split-S: a gate directly above another, flown in the opposite direction).
* ``gate_size`` [m]: ``s`` (the one absolute measure: the course's scale).
* ``extent`` / ``height_range``: the horizontal diagonal of the gate centres' bounding box
  / ``s``, and their vertical range / ``s``.
* ``num_gates``.

Sources: the measures are the geometric quantities drone-racing layouts are described by
(leg lengths, turn and climb angles, the split-S) in Foehn et al., "Time-optimal planning
for quadrotor waypoint flight", *Science Robotics* 6(56), 2021, and Kaufmann et al.,
"Champion-level drone racing using deep reinforcement learning", *Nature* 620, 2023.
``REVERSAL_ANGLE`` and the stacking rule are this module's choices, documented where defined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["REVERSAL_ANGLE", "GATE_MEASURES", "GateLayoutStats", "gate_layout_stats", "race_layout_stats",
           "gate_result_stats"]

#: [deg] consecutive gates whose normals' headings differ by more than this are a reversal
#: (the course turns back between them: more than a right angle's turn with margin).
REVERSAL_ANGLE = 135.0

#: The scalar measures of :class:`GateLayoutStats`, in table order, with their labels.
GATE_MEASURES = {
    "num_gates": "gates",
    "gate_size": "gate size [m]",
    "leg_min": "shortest leg / gate size",
    "leg_median": "median leg / gate size",
    "leg_max": "longest leg / gate size",
    "turn_median": "median turn at a gate [deg]",
    "turn_max": "sharpest turn at a gate [deg]",
    "climb_max": "steepest climb [deg]",
    "dive_max": "steepest dive [deg]",
    "relative_yaw_max": "largest gate-to-gate yaw [deg]",
    "reversals": "reversals (gate-to-gate yaw > 135 deg)",
    "stacked": "stacked gate pairs",
    "extent": "horizontal extent / gate size",
    "height_range": "height range / gate size",
}


@dataclass(frozen=True)
class GateLayoutStats:
    """The measures of one gate course (see the module docstring; lengths in gate sizes).

    The scalar fields are those of :data:`GATE_MEASURES`; the per-gate / per-leg arrays:

    Attributes:
        legs: ``[G]`` leg lengths / gate size (leg k: gate k to gate k + 1).
        turns: ``[G]`` [deg] the turn at each gate (between leg k - 1 and leg k).
        slopes: ``[G]`` [deg] each leg's climb (> 0) or dive (< 0) angle.
        relative_yaw: ``[G]`` [deg] in [0, 180], the heading change of the normals from gate k to k + 1.
    """

    num_gates: int
    gate_size: float
    leg_min: float
    leg_median: float
    leg_max: float
    turn_median: float
    turn_max: float
    climb_max: float
    dive_max: float
    relative_yaw_max: float
    reversals: int
    stacked: int
    extent: float
    height_range: float
    legs: np.ndarray
    turns: np.ndarray
    slopes: np.ndarray
    relative_yaw: np.ndarray

    def row(self) -> dict[str, float]:
        """The scalar measures (:data:`GATE_MEASURES`) as a dict."""
        return {k: float(getattr(self, k)) for k in GATE_MEASURES}


def gate_layout_stats(position, normal, width, height) -> GateLayoutStats:
    """The measures of one closed gate course.

    Args:
        position: ``[G, 3]`` gate centres [m] in race order (``G >= 3``), z up.
        normal: ``[G, 3]`` gate normals (the direction of travel through each gate; any length > 0).
        width, height: the openings [m]: ``[G]`` each, or one float each.

    Returns:
        :class:`GateLayoutStats`.

    Raises:
        ValueError: bad shapes, non-finite values, fewer than 3 gates, an opening <= 0, a zero
            normal, two consecutive gates at one centre.
    """
    pos = np.asarray(position, dtype=np.float64)
    if pos.ndim != 2 or pos.shape[1] != 3 or pos.shape[0] < 3:
        raise ValueError(f"position must be [G >= 3, 3] gate centres, got shape {pos.shape}")
    G = pos.shape[0]
    nrm = np.asarray(normal, dtype=np.float64)
    if nrm.shape != (G, 3):
        raise ValueError(f"normal must be [{G}, 3] like position, got shape {nrm.shape}")
    w = np.broadcast_to(np.asarray(width, dtype=np.float64), (G,))
    h = np.broadcast_to(np.asarray(height, dtype=np.float64), (G,))
    for name, arr in (("position", pos), ("normal", nrm), ("width", w), ("height", h)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} holds non-finite values")
    if not (np.all(w > 0) and np.all(h > 0)):
        raise ValueError("width and height must be > 0 at every gate")
    size = float(np.mean(0.5 * (w + h)))
    leg = np.roll(pos, -1, axis=0) - pos
    length = np.linalg.norm(leg, axis=1)
    if np.any(length < 1e-9):
        k = int(np.argmin(length))
        raise ValueError(f"gates {k} and {(k + 1) % G} are at the same centre {pos[k].tolist()}")
    heading = leg / length[:, None]
    cos_turn = np.einsum("ij,ij->i", np.roll(heading, 1, axis=0), heading)
    turns = np.degrees(np.arccos(np.clip(cos_turn, -1.0, 1.0)))
    flat = np.hypot(leg[:, 0], leg[:, 1])
    slopes = np.degrees(np.arctan2(leg[:, 2], flat))
    yaw = np.arctan2(nrm[:, 1], nrm[:, 0])
    if np.any(np.hypot(nrm[:, 0], nrm[:, 1]) < 1e-9):
        raise ValueError("normal: a gate whose normal has no horizontal part (a flat gate) has no heading")
    dyaw = np.abs((np.roll(yaw, -1) - yaw + math.pi) % (2.0 * math.pi) - math.pi)
    relative_yaw = np.degrees(dyaw)
    apart_xy = np.hypot(pos[:, None, 0] - pos[None, :, 0], pos[:, None, 1] - pos[None, :, 1])
    apart_z = np.abs(pos[:, None, 2] - pos[None, :, 2])
    stacked = int(np.sum(np.triu((apart_xy < size) & (apart_z >= size), k=1)))
    span = pos.max(axis=0) - pos.min(axis=0)
    legs = length / size
    return GateLayoutStats(
        num_gates=G, gate_size=size,
        leg_min=float(legs.min()), leg_median=float(np.median(legs)), leg_max=float(legs.max()),
        turn_median=float(np.median(turns)), turn_max=float(turns.max()),
        climb_max=float(max(0.0, slopes.max())), dive_max=float(max(0.0, -slopes.min())),
        relative_yaw_max=float(relative_yaw.max()), reversals=int(np.sum(relative_yaw > REVERSAL_ANGLE)),
        stacked=stacked, extent=float(math.hypot(span[0], span[1]) / size), height_range=float(span[2] / size),
        legs=legs, turns=turns, slopes=slopes, relative_yaw=relative_yaw,
    )


def race_layout_stats(layout) -> GateLayoutStats:
    """:func:`gate_layout_stats` of a :class:`~trackgen_env.generators.gate_layouts.RaceLayout`."""
    return gate_layout_stats(layout.position, layout.normal, layout.width, layout.height)


def _normals(quat: np.ndarray) -> np.ndarray:
    """``[..., 4]`` unit quaternions (x, y, z, w) -> the rotated local +x, ``[..., 3]``."""
    x, y, z, w = np.moveaxis(quat, -1, 0)
    return np.stack([1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y + z * w), 2.0 * (x * z - y * w)], axis=-1)


def gate_result_stats(result) -> list[GateLayoutStats]:
    """:func:`gate_layout_stats` of every valid env of a generated batch.

    Args:
        result: a :class:`~trackgen_env.core.types.GateResult` (``gate_position [E, G]`` vec3,
            ``gate_orientation [E, G]`` quat, ``gate_width`` / ``gate_height [E]``,
            ``num_gates [E]``, ``valid [E]``), read back to the host.

    Returns:
        one :class:`GateLayoutStats` per env with ``valid == 1``, in env order.
    """
    pos, quat = result.gate_position.numpy(), result.gate_orientation.numpy().astype(np.float64)
    width, height = result.gate_width.numpy(), result.gate_height.numpy()
    count, valid = result.num_gates.numpy(), result.valid.numpy()
    return [gate_layout_stats(pos[e, : count[e]], _normals(quat[e, : count[e]]), width[e], height[e])
            for e in range(pos.shape[0]) if valid[e]]
