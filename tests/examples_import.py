"""``load_example(name)``: import ``examples/<name>.py`` in a test (``examples`` is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load_example(name: str):
    """A fresh module of ``examples/<name>.py``, registered as ``_example_<name>``."""
    spec = importlib.util.spec_from_file_location(f"_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # an example's dataclass resolves its annotations through the module
    spec.loader.exec_module(module)
    return module
