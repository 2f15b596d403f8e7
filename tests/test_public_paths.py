"""The public import paths of the modules that live in core/: ``trackgen_env.capture`` and
``trackgen_env.exec`` (the spec's ``track_gen.capture`` and ``track_gen.exec``) and
``trackgen_env.seeding``, as the docs and examples write them."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import trackgen_env
from trackgen_env.core import capture, exec, seeding

ROOT = Path(__file__).resolve().parents[1]  # a fresh process imports this checkout


@pytest.mark.parametrize("name, module", [("capture", capture), ("exec", exec), ("seeding", seeding)])
def test_the_old_path_is_the_same_module(name, module):
    assert importlib.import_module(f"trackgen_env.{name}") is module
    assert getattr(trackgen_env, name) is module


def test_the_documented_imports_work_in_a_fresh_process():
    code = ("import trackgen_env.exec, trackgen_env.capture\n"
            "from trackgen_env.exec import unconditional, registered\n"
            "from trackgen_env.capture import CaptureError, RebindAfterCaptureWarning, retain\n"
            "from trackgen_env.seeding import SeedState, env_seeds\n"
            "from trackgen_env import seeding, tools\n"
            "assert trackgen_env.exec.unconditional is unconditional\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
