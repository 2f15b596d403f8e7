"""Recording modes for the masked regeneration.

``unconditional()``: inside this context, a masked regeneration that is being recorded
into a graph records its body without the ``any(mask)`` conditional node. The body is an
exact identity for envs outside the mask, so this is always correct; it only costs the
work the conditional would have skipped. Use it where a conditional node cannot be held
(a graph added as a CUDA child graph, side streams not yet joined, old drivers).
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["unconditional", "conditional_allowed"]

_state = threading.local()


@contextlib.contextmanager
def unconditional():
    """Record masked regenerations without a conditional node while the context is open."""
    depth = getattr(_state, "unconditional", 0)
    _state.unconditional = depth + 1
    try:
        yield
    finally:
        _state.unconditional = depth


def conditional_allowed() -> bool:
    """False inside ``unconditional()``."""
    return getattr(_state, "unconditional", 0) == 0
