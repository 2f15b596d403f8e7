"""The pipeline as an extension point: stages, the registry, plugins, JSON specs, out= views."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings

import numpy as np
import pytest
import warp as wp

from trackgen_env import GateGenerator, TrackGenConfig, TrackGenerator, pipeline
from trackgen_env.core.capture import NotCapturableError
from trackgen_env.course import Course
from trackgen_env.pipeline import Param, PipelineSpec, Registry, Stage, build, presets
from trackgen_env.core.types import TrackResult

E = 8
DEV = "cpu"


# -- plugin stages of this test module ---------------------------------------------------------
@wp.kernel
def _shift_z(pending: wp.array(dtype=wp.int32), dz: wp.array(dtype=float), centerline: wp.array2d(dtype=wp.vec3)):
    e, j = wp.tid()
    if pending[e] == 0:
        return
    p = centerline[e, j]
    centerline[e, j] = wp.vec3(p[0], p[1], p[2] + dz[e])


class Shift(Stage):
    """Raises the centreline by ``test.shift.dz``."""

    name, family = "test.shift", "track"
    params = (Param("dz", 0.0, -2.0, 2.0, "[m] height offset"),)
    reads = writes = ("centerline",)

    def enqueue(self, ctx, pending):
        c = ctx.fields["centerline"]
        wp.launch(_shift_z, c.shape, inputs=[pending, ctx.params["test.shift.dz"]], outputs=[c], device=ctx.device)


class Scale(Stage):
    """Scales the half width by ``test.scale.k`` (a second plugin with a parameter of its own)."""

    name, family = "test.scale", "track"
    params = (Param("k", 1.0, 0.5, 2.0, "half-width factor"),)
    reads = writes = ("half_width",)

    def enqueue(self, ctx, pending):
        pass  # its parameter is what the test needs: a second randomized name


class HostShift(Stage):
    """The same offset as ``Shift``, computed on the host with NumPy (so not capturable)."""

    name, family = "test.host_shift", "track"
    params = (Param("dz", 0.25, -2.0, 2.0, "[m] height offset"),)
    reads = writes = ("centerline",)

    def enqueue(self, ctx, pending):
        c = ctx.fields["centerline"]
        values = c.numpy()
        rows = pending.numpy() != 0
        values[rows, :, 2] += ctx.params["test.host_shift.dz"].numpy()[rows, None]
        c.assign(values)


@wp.kernel
def _raise_every_env(centerline: wp.array2d(dtype=wp.vec3)):
    e, j = wp.tid()
    p = centerline[e, j]
    centerline[e, j] = wp.vec3(p[0], p[1], p[2] + 1.0)


class Careless(Stage):
    """Writes every env's rows, pending or not (a plugin that ignores the rule)."""

    name, family = "test.careless", "track"
    reads = writes = ("centerline",)

    def enqueue(self, ctx, pending):
        c = ctx.fields["centerline"]
        wp.launch(_raise_every_env, c.shape, outputs=[c], device=ctx.device)


class ReadsBanking(Stage):
    name, family = "test.bank_reader", "track"
    reads = ("banking",)


class Static(Stage):
    name, family = "test.static", "track"
    params = (Param("n", 3.0, 0.0, 10.0, "a construction-only value", dynamic=False),)

    def enqueue(self, ctx, pending):
        pass


def _registry() -> Registry:
    reg = Registry()
    reg.register(Shift)
    reg.register(Scale)
    reg.register(HostShift, capturable=False)
    reg.register(ReadsBanking)
    reg.register(Careless)
    reg.register(Static)
    return reg


def _digest(result) -> str:
    h = hashlib.sha256()
    for f in dataclasses.fields(result):
        h.update(np.ascontiguousarray(getattr(result, f.name).numpy()).tobytes())
    return h.hexdigest()


def _numpy(result) -> dict:
    # .numpy() is a view on the CPU
    return {f.name: getattr(result, f.name).numpy().copy() for f in dataclasses.fields(result)}


# -- the built-in stage lists --------------------------------------------------------------------
def test_the_builtin_families_run_one_straight_line_list_of_named_stages():
    assert presets.track(device=DEV).stages == ("band", "layout", "spline", "resample", "checks", "start")
    assert presets.track(device=DEV, source="centerline", max_input_points=8).stages == (
        "centerline", "spline", "resample", "start")
    assert presets.gates(device=DEV).stages == ("layout", "gate_frames", "start", "checks")
    assert presets.gates(device=DEV, source="layout").stages == ("gates", "gate_frames")
    gen = TrackGenerator(TrackGenConfig(num_envs=2, device=DEV), seeds=0)
    assert gen.stages == gen.spec.stages and isinstance(gen, pipeline.Program)


