"""Every kernel module of the package compiles for CUDA where no GPU is present: Warp generates
each module's CUDA source and compiles it to PTX for sm_90 (the H200 that the project's GPU
checks run on) with its bundled NVRTC. The CUDA paths (a thread per env, the lanes per env, the
kernels no CPU test launches) then at least build; the `cuda` tests run them on a GPU.
Skips where this Warp has no NVRTC."""

from __future__ import annotations

import importlib
import pathlib

import pytest
import warp as wp

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _kernel_modules() -> list[str]:
    """The package's modules that define Warp kernels, and the benchmarks' floor."""
    names = []
    for path in sorted((ROOT / "trackgen_env").rglob("*.py")):
        if "@wp.kernel" in path.read_text():
            names.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return names + ["benchmarks.floor"]


def _nvrtc_archs() -> tuple:
    wp.init()
    runtime = getattr(getattr(wp, "_src", None), "context", None)
    runtime = getattr(runtime, "runtime", None)
    return tuple(getattr(runtime, "nvrtc_supported_archs", None) or ())


def test_the_kernel_modules_are_found():
    names = _kernel_modules()
    assert {"trackgen_env.pipeline.stages.track", "trackgen_env.envs.track",
            "trackgen_env.tools.progress"} <= set(names)


@pytest.mark.parametrize("name", _kernel_modules())
def test_the_module_compiles_for_cuda(name, tmp_path):
    if 90 not in _nvrtc_archs():
        pytest.skip("this Warp has no NVRTC for sm_90 (CUDA driver-less compilation unavailable)")
    module = importlib.import_module(name)
    files = wp.compile_aot_module(module, arch=90, module_dir=tmp_path, use_ptx=True)
    assert any(str(f).endswith(".ptx") and f.stat().st_size > 0 for f in map(pathlib.Path, files)), files
