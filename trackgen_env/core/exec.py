"""Recording modes for the masked regeneration, and the ``any(mask)`` flag it is conditioned on.

``any_set(mask, flag)``: ``flag[0] = any(mask)`` on the device: the condition of the
``capture_if`` node that a masked body (the course's regeneration, an env's restart) is
recorded under.

``unconditional()``: inside this context, a masked regeneration that is being recorded
into a graph records its body without the ``any(mask)`` conditional node. The body is an
exact identity for envs outside the mask, so this is always correct; it only costs the
work the conditional would have skipped. Use it where a conditional node cannot be held
(a graph added as a CUDA child graph, side streams not yet joined, old drivers).

``registered(conditional=...)``: inside a CUDA capture begun outside Warp (a
``torch.cuda.graph``), join it so that course calls see a capture and record into it.
"""

from __future__ import annotations

import contextlib
import threading

import warp as wp

from .capture import CaptureError

__all__ = ["unconditional", "conditional_allowed", "conditional_now", "when_any", "registered", "Registration",
           "any_set"]

wp.set_module_options({"enable_backward": False})

_state = threading.local()


@wp.kernel
def _any_set(mask: wp.array(dtype=wp.int32), flag: wp.array(dtype=wp.int32)):
    e = wp.tid()
    # every writer stores the same value, so the race is benign
    if mask[e] != 0:
        flag[0] = 1


def any_set(mask: wp.array, flag: wp.array) -> None:
    """``flag[0] = 1 if any(mask) else 0`` on the device, without a host sync (capturable)."""
    flag.zero_()
    wp.launch(_any_set, mask.shape[0], inputs=[mask], outputs=[flag], device=mask.device)


@contextlib.contextmanager
def unconditional():
    """Record masked regenerations without a conditional node while the context is open."""
    depth = getattr(_state, "unconditional", 0)
    _state.unconditional = depth + 1
    try:
        yield
    finally:
        _state.unconditional = depth


def conditional_allowed(device=None) -> bool:
    """Whether a recording may hold conditional nodes (``capture_if`` / ``capture_while``).

    False inside ``unconditional()``; with a CUDA ``device``, also False where the driver
    cannot record conditional nodes (CUDA < 12.4). Warp's CPU capture always can.
    """
    if getattr(_state, "unconditional", 0) != 0:
        return False
    if device is None:
        return True
    device = wp.get_device(device)
    return device.is_cpu or wp.is_conditional_graph_supported()


def conditional_now(device, capturing: bool | None = None) -> bool:
    """Whether a masked body on ``device`` goes under an ``any(mask)`` conditional now.

    While recording (``capturing``; default: whether ``device`` records): where the
    recording may hold conditional nodes (:func:`conditional_allowed`). Eagerly: on the CPU
    only, where reading the flag costs nothing; on CUDA it would wait on the host, so the
    body runs in full there.
    """
    device = wp.get_device(device)
    if capturing is None:
        capturing = device.is_capturing
    if capturing:
        return conditional_allowed(device)
    return device.is_cpu


def when_any(mask: wp.array, flag: wp.array, body) -> None:
    """Run ``body()`` under ``if any(mask)`` where :func:`conditional_now`, else unconditionally.

    ``body`` must be an identity for the envs outside ``mask`` (an all-zero mask changes
    nothing), so that running it unconditionally is correct too. ``flag`` is a ``[1]``
    int32 scratch array on the mask's device.
    """
    if conditional_now(mask.device):
        any_set(mask, flag)
        wp.capture_if(flag, on_true=body)
    else:
        body()


class Registration:
    """What ``registered()`` yields; ``graph`` is Warp's handle of the joined capture after exit.

    Keep it as long as the torch graph lives: it holds the courses and arrays the recorded
    calls read (docs/lifetime.md).
    """

    def __init__(self):
        self.graph = None


@contextlib.contextmanager
def registered(device=None, *, stream=None, conditional: bool = False):
    """Join the CUDA capture that another library began on ``stream`` (default: torch's current stream).

    Course calls inside record into that capture (``course.step()``,
    ``course.regenerate(mask=done, advance=True)``, ...). With ``conditional=False`` (the
    default) masked regenerations record their body without the conditional node, as in
    :func:`unconditional`; with ``conditional=True`` they keep it: record the masked
    regeneration after every torch op that allocates, or those ops fail to capture.

    Args:
        device: the CUDA device (default: Warp's default device); ignored with ``stream``.
        stream: the recording ``wp.Stream`` (e.g. ``wp.stream_from_torch(s)``).
        conditional: keep the conditional node of masked regenerations.

    Yields:
        a :class:`Registration` (its ``graph`` is set on exit).

    Raises:
        ValueError: a CPU device (record with ``wp.ScopedCapture(device="cpu")``).
        CaptureError: the stream is not capturing (open this inside ``torch.cuda.graph``).
    """
    dev = stream.device if stream is not None else wp.get_device(device)
    if not dev.is_cuda:
        raise ValueError(f"registered() joins a CUDA capture; on {dev} record with "
                         f"wp.ScopedCapture(device={str(dev)!r})")
    if stream is None:
        import torch

        stream = wp.stream_from_torch(torch.cuda.current_stream(dev.ordinal))
    if not stream.is_capturing:
        raise CaptureError("registered() joins a capture begun outside Warp: open it inside torch.cuda.graph(...)")
    registration = Registration()
    with contextlib.ExitStack() as stack:
        stack.enter_context(wp.ScopedStream(stream, sync_enter=False, sync_exit=False))
        capture = stack.enter_context(wp.ScopedCapture(stream=stream, external=True))
        if not conditional:
            stack.enter_context(unconditional())
        yield registration
    registration.graph = capture.graph