# Taken with the code before the stages became objects (same Warp as tests/test_pinned_hashes.py):
# randomized draws and a given centreline are unchanged by the refactor. "track_randomized"
# re-pinned when elevated tracks got a smooth height profile (its elevation is drawn in
# [0, 1) m; without that randomizer the same batch keeps its hash, 91865d1c...).
PRE_REFACTOR = {
    "track_randomized": "c9d84385a3232a4339cf506d0ca814ba96b36c5d81a6f7da6bf7d05167cd56fc",
    "gates_randomized": "b960cc3aff67a5c5fd33b3b059b36c31094858f14c9a13d05fbea12bb0d66814",
    "track_centerline": "5269bb8ccaaa6f1bf7a185ca369868c0f5223777d3643cd8b5340715869fd98b",
}


@pytest.mark.skipif(wp.config.version != "1.19.0", reason="pins taken with warp-lang 1.19.0")
def test_randomized_and_given_courses_are_those_of_before_the_stages():
    mask = wp.array([1, 0] * 8, dtype=wp.int32, device=DEV)
    # the digest covers the padded rows: the capacity of before (ceil(40 m / 0.1 m) + 2) keeps it (the
    # default one, 251, holds the same courses of this spec: tests/test_memory_per_env.py)
    t = TrackGenerator(presets.track(num_envs=16, device=DEV, max_points=402).with_randomize(
        {"layout.size": (8.0, 12.0), "band.width": (0.6, 1.0), "layout.elevation": (0.0, 1.0)}), seeds=5)
    t.enqueue(advance=True, mask=mask)
    g = GateGenerator(presets.gates(num_envs=16, device=DEV, gate_width=0.2).with_randomize(
        {"gate_frames.gate_width": (0.1, 0.3), "layout.size": (8.0, 10.0), "layout.max_turn": (1.7, 2.0)}), seeds=5)
    g.enqueue(advance=True, mask=mask)
    pts = np.array([[np.cos(a) * 5, np.sin(a) * 3, 0.4, 0.5] for a in np.linspace(0, 2 * np.pi, 40, endpoint=False)])
    c = TrackGenerator.from_centerline(pts, num_envs=3, device=DEV)
    got = {"track_randomized": _digest(t.result), "gates_randomized": _digest(g.result),
           "track_centerline": _digest(c.result)}
    assert got == PRE_REFACTOR


# -- specs as data ---------------------------------------------------------------------------------
@pytest.mark.parametrize("family", ["track", "gates"])
def test_a_spec_saved_as_json_rebuilds_byte_identical_courses(family, tmp_path):
    if family == "track":
        spec = presets.track(num_envs=E,
                             device=DEV).with_randomize({"band.width": (0.6, 1.0), "layout.size": (9.0, 11.0)})
    else:
        spec = presets.gates(num_envs=E, device=DEV,
                             gate_width=0.2).with_randomize({"gate_frames.gate_width": (0.1, 0.3)})
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec.to_dict()))
    again = PipelineSpec.from_dict(json.loads(path.read_text()))
    assert again == spec
    a, b = build(spec, seeds=7), build(again, seeds=7)
    mask = wp.array([1, 0, 1, 0, 0, 1, 0, 0], dtype=wp.int32, device=DEV)
    for gen in (a, b):
        gen.enqueue(advance=True, mask=mask)
    assert _digest(a.result) == _digest(b.result)


def test_a_spec_with_a_plugin_stage_round_trips_through_json():
    reg = _registry()
    spec = presets.track(num_envs=E, device=DEV).with_stage("test.shift", after="resample", params={"dz": 0.5},
                                                              registry=reg).with_randomize({"test.shift.dz": (0.0,
                                                                                                              1.0)})
    again = PipelineSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert _digest(build(spec, registry=reg, seeds=1).result) == _digest(build(again, registry=reg, seeds=1).result)


