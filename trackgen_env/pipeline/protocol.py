"""``Producer``: the generator surface a course drives (``docs/producer-protocol.md``).

``Program`` (``pipeline.build``), ``TrackGenerator`` and ``GateGenerator`` have all of it;
an object of your own needs the required members, and the optional ones where it uses
what they serve. ``isinstance(obj, Producer)`` checks the required members' presence.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["Producer"]


@runtime_checkable
class Producer(Protocol):
    """The required members of a generator; the optional ones are listed with their defaults.

    Required:
        result: a dataclass of stable ``wp.array`` s, env axis first, with ``valid`` ``[E] int32``
            and ``generation`` ``[E] int32``.
        layout: has ``num_envs`` and the capacities (``max_points``, ``max_loop_length`` / ``max_gates``).
        device: a ``wp.Device`` (or a name).
        enqueue(ctx=None, *, advance=False, mask=None): launches one regeneration of the
            masked envs, capturable, with no host sync; an exact identity for an all-zero mask.

    Optional (a course reads them when present):
        family (None), num_envs (``layout.num_envs``), stream (None), seeds (None), params,
        spec, input_info / inputs (``{}``), capturable (True), generate(seeds=None).
    """

    result: Any
    layout: Any
    device: Any

    def enqueue(self, ctx=None, *, advance: bool = False, mask=None) -> None: ...
