"""The warm start of the closest-segment search that ``Localizer`` and ``BandCollision("segments")`` keep.

Each env keeps the segment its last search found (``[E] int32``, -1: unset), and
:func:`~trackgen_env.polyline.locate` starts its descent there within a window of
segments; a reset or a new course unsets it, so the next search is global.
"""

from __future__ import annotations

import numpy as np
import warp as wp

__all__ = ["check_window", "unset_warm"]

wp.set_module_options({"enable_backward": False})


def check_window(value, name: str, default: int) -> int:
    """An int >= 1 search half-window (None: ``default``).

    Raises:
        TypeError: not an int (a bool is refused).
        ValueError: < 1.
    """
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= 1 or None, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value}")
    return int(value)


@wp.kernel
def _unset_warm(mask: wp.array(dtype=wp.int32), warm: wp.array(dtype=wp.int32)):
    e = wp.tid()
    if mask[e] == 0:
        return
    warm[e] = -1


def unset_warm(ctx, mask: wp.array | None, warm: wp.array) -> None:
    """Unset the warm segment of the masked envs (all when ``mask`` is None)."""
    ctx.launch(_unset_warm, ctx.num_envs, [ctx.mask(mask), warm])
