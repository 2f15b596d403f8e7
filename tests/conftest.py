"""Shared fixtures: every device test runs on the CPU, and on CUDA under the ``cuda`` marker."""

import os

import pytest
import warp as wp

# render_mode="human" draws its window with SDL's dummy driver: the tests run without a display
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")

wp.config.log_level = wp.LOG_WARNING  # keep module-load lines out of test output

HAS_CUDA = wp.get_cuda_device_count() > 0

DEVICES = ["cpu",
           pytest.param("cuda:0", marks=[pytest.mark.cuda, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")])]


@pytest.fixture(params=DEVICES)
def device(request):
    """A Warp device name: ``"cpu"``, and ``"cuda:0"`` when present."""
    return request.param
