"""``run_torchrun(args, logs)``: a ``torchrun --standalone`` job of CPU processes (gloo) as a test runs it.

Made for a loaded 2-core machine and a fresh clone:

* the processes import this checkout's ``trackgen_env`` (``PYTHONPATH``), not an installed copy: a
  script under ``examples/`` puts only ``examples/`` on its path, so a fresh clone's job ran the
  installed package, whatever version that was;
* the Warp kernels the job launches are compiled here first, once (``warm``), so the processes load
  them from the kernel cache instead of each compiling the same modules at the same time on a
  cold cache (a fresh clone's first run; the slowest part of the job on a loaded machine);
* one torch thread per process and a limit that a loaded machine does not reach (a slow job is
  slow, not wrong); each process's stdout and stderr go to its own files (``--redirects 3``), and a
  failure shows them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def warm(env_id: str = "TrackGen-Track-v0", **kwargs) -> None:
    """Compile (or load) the Warp modules of ``env_id`` in this process: a reset and one step of 2 envs."""
    import gymnasium as gym
    import numpy as np

    import trackgen_env  # noqa: F401

    env = gym.make_vec(env_id, num_envs=2, vectorization_mode="vector_entry_point", device="cpu", **kwargs)
    try:
        env.reset(seed=0)
        env.step(np.zeros((2, *env.single_action_space.shape), dtype=np.float32))
    finally:
        env.close()


def run_torchrun(args: list[str], logs: Path, *, nproc: int = 2, timeout: float = 900) -> list[str]:
    """Run ``torchrun --standalone --nproc_per_node=nproc ARGS`` from the checkout and return each process's
    stdout (rank order); an exit code other than 0 fails with every process's output."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
           "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
               "--log-dir", str(logs), "--redirects", "3", *args]
    proc = subprocess.run(command, check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    outs = {int(p.parent.name): p.read_text() for p in logs.rglob("stdout.log")}
    errs = {int(p.parent.name): p.read_text() for p in logs.rglob("stderr.log")}
    if proc.returncode != 0:
        report = "\n".join(
            f"--- rank {r} stdout\n{outs.get(r, '')[-2000:]}\n--- rank {r} stderr\n{errs.get(r, '')[-3000:]}"
            for r in range(nproc)
        )
        raise AssertionError(f"torchrun exited {proc.returncode}:\n{proc.stderr[-3000:]}\n{report}")
    return [outs.get(r, "") for r in range(nproc)]
