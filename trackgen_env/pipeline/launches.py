"""``Launches``: a kernel launch recorded once and replayed while its arguments stay the same.

An eager ``wp.launch`` packs every argument into its C struct on each call, several times
the cost of replaying a launch recorded with ``wp.launch(..., record_cmd=True)``; the retry
loop launches each stage kernel once per round, so eager launches cost a CPU generation a
noticeable share (``benchmarks/NOTES.md``).

A recorded launch is replayed only when every argument is the object it was recorded with
(arrays by identity: a rebound array records again) or an equal plain number, so the
kernel always runs on what the caller passed. Under a capture the plain ``wp.launch`` runs
(the graph records it; replay speed does not matter there).
"""

from __future__ import annotations

import warp as wp

__all__ = ["Launches"]

_PLAIN = (int, float, bool)


def _same(a, b) -> bool:
    if a is b:
        return True
    return type(a) is type(b) and isinstance(a, _PLAIN + (tuple,)) and a == b


class Launches:
    """The recorded launches of one owner (a stage, a program), one per kernel."""

    def __init__(self):
        self._recorded: dict = {}

    def launch(self, kernel, dim, *, inputs, outputs=(), device) -> None:
        """``wp.launch(kernel, dim, inputs=inputs, outputs=outputs, device=device)``, replayed
        from its recording when every argument is unchanged (see the module docstring)."""
        device = wp.get_device(device)
        if device.is_capturing:
            wp.launch(kernel, dim, inputs=inputs, outputs=outputs, device=device)
            return
        args = (dim, *inputs, *outputs)
        have = self._recorded.get(kernel)
        if have is None or len(have[0]) != len(args) or not all(_same(a, b) for a, b in zip(have[0], args)):
            have = self._recorded[kernel] = (args, wp.launch(kernel, dim, inputs=inputs, outputs=outputs,
                                                             device=device, record_cmd=True))
        have[1].launch()