def test_a_spec_prints_as_data():
    text = repr(presets.track(num_envs=2, device=DEV))
    assert text.startswith("PipelineSpec(family='track', num_envs=2") and "mappingproxy" not in text
    assert "'band.width': 0.8" in text and "'point_spacing': 0.1" in text


def test_from_dict_refuses_missing_and_unknown_keys():
    data = presets.track(device=DEV).to_dict()
    with pytest.raises(ValueError, match="missing \\['stages'\\]"):
        PipelineSpec.from_dict({k: v for k, v in data.items() if k != "stages"})
    with pytest.raises(ValueError, match="unknown \\['extra'\\]"):
        PipelineSpec.from_dict({**data, "extra": 1})


def test_a_config_and_its_spec_are_one_set_of_values():
    cfg = TrackGenConfig(num_envs=3, device=DEV, size=12.0, width=1.0)
    spec = cfg.to_spec()
    assert spec.construction_value("layout.size") == 12.0 and spec.settings["max_points"] == cfg.max_points
    assert TrackGenConfig.from_spec(spec) == cfg
    assert TrackGenerator(spec).config == cfg


# -- plugins ---------------------------------------------------------------------------------------
def test_a_plugin_stage_changes_the_courses_as_declared():
    reg = _registry()
    base = presets.track(num_envs=E, device=DEV)
    plain = build(base, seeds=2)
    shifted = build(base.with_stage("test.shift", after="resample", params={"dz": 0.5}, registry=reg),
                    registry=reg, seeds=2)
    a, b = _numpy(plain.result), _numpy(shifted.result)
    assert np.array_equal(b["centerline"][..., 2], a["centerline"][..., 2] + np.float32(0.5))
    assert np.array_equal(b["centerline"][..., :2], a["centerline"][..., :2])
    assert np.array_equal(b["start_position"][:, 2], a["start_position"][:, 2] + np.float32(0.5))  # start reads it
    for name in ("tangent", "half_width", "valid", "num_points", "loop_length"):
        assert np.array_equal(a[name], b[name]), name


def test_a_plugin_leaves_unmasked_envs_bit_identical_under_a_masked_regeneration():
    reg = _registry()
    spec = presets.track(num_envs=E, device=DEV).with_stage("test.shift", after="resample", params={"dz": 0.5},
                                                              registry=reg)
    course = Course.track(build(spec, registry=reg, prepare=False), checkpoint_spacing=0.6)
    before = _numpy(course.result)
    mask = wp.array([1, 0, 0, 1, 0, 0, 0, 1], dtype=wp.int32, device=DEV)
    keep = mask.numpy() == 0
    course.generator.params["test.shift.dz"] = 1.5  # a curriculum: only the regenerated envs see it
    course.regenerate(mask=mask, advance=True)
    after = _numpy(course.result)
    for name, value in after.items():
        assert np.array_equal(value[keep], before[name][keep]), name
    assert not np.array_equal(after["centerline"][~keep], before["centerline"][~keep])
    z = after["centerline"][..., 2]
    assert np.all(z[~keep] == np.float32(1.5)) and np.all(z[keep] == np.float32(0.5))


def test_the_masked_commit_keeps_unmasked_envs_even_for_a_stage_that_ignores_pending():
    reg = _registry()
    spec = presets.track(num_envs=E, device=DEV).with_stage("test.careless", after="resample", registry=reg)
    program = build(spec, registry=reg, seeds=5)
    before = _numpy(program.result)
    mask = wp.array([0, 0, 1, 0, 0, 0, 0, 0], dtype=wp.int32, device=DEV)
    program.enqueue(mask=mask, advance=True)
    after = _numpy(program.result)
    keep = mask.numpy() == 0
    for name, value in after.items():
        assert np.array_equal(value[keep], before[name][keep]), name
    assert not np.array_equal(after["centerline"][2], before["centerline"][2])


