"""The install's prebuilt CPU kernels (trackgen_env/core/kernel_cache.py, envs/prebuild.py, setup.py):
stored per CPU target, copied into Warp's kernel cache at the first construction, so that a first
use on an empty cache compiles no module. Timing is in benchmarks/run.py --only first_use."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import warp as wp

from trackgen_env import TrackGenConfig, TrackGenerator
from trackgen_env.core import kernel_cache
from trackgen_env.envs import prebuild

ROOT = Path(__file__).resolve().parent.parent


def _module(folder: Path, name: str, files: dict[str, str]) -> Path:
    (folder / name).mkdir(parents=True)
    for file, text in files.items():
        (folder / name / file).write_text(text)
    return folder / name


def test_store_keeps_this_packages_objects_and_metadata_under_the_target_key(tmp_path):
    cache, prebuilt = tmp_path / "cache", tmp_path / "prebuilt"
    _module(cache, "wp_trackgen_env.tools.progress_1a2b3c4", {"m.cpufb.o": "obj", "m.meta": "{}", "m.cpp": "src"})
    _module(cache, "wp___main___5d6e7f8", {"x.o": "obj", "x.meta": "{}"})  # not this package's
    _module(cache, "wp_trackgen_env.envs.car_9a8b7c6", {"c.cpp": "src"})  # never compiled: no object
    stored = kernel_cache.store(cache, prebuilt)
    assert stored == ["wp_trackgen_env.tools.progress_1a2b3c4"]
    key_dir = prebuilt / wp.get_cpu_kernel_cache_key()
    assert sorted(p.name for p in key_dir.iterdir()) == stored
    assert sorted(p.name for p in (key_dir / stored[0]).iterdir()) == ["m.cpufb.o", "m.meta"]


def test_store_rejects_a_missing_cache_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="expected a Warp kernel cache folder"):
        kernel_cache.store(tmp_path / "absent", tmp_path / "prebuilt")
    assert not (tmp_path / "prebuilt").exists()


def test_seed_copies_only_the_missing_modules_of_this_target(tmp_path, monkeypatch):
    prebuilt, cache = tmp_path / "prebuilt", tmp_path / "cache"
    key = prebuilt / wp.get_cpu_kernel_cache_key()
    _module(key, "wp_trackgen_env.a_1111111", {"a.o": "new", "a.meta": "{}"})
    _module(key, "wp_trackgen_env.b_2222222", {"b.o": "new", "b.meta": "{}"})
    _module(prebuilt / "1.0.0-Other-arch-00000000", "wp_trackgen_env.c_3333333", {"c.o": "other", "c.meta": "{}"})
    _module(cache, "wp_trackgen_env.a_1111111", {"a.o": "kept", "a.meta": "{}"})
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(cache))
    assert kernel_cache.seed(prebuilt) == ["wp_trackgen_env.b_2222222"]
    assert (cache / "wp_trackgen_env.a_1111111" / "a.o").read_text() == "kept"
    assert (cache / "wp_trackgen_env.b_2222222" / "b.o").read_text() == "new"
    assert sorted(p.name for p in cache.iterdir()) == ["wp_trackgen_env.a_1111111", "wp_trackgen_env.b_2222222"]


def test_seed_skips_a_cache_it_cannot_write(tmp_path, monkeypatch):
    prebuilt = tmp_path / "prebuilt"
    _module(prebuilt / wp.get_cpu_kernel_cache_key(), "wp_trackgen_env.a_1111111", {"a.o": "obj", "a.meta": "{}"})
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "file" / "cache"))
    assert kernel_cache.seed(prebuilt) == []


def test_a_cpu_generator_seeds_the_kernel_cache_once_per_process(tmp_path, monkeypatch):
    TrackGenerator(TrackGenConfig(num_envs=2, device="cpu"))  # its modules loaded: nothing compiles below
    prebuilt, cache = tmp_path / "prebuilt", tmp_path / "cache"
    _module(prebuilt / wp.get_cpu_kernel_cache_key(), "wp_trackgen_env.z_4444444", {"z.o": "obj", "z.meta": "{}"})
    monkeypatch.setattr(kernel_cache, "PREBUILT_DIR", prebuilt)
    monkeypatch.setattr(kernel_cache, "_seeded", False)
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(cache))
    TrackGenerator(TrackGenConfig(num_envs=2, device="cpu"))
    assert (cache / "wp_trackgen_env.z_4444444" / "z.o").read_text() == "obj"
    (cache / "wp_trackgen_env.z_4444444" / "z.o").unlink()
    TrackGenerator(TrackGenConfig(num_envs=2, device="cpu"))  # seeded already in this process
    assert not (cache / "wp_trackgen_env.z_4444444" / "z.o").exists()


_FIRST_USE = r"""
import sys
from pathlib import Path
import gymnasium, numpy as np
from trackgen_env.core import kernel_cache
kernel_cache.PREBUILT_DIR = Path(sys.argv[1])
env = gymnasium.make_vec("TrackGen-Track-v0", num_envs=4, device="cpu")
env.reset(seed=0)
env.step(np.zeros(env.action_space.shape, np.float32))
"""


def test_with_the_prebuilt_kernels_a_first_use_on_an_empty_cache_compiles_no_module(tmp_path):
    stored = prebuild.build(tmp_path / "prebuilt", env_ids=("TrackGen-Track-v0",))
    assert stored and all(name.startswith(kernel_cache.MODULE_PREFIX) for name in stored)
    cache = tmp_path / "empty-cache"
    env = {**os.environ, "WARP_CACHE_PATH": str(cache),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    subprocess.run([sys.executable, "-c", _FIRST_USE, str(tmp_path / "prebuilt")], env=env, check=True,
                   capture_output=True)
    (version,) = cache.iterdir()  # Warp's cache folder of its version
    modules = {p.name: {f.suffix for f in p.iterdir()} for p in version.iterdir()
               if p.name.startswith(kernel_cache.MODULE_PREFIX)}
    assert sorted(modules) == sorted(stored)  # the env's modules, each copied in whole (no staging folder left)
    # a module Warp compiles leaves its generated C++ in its folder; the prebuilt ones have none
    assert [name for name, suffixes in modules.items() if ".cpp" in suffixes] == []
