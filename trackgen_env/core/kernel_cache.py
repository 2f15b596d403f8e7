"""Kernels compiled when the package was installed, copied into Warp's kernel cache on first use (layer 0).

A cold first use compiles every Warp module an env launches, seconds on a small CPU
(``benchmarks/NOTES.md``). So the install compiles them once: ``setup.py``'s
``build_py`` runs :mod:`trackgen_env.envs.prebuild`, which constructs and steps each registered
env on the CPU with an empty kernel cache and keeps the result in ``trackgen_env/_prebuilt/<key>/``
(:func:`store`). At the first construction in a process, :func:`seed` copies the module folders of
that tree that Warp's cache lacks into ``wp.config.kernel_cache_dir``; Warp then finds them
"cached" when a kernel first launches, and still loads only the modules that are launched.

This is the archive workflow of ``wp.get_cpu_kernel_cache_key`` (Warp's docs): ``key`` names the
Warp version, OS, CPU architecture and compile target, and each module folder is named by the
hash of its kernels' source and options, so a folder built for another CPU target, Warp version or
source is never used: Warp compiles instead, as without this tree. CUDA kernels are not prebuilt
(the install has no GPU to target).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

import warp as wp

__all__ = ["PREBUILT_DIR", "MODULE_PREFIX", "seed", "store"]

#: the tree the install writes: ``<PREBUILT_DIR>/<wp.get_cpu_kernel_cache_key()>/<module folder>/``
PREBUILT_DIR = Path(__file__).resolve().parents[1] / "_prebuilt"
#: Warp names the cache folder of the module ``trackgen_env.x`` ``wp_trackgen_env.x_<hash>``
MODULE_PREFIX = "wp_trackgen_env."
# what Warp's loader needs of a cached module: the object and its metadata (not the C++ source)
_KEPT_SUFFIXES = (".o", ".meta")

_seeded = False
_lock = threading.Lock()


def store(cache_dir: str | os.PathLike, prebuilt_dir: str | os.PathLike = PREBUILT_DIR) -> list[str]:
    """Copy this package's CPU modules of the kernel cache ``cache_dir`` (a Warp ``kernel_cache_dir``)
    to ``prebuilt_dir/<wp.get_cpu_kernel_cache_key()>/``.

    Only folders named ``wp_trackgen_env.*`` are kept, each with its ``.o`` and ``.meta`` files.

    Returns:
        The module folder names stored, sorted.

    Raises:
        FileNotFoundError: ``cache_dir`` is not a folder.
    """
    cache_dir = Path(cache_dir)
    if not cache_dir.is_dir():
        raise FileNotFoundError(f"expected a Warp kernel cache folder, received {str(cache_dir)!r} (not a folder)")
    target = Path(prebuilt_dir) / wp.get_cpu_kernel_cache_key()
    stored = []
    for module_dir in sorted(cache_dir.iterdir()):
        files = [f for f in module_dir.iterdir() if f.suffix in _KEPT_SUFFIXES] if module_dir.is_dir() else []
        if not module_dir.name.startswith(MODULE_PREFIX) or not any(f.suffix == ".o" for f in files):
            continue
        (target / module_dir.name).mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy2(f, target / module_dir.name / f.name)
        stored.append(module_dir.name)
    return stored


def seed(prebuilt_dir: str | os.PathLike | None = None) -> list[str]:
    """Copy the prebuilt modules of this CPU target that Warp's kernel cache lacks into it.

    Runs once per process (later calls return ``[]``; an explicit ``prebuilt_dir`` always runs);
    initialises Warp (``wp.init()``) to read ``wp.config.kernel_cache_dir`` and the target key.
    A module folder already in the cache is left as it is. Each folder is copied under a
    temporary name and renamed into place, so a concurrent process sees it whole or not at all.
    Does nothing when ``wp.config.cache_kernels`` is off or the tree has no folder for this key;
    a folder that cannot be written (``OSError``) is skipped, and Warp compiles that module as usual.

    Returns:
        The module folder names copied.
    """
    global _seeded
    with _lock:
        if prebuilt_dir is None:
            if _seeded:
                return []
            _seeded = True
        if not wp.config.cache_kernels:
            return []
        source = Path(PREBUILT_DIR if prebuilt_dir is None else prebuilt_dir) / wp.get_cpu_kernel_cache_key()
        if not source.is_dir():
            return []
        cache = Path(wp.config.kernel_cache_dir)
        copied = []
        for module_dir in sorted(source.iterdir()):
            if (cache / module_dir.name).exists():
                continue
            staging = None
            try:
                cache.mkdir(parents=True, exist_ok=True)
                staging = Path(tempfile.mkdtemp(prefix=f".{module_dir.name}.seeding-", dir=cache))
                shutil.copytree(module_dir, staging, dirs_exist_ok=True)
                os.rename(staging, cache / module_dir.name)
                copied.append(module_dir.name)
            except OSError:
                # another process put it there first, or the cache is not writable: Warp compiles
                # the module at its first launch as it would without this tree
                if staging is not None:
                    shutil.rmtree(staging, ignore_errors=True)
        return copied
