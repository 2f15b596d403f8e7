"""A new user's mistakes with the pipeline extension point are refused, saying what was expected
and what was received, before anything is allocated or written (issue 10's follow-up)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import warp as wp

from trackgen_env.pipeline import PipelineSpec, build, presets

DEV = "cpu"
E = 4


# -- 1. out= ---------------------------------------------------------------------------------------
def test_out_refuses_one_array_for_two_fields_before_anything_is_written():
    spec = presets.track(num_envs=E, device=DEV)
    P = spec.settings["max_points"]
    a = wp.array(np.full((E, P, 3), np.inf, np.float32), dtype=wp.vec3, device=DEV)
    with pytest.raises(ValueError, match=r"out\['normal'\] and out\['tangent'\] share memory.*non-overlapping"):
        build(spec, out={"tangent": a, "normal": a})
    assert np.all(np.isinf(a.numpy()))


def test_out_refuses_overlapping_views_of_one_buffer():
    spec = presets.track(num_envs=E, device=DEV)
    P = spec.settings["max_points"]
    buf = wp.array(np.full((E + 1, P, 3), np.inf, np.float32), dtype=wp.vec3, device=DEV)
    with pytest.raises(ValueError, match="share memory"):
        build(spec, out={"tangent": buf[:E], "normal": buf[1:]})
    assert np.all(np.isinf(buf.numpy()))
    # two disjoint views of one buffer are fine (a simulator's layout)
    big = wp.zeros((2 * E, P), dtype=float, device=DEV)
    program = build(spec, seeds=3, out={"curvature": big[:E], "half_width": big[E:]})
    assert np.array_equal(big.numpy()[E:], program.result.half_width.numpy())


@pytest.mark.parametrize("out", [[1, 2], object(), 3.0, "centerline"])
def test_out_refuses_what_is_neither_a_mapping_nor_a_result_like_object(out):
    with pytest.raises(TypeError, match=r"expected a mapping of field -> wp.array or a result-like object.*got"):
        build(presets.track(num_envs=E, device=DEV), out=out)


# -- 2. specs read back from data --------------------------------------------------------------------
def _tampered(edit):
    data = copy.deepcopy(presets.track(num_envs=2, device=DEV).to_dict())
    edit(data)
    return data


@pytest.mark.parametrize("edit, error, match", [
    (lambda d: d["params"].__setitem__("band.width", "0.8"), TypeError, r"params\['band.width'\] must be a number, got str"),
    (lambda d: d["params"].__setitem__("band.width", True), TypeError, r"params\['band.width'\] must be a number, got bool"),
    (lambda d: d["params"].__setitem__("band.width", float("nan")), ValueError, r"params\['band.width'\] must be finite"),
    (lambda d: d["stages"].append("start"), ValueError, r"distinct; \['start'\] appear more than once"),
    (lambda d: d.__setitem__("stages", "band"), TypeError, r"'stages' must be a list or tuple of stage names \(str\), got 'band'"),
    (lambda d: d.__setitem__("stages", ["band", 3]), TypeError, r"'stages' must be a list or tuple"),
    (lambda d: d.__setitem__("params", None), TypeError, r"'params' must be a mapping \(dict\), got NoneType"),
    (lambda d: d.__setitem__("params", [1.0]), TypeError, r"'params' must be a mapping \(dict\), got list"),
    (lambda d: d.__setitem__("settings", None), TypeError, r"'settings' must be a mapping"),
    (lambda d: d.__setitem__("randomize", []), TypeError, r"'randomize' must be a mapping"),
    (lambda d: d.__setitem__("randomize", {"band.width": 0.5}), ValueError, r"randomize\['band.width'\] must be a \(lo, hi\) pair, got 0.5"),
    (lambda d: d.__setitem__("randomize", {"band.width": [0.9, 0.5]}), ValueError, r"needs lo <= hi"),
    (lambda d: d.__setitem__("randomize", {"band.width": ["0.5", 0.9]}), TypeError, r"must be a number, got str"),
    (lambda d: d.__setitem__("randomize", {"band.widht": [0.5, 0.9]}), ValueError, r"'band.widht', which is not a parameter"),
    (lambda d: d.__setitem__("family", "tracks"), ValueError, r"family must be one of \['gates', 'track'\], got 'tracks'"),
    (lambda d: d.__setitem__("num_envs", -1), ValueError, r"num_envs must be >= 1, got -1"),
    (lambda d: d.__setitem__("num_envs", 2.5), TypeError, r"num_envs must be an int, got float 2.5"),
    (lambda d: d.__setitem__("num_envs", "4"), TypeError, r"num_envs must be an int, got str '4'"),
    (lambda d: d.__setitem__("device", 0), TypeError, r"device must be a Warp device name \(str\) or None, got int 0"),
])
def test_from_dict_refuses_tampered_data(edit, error, match):
    with pytest.raises(error, match=match):
        PipelineSpec.from_dict(_tampered(edit))


def test_the_constructor_and_the_edits_use_the_same_checks_as_from_dict():
    spec = presets.track(num_envs=2, device=DEV)
    with pytest.raises(TypeError, match=r"params\['band.width'\] must be a number, got str"):
        spec.with_params({"band.width": "0.8"})
    with pytest.raises(ValueError, match="appear more than once"):
        PipelineSpec("track", 2, DEV, spec.settings, spec.stages + ("start",), spec.params)
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        PipelineSpec("track", 0, DEV, spec.settings, spec.stages, spec.params)
    with pytest.raises(ValueError, match=r"must be a \(lo, hi\) pair"):
        spec.with_randomize({"band.width": 0.5})
    # a well-formed dict still reads back, with device None left for build to resolve
    data = spec.to_dict()
    assert PipelineSpec.from_dict(data) == spec
    assert PipelineSpec.from_dict({**data, "device": None}).device is None
