"""Which stream a course call launches on, and whether it is recording."""

from __future__ import annotations

import warp as wp

from ..core.capture import CaptureError, caller

__all__ = ["check_stream", "resolve_stream", "OnStream"]


def check_stream(stream) -> None:
    """Raises TypeError unless ``stream`` is None or a ``wp.Stream`` (on any device: a CPU
    course takes a stream argument as a CUDA one does, and ignores it)."""
    if stream is not None and not isinstance(stream, wp.Stream):
        raise TypeError(f"stream must be None or a wp.Stream, got {type(stream).__name__} {stream!r}")


def resolve_stream(device, default, stream):
    """``(stream to launch on, or None for the current one; whether it is capturing)``.

    The call's ``stream``, else the course's ``default``, else the current stream.

    Raises:
        TypeError: ``stream`` is neither None nor a ``wp.Stream``.
        CaptureError: the course has a default stream, no ``stream=`` was passed, and the
            current stream records while the default one does not.
    """
    check_stream(stream)
    if device.is_cpu:
        return None, bool(device.is_capturing)
    s = stream if stream is not None else default
    current = device.stream
    if s is None:
        return None, bool(current.is_capturing)
    if s.is_capturing:
        return s, True
    if stream is None and current.is_capturing and current.cuda_stream != s.cuda_stream:
        raise CaptureError(
            f"this course was built with stream={s}, and another stream records: pass stream= to the call "
            f"(the recording stream; called at {caller()})"
        )
    return s, False


class OnStream:
    """``wp.ScopedStream(s)`` that also points the context's stream at ``s`` for the call."""

    def __init__(self, ctx, stream):
        self.ctx, self.stream = ctx, stream
        self.scoped = wp.ScopedStream(stream, sync_enter=False)

    def __enter__(self):
        self.previous, self.ctx.stream = self.ctx.stream, self.stream
        self.scoped.__enter__()

    def __exit__(self, *exc):
        self.ctx.stream = self.previous
        return self.scoped.__exit__(*exc)
