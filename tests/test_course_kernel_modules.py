"""``load_kernel_modules``: a course loads the Warp modules its components launch, and no
others (each module compiles for ~0.5 s on a cold kernel cache)."""

from __future__ import annotations

import pytest

from trackgen_env.course import graphs
from trackgen_env.tools import BandCollision, Localizer


def _loaded(monkeypatch, components) -> set[str]:
    names = set()
    monkeypatch.setattr(graphs.wp, "load_module", lambda module, device=None: names.add(module.name))
    graphs.load_kernel_modules(components, "cpu")
    return names


@pytest.mark.parametrize("backend, loads_sdf", [("segments", False), ("sdf", True)])
def test_band_collision_loads_the_sdf_module_only_for_the_sdf_backend(monkeypatch, backend, loads_sdf):
    names = _loaded(monkeypatch, [BandCollision(backend)])
    assert "trackgen_env.tools.band_collision" in names
    assert ("trackgen_env.tools.band_sdf" in names) is loads_sdf


def test_a_module_one_component_does_not_use_is_loaded_for_another_that_does(monkeypatch):
    names = _loaded(monkeypatch, [BandCollision("segments"), BandCollision("sdf", name="sdf"), Localizer()])
    assert {"trackgen_env.tools.band_sdf", "trackgen_env.tools.localizer"} <= names
