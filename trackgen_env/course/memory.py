"""The memory of a construction: what a course (or an env over one) allocates, measured or estimated.

Every buffer of a course is a ``wp.array`` allocated at construction and never again
(``types.py``: stable arrays), and each one's size is a capacity times ``num_envs`` or a
constant. So the memory of a construction at any ``num_envs`` follows from two small ones:
:func:`memory_estimate` builds the thing at ``num_envs`` 1 and 2, measures each part
(:func:`array_bytes`: the distinct ``wp.array`` allocations it reaches) and extrapolates
each part linearly. :func:`check_fits` compares an estimate with what the device has free
(:func:`available_bytes`) and refuses a construction that cannot fit, before it allocates.
"""

from __future__ import annotations

import dataclasses
import math
import os
import types
import warnings
from collections.abc import Callable, Mapping

import numpy as np
import warp as wp

from ..core.checks import check_num_envs

__all__ = ["MemoryEstimate", "array_bytes", "course_parts", "probe", "extrapolate", "memory_estimate",
           "available_bytes", "check_fits", "format_bytes", "PROBE_ENVS"]

#: The ``num_envs`` of the two small constructions an estimate extrapolates from.
PROBE_ENVS = (1, 2)


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """Bytes of ``wp.array`` memory on ``device`` per part of a construction of ``num_envs`` envs.

    Attributes:
        num_envs: the number of envs the estimate is for.
        device: the Warp device (``"cpu"``: host memory).
        parts: part name -> bytes (e.g. ``"generator"``, each component by name, ``"env buffers"``).
        per_env: bytes each further env adds (the slope of the extrapolation).
    """

    num_envs: int
    device: str
    parts: Mapping[str, int]
    per_env: int

    @property
    def total(self) -> int:
        """Bytes of all parts."""
        return sum(self.parts.values())

    def max_envs(self, budget: int) -> int:
        """The largest ``num_envs`` whose estimate stays within ``budget`` bytes (0 if none)."""
        fixed = self.total - self.per_env * self.num_envs
        return max(0, int((budget - fixed) // max(self.per_env, 1)))

    def largest_parts(self, num: int = 5) -> str:
        """``"generator 3.7 TiB, localizer 751.0 GiB, ..."``: the ``num`` largest parts."""
        top = sorted(self.parts.items(), key=lambda kv: -kv[1])
        more = f", {len(top) - num} more" if len(top) > num else ""
        return ", ".join(f"{name} {format_bytes(b)}" for name, b in top[:num]) + more

    def __str__(self) -> str:
        return f"{format_bytes(self.total)} for {self.num_envs} envs on {self.device} ({self.largest_parts()})"


def format_bytes(n: float) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


# objects not walked: they hold no buffer of ours (or only views of ours, e.g. torch tensors)
_LEAVES = (str, bytes, int, float, complex, bool, type(None), type, types.ModuleType, types.FunctionType,
           types.BuiltinFunctionType, types.MethodType, np.ndarray, np.generic, wp.Device)


def array_bytes(obj, *, device=None, seen: set | None = None, stop: Callable[[object], bool] | None = None) -> int:
    """Bytes of the distinct ``wp.array`` allocations reachable from ``obj`` (on ``device`` when given).

    Walks attributes (``__dict__``), dataclass fields, and the items of dicts, mappings,
    lists, tuples and sets; counts each allocation once (its ``capacity``; a view counts
    as its base array). ``seen`` (ids) is shared between calls so that a part is
    counted once; ``stop(o)`` True skips ``o`` (another part's root).
    """
    dev = None if device is None else wp.get_device(device)
    seen = set() if seen is None else seen
    total, todo = 0, [obj]
    while todo:
        o = todo.pop()
        if id(o) in seen or isinstance(o, _LEAVES) or (stop is not None and o is not obj and stop(o)):
            continue
        seen.add(id(o))
        if isinstance(o, wp.array):
            if o.deleter is None:  # a view: its memory is its base's
                base = getattr(o, "_ref", None)
                if isinstance(base, wp.array):
                    todo.append(base)
            elif o.ptr is not None and (dev is None or o.device == dev):
                total += int(o.capacity)
            continue
        if isinstance(o, (dict, Mapping, types.MappingProxyType)):
            todo.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            todo.extend(o)
        elif type(o).__module__.startswith("trackgen_env") or dataclasses.is_dataclass(o):
            # our own objects (and their dataclasses); nothing of other libraries (torch, gymnasium)
            fields = getattr(o, "__dict__", None)
            if fields is not None:
                todo.extend(fields.values())
            for slot in getattr(type(o), "__slots__", ()):
                if hasattr(o, slot):
                    todo.append(getattr(o, slot))
    return total


def course_parts(course, *, device=None, seen: set | None = None) -> dict[str, int]:
    """Measured bytes of a built course: ``"generator"`` then each component by name (execution order)."""
    seen = set() if seen is None else seen
    roots = [course, course._ctx, course.generator, *course.components.values()]
    ids = {id(r) for r in roots}

    def stop(o):
        return id(o) in ids

    parts = {"generator": array_bytes(course.generator, device=device, seen=seen, stop=stop)}
    for name, c in course.components.items():
        parts[name] = array_bytes(c, device=device, seen=seen, stop=stop)
    parts["course"] = array_bytes(course, device=device, seen=seen, stop=stop)  # its flags and masks
    return parts


def probe(build: Callable[[int], object], measure: Callable[[object], dict[str, int]]) -> tuple[dict, dict]:
    """The parts of ``build(1)`` and ``build(2)`` (:data:`PROBE_ENVS`), measured by ``measure``.

    ``build`` runs under ``warnings.catch_warnings`` (the probes' warnings are the real
    construction's); a ``close()`` method of each probe is called after measuring it.
    """
    probes = []
    for e in PROBE_ENVS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            obj = build(e)
        probes.append(measure(obj))
        close = getattr(obj, "close", None)
        if callable(close):
            close()
        del obj
    return tuple(probes)


def extrapolate(probes: tuple[dict, dict], num_envs: int, device) -> MemoryEstimate:
    """Each part of ``probes`` (of :func:`probe`) extrapolated linearly to ``num_envs``: ``p1 + (p2 - p1) (E - 1)``."""
    (e1, p1), (e2, p2) = zip(PROBE_ENVS, probes)
    parts, per_env = {}, 0.0
    for name in {**p1, **p2}:
        a, b = p1.get(name, 0), p2.get(name, 0)
        slope = max(0.0, (b - a) / (e2 - e1))
        parts[name] = int(math.ceil(a + slope * (num_envs - e1)))
        per_env += slope
    return MemoryEstimate(num_envs=num_envs, device=str(wp.get_device(device)), parts=parts,
                          per_env=int(math.ceil(per_env)))


def memory_estimate(build: Callable[[int], object], measure: Callable[[object], dict[str, int]], num_envs: int,
                    device) -> MemoryEstimate:
    """Estimate the parts of ``build(num_envs)`` from ``build(1)`` and ``build(2)``, without building it.

    Args:
        build: ``num_envs -> object`` (a course, an env); called with 1 and 2 only (:func:`probe`).
        measure: ``object -> {part: bytes}`` (e.g. :func:`course_parts`).
        num_envs: the size to estimate.
        device: the device the parts are measured on.

    Returns:
        A :class:`MemoryEstimate`: each part extrapolated linearly (:func:`extrapolate`).

    Example::

        est = memory_estimate(lambda e: Course.track(replace(cfg, num_envs=e), checkpoint_spacing=0.6),
                              course_parts, 10**6, "cpu")

    Raises:
        TypeError / ValueError: ``num_envs`` not an int >= 1 (before any probe is built).
    """
    num_envs = check_num_envs(num_envs)
    return extrapolate(probe(build, measure), num_envs, device)


def available_bytes(device) -> int:
    """Bytes a construction on ``device`` may still allocate.

    CUDA: ``wp.get_device(device).free_memory``. CPU: the host's available memory
    (``MemAvailable`` of ``/proc/meminfo``, else ``os.sysconf`` free pages), capped by the
    cgroup's memory limit where there is one (a container's limit is the one that kills).
    """
    dev = wp.get_device(device)
    if dev.is_cuda:
        return int(dev.free_memory)
    avail = _meminfo_available()
    if avail is None:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    room = _cgroup_room()
    return int(avail if room is None else min(avail, room))


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _cgroup_room() -> int | None:
    """The cgroup's memory limit minus its usage (v2, else v1); None without a limit."""
    for limit_path, usage_path in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_path) as f:
                limit = f.read().strip()
            with open(usage_path) as f:
                usage = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if limit.isdigit() and int(limit) < 1 << 60:  # v1 writes ~2**63 for "no limit"
            return max(0, int(limit) - usage)
        return None
    return None


def check_fits(estimate: MemoryEstimate, what: str, *, available: int | None = None) -> None:
    """Refuse a construction whose estimate exceeds the memory available on its device.

    Args:
        estimate: the construction's :class:`MemoryEstimate`.
        what: the construction, for the message (e.g. ``"TrackVectorEnv(num_envs=10000000)"``).
        available: bytes available (default :func:`available_bytes` of the estimate's device).

    Raises:
        MemoryError: ``estimate.total > available``; the message states both, the largest
            parts and the largest ``num_envs`` that fits.
    """
    avail = available_bytes(estimate.device) if available is None else available
    if estimate.total <= avail:
        return
    kind = "host" if wp.get_device(estimate.device).is_cpu else "device"
    raise MemoryError(
        f"{what} needs an estimated {format_bytes(estimate.total)} of {kind} memory on {estimate.device} "
        f"({estimate.largest_parts()}), more than the {format_bytes(avail)} available: at most "
        f"~{estimate.max_envs(avail)} envs of this configuration fit"
    )
