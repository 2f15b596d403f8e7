"""Warp's console output, quiet by default.

Warp prints a banner when it starts, an ``INFO`` line for every module it loads (a dozen per
env), and, on a machine without an NVIDIA driver, a CUDA warning from its native library. The
library keeps these out of your terminal: importing ``trackgen_env`` sets
``wp.config.log_level`` to ``wp.LOG_WARNING`` (unless you set another level first), and the
library starts Warp (``wp.init()``) with the no-driver warning left out, on its first call that
needs a device. Warnings and errors are printed as before.

To see Warp's own output again, set the environment variable ``TRACKGEN_WARP_VERBOSE=1``
before the import, or ``wp.config.log_level = wp.LOG_INFO`` after it (module loads only).
"""

from __future__ import annotations

import os
import sys
import tempfile

import warp as wp

__all__ = ["VERBOSE_ENV", "NO_DRIVER_WARNING", "verbose", "quiet_warp_log", "init_warp"]

#: The environment variable that keeps Warp's own output: ``1`` (or ``true``, ``yes``).
VERBOSE_ENV = "TRACKGEN_WARP_VERBOSE"
#: The part of Warp's native warning on a machine without an NVIDIA driver that identifies it.
NO_DRIVER_WARNING = "Could not find or load the NVIDIA CUDA driver"

_WARP_DEFAULT_LEVEL = wp.LOG_INFO


def verbose() -> bool:
    """Whether ``TRACKGEN_WARP_VERBOSE`` asks for Warp's own output."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def quiet_warp_log() -> None:
    """Warp's log at warnings and above, unless verbose or the level was set before (it is then yours)."""
    if not verbose() and wp.config.log_level == _WARP_DEFAULT_LEVEL:
        wp.config.log_level = wp.LOG_WARNING


def init_warp() -> None:
    """Start Warp once (``wp.init()``), leaving out its no-driver warning unless verbose.

    Warp's native library writes that warning to the process's stderr (file descriptor 2), where
    Python cannot filter it: stderr is read into a temporary file while Warp starts, and every other
    line is written back. A no-op once Warp runs.
    """
    from warp._src import context

    if context.runtime is not None:
        return
    if verbose():
        wp.init()
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no stderr file descriptor to read: Warp prints as it does
        wp.init()
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            wp.init()
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        text = captured.read().decode(errors="replace")
    kept = "".join(line for line in text.splitlines(keepends=True) if NO_DRIVER_WARNING not in line)
    if kept:
        sys.stderr.write(kept)
        sys.stderr.flush()
