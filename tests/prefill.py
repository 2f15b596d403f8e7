"""Pre-filling a kernel's outputs before the kernel runs, as mujoco_warp's tests do.

Outputs allocated with ``wp.zeros`` read as a plausible 0 where a kernel forgot to write;
filled with NaN (integers: :data:`UNWRITTEN`) they make such an element fail the test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import warp as wp

UNWRITTEN = -7  # what an integer output holds until a kernel writes it


def prefill(*items) -> None:
    """Fill each ``wp.array``, and each array field of each result dataclass, in place."""
    for item in items:
        arrays = [item] if isinstance(item, wp.array) else [
            getattr(item, f.name) for f in dataclasses.fields(item) if isinstance(getattr(item, f.name), wp.array)]
        for arr in arrays:
            values = arr.numpy()
            arr.assign(np.full_like(values, np.nan if np.issubdtype(values.dtype, np.floating) else UNWRITTEN))
