"""Compile the registered envs' CPU kernels into the package at install (``setup.py``'s ``build_py``).

``python -m trackgen_env.envs.prebuild TARGET`` constructs each registered env
(``gymnasium.make_vec(id, num_envs=2, device="cpu")``), resets and steps it once (the gates env
with its reference controller, :class:`~trackgen_env.envs.controllers.CourseLinePilot`), with Warp's kernel
cache on a new empty folder (set in a child process, since Warp reads ``WARP_CACHE_PATH`` once, at
``wp.init()``), then stores this package's compiled modules in ``TARGET/<key>/``
(:func:`trackgen_env.core.kernel_cache.store`), which :func:`trackgen_env.core.kernel_cache.seed` copies into
the user's cache at the first construction. It compiles what a default construction and step
launch: other settings (another collision backend, a circuit CSV) compile on first use as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import gymnasium
import numpy as np

from ..core import kernel_cache
from . import ENTRY_POINTS, register_envs
from .controllers import CourseLinePilot

__all__ = ["build", "compile_envs"]


#: an env's reference controller that launches kernels of its own (the demo's; PurePursuit is NumPy)
_PILOTS = {"TrackGen-Gates-v0": CourseLinePilot}


def compile_envs(env_ids: tuple[str, ...] = tuple(ENTRY_POINTS), num_envs: int = 2) -> None:
    """Construct, reset and step each env of ``env_ids`` (registered ids) once on the CPU, with its
    reference controller where that has kernels (compiles what they launch)."""
    register_envs()
    for env_id in env_ids:
        env = gymnasium.make_vec(env_id, num_envs=num_envs, device="cpu")
        env.reset(seed=0)
        pilot = _PILOTS.get(env_id)
        env.step(np.zeros(env.action_space.shape, env.action_space.dtype) if pilot is None else pilot(env)())
        env.close()


def build(target: str | os.PathLike = kernel_cache.PREBUILT_DIR,
          env_ids: tuple[str, ...] = tuple(ENTRY_POINTS)) -> list[str]:
    """Compile the CPU kernels of the envs ``env_ids`` (default: every registered env) in a child
    process on an empty kernel cache and store them under ``target`` (:func:`trackgen_env.core.kernel_cache.store`).

    Returns:
        The module folder names stored.

    Raises:
        RuntimeError: the child process failed (its stderr in the message).
    """
    with tempfile.TemporaryDirectory(prefix="trackgen-prebuild-") as cache:
        env = {**os.environ, "WARP_CACHE_PATH": cache}
        code = ("import warp as wp; wp.config.log_level = wp.LOG_WARNING; from trackgen_env.envs.prebuild import "
                "compile_envs; "
                f"compile_envs({tuple(env_ids)!r}); print(wp.config.kernel_cache_dir)")
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"compiling the envs' kernels failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
        return kernel_cache.store(run.stdout.strip().splitlines()[-1], target)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m trackgen_env.envs.prebuild TARGET")
    stored = build(sys.argv[1])
    print(f"stored {len(stored)} prebuilt Warp modules in {sys.argv[1]}")