def test_a_host_plugin_runs_eagerly_and_refuses_a_capture():
    reg = _registry()
    spec = presets.track(num_envs=E, device=DEV).with_stage("test.host_shift", after="resample", registry=reg)
    program = build(spec, registry=reg, seeds=2)
    assert program.capturable is False
    reference = build(presets.track(num_envs=E, device=DEV), seeds=2).result.centerline.numpy()
    assert np.array_equal(program.result.centerline.numpy()[..., 2], reference[..., 2] + np.float32(0.25))
    course = Course.track(program, checkpoint_spacing=0.6)
    mask = wp.array([0, 1, 0, 0, 0, 0, 0, 0], dtype=wp.int32, device=DEV)
    generation = course.result.generation.numpy().copy()
    course.regenerate(mask=mask, advance=True)  # eager: no graph is recorded
    assert (course.result.generation.numpy() - generation).tolist() == [0, 1, 0, 0, 0, 0, 0, 0]
    assert np.all(course.result.centerline.numpy()[..., 2] == np.float32(0.25))
    with pytest.raises(NotCapturableError, match="capturable=False"):
        with wp.ScopedCapture(device=DEV):
            course.regenerate(mask=mask, advance=True)
    with pytest.raises(NotCapturableError, match="test.host_shift"):
        with wp.ScopedCapture(device=DEV):
            program.enqueue(mask=mask)


def test_an_env_over_a_host_plugin_steps_eagerly_with_one_warning(monkeypatch):
    from trackgen_env.course import presets as course_presets
    from trackgen_env.envs.track import TrackVectorEnv

    reg = _registry()

    def build_with_plugin(spec, registry=None, **kwargs):
        return build(spec.with_stage("test.host_shift", after="resample", registry=reg), registry=reg, **kwargs)

    monkeypatch.setattr(course_presets, "build", build_with_plugin)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = TrackVectorEnv(num_envs=2, device=DEV, seed=0)
    eager = [w for w in caught if issubclass(w.category, RuntimeWarning) and "running it eagerly" in str(w.message)]
    assert len(eager) == 1 and env.graph is None
    env.reset(seed=0)
    obs, reward, terminated, truncated, _ = env.step(np.zeros((2, 2), np.float32))
    assert obs.shape[0] == 2 and np.all(np.isfinite(obs))
    assert np.all(env.course.result.centerline.numpy()[..., 2] == np.float32(0.25))
    env.close()


# -- randomisation of any parameter -----------------------------------------------------------------
def _shift_spec(num_envs: int, reg: Registry, *, second: bool = False) -> PipelineSpec:
    spec = presets.track(num_envs=num_envs, device=DEV).with_stage("test.shift", after="resample", registry=reg)
    if second:
        spec = spec.with_stage("test.scale", after="test.shift",
                               registry=reg).with_randomize({"test.scale.k": (0.5, 2.0)})
    return spec.with_randomize({"test.shift.dz": (-1.0, 1.0), "band.width": (0.6, 1.0)})


def test_a_randomized_plugin_param_is_drawn_per_env_and_generation_within_bounds():
    reg = _registry()
    program = build(_shift_spec(64, reg), registry=reg, seeds=3)
    first = program.params["test.shift.dz"].numpy().copy()
    assert np.all((first >= -1.0) & (first < 1.0)) and len(np.unique(first)) == 64
    z = program.result.centerline.numpy()[..., 2]
    assert np.array_equal(z, np.broadcast_to(first[:, None], z.shape))
    program.enqueue(advance=True)
    second = program.params["test.shift.dz"].numpy()
    assert np.all((second >= -1.0) & (second < 1.0)) and not np.any(second == first)


def test_randomized_params_are_the_same_for_the_same_seed_and_counter_on_any_num_envs():
    reg = _registry()
    wide = build(_shift_spec(64, reg), registry=reg, seeds=3)
    wide.enqueue(advance=True)
    k = 37
    seed = wp.array(wide.seeds.seeds.numpy()[k:k + 1], dtype=wp.int32, device=DEV)
    one = build(_shift_spec(1, reg), registry=reg, seeds=seed)
    one.enqueue(advance=True)
    for name in ("test.shift.dz", "band.width"):
        assert one.params[name].numpy()[0] == wide.params[name].numpy()[k], name
    assert np.array_equal(one.result.centerline.numpy()[0], wide.result.centerline.numpy()[k])


def test_a_plugin_param_keeps_its_draws_when_another_plugin_adds_params():
    reg = _registry()
    alone = build(_shift_spec(16, reg), registry=reg, seeds=4)
    both = build(_shift_spec(16, reg, second=True), registry=reg, seeds=4)
    for name in ("test.shift.dz", "band.width"):
        assert np.array_equal(alone.params[name].numpy(), both.params[name].numpy()), name


