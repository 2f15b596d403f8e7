"""An ImportError for a missing optional dependency gives the install command in the README's form."""

from __future__ import annotations

import sys

import pytest

from trackgen_env.core.checks import install_hint
from trackgen_env.envs.io import check_output
from trackgen_env.generators.gate_layouts import load_gate_layout
from trackgen_env.integrations.sb3 import SB3_INSTALL_HINT


def test_the_hint_names_the_source_checkouts_extra_first():
    assert install_hint("torch") == ('pip install -e ".[torch]" in a source checkout '
                                     '(else pip install "trackgen_env[torch]")')
    assert SB3_INSTALL_HINT == install_hint("sb3")


def test_torch_outputs_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r'needs PyTorch: pip install -e "\.\[torch\]"'):
        check_output("torch")


def test_a_yaml_layout_without_pyyaml(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "yaml", None)
    path = tmp_path / "course.yaml"
    path.write_text("gates: []\n")
    with pytest.raises(ImportError, match=r'needs PyYAML: pip install -e "\.\[gates\]"'):
        load_gate_layout(str(path))
