"""The install compiles the envs' CPU kernels once (the metadata is in pyproject.toml).

``build_py`` runs ``python -m trackgen_env.envs.prebuild`` on the sources, which stores the compiled
Warp modules in ``trackgen_env/_prebuilt/`` of the build (of the source tree for an editable
install); the first construction copies them into Warp's kernel cache (``trackgen_env/core/kernel_cache.py``),
so a first use does not compile them (~10 s on a 2-core VM). The objects are for this machine's CPU
target and Warp version, so the wheel is platform-specific; on another target Warp compiles as before.
A failed prebuild is a warning, not a failed install: the package works without the tree.
"""

import os
import subprocess
import sys
import warnings
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithKernels(build_py):
    def run(self):
        super().run()
        package = ROOT if self.editable_mode else Path(self.build_lib)
        target = package / "trackgen_env" / "_prebuilt"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        run = subprocess.run([sys.executable, "-m", "trackgen_env.envs.prebuild", str(target)], env=env,
                             capture_output=True, text=True)
        if run.returncode != 0:
            warnings.warn(f"trackgen_env: the Warp kernels were not prebuilt (a first use compiles them):\n"
                          f"{run.stderr[-2000:]}")


class PlatformDistribution(Distribution):
    """The prebuilt kernels are machine code: tag the wheel with the platform, not ``py3-none-any``."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithKernels}, distclass=PlatformDistribution)