def test_a_live_set_out_of_the_declared_bounds_is_refused():
    reg = _registry()
    program = build(_shift_spec(4, reg), registry=reg)
    with pytest.raises(ValueError, match=r"test.shift.dz.*\[-2, 2\]"):
        program.params.set_range("test.shift.dz", -1.0, 3.0)  # randomized: its range moves, within the bounds
    fixed = build(_shift_spec(4, reg).without_randomize("test.shift.dz"), registry=reg)
    with pytest.raises(ValueError, match=r"test.shift.dz.*\[-2, 2\]"):
        fixed.params["test.shift.dz"] = 3.0


# -- build refuses, naming the stage ------------------------------------------------------------------
def test_build_refuses_an_unknown_stage_listing_the_known_ones():
    data = presets.track(device=DEV).to_dict()
    data["stages"].insert(2, "acme.banking")
    with pytest.raises(KeyError,
                       match="'acme.banking'.*known stages are \\[.*'band'.*pass the Registry it is registered in"):
        build(PipelineSpec.from_dict(data))
    with pytest.raises(KeyError, match="acme.banking"):
        presets.track(device=DEV).with_stage("acme.banking")


def test_build_refuses_params_out_of_their_declared_bounds_naming_the_stage():
    reg = _registry()
    with pytest.raises(ValueError, match="stage 'band': parameter 'band.width'"):
        build(presets.track(device=DEV).with_params({"band.width": -1.0}))
    with pytest.raises(ValueError, match="stage 'layout': the randomize range of 'layout.radius_jitter'"):
        build(presets.track(device=DEV).with_randomize({"layout.radius_jitter": (0.5, 1.5)}))
    spec = presets.track(device=DEV).with_stage("test.shift", after="resample", params={"dz": 5.0}, registry=reg)
    with pytest.raises(ValueError, match="stage 'test.shift'"):
        build(spec, registry=reg)
    spec = presets.track(device=DEV).with_stage("test.static", registry=reg)
    with pytest.raises(ValueError, match="stage 'test.static'.*static"):
        build(spec.with_randomize({"test.static.n": (1.0, 2.0)}), registry=reg)
    assert build(spec, registry=reg).spec.params["test.static.n"] == 3.0 and "test.static.n" not in build(
        spec, registry=reg).params


def test_build_refuses_a_stage_whose_reads_no_earlier_stage_writes():
    reg = _registry()
    with pytest.raises(ValueError, match="stage 'test.bank_reader' reads \\['banking'\\]"):
        build(presets.track(device=DEV).with_stage("test.bank_reader", registry=reg), registry=reg)
    early = presets.track(device=DEV).with_stage("test.shift", after="band", registry=reg)
    with pytest.raises(ValueError, match="stage 'test.shift' reads \\['centerline'\\]"):
        build(early, registry=reg)
    data = presets.track(device=DEV).to_dict()
    data["stages"].remove("start")
    with pytest.raises(ValueError, match="commit copies \\['start_position', 'start_orientation'\\]"):
        build(PipelineSpec.from_dict(data))


def test_the_registry_refuses_plain_and_duplicate_names():
    reg = Registry()

    class Plain(Stage):
        name = "banking"

    with pytest.raises(ValueError, match="namespaced"):
        reg.register(Plain)
    reg.register(Shift)
    with pytest.raises(ValueError, match="already registered"):
        reg.register(Shift)
    with pytest.raises(TypeError, match="Stage subclass"):
        reg.register(object)
    assert "test.shift" not in Registry().names("track")  # a new registry holds the built-ins only


# -- out= ------------------------------------------------------------------------------------------
def test_out_views_receive_exactly_what_the_owned_result_holds():
    spec = presets.track(num_envs=E, device=DEV).with_randomize({"band.width": (0.6, 1.0)})
    P = spec.settings["max_points"]
    big = wp.array(np.full((E + 2, P, 3), np.inf, np.float32), dtype=wp.vec3, device=DEV)  # a simulator's buffer
    wide = wp.array(np.full((E, P + 4), np.inf, np.float32), dtype=float, device=DEV)
    out = {"centerline": big[1:E + 1], "half_width": wide[:, 2:P + 2]}
    owned, viewed = build(spec, seeds=9), build(spec, seeds=9, out=out)
    assert viewed.result.centerline.ptr == out["centerline"].ptr
    mask = wp.array([0, 1, 1, 0, 0, 0, 1, 0], dtype=wp.int32, device=DEV)
    for gen in (owned, viewed):
        gen.enqueue(advance=True, mask=mask)
    assert _digest(owned.result) == _digest(viewed.result)
    big_np, wide_np = big.numpy(), wide.numpy()
    assert np.array_equal(big_np[1:E + 1], owned.result.centerline.numpy())
    assert np.all(np.isinf(big_np[0])) and np.all(np.isinf(big_np[E + 1]))
    assert np.array_equal(wide_np[:, 2:P + 2], owned.result.half_width.numpy())
    assert np.all(np.isinf(wide_np[:, :2])) and np.all(np.isinf(wide_np[:, P + 2:]))


