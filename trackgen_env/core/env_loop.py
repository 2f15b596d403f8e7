"""How a per-env kernel is launched: one thread looping over the envs on the CPU, a thread per env on CUDA.

Warp runs a CPU kernel's threads one after the other on one core, and each thread begins by
copying the kernel's arguments and zero-initialising every vector variable the kernel
declares. An env that the kernel skips pays that as much as one it works on, and a masked
regeneration of a few envs runs about ten such kernels over all E envs in every retry round.
So on the CPU these kernels run as one thread that loops over the envs, paying it once per
launch (measurements in ``benchmarks/NOTES.md``); on CUDA, a thread per env. The envs are
visited in the order of Warp's CPU threads (0, 1, ...) and each env's work is unchanged, so the
results are the same bytes for any split
(``tests/test_env_loop.py``).

A kernel written for it takes ``envs_per_thread`` as its first argument and loops::

    thread = wp.tid()                # (thread, lane = wp.tid() with lanes per env)
    for e in range(thread * envs_per_thread, wp.min((thread + 1) * envs_per_thread, pending.shape[0])):
        if pending[e] == 0:
            continue                 # where a per-env kernel would return
        ...

and is launched with ``threads, per = env_loop.shape(device, num_envs)``: ``dim=threads`` (or
``(threads, lanes)``) and ``per`` as that argument.

A generation round's stage kernels visit only the envs still pending (after a few rounds, a
few of thousands of envs draw again, and testing every env's ``pending[e]`` would cost more
than their work). The round's begin lists them in
increasing order (``StageContext.pending_envs``, ``num_pending``), and a stage kernel loops over
that list on the CPU (every env on CUDA, a thread each)::

    thread = wp.tid()
    end = env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])
    for i in range(thread * envs_per_thread, end):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue                 # on CUDA (and any split of a thread per env)

The envs are visited in the same order and each env's work is unchanged: the same bytes.

The per-step kernels of a course read each env's track rows at scattered places (the
segments around the car, the lookahead points, the next checkpoint), and at thousands of envs
those rows have left the caches since the last step: the loop then waits on one cache miss
after another. So in the CPU loop, a kernel first asks for the rows that env ``e + AHEAD``
(:func:`ahead`) will read (:func:`prefetch`: a hint, ``__builtin_prefetch``, that
changes no result) and then works on env ``e``, whose rows were asked for ``AHEAD`` envs
earlier. On CUDA (a thread per env) the hints compile to nothing and the kernels skip them.
"""

from __future__ import annotations

from typing import Any

import warp as wp

__all__ = ["shape", "AHEAD", "ahead", "prefetch", "listed_end", "listed_env"]

AHEAD = wp.constant(2)  # the env whose rows a CPU env loop asks for: e + AHEAD

# x86 and ARM prefetch instructions never fault; the wrapper still keeps the address in the array
_PREFETCH = """
#if !defined(__CUDA_ARCH__)
    __builtin_prefetch((const char*)rows.data + (size_t)e * rows.strides[0] + (size_t)j * rows.strides[1]);
#endif
"""


@wp.func
def ahead(envs_per_thread: int, e: int, end: int) -> int:
    """The env whose rows a CPU env loop at env ``e`` asks for, ``e + AHEAD``, or -1 where there is
    none: past the thread's ``end``, or a thread per env (CUDA, where the hints do nothing)."""
    f = e + AHEAD
    if envs_per_thread > 1 and f < end:
        return f
    return -1


@wp.func_native(_PREFETCH)
def _prefetch(rows: wp.array2d(dtype=Any), e: int, j: int): ...


@wp.func
def prefetch(rows: wp.array2d(dtype=Any), e: int, j: int):
    """Ask the CPU's caches for ``rows[e, j]`` of a per-env ``[E, capacity]`` array (``j``
    clamped into the row, nothing for an empty row; ``e`` must be in range); nothing on CUDA."""
    if rows.shape[1] > 0:
        _prefetch(rows, e, wp.clamp(j, 0, rows.shape[1] - 1))


@wp.func
def listed_end(thread: int, envs_per_thread: int, num_listed: wp.array(dtype=wp.int32), num_envs: int) -> int:
    """The end of ``thread``'s share of an env loop over a list of envs: ``num_listed[0]`` of
    them in a loop of several envs per thread (the CPU), all ``num_envs`` with one (CUDA, where
    ``StageContext.begin_round`` writes no list: a CUDA split must be a thread per env)."""
    n = num_envs
    if envs_per_thread > 1:
        n = num_listed[0]
    return wp.min((thread + 1) * envs_per_thread, n)


@wp.func
def listed_env(envs_per_thread: int, listed: wp.array(dtype=wp.int32), i: int) -> int:
    """The env at place ``i`` of an env loop over a list: ``listed[i]`` with several envs per
    thread (the CPU), ``i`` itself with one (CUDA: a thread per env)."""
    if envs_per_thread > 1:
        return listed[i]
    return i


def shape(device, num_envs: int) -> tuple[int, int]:
    """``(threads, envs_per_thread)`` of a per-env kernel over ``num_envs`` envs on ``device``:
    ``(1, num_envs)`` on the CPU, ``(num_envs, 1)`` on CUDA."""
    if wp.get_device(device).is_cpu:
        return 1, num_envs
    return num_envs, 1


def lanes(device, count: int) -> int:
    """Threads per env of a kernel looping over ``count`` items of an env (points, control
    segments, checkpoints, gates): 1 on the CPU (a serial loop is fastest there, and the envs
    share one thread: :func:`shape`); ``min(64, count)`` on CUDA, a warp's worth, so that small
    batches still fill the device."""
    return 1 if wp.get_device(device).is_cpu else max(1, min(64, int(count)))
