"""The warm start of the closest-segment search that ``Localizer`` and ``BandCollision("segments")`` keep.

Each env keeps the segment its last search found (``[E] int32``, -1: unset), and
:func:`~trackgen_env.core.polyline.locate` starts its descent there within a window of
segments; a reset or a new course unsets it, so the next search is global.
"""

from __future__ import annotations

import warp as wp

__all__ = ["unset_warm"]

wp.set_module_options({"enable_backward": False})


@wp.kernel
def _unset_warm(mask: wp.array(dtype=wp.int32), warm: wp.array(dtype=wp.int32)):
    e = wp.tid()
    if mask[e] == 0:
        return
    warm[e] = -1


def unset_warm(ctx, mask: wp.array | None, warm: wp.array) -> None:
    """Unset the warm segment of the masked envs (all when ``mask`` is None)."""
    ctx.launch(_unset_warm, ctx.num_envs, [ctx.mask(mask), warm])