def test_out_takes_a_result_like_object():
    spec = presets.track(num_envs=2, device=DEV)
    owned = build(spec, seeds=1)
    arrays = {f.name: wp.empty_like(getattr(owned.result, f.name)) for f in dataclasses.fields(owned.result)}
    viewed = build(spec, seeds=1, out=TrackResult(**arrays))
    assert all(getattr(viewed.result, n) is a for n, a in arrays.items())
    assert _digest(viewed.result) == _digest(owned.result)


@pytest.mark.parametrize("bad, match", [
    (lambda E, P: wp.zeros((E, P + 1), dtype=float, device=DEV),
     r"out\['half_width'\] must be .*shape \(8, \d+\).*got shape \(8, \d+\)"),
    (lambda E, P: wp.zeros((E, P), dtype=wp.float64, device=DEV),
     r"out\['half_width'\] .*dtype float32.*got .*dtype float64"),
])
def test_out_refuses_a_wrong_array_before_anything_is_written(bad, match):
    spec = presets.track(num_envs=E, device=DEV)
    P = spec.settings["max_points"]
    good = wp.array(np.full((E, P, 3), np.inf, np.float32), dtype=wp.vec3, device=DEV)
    with pytest.raises(ValueError, match=match):
        build(spec, out={"centerline": good, "half_width": bad(E, P)})
    assert np.all(np.isinf(good.numpy()))
    with pytest.raises(ValueError, match="out= names fields \\['centreline'\\]"):
        build(spec, out={"centreline": good})
    with pytest.raises(TypeError, match=r"out\['centerline'\] must be a wp.array"):
        build(spec, out={"centerline": np.zeros((E, P, 3), np.float32)})


@pytest.mark.cuda
@pytest.mark.skipif(wp.get_cuda_device_count() == 0, reason="no CUDA device")
def test_out_refuses_an_array_on_another_device():
    spec = presets.track(num_envs=E, device="cuda:0")
    P = spec.settings["max_points"]
    with pytest.raises(ValueError, match=r"out\['centerline'\] .* on cuda:0, got .* on cpu"):
        build(spec, out={"centerline": wp.zeros((E, P), dtype=wp.vec3, device="cpu")})


def test_prepare_false_builds_without_the_first_generation():
    program = build(presets.gates(num_envs=3, device=DEV, gate_width=0.2), prepare=False)
    assert not program.result.generation.numpy().any() and not program.result.valid.numpy().any()
    course = Course.gates(program, collision=0.02)  # the course prepares it
    assert course.result.generation.numpy().all() and course.result.valid.numpy().all()


# -- the docs ----------------------------------------------------------------------------------------
def test_the_pipelines_page_examples_run(tmp_path):
    import pathlib
    import re
    import runpy

    page = pathlib.Path(__file__).resolve().parent.parent / "docs" / "pipelines.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert len(blocks) == 5
    for i, block in enumerate(blocks):  # from files: Warp reads a kernel's source from its file
        path = tmp_path / f"pipelines_example_{i}.py"
        path.write_text(block)
        runpy.run_path(str(path))


def test_a_program_is_a_producer():
    program = build(presets.gates(num_envs=2, device=DEV, gate_width=0.2))
    assert isinstance(program, pipeline.Producer) and not isinstance(object(), pipeline.Producer)


def test_build_refuses_missing_and_unknown_settings():
    data = presets.gates(device=DEV, gate_width=0.2).to_dict()
    del data["settings"]["num_gates"]
    with pytest.raises(ValueError, match="missing \\['num_gates'\\]"):
        build(PipelineSpec.from_dict(data))
    data = presets.track(device=DEV).to_dict()
    data["settings"]["max_point"] = 10
    with pytest.raises(ValueError, match="unknown \\['max_point'\\]"):
        build(PipelineSpec.from_dict(data))
