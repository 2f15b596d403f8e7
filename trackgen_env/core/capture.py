"""Capture state and the errors and warnings of recording.

Layer 0: every other layer imports from here. A *capture* is Warp's graph recording
(``wp.ScopedCapture`` / ``wp.capture_begin``) on CUDA, or Warp's CPU graph capture on
the CPU (warp-lang >= 1.14). Whatever a capture records must not allocate, must not
read device data back to the host, and must not load a Warp module.
"""

from __future__ import annotations

import os
import sys

import warp as wp

__all__ = [
    "CaptureError",
    "NotCapturableError",
    "RebindAfterCaptureWarning",
    "is_capturing",
    "current_graph",
    "retain",
    "caller",
    "user_stacklevel",
    "raised_in_a_library",
    "raise_site",
]


class CaptureError(RuntimeError):
    """An operation that cannot be recorded was called while a capture records."""


class NotCapturableError(CaptureError):
    """A step that runs on the host (``capturable=False``) was called under a capture."""


class RebindAfterCaptureWarning(UserWarning):
    """Inputs were rebound after a capture recorded ``step()``: that graph keeps the old arrays."""


def is_capturing(device) -> bool:
    """True while a Warp capture records on ``device`` (a ``wp.Device`` or a name)."""
    return bool(wp.get_device(device).is_capturing)


def current_graph(device, stream=None):
    """The ``wp.Graph`` that Warp is recording on ``device`` (``stream`` on CUDA), or None.

    None also when the capture was begun outside Warp (a plain ``torch.cuda.graph``).
    """
    device = wp.get_device(device)
    if device.is_cpu:
        graph = getattr(wp._src.context.runtime, "_apic_graph", None)
        return graph if graph is not None and graph.device == device else None
    stream = stream if stream is not None else device.stream
    return device.captures.get(stream)


def retain(device, *objects, stream=None) -> bool:
    """Keep ``objects`` alive as long as the graph being recorded on ``device`` lives.

    A recorded graph holds raw pointers; whatever it reads must outlive it. Returns False
    when no Warp graph records there (e.g. a capture begun by torch): the caller must then
    keep the objects alive itself (docs/lifetime.md).
    """
    graph = current_graph(device, stream)
    if graph is None:
        return False
    held = getattr(graph, "_trackgen_retained", None)
    if held is None:
        held = graph._trackgen_retained = []
    held.extend(objects)
    return True


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # trackgen_env/


def _in_package(frame) -> bool:
    return os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep)


def caller() -> str:
    """``"file:line in function"`` of the innermost frame outside trackgen_env (for messages)."""
    frame = sys._getframe(1)
    while frame is not None:
        if not _in_package(frame):
            return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "<unknown>"


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` in the calling function that points at the
    innermost frame outside trackgen_env (the user's line, however deep the library's call
    chain; Python 3.12's ``skip_file_prefixes`` does this, 3.11 lacks it)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and _in_package(frame):
        frame, level = frame.f_back, level + 1
    return level


def _library_dirs(names) -> list[str]:
    """The package folders of the modules ``names`` that are imported (``"warp"``, ``"torch"``)."""
    return [os.path.dirname(os.path.abspath(sys.modules[n].__file__)) + os.sep for n in names if n in sys.modules]


def _raise_frames(exc: BaseException) -> list:
    """The frames of ``exc``'s traceback, outermost first, as ``(filename, lineno, function)``."""
    frames, tb = [], exc.__traceback__
    while tb is not None:
        frames.append((os.path.abspath(tb.tb_frame.f_code.co_filename), tb.tb_lineno, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    return frames


def raised_in_a_library(exc: BaseException) -> bool:
    """Whether the innermost frame of ``exc`` lies in Warp or torch (a capture refusing an
    operation), not in a component's own code (True without a traceback)."""
    frames = _raise_frames(exc)
    return not frames or frames[-1][0].startswith(tuple(_library_dirs(("warp", "torch"))))


def raise_site(exc: BaseException) -> str:
    """``"file:line in function"`` of the innermost frame of ``exc`` outside Warp (for messages)."""
    warp_dirs = tuple(_library_dirs(("warp",)))
    inside = [f for f in _raise_frames(exc) if not f[0].startswith(warp_dirs)]
    return "<unknown>" if not inside else "{}:{} in {}".format(*inside[-1])
