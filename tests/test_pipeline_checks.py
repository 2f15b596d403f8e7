"""A new user's mistakes with the pipeline extension point are refused, saying what was expected
and what was received, before anything is allocated or written (issue 10's follow-up)."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import warp as wp

from trackgen_env.core.checks import check_float
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
    (lambda d: d["params"].__setitem__("band.width", "0.8"), TypeError,
     r"params\['band.width'\] must be a number, got str"),
    (lambda d: d["params"].__setitem__("band.width", True), TypeError,
     r"params\['band.width'\] must be a number, got bool"),
    (lambda d: d["params"].__setitem__("band.width", float("nan")), ValueError,
     r"params\['band.width'\] must be finite"),
    (lambda d: d["stages"].append("start"), ValueError, r"distinct; \['start'\] appear more than once"),
    (lambda d: d.__setitem__("stages", "band"), TypeError,
     r"'stages' must be a list or tuple of stage names \(str\), got 'band'"),
    (lambda d: d.__setitem__("stages", ["band", 3]), TypeError, r"'stages' must be a list or tuple"),
    (lambda d: d.__setitem__("params", None), TypeError, r"'params' must be a mapping \(dict\), got NoneType"),
    (lambda d: d.__setitem__("params", [1.0]), TypeError, r"'params' must be a mapping \(dict\), got list"),
    (lambda d: d.__setitem__("settings", None), TypeError, r"'settings' must be a mapping"),
    (lambda d: d.__setitem__("randomize", []), TypeError, r"'randomize' must be a mapping"),
    (lambda d: d.__setitem__("randomize", {"band.width": 0.5}), ValueError,
     r"randomize\['band.width'\] must be a \(lo, hi\) pair, got 0.5"),
    (lambda d: d.__setitem__("randomize", {"band.width": [0.9, 0.5]}), ValueError, r"needs lo <= hi"),
    (lambda d: d.__setitem__("randomize", {"band.width": ["0.5", 0.9]}), TypeError, r"must be a number, got str"),
    (lambda d: d.__setitem__("randomize", {"band.widht": [0.5, 0.9]}), ValueError,
     r"'band.widht', which is not a parameter"),
    (lambda d: d.__setitem__("family", "tracks"), ValueError,
     r"family must be one of \['gates', 'track'\], got 'tracks'"),
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


@pytest.mark.parametrize("edit, match", [
    (lambda s: s.with_params([("band.width", 1.0)]),
     r"with_params\(\) expected a mapping \(dict\) of 'stage.param' -> value, got list \[\('band.width', 1.0\)\]"),
    (lambda s: s.with_params("band.width"), r"with_params\(\) expected a mapping .* got str 'band.width'"),
    (lambda s: s.with_randomize([("band.width", (0.6, 1.0))]),
     r"with_randomize\(\) expected a mapping \(dict\) of 'stage.param' -> \(lo, hi\), got list .*dict\(pairs\)"),
    (lambda s: s.with_stage("banking", params=[("banking", 0.5)]), r"with_stage\(\) params= expected a mapping"),
])
def test_the_edits_refuse_what_is_no_mapping_as_a_type_error_naming_it(edit, match):
    with pytest.raises(TypeError, match=match):
        edit(presets.track(device=DEV))


# -- 5. Param and Stage declarations ---------------------------------------------------------------
from trackgen_env.pipeline import Param, Registry, Stage  # noqa: E402


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(default=5.0, lo=0.0, hi=1.0), ValueError, r"Param 'p': the default must be finite and in \[0, 1\], got 5"),
    (dict(default=0.0, lo=0.0, hi=1.0, lo_open=True), ValueError, r"the default must be finite and in \(0, 1\], got 0"),
    (dict(default=0.5, lo=1.0, hi=0.0), ValueError, r"the bounds need lo < hi.*got lo=1, hi=0"),
    (dict(default=float("nan")), ValueError, r"default must be a number, got NaN"),
    (dict(default=0.5, lo=float("nan")), ValueError, r"lo must be a number, got NaN"),
    (dict(default="0.5"), TypeError, r"default must be a number, got str '0.5'"),
    (dict(default=True), TypeError, r"default must be a number, got bool"),
    (dict(default=float("inf")), ValueError, r"the default must be finite"),
    (dict(default=0.5, dynamic="yes"), TypeError, r"dynamic must be a bool"),
])
def test_a_param_declaration_is_checked_when_it_is_made(kwargs, error, match):
    with pytest.raises(error, match=match):
        Param("p", **kwargs)


@pytest.mark.parametrize("name", ["Bad Name", "1x", "a.b", "a-b", "", "x\n"])
def test_a_param_name_that_is_no_identifier_is_refused_where_it_is_made(name):
    with pytest.raises(ValueError, match=r"Param name must be an identifier \(\[A-Za-z_\]\[A-Za-z0-9_\]\*"):
        Param(name, 0.0)


def test_register_refuses_two_params_of_one_name():
    with pytest.raises(ValueError, match=r"param names must be unique, got \['dz'\] more than once"):
        Registry().register(_stage(params=(Param("dz", 0.0), Param("dz", 1.0))))


def _stage(name="acme.ok", **attrs):
    return type("S", (Stage,), {"name": name, "family": "track", **attrs})


@pytest.mark.parametrize("attrs, match", [
    (dict(reads="half_width"),
     r"reads must be a tuple of field names \(str\), got str 'half_width' \(write \('half_width',\)"),
    (dict(writes=["centerline", 3]), r"writes must be a tuple of field names \(str\)"),
    (dict(params=(("dz", 0.0),)), r"params must be a tuple of pipeline.Param"),
    (dict(params=Param("dz", 0.0)), r"params must be a tuple of pipeline.Param"),
    (dict(draws=1), r"draws must be a bool"),
    # lists, though of the right entries: the documented type is a tuple
    (dict(writes=["centerline"]), r"writes must be a tuple of field names \(str\), got list \['centerline'\] "
                                  r"\(write \('centerline',\)\)"),
    (dict(reads=["centerline"]), r"reads must be a tuple of field names"),
    (dict(params=[Param("dz", 0.0)]), r"params must be a tuple of pipeline.Param, got list"),
])
def test_register_refuses_a_stage_declaration_of_the_wrong_type(attrs, match):
    reg = Registry()
    with pytest.raises(TypeError, match=match):
        reg.register(_stage(**attrs))
    assert "acme.ok" not in reg.names("track")


@pytest.mark.parametrize("name", ["acme.x\n", "acme.1x", "a-b.c", "Acme.x", "acme.", ".x", "acme"])
def test_register_refuses_a_stage_name_that_is_no_dotted_identifier_stating_the_rule(name):
    with pytest.raises(ValueError, match=r"dotted identifiers, namespace.name .* each part \[a-z_\]\[a-z0-9_\]\*"):
        Registry().register(_stage(name))


def test_register_takes_a_well_declared_stage_and_every_built_in_passes_the_checks():
    from trackgen_env.pipeline import registry as registry_module

    reg = Registry()
    reg.register(_stage("acme.ok_2", reads=("centerline",), writes=("centerline",),
                        params=(Param("dz", 0.0, -1.0, 1.0),)))
    assert "acme.ok_2" in reg.names("track")
    for cls in registry_module._BUILTIN_STAGES:
        registry_module._check_declaration(cls)


# -- 6. messages -----------------------------------------------------------------------------------
def test_an_infinite_bound_prints_open_and_a_refused_value_prints_as_a_number():
    assert Param("p", 1.0, 0.0, lo_open=True).bounds() == "(0, inf)"
    assert Param("p", 1.0).bounds() == "(-inf, inf)"
    assert Param("p", 1.0, 0.0, 2.0).bounds() == "[0, 2]"
    program = build(presets.track(num_envs=E, device=DEV))
    with pytest.raises(ValueError,
                       match=r"params\['band.width'\] must be finite and in \(0, [^\]]*\), got -1$") as info:
        program.params["band.width"] = -1.0
    assert "array" not in str(info.value)


@pytest.mark.parametrize("value, match", [
    ("wide", r"params\['band.width'\] takes a number or 4 numbers, got str 'wide'"),
    (True, r"params\['band.width'\] takes a number or 4 numbers, got bool True"),
    ([True, False, True, True], r"params\['band.width'\] takes a number or 4 numbers, got list"),
    ([0.7, "a", 0.7, 0.7], r"params\['band.width'\] takes a number or 4 numbers, got list"),
    (None, r"params\['band.width'\] takes a number or 4 numbers, got NoneType"),
])
def test_a_live_set_of_no_number_is_a_type_error_naming_the_parameter(value, match):
    program = build(presets.track(num_envs=E, device=DEV))
    before = program.params["band.width"].numpy().copy()
    with pytest.raises(TypeError, match=match):
        program.params["band.width"] = value
    assert np.array_equal(program.params["band.width"].numpy(), before)
    program.params["band.width"] = np.float32(0.7)  # numbers of any real dtype still set
    program.params["band.width"] = [0.7, 0.75, 0.8, 0.85]
    assert program.params["band.width"].numpy()[3] == pytest.approx(0.85)


def test_a_set_of_a_randomized_parameter_is_refused_pointing_at_set_range():
    """Each generation draws a randomized parameter anew, so a set would never reach one: refused."""
    program = build(presets.track(num_envs=E, device=DEV).with_randomize({"band.width": (0.6, 1.0)}), seeds=0)
    before = program.params["band.width"].numpy().copy()
    with pytest.raises(ValueError, match=r"params\['band.width'\] is randomized.*within \[0.6, 1\].*"
                                         r"params.set_range\('band.width', lo, hi\).*without_randomize"):
        program.params["band.width"] = 2.0
    assert np.array_equal(program.params["band.width"].numpy(), before)


def test_set_range_moves_the_draws_of_the_later_generations_deterministically():
    spec = presets.track(num_envs=E, device=DEV).with_randomize({"band.width": (0.6, 1.0)})
    a, b = build(spec, seeds=3), build(spec, seeds=3)
    for program in (a, b):
        program.params.set_range("band.width", [1.2, 1.2, 1.5, 1.5], 1.6)
        program.enqueue(advance=True)
    width = a.params["band.width"].numpy()
    assert np.all(width[:2] >= 1.2) and np.all(width[2:] >= 1.5) and np.all(width < 1.6)
    assert np.allclose(a.result.half_width.numpy()[:, 0], width / 2)
    assert np.array_equal(width, b.params["band.width"].numpy())  # a draw of the seed and counter
    assert np.array_equal(a.params.least("band.width"), np.float32([1.2, 1.2, 1.5, 1.5]))
    assert np.array_equal(a.params.most("band.width"), np.full(E, np.float32(1.6)))


@pytest.mark.parametrize("name, lo, hi, error, match", [
    ("layout.size", 9.0, 11.0, ValueError, r"params\['layout.size'\] is not randomized \(randomized: \['band.width'\]\)"
                                           r": set params\['layout.size'\] = value"),
    ("band.width", 0.9, 0.7, ValueError, r"set_range\('band.width'\) needs lo <= hi, got \(0.9, 0.7\)$"),
    # float32 0
    ("band.width", 1e-50, 0.8, ValueError, r"params\['band.width'\] must be finite and in \(0, inf\), got 0"),
    ("band.width", 0.6, 1e300, ValueError,
     r"set_range\('band.width'\) hi must fit a float32 \(\|v\| < 3.4e38\), got 1e\+300"),
    ("band.width", 0.6, 10**400, ValueError, r"hi must be finite, got an int beyond the float range$"),
    ("band.width", [0.7, [0.7], 0.7, 0.7], 0.9, TypeError, r"lo takes a number or 4 numbers, got list"),
    ("band.width", [0.6, 0.6, 0.9, 0.6], 0.8, ValueError, r"needs lo <= hi, got \(0.9, 0.8\) in env 2"),
    ("band.width", -1.0, 0.8, ValueError, r"params\['band.width'\] must be finite and in \(0, "),
    ("band.width", 0.6, np.inf, ValueError, r"set_range\('band.width'\) hi must be finite, got inf"),
    ("band.width", "a", 0.8, TypeError, r"set_range\('band.width'\) lo takes a number or 4 numbers, got str"),
    ("band.width", 0.6, [0.8, 0.8], ValueError, r"hi takes a number or 4 numbers, got shape \(2,\)"),
    ("band.nope", 0.6, 0.8, KeyError, r"unknown parameter 'band.nope'"),
])
def test_a_bad_set_range_is_refused_and_leaves_the_range(name, lo, hi, error, match):
    program = build(presets.track(num_envs=E, device=DEV).with_randomize({"band.width": (0.6, 1.0)}), seeds=0)
    before = [a.numpy().copy() for a in program.params.randomize["band.width"]]
    with pytest.raises(error, match=match):
        program.params.set_range(name, lo, hi)
    assert all(np.array_equal(a.numpy(), b) for a, b in zip(program.params.randomize["band.width"], before))


def test_a_live_set_is_checked_as_the_float32_it_would_store():
    program = build(presets.track(num_envs=E, device=DEV), seeds=0)
    with pytest.raises(ValueError, match=r"params\['band.width'\] must be finite and in \(0, inf\), got 0 "
                                         r"\(given 1e-50, which float32 stores as 0\)$"):
        program.params["band.width"] = 1e-50  # stored as 0.0
    with pytest.raises(ValueError, match=r"got 0 \(env 3 was given 1e-50, which float32 stores as 0\)$"):
        program.params["band.width"] = [0.1, 0.1, 0.1, 1e-50]  # no note on 0.1, which float32 only rounds
    with pytest.raises(ValueError, match=r"got -1 \(env 2\)$"):  # refused as given: no note on env 3
        program.params["band.width"] = [0.1, 0.1, -1, 1e-50]
    with pytest.raises(ValueError, match=r"got 0 \(env 0 was given 1e-50, which float32 stores as 0\)$"):
        program.params["band.width"] = [1e-50, 0.1, 0.1, 1e-45]  # two underflows: the first named
    with pytest.raises(ValueError, match=r"params\['layout.size'\] must fit a float32 \(\|v\| < 3.4e38\), got 1e\+39"):
        program.params["layout.size"] = [10.0, 10.0, 1e39, 10.0]
    assert np.allclose(program.params["band.width"].numpy(), 0.8)
    assert np.allclose(program.params["layout.size"].numpy(), 10)
    from decimal import Decimal
    from fractions import Fraction
    program.params["band.width"] = Fraction(7, 10)  # numbers, as floats
    assert np.allclose(program.params["band.width"].numpy(), 0.7)
    program.params["band.width"] = [Decimal("0.6"), Fraction(3, 4), 0.8, 1]
    assert np.allclose(program.params["band.width"].numpy(), [0.6, 0.75, 0.8, 1.0])
    with pytest.raises(ValueError, match=r"must be finite, got an int beyond the float range$"):
        program.params["band.width"] = [10**400, 1, 1, 1]
    with pytest.raises(ValueError, match=r"params\['band.width'\] must be finite and in \(0, inf\), got -1 \(env 2\)"):
        program.params["band.width"] = [0.8, 0.8, -1, 0.8]


def test_the_live_ranges_are_read_only_and_move_through_set_range():
    program = build(presets.track(num_envs=E, device=DEV).with_randomize({"band.width": (0.6, 1.0)}), seeds=0)
    with pytest.raises(TypeError):
        program.params.randomize["layout.size"] = program.params.randomize["band.width"]
    with pytest.raises(AttributeError):
        program.params.randomize = {}
    assert list(program.params.randomize) == ["band.width"]


def test_a_live_size_whose_flat_loops_exceed_the_capacity_warns_and_its_courses_are_invalid():
    """Every draw over max_points is rejected: an env ends with no course, which no step reports."""
    program = build(presets.track(num_envs=E, device=DEV), seeds=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        program.params["layout.size"] = 12.0  # the documented range (8, 12) m keeps every course
        program.params["band.width"] = 0.5
    program.enqueue(advance=True)
    assert program.result.valid.numpy().all()
    with pytest.warns(UserWarning, match=r"params\['layout.size'\]: with these values the longest flat loop is over "
                                         r"1.25x this generator's capacity of 25.15 m \(max_points=251 at "
                                         r"point_spacing=0.1 m"):
        program.params["layout.size"] = 15.0
    program.enqueue(advance=True)
    assert not program.result.valid.numpy().any()
    program.params["layout.size"] = 11.0
    with pytest.warns(UserWarning, match=r"params\['layout.radius_jitter'\]: with these values the longest flat loop"):
        program.params["layout.radius_jitter"] = 0.0  # rounder loops are longer
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # once per line, as a plain warnings.warn
        for _ in range(3):
            program.params["layout.size"] = 16.0
    assert len(caught) == 1 and caught[0].filename == __file__
    program.params["layout.size"] = 10.0
    program.params["layout.radius_jitter"] = 0.7
    program.params["layout.elevation"] = 1.0  # hills lengthen loops: the flat bound still warns, late
    with pytest.warns(UserWarning, match=r"the longest flat loop is over 1.25x"):
        program.params["layout.size"] = 14.0
    hilly = build(presets.track(num_envs=E, device=DEV, elevation=0.5), seeds=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # hills: the capacity is the loop-length bound, not the flat bound
        hilly.params["layout.size"] = 12.0


def test_a_non_finite_layout_gives_an_invalid_course_not_nan_rows():
    program = build(presets.track(num_envs=2, device=DEV).with_randomize({"layout.size": (8.0, 10.0)}), seeds=1)
    with pytest.warns(UserWarning):
        program.params.set_range("layout.size", 3e38, 3.4e38)  # finite in float32; the loop's length is not
    program.enqueue(advance=True)
    assert program.result.valid.numpy().tolist() == [0, 0]
    assert np.all(program.result.num_points.numpy() <= program.spec.settings["max_points"])


def test_an_ordered_pair_is_checked_against_the_other_ends_live_range():
    spec = presets.gates(num_envs=E, device=DEV, gate_width=0.3).with_randomize({"layout.altitude_max": (2.0, 2.5)})
    program = build(spec, seeds=0)
    # the least altitude_max a later generation can draw is 2.0, whatever the last draw was
    with pytest.raises(ValueError, match=r"layout.altitude_min <= layout.altitude_max, got layout.altitude_min=2.2 "
                                         r"and layout.altitude_max=2"):
        program.params["layout.altitude_min"] = 2.2
    program.params["layout.altitude_min"] = 1.5
    with pytest.raises(ValueError, match=r"layout.altitude_min=1.5 and layout.altitude_max=1.2"):
        program.params.set_range("layout.altitude_max", 1.2, 3.0)  # its lo below altitude_min
    program.params.set_range("layout.altitude_max", 1.6, 3.0)
    both = build(spec.with_randomize({"layout.altitude_min": (0.5, 1.0)}), seeds=0)
    with pytest.raises(ValueError,
                       match=r"params\['layout.altitude_max'\] \(against the largest layout.altitude_min its "
                                         r"live range draws; .*move that one first\) needs layout.altitude_min <= "
                                         r"layout.altitude_max, got layout.altitude_min=1 and layout.altitude_max=0.9"):
        both.params.set_range("layout.altitude_max", 0.9, 2.5)


class _Static(Stage):
    name, family = "acme.static", "track"
    params = (Param("n", 3.0, 1.0, 8.0, "a count", dynamic=False),)

    def enqueue(self, ctx, pending):
        pass  # its parameter is what the test needs


def test_a_live_set_of_a_static_parameter_says_it_is_static():
    reg = Registry()
    reg.register(_Static)
    program = build(presets.track(num_envs=E, device=DEV).with_stage("acme.static", registry=reg), registry=reg)
    with pytest.raises(KeyError, match=r"'acme.static.n' is static.*fixed at build.*spec.with_params"):
        program.params["acme.static.n"] = 4.0
    assert "acme.static.n" not in program.params
    with pytest.raises(KeyError, match="unknown parameter 'acme.static.m'"):
        program.params["acme.static.m"] = 4.0


@wp.kernel
def _reject_all(pending: wp.array(dtype=wp.int32), ok: wp.array(dtype=wp.int32)):
    e = wp.tid()
    if pending[e] != 0:
        ok[e] = 0


class _Rejecter(Stage):
    name, family, draws = "acme.rejecter", "track", True

    def enqueue(self, ctx, pending):
        wp.launch(_reject_all, ctx.num_envs, inputs=[pending], outputs=[ctx.ok], device=ctx.device)


def test_the_low_valid_rate_warning_names_the_plugin_stages_not_the_config():
    reg = Registry()
    reg.register(_Rejecter)
    spec = presets.track(num_envs=E, device=DEV).with_stage("acme.rejecter", registry=reg)
    with pytest.warns(UserWarning, match=r"only 0 of 4 envs.*plugin stages \['acme.rejecter'\]") as record:
        build(spec, registry=reg)
    assert not any("TrackGenConfig docstring" in str(w.message) for w in record)
    with pytest.warns(UserWarning, match="see the TrackGenConfig docstring"):  # no plugin: the config's ranges
        build(presets.track(num_envs=E, device=DEV).with_params({"band.width": 3.0}))


@pytest.mark.parametrize("randomize, match", [
    ({"layout.altitude_min": (0.5, 3.0), "layout.altitude_max": (1.0, 2.0)},
     r"stage 'layout' needs layout.altitude_min <= layout.altitude_max in every draw, but "
     r"randomize\['layout.altitude_min'\] = \(0.5, 3\) and randomize\['layout.altitude_max'\] = \(1, 2\) could draw "
     r"layout.altitude_min=3 above layout.altitude_max=1"),
    ({"layout.altitude_max": (0.2, 2.0)},
     r"but the value layout.altitude_min=0.5 and randomize\['layout.altitude_max'\] = \(0.2, 2\) could draw "
     r"layout.altitude_min=0.5 above layout.altitude_max=0.2"),
])
def test_an_ordered_pair_that_the_randomize_ranges_could_draw_out_of_order_names_the_ranges(randomize, match):
    spec = presets.gates(num_envs=E, device=DEV, gate_width=0.3).with_randomize(randomize)
    with pytest.raises(ValueError, match=match):
        build(spec)


def test_without_randomize_draws_a_parameter_no_more():
    base = presets.track(num_envs=8, device="cpu")
    drawn = base.with_randomize({"band.width": (0.6, 1.0), "layout.size": (9.0, 11.0)})
    back = drawn.without_randomize("band.width")
    assert list(back.randomize) == ["layout.size"] and drawn.randomize.keys() == {"band.width", "layout.size"}
    assert back.without_randomize("layout.size") == base  # the spec it came from, equal in every field
    widths = build(back, seeds=0).params["band.width"].numpy()
    assert np.all(widths == base.params["band.width"])  # the construction value in every env
    with pytest.raises(ValueError, match="'band.width' is not randomized"):
        back.without_randomize("band.width")
    with pytest.raises(KeyError):
        drawn.without_randomize("band.nope")
    with pytest.raises(TypeError, match=r"got list \['band.width'\] \(pass the names as arguments"):
        drawn.without_randomize(["band.width"])
    with pytest.raises(TypeError, match="got int 3"):
        drawn.without_randomize(3)
    with pytest.raises(ValueError, match="'band.width' is named 2 times"):
        drawn.without_randomize("band.width", "band.width")
    assert drawn.randomize.keys() == {"band.width", "layout.size"}  # the refusals changed nothing


def test_a_spec_is_hashable_and_equal_specs_hash_alike():
    """A frozen spec keys a dict or a cache: equal specs (a JSON round trip) hash alike."""
    a = presets.track(num_envs=4, device="cpu").with_randomize({"band.width": (0.6, 1.0)})
    b = PipelineSpec.from_dict(a.to_dict())
    assert a == b and hash(a) == hash(b)
    assert {a: "cached"}[b] == "cached"
    assert len({a, b, presets.track(num_envs=5, device="cpu"), a.with_params({"band.width": 0.9})}) == 3


def test_an_int_past_float64_is_refused_as_not_finite():
    """A huge Python int is a number, but not a finite float: a ValueError naming the value's
    place, not a bare OverflowError from float()."""
    with pytest.raises(ValueError, match=r"params\['band.width'\] must be finite, got an int of 1329 bits"):
        presets.track(num_envs=4, device="cpu").with_params({"band.width": 10**400})
    with pytest.raises(ValueError, match="x must be finite, got an int of"):
        check_float("x", -(10**400))
    assert check_float("x", 10**300) == 1e300


def test_a_per_env_value_that_is_not_finite_or_beyond_float32_names_its_env():
    program = build(presets.track(num_envs=4, device="cpu"), seeds=0)
    with pytest.raises(ValueError, match=r"params\['band.width'\] must be finite, got nan \(env 2\)$"):
        program.params["band.width"] = [1.0, 1.0, np.nan, np.inf]
    with pytest.raises(ValueError, match=r"must fit a float32 \(\|v\| < 3.4e38\), got 1e\+39 \(env 3\)$"):
        program.params["band.width"] = [1.0, 1.0, 1.0, 1e39]
    with pytest.raises(ValueError, match=r"must be finite, got nan$"):  # one number: no env to name
        program.params["band.width"] = np.nan
    assert np.all(program.params["band.width"].numpy() == np.float32(0.8))  # the construction value, kept


def test_a_tensor_that_numpy_cannot_read_is_a_type_error_that_says_so():
    torch = pytest.importorskip("torch")
    program = build(presets.track(num_envs=2, device="cpu"), seeds=0)
    with pytest.raises(TypeError, match=r"takes a number or 2 numbers, got Tensor that NumPy cannot read \(.*detach"):
        program.params["band.width"] = torch.ones(2, requires_grad=True)
    program.params["band.width"] = torch.full((2,), 1.25)  # a plain tensor is numbers
    assert np.all(program.params["band.width"].numpy() == np.float32(1.25))


def test_a_construction_value_or_randomize_end_is_checked_as_float32_stores_it():
    """As a live set: a width of 1e-46 passes (0, inf) as a float64 but is stored as 0 in the live
    float32 array, a band of no width; refused at build, saying what was given."""
    from trackgen_env import TrackGenConfig, TrackGenerator

    with pytest.raises(ValueError, match=r"parameter 'band.width' must be finite and in \(0, inf\), got 0 "
                                         r"\(given 1e-46, which float32 stores as 0\)$"):
        TrackGenerator(TrackGenConfig(num_envs=2, device="cpu", width=1e-46))
    with pytest.raises(ValueError,
                       match=r"the randomize range of 'band.width' .* \(given 1e-46, which float32 stores as 0\)$"):
        build(presets.track(num_envs=2, device="cpu").with_randomize({"band.width": (1e-46, 1.0)}))
    build(presets.track(num_envs=2, device="cpu").with_params({"band.width": 1e-40}))  # a float32 (subnormal) > 0


def test_a_bound_that_float32_rounds_up_is_still_accepted_at_build_and_live():
    """pi / 4 (banking.max_bank's hi) is stored as 0.785398185 > pi / 4: the stored value is checked
    against the bound as float32 stores it, so the documented maximum builds, randomizes and sets."""
    import math

    from trackgen_env.pipeline.stages.banking import MAX_BANK

    program = build(presets.track(banking=MAX_BANK, num_envs=2, device="cpu"), seeds=0)
    program.params["banking.max_bank"] = math.pi / 4
    build(presets.track(banking=0.3, num_envs=2, device="cpu").with_randomize({"banking.max_bank": (0.0, MAX_BANK)}))
    with pytest.raises(ValueError, match=r"must be finite and in \[0, 0.785398\], got 0.7854$"):
        program.params["banking.max_bank"] = 0.7854  # over it by more than float32's rounding


def test_max_retries_is_fixed_at_build():
    """A write took effect eagerly while a recorded graph kept the built value: it is refused."""
    from trackgen_env.pipeline import build, presets

    program = build(presets.track(num_envs=2, device="cpu", max_retries=12), seeds=0)
    with pytest.raises(AttributeError, match=r"max_retries is fixed when the program is built \(it is 12; got 0\)"):
        program.max_retries = 0
    assert program.max_retries == 12


@pytest.mark.parametrize("ordered, error, match", [
    (("lo", "hi"), TypeError, "got the entry 'lo'"),
    ("lohi", TypeError, "got str 'lohi'"),
    (5, TypeError, "got int 5"),
    ((("lo", "zz"),), ValueError, r"\['zz'\] is no param of it"),
    ((("lo", "lo"),), ValueError, r"got \('lo', 'lo'\)"),
])
def test_register_refuses_an_ordered_that_is_no_tuple_of_param_pairs(ordered, error, match):
    """A bad ordered registered silently and failed at build (a bare KeyError, an unpacking error) or never."""
    stage = _stage(params=(Param("lo", 0.0), Param("hi", 1.0)), ordered=ordered)
    with pytest.raises(error,
                       match=r"ordered must be a tuple of \(lo, hi\) pairs of its params' names \['lo', 'hi'\].*"
                       + match):
        Registry().register(stage)
    Registry().register(_stage(params=(Param("lo", 0.0), Param("hi", 1.0)), ordered=(("lo", "hi"),)))


def test_a_spec_keeps_its_settings_json_safe():
    """A NumPy setting value was kept, and to_dict() no longer went through json.dumps; a key that is
    no str failed later with a sorting error."""
    import json

    import numpy as np

    from trackgen_env.pipeline import PipelineSpec, presets

    data = presets.track(num_envs=2, device="cpu").to_dict()
    data["settings"]["max_points"] = np.int64(300)
    spec = PipelineSpec.from_dict(data)
    assert type(spec.settings["max_points"]) is int and json.loads(json.dumps(spec.to_dict())) == spec.to_dict()
    data["settings"][1] = "x"
    with pytest.raises(TypeError, match="a spec's settings are named by str, got the key 1"):
        PipelineSpec.from_dict(data)


def test_a_stage_that_declares_a_field_it_never_allocates_or_clashes_with_one_is_named_at_build():
    """A declared write never allocated failed at the first generation with a bare KeyError; a field
    asked for with another shape did not name the stage."""
    from trackgen_env.pipeline import build, presets

    class Forgets(Stage):
        name, family, writes = "acme.forgets", "track", ("acme_offset",)

        def enqueue(self, ctx, pending):
            pass

    class Clashes(Stage):
        name, family = "acme.clashes", "track"

        def allocate(self, ctx):
            ctx.field("half_width", (ctx.num_envs, 3), float)

        def enqueue(self, ctx, pending):
            pass

    reg = Registry()
    reg.register(Forgets)
    reg.register(Clashes)
    spec = presets.track(num_envs=2, device="cpu")
    with pytest.raises(ValueError,
                       match=r"stage 'acme.forgets' declares writes \['acme_offset'\], which its allocate made no "
                             r"field of"):
        build(spec.with_stage("acme.forgets", after="start", registry=reg), registry=reg, seeds=0)
    with pytest.raises(ValueError,
                       match=r"field 'half_width' exists as \(2, \d+\) float32; "
                             r"stage 'acme.clashes' asked for \(2, 3\)"):
        build(spec.with_stage("acme.clashes", after="start", registry=reg), registry=reg, seeds=0)


def test_a_refused_range_end_is_named():
    import numpy as np

    from trackgen_env.pipeline import build, presets

    program = build(presets.track(num_envs=2, device="cpu").with_randomize({"layout.size": (8.0, 12.0)}), seeds=0)
    with pytest.raises(ValueError,
                       match=r"set_range\('layout.size'\) lo: params\['layout.size'\] must be finite and in \(0, "
                             r"inf\), got 0"):
        program.params.set_range("layout.size", 0.0, 10.0)
    def at_most_11(name, values):
        if np.any(np.asarray(values) > 11.0):
            raise ValueError(f"params[{name!r}] must be <= 11")

    program.params.add_validator("layout.size", at_most_11)
    with pytest.raises(ValueError, match=r"set_range\('layout.size'\) hi: params\['layout.size'\] must be <= 11"):
        program.params.set_range("layout.size", 8.0, 12.0)
