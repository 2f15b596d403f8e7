"""Conformance of trackgen_env.course to docs/composing-a-course.md, walked top to bottom.

One test per rule, named after it. Every refusal asserts the exception type and that
nothing changed (no generator built, no binding replaced, no component attached).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import gc
import pprint
import warnings
import weakref

import numpy as np
import pytest
import warp as wp
from course_fakes import Counter, FakeGenerator, Log, snapshot, vec3s

import trackgen_env
from trackgen_env import PerEnvSeededRNG, TrackGenConfig, TrackGenerator, tools
from trackgen_env.core import exec as exec_modes
from trackgen_env.core.capture import (
    CaptureError,
    NotCapturableError,
    RebindAfterCaptureWarning,
)
from trackgen_env.course import Course, CourseConfig, StepResult
from trackgen_env.course import presets as course_presets
from trackgen_env.generators import GateGenConfig
from trackgen_env.pipeline import build, presets
from trackgen_env.core.seeding import SeedState
from trackgen_env.tools import InputSpec

E = 4


def track_cfg(device="cpu", **kw):
    return TrackGenConfig(num_envs=E, device=device, **kw)


def fake_course(device="cpu", components=None, **kw):
    gen = FakeGenerator(E, device, seeds=kw.pop("seeds", 3))
    log = []
    comps = components if components is not None else [Log("a", log), Counter("b", log, after=("a",))]
    return Course(gen, comps, **kw), log


@pytest.fixture
def no_build(monkeypatch):
    """Fail the test if a preset builds a generator (its checks must raise first)."""

    def refuse(*a, **k):
        raise AssertionError("a generator was built before the checks raised")

    monkeypatch.setattr(course_presets, "build", refuse)


# --- Building a course ----------------------------------------------------------------------


def test_building_any_generator_and_any_components():
    gen = TrackGenerator(track_cfg(), seeds=42)
    course = Course(gen, [tools.Checkpoints(0.6, max_checkpoints="auto"), tools.Progress(),
                          tools.BandCollision("segments")])
    assert list(course.components) == ["checkpoints", "progress", "collision"]
    assert course.generator is gen and course.result is gen.result


@pytest.mark.parametrize("source, preset", [
    (lambda: track_cfg(), "Course.track"),
    (lambda: presets.track(num_envs=E, device="cpu"), "Course.track"),
    (lambda: GateGenConfig(num_envs=E, device="cpu", gate_width=0.1), "Course.gates"),
])
def test_building_a_config_or_spec_is_a_type_error_naming_the_preset(source, preset):
    with pytest.raises(TypeError, match=preset):
        Course(source(), [])


def test_building_an_object_of_your_own_with_the_same_surface():
    course, _ = fake_course()
    course.bind(position=vec3s(E))
    assert course.step()["b"].count.numpy().tolist() == [1] * E
    assert course.result.valid.numpy().tolist() == [1] * E


def test_building_a_program_built_with_prepare_false_prepares_it():
    gen = build(presets.track(num_envs=E, device="cpu"), seeds=1, prepare=False)
    assert not gen.result.valid.numpy().any()
    course = Course(gen, [tools.Checkpoints(0.6)])
    assert gen.result.valid.numpy().all()
    assert (course.checkpoints.num_checkpoints.numpy() >= 3).all()


def test_building_stream_defaults_to_the_generators():
    course, _ = fake_course()
    assert course.stream is course.generator.stream


def test_building_the_three_ways_agree():
    a = Course.track(presets.track(num_envs=E, device="cpu"), checkpoint_spacing=0.6, collision="segments", seeds=42)
    gen = TrackGenerator(presets.track(num_envs=E, device="cpu"), seeds=42)
    b = Course(gen, [tools.Checkpoints(0.6, max_checkpoints="auto"), tools.Progress(), tools.BandCollision("segments")])
    cfg = CourseConfig(mode="track", gen=track_cfg(), seeds=42, collision="segments", checkpoint_spacing=0.6)
    c, d, e = Course(cfg), Course.from_config(cfg), Course(config=cfg)
    ref = snapshot(a)
    for other in (b, c, d, e):
        assert list(other.components) == list(a.components)
        assert snapshot(other) == ref


def test_building_every_way_runs_a_subclass_init():
    class MyCourse(Course):
        def __init__(self, generator, components=(), *, stream=None, prepare=True):
            self.mine = True
            super().__init__(generator, components, stream=stream, prepare=prepare)

    assert MyCourse.track(track_cfg(), checkpoint_spacing=0.6).mine
    cfg = CourseConfig(mode="track", gen=track_cfg(), checkpoint_spacing=0.6)
    assert isinstance(MyCourse.from_config(cfg), MyCourse) and MyCourse.from_config(cfg).mine


# --- The presets ----------------------------------------------------------------------------


def test_presets_track_components_in_order():
    extra = [Log("acme.extra")]
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, collision="segments", max_checkpoints=40, extra=extra)
    assert list(course.components) == ["checkpoints", "progress", "collision", "acme.extra"]
    c = course.components
    assert isinstance(c["checkpoints"], tools.Checkpoints) and c["checkpoints"].capacity == 40
    assert isinstance(c["progress"], tools.Progress) and isinstance(c["collision"], tools.BandCollision)


def test_presets_track_without_collision_has_none():
    course = Course.track(track_cfg(), checkpoint_spacing=0.6)
    assert list(course.components) == ["checkpoints", "progress"] and course.collision is None


def test_presets_collision_slot_takes_a_component_named_collision():
    mine = tools.BandCollision("segments")
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, collision=mine)
    assert course.components["collision"] is mine


def test_presets_collision_component_under_another_name_is_refused(no_build):
    with pytest.raises(ValueError, match="extra"):
        Course.track(track_cfg(), checkpoint_spacing=0.6, collision=tools.BandCollision("segments", name="walls"))


def test_presets_build_a_config_or_spec_with_seeds():
    rng = PerEnvSeededRNG(E, 5, device="cpu")
    course = Course.track(presets.track(num_envs=E, device="cpu"), checkpoint_spacing=0.6, seeds=rng)
    assert course.seeds.seeds is rng.seeds


def test_presets_use_a_built_generator_as_is():
    gen = TrackGenerator(track_cfg(), seeds=3)
    assert Course.track(gen, checkpoint_spacing=0.6).generator is gen


@pytest.mark.parametrize("kw", [{"seeds": 1}, {"stream": object()}])
def test_presets_seeds_or_stream_with_a_built_generator_is_a_type_error(kw):
    gen = TrackGenerator(track_cfg(), seeds=3)
    with pytest.raises(TypeError, match="built generator"):
        Course.track(gen, checkpoint_spacing=0.6, **kw)


def test_presets_a_source_of_the_other_family_names_the_other_preset(no_build):
    with pytest.raises(TypeError, match="Course.gates"):
        Course.track(GateGenConfig(num_envs=E, device="cpu", gate_width=0.1), checkpoint_spacing=0.6)
    with pytest.raises(TypeError, match="Course.track"):
        Course.gates(track_cfg(), collision=0.02)
    with pytest.raises(TypeError, match="Course.track"):
        Course.gates(TrackGenerator(track_cfg()), collision=0.02)


class _Attached(Log):
    pass


def _attached():
    c = Log("acme.attached")
    Course(FakeGenerator(E), [c])
    return c


@pytest.mark.parametrize("kw, exc", [
    ({"checkpoint_spacing": 0}, ValueError),
    ({"checkpoint_spacing": -0.5}, ValueError),
    ({"checkpoint_spacing": float("nan")}, ValueError),
    ({"checkpoint_spacing": "0.6"}, TypeError),
    ({"checkpoint_spacing": True}, TypeError),
    ({"collision": True}, TypeError),
    ({"collision": "boxes"}, ValueError),
    ({"collision": 0.05}, TypeError),
    ({"max_checkpoints": 2}, ValueError),
    ({"max_checkpoints": 3.5}, TypeError),
    ({"max_checkpoints": True}, TypeError),
    ({"extra": Log("acme.one")}, TypeError),
    ({"extra": [Log("progress")]}, ValueError),
    ({"extra": [Log("acme.x", after=("nobody",))]}, ValueError),
    ({"extra": [Log("acme.x", source="nobody")]}, ValueError),
    ({"extra": [Log("acme.x", after=("acme.y",)), Log("acme.y", after=("acme.x",))]}, ValueError),
    ({"extra": "attached"}, ValueError),
    ({"extra": [Log("")]}, TypeError),
])
def test_checks_before_anything_is_built_track(no_build, kw, exc):
    args = {"checkpoint_spacing": 0.6, **kw}
    if args.get("extra") == "attached":
        args["extra"] = [_attached()]
    with pytest.raises(exc):
        Course.track(track_cfg(), **args)


@pytest.mark.parametrize("kw, exc", [
    ({"samples_per_gate": 1}, ValueError),
    ({"samples_per_gate": 2.0}, TypeError),
    ({"localize_window": 0}, ValueError),
    ({"collision": 0.0}, ValueError),
    ({"collision": -0.02}, ValueError),
    ({"collision": True}, TypeError),
    ({"collision": "segments"}, ValueError),
    ({"extra": Log("acme.one")}, TypeError),
])
def test_checks_before_anything_is_built_gates(no_build, kw, exc):
    with pytest.raises(exc):
        Course.gates(GateGenConfig(num_envs=E, device="cpu", gate_width=0.1), **kw)


def test_checks_gates_refuses_a_construction_gate_width_of_zero(no_build):
    with pytest.raises(ValueError, match="gate_width"):
        Course.gates(GateGenConfig(num_envs=E, device="cpu"), collision=0.02)


def gate_cfg(device="cpu", **kw):
    return GateGenConfig(num_envs=E, device=device, **{"gate_width": 0.1, **kw})


def test_presets_gates_components_in_order():
    course = Course.gates(gate_cfg(), collision=0.02, samples_per_gate=6, localize_window=3, extra=[Log("acme.x")])
    assert list(course.components) == ["checkpoints", "centerline", "progress", "collision", "localizer", "acme.x"]
    c = course.components
    assert isinstance(c["checkpoints"], tools.GateCheckpoints) and isinstance(c["progress"], tools.Progress)
    assert isinstance(c["centerline"], tools.CenterlineFromGates) and c["centerline"].samples_per_gate == 6
    assert isinstance(c["collision"], tools.DiscCollision) and c["collision"].radius == 0.02
    assert isinstance(c["localizer"], tools.Localizer) and c["localizer"].source == "centerline"
    assert course.course_line is c["centerline"].utility


def test_presets_gates_collision_slot_takes_a_frame_collision_and_none():
    frame = tools.FrameCollision()
    assert Course.gates(gate_cfg(), collision=frame).components["collision"] is frame
    assert "collision" not in Course.gates(gate_cfg()).components


def test_checks_gates_extra_sorted_with_the_presets_names(no_build):
    with pytest.raises(ValueError, match="centerline"):
        Course.gates(gate_cfg(), extra=[Log("centerline")])
    with pytest.raises(ValueError):
        Course.gates(gate_cfg(), extra=[Log("acme.x", after=("nobody",))])


def test_checks_gates_reads_the_width_of_a_spec_and_a_built_generator(no_build):
    spec = presets.gates(num_envs=E, device="cpu")
    with pytest.raises(ValueError, match="gate_width"):
        Course.gates(spec)
    with pytest.raises(ValueError, match="lo"):
        Course.gates(spec.with_randomize({"gate_frames.gate_width": (0.0, 0.2)}))


def test_checks_gates_a_randomized_width_with_lo_above_zero_ignores_the_construction_width():
    spec = presets.gates(num_envs=E, device="cpu").with_randomize({"gate_frames.gate_width": (0.08, 0.12)})
    course = Course.gates(spec, collision=0.02)
    width = course.result.gate_width.numpy()
    assert ((width >= 0.08) & (width < 0.12)).all()


def test_checks_gates_a_built_generator_of_width_zero_is_refused():
    gen = trackgen_env.GateGenerator(presets.gates(num_envs=E, device="cpu"))
    with pytest.raises(ValueError, match="gate_width"):
        Course.gates(gen)


def test_checks_gates_refuses_a_later_scalar_set_of_a_width_at_most_zero():
    gen = trackgen_env.GateGenerator(gate_cfg())
    course = Course.gates(gen, collision=0.02)
    for bad in (0.0, -0.1):
        with pytest.raises(ValueError, match="gate_width"):
            course.generator.params["gate_frames.gate_width"] = bad
    assert np.allclose(gen.params["gate_frames.gate_width"].numpy(), 0.1)
    course.generator.params["gate_frames.gate_width"] = 0.2


def test_seeds_gates_preset_and_course_config_are_byte_identical_with_an_rng():
    a = Course.gates(gate_cfg(), collision=0.02, seeds=PerEnvSeededRNG(E, 4, device="cpu"))
    b = Course(CourseConfig(mode="gates", gen=gate_cfg(), seeds=PerEnvSeededRNG(E, 4, device="cpu"), post_radius=0.02))
    assert snapshot(a) == snapshot(b)


def test_checkpoint_capacity_auto_is_the_longest_track_over_the_spacing():
    cfg = track_cfg()
    course = Course.track(cfg, checkpoint_spacing=0.6)
    # the longest track the generator can produce: its declared bound (the length or the capacity max_points)
    max_loop = course.generator.layout.max_loop_length
    assert course.components["checkpoints"].capacity == max(3, int(np.ceil(max_loop / 0.6)))


def test_checkpoint_capacity_warns_once_when_a_chosen_capacity_clips_a_valid_env():
    gen = TrackGenerator(track_cfg(), seeds=3)
    gen.layout = dataclasses.replace(gen.layout, max_loop_length=1.0)  # declares too short a bound
    with pytest.warns(UserWarning, match="max_checkpoints") as record:
        Course(gen, [tools.Checkpoints(0.6)])
    assert len([w for w in record if "max_checkpoints" in str(w.message)]) == 1


def test_checkpoint_capacity_given_does_not_warn():
    gen = TrackGenerator(track_cfg(), seeds=3)
    gen.layout = dataclasses.replace(gen.layout, max_loop_length=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Course(gen, [tools.Checkpoints(0.6, max_checkpoints=3)])


@pytest.mark.filterwarnings("ignore:only .* hold a valid track course")  # sizes past the capacity
def test_resolution_checks_warn_when_a_preset_sdf_grid_is_too_coarse_for_the_largest_size():
    spec = presets.track(num_envs=E, device="cpu").with_randomize({"layout.size": (10.0, 40.0)})
    with pytest.warns(UserWarning, match="largest course size 40"):
        Course.track(spec, checkpoint_spacing=0.6, collision="sdf")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Course.track(track_cfg(), checkpoint_spacing=0.6, collision="sdf")


@pytest.mark.parametrize("kw", [{"mode": "boats"}, {"mode": "track"}, {"mode": "gates", "checkpoint_spacing": 0.6},
                                {"mode": "track", "checkpoint_spacing": 0.6, "post_radius": 0.02}])
def test_course_config_refuses_an_unknown_mode_or_an_argument_of_the_other_mode(kw):
    with pytest.raises(ValueError):
        CourseConfig(**kw)


# --- Seeds and the rng ----------------------------------------------------------------------


def test_seeds_course_rng_is_the_rng_passed_else_none():
    rng = PerEnvSeededRNG(E, 7, device="cpu")
    with_rng = Course.track(track_cfg(), checkpoint_spacing=0.6, seeds=rng)
    assert with_rng.rng is rng and with_rng.seeds is with_rng.generator.seeds
    plain = Course.track(track_cfg(), checkpoint_spacing=0.6, seeds=7)
    assert plain.rng is None and plain.seeds.seeds.numpy().tolist() == rng.seeds.numpy().tolist()


def test_seeds_generate_through_the_rng_writes_its_array():
    rng = PerEnvSeededRNG(E, 7, device="cpu")
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, seeds=rng)
    course.generate(seeds=9)
    assert rng.seeds.numpy().tolist() == PerEnvSeededRNG(E, 9, device="cpu").seeds.numpy().tolist()
    assert snapshot(course)["gen.centerline"] == snapshot(Course.track(track_cfg(), checkpoint_spacing=0.6,
                                                                        seeds=9))["gen.centerline"]


def test_seeds_generate_on_owned_seeds_sets_them():
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, seeds=7)
    course.generate(seeds=9)
    fresh = Course.track(track_cfg(), checkpoint_spacing=0.6, seeds=9)
    assert course.seeds.seeds.numpy().tolist() == fresh.seeds.seeds.numpy().tolist()
    assert not course.seeds.counters.numpy().any()
    ours, theirs = snapshot(course), snapshot(fresh)
    del ours["gen.generation"], theirs["gen.generation"]  # counts commits: one more here
    assert ours == theirs


def test_seeds_generate_on_a_bound_array_without_rng_is_a_runtime_error():
    mine = wp.array(np.arange(E, dtype=np.int32), dtype=wp.int32, device="cpu")
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, seeds=mine)
    before = snapshot(course)
    with pytest.raises(RuntimeError, match="bound"):
        course.generate(seeds=9)
    assert mine.numpy().tolist() == list(range(E)) and snapshot(course) == before


def test_seeds_preset_and_course_config_are_byte_identical_with_an_rng():
    a = Course.track(track_cfg(), checkpoint_spacing=0.6, collision="segments",
                     seeds=PerEnvSeededRNG(E, 4, device="cpu"))
    b = Course(CourseConfig(mode="track", gen=track_cfg(), checkpoint_spacing=0.6, collision="segments",
                            seeds=PerEnvSeededRNG(E, 4, device="cpu")))
    assert snapshot(a) == snapshot(b)


# --- Components and their order -------------------------------------------------------------


def test_order_is_a_stable_topological_order_of_after_and_source():
    log = []
    comps = [Log("c", log, after=("b",)), Log("a", log), Log("b", log, source="a"), Log("d", log)]
    course, _ = fake_course(components=comps)
    assert list(course.components) == ["a", "b", "c", "d"]


def test_order_keeps_an_already_ordered_list():
    comps = [Log("z"), Log("y"), Log("x", after=("z",))]
    course, _ = fake_course(components=comps)
    assert list(course.components) == ["z", "y", "x"]


def test_order_phases_attach_on_generate_step_sorted_reset_reversed():
    log = []
    comps = [Counter("b", log, after=("a",)), Log("a", log)]
    course, _ = fake_course(components=comps)
    assert log[:2] == [("a", "attach"), ("b", "attach")]
    course.bind(position=vec3s(E))
    log.clear()
    course.enqueue_generate()
    assert log == [("a", "on_generate"), ("b", "on_generate"), ("b", "reset"), ("a", "reset")]
    log.clear()
    course.step()
    course.reset()
    assert log == [("b", "step"), ("b", "reset"), ("a", "reset")]


def test_order_components_is_a_read_only_mapping_in_execution_order():
    course, _ = fake_course()
    assert list(course.components) == ["a", "b"]
    with pytest.raises(TypeError):
        course.components["x"] = Log("x")


class _NoReset:
    name = "acme.noreset"
    after, source, inputs, context = (), None, (), None

    def attach(self, ctx): pass
    def bind(self, **a): pass
    def on_generate(self, ctx, m): pass
    def step(self, ctx): pass


@pytest.mark.parametrize("make, exc", [
    (lambda: [Log("a"), Log(3)], TypeError),
    (lambda: [Log("a"), Log("")], TypeError),
    (lambda: [Log("a"), Log("a")], ValueError),
    (lambda: [Log("a"), Log("b", after=("zz",))], ValueError),
    (lambda: [Log("a"), Log("b", source="zz")], ValueError),
    (lambda: [Log("a", after=("b",)), Log("b", after=("a",))], ValueError),
    (lambda: [Log("a"), _attached()], ValueError),
    (lambda: [Log("a"), _NoReset()], TypeError),
])
def test_order_refusals_attach_nothing(make, exc):
    comps = make()
    fresh = [c for c in comps if getattr(c, "context", None) is None]
    gen = FakeGenerator(E)
    with pytest.raises(exc):
        Course(gen, comps)
    assert all(getattr(c, "context", None) is None for c in fresh)
    assert not [c for c in fresh if isinstance(c, Log) and c.first is not None]


def test_order_context_add_refuses_a_missing_required_read_and_frees_the_others():
    class Needs(Log):
        requires = ("no_such_field",)

    first = Log("a")
    with pytest.raises(ValueError, match="no_such_field"):
        Course(FakeGenerator(E), [first, Needs("b")])
    assert first.context is None
    Course(FakeGenerator(E), [first])  # reusable


class _Duck:
    """A component of the contract alone: the five methods, a name and after; no result, no source."""

    after = ()

    def __init__(self, name, fail_on_generate=False):
        self.name, self.fail, self.context = name, fail_on_generate, None

    def attach(self, ctx):
        pass

    def bind(self, **arrays):
        pass

    def on_generate(self, ctx, mask):
        if self.fail:
            raise ValueError("a bug of the duck's own")

    def step(self, ctx):
        pass

    def reset(self, ctx, mask):
        pass


def test_order_a_component_of_the_contract_alone_needs_no_result_or_source():
    course, _ = fake_course(components=[Log("a"), _Duck("acme.duck")])
    res = course.step()
    assert "acme.duck" in res and res["acme.duck"] is None and res.clone()["acme.duck"] is None


def test_order_a_construction_that_fails_after_attach_frees_every_component():
    """A failure in the warm-up (after every component attached) left them attached: the next
    course refused them as "already attached"."""
    a, duck = Log("a"), _Duck("acme.duck", fail_on_generate=True)
    with pytest.raises(ValueError, match="the duck's own"):
        fake_course(components=[a, duck])
    assert a.context is None and duck.context is None
    duck.fail = False
    course, _ = fake_course(components=[a, duck])
    assert a.context is not None and list(course.components) == ["a", "acme.duck"]


def test_a_stream_that_is_no_wp_stream_is_a_type_error():
    with pytest.raises(TypeError, match="stream must be None or a wp.Stream, got str 'foo'"):
        fake_course(stream="foo")
    with pytest.raises(TypeError, match="stream must be None or a wp.Stream, got str 'foo'"):
        Course.track(track_cfg(), checkpoint_spacing=0.6, stream="foo")
    course, _ = fake_course()
    before = snapshot(course)
    for call in (course.regenerate, course.enqueue_generate, course.generate, course.prepare):
        with pytest.raises(TypeError, match="stream must be None or a wp.Stream, got str 'bar'"):
            call(stream="bar")
    assert snapshot(course) == before


def test_generate_seeds_with_a_generator_without_seeds_is_a_type_error():
    gen = FakeGenerator(E, "cpu", seeds=3)
    course = Course(gen, [Log("a")])
    state, gen.seeds = gen.seeds, None  # the producer protocol's seeds are optional
    with pytest.raises(TypeError,
                       match=r"generate\(seeds=...\) reseeds the generator's seeds, and FakeGenerator has none"):
        course.generate(seeds=3)
    gen.seeds = state
    assert np.array_equal(state.seeds.numpy(), SeedState(E, "cpu", 3).seeds.numpy())  # not reseeded


def test_order_conflicting_input_declarations_are_refused_at_construction():
    class Other(Log):
        inputs = (InputSpec("position", wp.vec2),)

    first = Counter("a")
    with pytest.raises(ValueError, match="position"):
        Course(FakeGenerator(E), [first, Other("b")])
    assert first.context is None


def test_order_a_single_component_is_a_type_error():
    with pytest.raises(TypeError, match="sequence"):
        Course(FakeGenerator(E), Log("a"))


def test_order_namespaced_third_party_step_component_is_an_entry():
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, extra=[Counter("acme.lookahead")])
    course.bind(position=vec3s(E))
    res = course.step()
    assert list(res.keys()) == ["progress", "acme.lookahead"]
    assert res["acme.lookahead"].count.numpy().tolist() == [1] * E


def test_order_course_attributes_are_the_utilities_or_none():
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, collision="segments", extra=[tools.Localizer()])
    c = course.components
    assert course.progress is c["progress"].utility and course.collision is c["collision"].utility
    assert course.localizer is c["localizer"].utility
    assert course.checkpoint_sampler is c["checkpoints"].utility and course.checkpoints is c["checkpoints"].result
    assert course.course_line is None and course.heightfield is None
    bare, _ = fake_course()
    assert (bare.progress, bare.collision, bare.localizer, bare.checkpoints, bare.checkpoint_sampler) == (None,) * 5


# --- Binding inputs -------------------------------------------------------------------------


def test_binding_one_array_goes_to_every_declarer():
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, extra=[tools.Localizer()], seeds=42)
    pos = vec3s(E)
    course.bind(position=pos)
    assert course.components["progress"].bound["position"] is pos
    assert course.components["localizer"].bound["position"] is pos


class _Box(Counter):
    inputs = (InputSpec("position", wp.vec3), InputSpec("box_position", wp.vec3, required=False, default="position"))


def test_binding_a_default_routes_and_an_explicit_name_wins():
    course, _ = fake_course(components=[_Box("acme.box")])
    pos, box = vec3s(E), vec3s(E, x=1.0)
    course.bind(position=pos)
    assert course.components["acme.box"].bound["box_position"] is pos
    course.bind(position=pos, box_position=box)
    assert course.components["acme.box"].bound["box_position"] is box


@pytest.mark.parametrize("bad, exc", [
    (lambda: np.zeros((E, 3), np.float32), TypeError),
    (lambda: wp.zeros(E, dtype=wp.vec2, device="cpu"), TypeError),
    (lambda: wp.zeros(E + 1, dtype=wp.vec3, device="cpu"), ValueError),
    (lambda: wp.zeros((E, 2), dtype=wp.vec3, device="cpu"), ValueError),
])
def test_binding_validates_before_anything_is_rebound(bad, exc):
    course, _ = fake_course(components=[Counter("a"), _Box("acme.box")])
    pos = vec3s(E)
    course.bind(position=pos)
    with pytest.raises(exc):
        course.bind(position=vec3s(E), box_position=bad())
    assert course.components["a"].bound["position"] is pos
    assert course.components["acme.box"].bound == {"position": pos, "box_position": pos}


@pytest.mark.cuda
def test_binding_validates_the_device():
    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    course, _ = fake_course()
    with pytest.raises(ValueError, match="cuda"):
        course.bind(position=wp.zeros(E, dtype=wp.vec3, device="cuda:0"))


class _Fussy(Counter):
    refuse = False

    def on_bind(self, arrays):
        super().on_bind(arrays)
        if self.refuse:
            raise RuntimeError("refused")


def test_binding_is_atomic_and_rolls_back_when_on_bind_raises():
    fussy = _Fussy("z", after=("a",))
    course, _ = fake_course(components=[Counter("a"), fussy])
    old = vec3s(E)
    course.bind(position=old)
    with wp.ScopedCapture(device="cpu"):
        course.step()
    fussy.refuse = True
    with warnings.catch_warnings():
        warnings.simplefilter("error", RebindAfterCaptureWarning)  # a refused bind binds nothing: no warning
        with pytest.raises(RuntimeError, match="refused"):
            course.bind(position=vec3s(E))
    fussy.refuse = False
    assert course.components["a"].bound["position"] is old and fussy.bound["position"] is old
    with pytest.warns(RebindAfterCaptureWarning):  # the probes were restored: the bind that binds warns, once
        course.bind(position=vec3s(E))


def test_binding_the_four_names_are_accepted_positionally_and_ignored_when_undeclared():
    course, _ = fake_course()
    pos = vec3s(E)
    course.bind(pos, wp.zeros(E, dtype=wp.quat, device="cpu"), vec3s(E), vec3s(E))
    assert course.components["b"].bound == {"position": pos}
    with pytest.raises(TypeError, match="multiple values"):
        course.bind(pos, position=pos)


def test_binding_an_unknown_name_is_a_type_error_listing_the_inputs():
    course, _ = fake_course()
    pos = vec3s(E)
    course.bind(position=pos)
    with pytest.raises(TypeError, match=r"\['position'\]"):
        course.bind(position=vec3s(E), velocity=vec3s(E))
    assert course.components["b"].bound["position"] is pos


def test_binding_a_generator_input_name_is_a_type_error_with_the_recipe():
    gen = FakeGenerator(E, input_info={"centerline.xy": None})
    course = Course(gen, [Counter("a")])
    with pytest.raises(TypeError, match=r"is an input of the generator.*inputs\['centerline.xy'\] in place"):
        course.bind(position=vec3s(E), **{"centerline.xy": gen.inputs["centerline.xy"]})


def test_binding_a_missing_required_input_is_a_type_error():
    course, _ = fake_course()
    with pytest.raises(TypeError, match="missing"):
        course.bind(orientation=wp.zeros(E, dtype=wp.quat, device="cpu"))


def test_binding_step_before_bind_is_a_runtime_error():
    course, _ = fake_course()
    with pytest.raises(RuntimeError, match=r"call bind\(\) before step\(\)"):
        course.step()


def test_binding_again_after_a_capture_warns_once():
    course, _ = fake_course()
    course.bind(position=vec3s(E))
    with wp.ScopedCapture(device="cpu"):
        course.step()
    with pytest.warns(RebindAfterCaptureWarning) as record:
        course.bind(position=vec3s(E))
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        course.bind(position=vec3s(E))


def test_binding_a_refused_bind_keeps_the_probes_so_a_later_rebind_still_warns():
    course, _ = fake_course()
    course.bind(position=vec3s(E))
    with wp.ScopedCapture(device="cpu"):
        course.step()
    with pytest.raises(ValueError):
        course.bind(position=vec3s(E + 1))
    with pytest.warns(RebindAfterCaptureWarning):
        course.bind(position=vec3s(E))


def test_course_reset_resets_the_masked_envs_only():
    course, _ = fake_course()
    course.bind(position=vec3s(E))
    course.step(), course.step()
    course.reset(wp.array([1, 0, 0, 1], dtype=wp.int32, device="cpu"))
    assert course.components["b"].result.count.numpy().tolist() == [0, 2, 2, 0]
    course.reset()
    assert not course.components["b"].result.count.numpy().any()


# --- Reading results ------------------------------------------------------------------------


@pytest.fixture
def stepped():
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, extra=[tools.Localizer()], seeds=42)
    course.bind(position=vec3s(E))
    return course, course.step()


def test_results_step_returns_the_same_instance(stepped):
    course, res = stepped
    assert course.step() is res


def test_results_entries_are_the_per_step_components(stepped):
    course, res = stepped
    assert list(res.keys()) == ["progress", "localizer"]
    assert res["progress"] is res.events and res["localizer"] is res.frame
    assert res.contacts is None and res.get("collision") is None and "collision" not in res
    assert res.valid is course.result.valid
    assert "checkpoints" not in res
    with pytest.raises(KeyError, match="progress"):
        res["checkpoints"]


def test_results_a_course_config_course_has_exactly_the_field_sources():
    course = Course(CourseConfig(mode="track", gen=track_cfg(), checkpoint_spacing=0.6, collision="segments"))
    res = course.step() if not course._needs_bind else (course.bind(position=vec3s(E)) or course.step())
    assert list(res.keys()) == ["progress", "collision"]


def test_results_are_not_a_mapping(stepped):
    _, res = stepped
    assert not isinstance(res, collections.abc.Mapping)
    assert bool(res) is True
    with pytest.raises(TypeError):
        iter(res)
    assert hasattr(res, "__iter__") and res.__iter__ is None
    assert isinstance(res, collections.abc.Container)
    assert dict(res) == dict(res.items()) and {**res}.keys() == res.keys()
    d = {}
    d.update(res)
    assert list(d) == ["progress", "localizer"]


def test_results_stay_a_dataclass(stepped):
    _, res = stepped
    assert [f.name for f in dataclasses.fields(res)] == ["events", "contacts", "frame", "valid"]
    again = StepResult(res.events, res.contacts, res.frame, res.valid)
    assert again == res and list(again.keys()) == ["progress", "localizer"]
    assert repr(res).startswith("StepResult(events=")
    assert pprint.pformat(res).startswith("StepResult(")


def test_results_replace_keeps_the_field_entries_only():
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, extra=[Counter("acme.c")])
    course.bind(position=vec3s(E))
    res = course.step()
    copy = dataclasses.replace(res, contacts=None)
    assert list(copy.keys()) == ["progress"] and "acme.c" in res


def test_results_assigning_a_field_updates_its_entry_on_that_instance_only(stepped):
    course, res = stepped
    copy = dataclasses.replace(res)
    copy.events = "x"
    assert copy["progress"] == "x" and res["progress"] is res.events
    copy.frame = None
    assert "localizer" not in copy and "localizer" in res
    assert course.step()["progress"] is course.components["progress"].result


def test_results_clone_deep_copies_every_entry(stepped):
    course, res = stepped
    copy = res.clone()
    assert list(copy.keys()) == list(res.keys())
    assert copy.events is not res.events and copy.events.laps is not res.events.laps
    assert np.array_equal(copy.frame.s.numpy(), res.frame.s.numpy())
    assert copy.valid is not res.valid and np.array_equal(copy.valid.numpy(), res.valid.numpy())


def test_results_clone_of_an_uncopyable_entry_names_the_component():
    class Odd(Counter):
        @property
        def result(self):
            return object()

    course, _ = fake_course(components=[Odd("acme.odd")])
    with pytest.raises(TypeError, match="acme.odd"):
        course._result.clone()


def test_results_a_shallow_copy_has_entries_of_its_own(stepped):
    """copy.copy shared the entries' mapping: a field assigned on the copy changed the course's result."""
    import copy as copy_module

    course, res = stepped
    cp = copy_module.copy(res)
    assert cp.events is res.events and list(cp.keys()) == list(res.keys())
    cp.events, cp.frame = "replaced", None
    assert res["progress"] is res.events is course.components["progress"].result and "localizer" in res
    assert cp["progress"] == "replaced" and "localizer" not in cp


def test_results_a_deep_copy_clones_the_arrays_and_keeps_what_memo_holds():
    """copy.deepcopy clones every entry's arrays (wp.array itself cannot be deep-copied); an
    object in ``memo`` stays shared, as Lightning's apply_to_collection passes the fields (its
    deep copy of a result with a plugin entry failed: ctypes objects cannot be pickled)."""
    import copy as copy_module

    course = Course.track(track_cfg(), checkpoint_spacing=0.6, extra=[Counter("acme.c")])
    course.bind(position=vec3s(E, x=1.0))
    res = course.step()
    deep = copy_module.deepcopy(res)
    assert deep.events is not res.events and deep.events.laps is not res.events.laps
    assert deep["acme.c"].count is not res["acme.c"].count
    assert np.array_equal(deep["acme.c"].count.numpy(), res["acme.c"].count.numpy())
    memo = {id(getattr(res, f.name)): getattr(res, f.name) for f in dataclasses.fields(res)}
    shared = copy_module.deepcopy(res, memo)  # what apply_to_collection does before mapping the fields
    assert shared.events is res.events and shared.valid is res.valid
    assert shared["acme.c"].count is not res["acme.c"].count
    shared.events = "mapped"
    assert shared["progress"] == "mapped" and res["progress"] is res.events


# --- Regeneration: one body, one graph ------------------------------------------------------


def test_regeneration_one_body_for_the_three_calls():
    course, log = fake_course()
    body = [("a", "on_generate"), ("b", "on_generate"), ("b", "reset"), ("a", "reset")]
    calls = course.generator.calls
    log.clear(), calls.clear()
    course.regenerate()  # records course.graph: the body is traversed once, then replayed
    assert calls == [("generator", "enqueue")] and log == body
    log.clear(), calls.clear()
    course.regenerate(), course.generate(), course.generate(seeds=2)
    assert calls == [] and log == []
    course.enqueue_generate()
    assert calls == [("generator", "enqueue")] and log == body
    eager = snapshot(course)
    course.regenerate()
    assert snapshot(course) == {**eager, "gen.generation": snapshot(course)["gen.generation"]}


def test_regeneration_a_components_own_error_keeps_its_type_under_a_masked_regeneration():
    """Every exception raised while the masked body recorded became a CaptureError; only what a
    capture raises (RuntimeError) is, the component's own error is raised as it is eagerly."""
    duck = _Duck("acme.duck")
    course, _ = fake_course(components=[Log("a"), duck])
    mask = wp.array(np.array([1, 0, 0, 0], np.int32), device="cpu")
    duck.fail = True
    for call in (lambda: course.enqueue_generate(mask=mask), lambda: course.regenerate(mask=mask)):
        with pytest.raises(ValueError, match="the duck's own"):
            call()

    class CaptureRefusal(_Duck):
        def on_generate(self, ctx, mask):
            if wp.get_device(ctx.device).is_capturing:  # an operation a capture cannot hold: Warp refuses it
                with wp.ScopedCapture(device=ctx.device, force_module_load=False):
                    pass

    course, _ = fake_course(components=[Log("a"), CaptureRefusal("acme.refusal")])
    with pytest.raises(CaptureError, match="acme.refusal.on_generate could not be recorded in the conditional body"):
        course.regenerate(mask=mask)
    course.enqueue_generate(mask=mask)  # eagerly it runs

    class OwnRuntimeError(_Duck):
        def on_generate(self, ctx, mask):
            if self.fail:
                raise RuntimeError("boom: the component's own")

    boom = OwnRuntimeError("acme.boom")
    course, _ = fake_course(components=[Log("a"), boom])
    boom.fail = True
    for call in (lambda: course.enqueue_generate(mask=mask), lambda: course.regenerate(mask=mask)):
        with pytest.raises(RuntimeError, match="boom: the component's own") as raised:
            call()
        assert not isinstance(raised.value, CaptureError)


def test_regeneration_all_zero_mask_is_an_exact_identity(device):
    course = Course.track(track_cfg(device), checkpoint_spacing=0.6, collision="segments", seeds=5)
    course.bind(position=vec3s(E, device, x=0.3))
    for _ in range(3):
        course.step()
    before = snapshot(course)
    zeros = wp.zeros(E, dtype=wp.int32, device=device)
    course.regenerate(mask=zeros, advance=True)
    course.enqueue_generate(mask=zeros, advance=True)
    assert snapshot(course) == before


def test_regeneration_masked_changes_only_masked_envs(device):
    course = Course.track(track_cfg(device), checkpoint_spacing=0.6, seeds=5)
    before = course.result.centerline.numpy().copy()
    mask = wp.array([0, 1, 0, 1], dtype=wp.int32, device=device)
    course.regenerate(mask=mask, advance=True)
    after = course.result.centerline.numpy()
    assert np.array_equal(after[[0, 2]], before[[0, 2]]) and not np.array_equal(after[[1, 3]], before[[1, 3]])
    assert course.result.generation.numpy().tolist()[1] == course.result.generation.numpy().tolist()[0] + 1


def test_regeneration_eager_and_replayed_agree_byte_for_byte(device):
    a = Course.track(track_cfg(device), checkpoint_spacing=0.6, collision="segments", seeds=11)
    b = Course.track(track_cfg(device), checkpoint_spacing=0.6, collision="segments", seeds=11)
    mask = wp.array([1, 0, 1, 1], dtype=wp.int32, device=device)
    for _ in range(2):
        a.regenerate(mask=mask, advance=True)
        b.enqueue_generate(mask=mask, advance=True)
        a.regenerate(advance=True)
        b.enqueue_generate(advance=True)
    assert snapshot(a) == snapshot(b)


def test_regeneration_records_each_variant_once(device):
    course, _ = fake_course(device)
    assert course.graph is None
    course.regenerate()
    graph = course.graph
    assert graph is not None
    course.generate()
    course.generate(seeds=4)
    assert course.graph is graph and len(course._graphs) == 0
    course.regenerate(advance=True)
    mask = wp.ones(E, dtype=wp.int32, device=device)
    course.regenerate(mask=mask)
    course.regenerate(mask=mask)
    course.regenerate(mask=mask, advance=True)
    assert len(course._graphs) == 3


def test_regeneration_at_most_16_variants_then_eager_with_one_warning():
    course, _ = fake_course()
    masks = [wp.ones(E, dtype=wp.int32, device="cpu") for _ in range(18)]
    for m in masks[:16]:
        course.regenerate(mask=m)
    with pytest.warns(RuntimeWarning, match="16") as record:
        course.regenerate(mask=masks[16])
        course.regenerate(mask=masks[17], advance=True)
    assert len(record) == 1 and len(course._graphs) == 16
    before = course.result.generation.numpy().copy()
    course.regenerate(mask=masks[17])
    assert (course.result.generation.numpy() == before + 1).all()


def test_regeneration_enqueue_generate_never_builds_a_graph():
    course, _ = fake_course()
    course.enqueue_generate()
    course.enqueue_generate(mask=wp.ones(E, dtype=wp.int32, device="cpu"), advance=True)
    assert course.graph is None and len(course._graphs) == 0


def test_regeneration_masked_inside_your_graph_is_a_per_env_auto_reset(device):
    course, _ = fake_course(device)
    pos = vec3s(E, device)
    course.bind(position=pos)
    done = wp.zeros(E, dtype=wp.int32, device=device)
    with wp.ScopedCapture(device=device) as capture:
        course.step()
        course.regenerate(mask=done, advance=True)
    gen = course.result.generation
    start = gen.numpy().copy()
    wp.capture_launch(capture.graph)
    wp.capture_launch(capture.graph)
    assert np.array_equal(gen.numpy(), start)
    assert course.components["b"].result.count.numpy().tolist() == [2] * E
    done.assign(np.array([0, 1, 0, 0], np.int32))
    wp.capture_launch(capture.graph)
    assert (gen.numpy() - start).tolist() == [0, 1, 0, 0]
    assert course.components["b"].result.count.numpy().tolist() == [3, 0, 3, 3]


def test_regeneration_unconditional_records_the_body_without_the_node(device):
    course, _ = fake_course(device)
    done = wp.zeros(E, dtype=wp.int32, device=device)
    before = snapshot(course)
    with exec_modes.unconditional(), wp.ScopedCapture(device=device) as capture:
        course.regenerate(mask=done, advance=True)
    wp.capture_launch(capture.graph)
    assert snapshot(course) == before
    done.fill_(1)
    wp.capture_launch(capture.graph)
    assert (course.result.generation.numpy() == course.result.generation.numpy()[0]).all()
    assert snapshot(course) != before


def test_regeneration_a_host_step_generator_runs_eagerly_and_refuses_a_capture():
    gen = FakeGenerator(E, capturable=False)
    course = Course(gen, [Log("a")])
    course.regenerate()
    course.regenerate(mask=wp.ones(E, dtype=wp.int32, device="cpu"), advance=True)
    assert course.graph is None and len(course._graphs) == 0
    with pytest.raises(NotCapturableError), wp.ScopedCapture(device="cpu"):
        course.regenerate()


def test_regeneration_a_bad_mask_is_refused():
    course, _ = fake_course()
    with pytest.raises(TypeError):
        course.regenerate(mask=np.ones(E, np.int32))
    with pytest.raises(ValueError):
        course.regenerate(mask=wp.ones(E, dtype=wp.float32, device="cpu"))
    with pytest.raises(ValueError):
        course.regenerate(mask=wp.ones(E + 1, dtype=wp.int32, device="cpu"))


# --- Preparing ------------------------------------------------------------------------------


def test_preparing_prepare_false_skips_the_warm_up_and_the_first_call_prepares():
    course, log = fake_course(prepare=False)
    assert not course.prepared and ("a", "on_generate") not in log
    course.regenerate()
    assert course.prepared and course.result.valid.numpy().all()


def test_preparing_an_unprepared_course_under_a_capture_raises_capture_error():
    course, _ = fake_course(prepare=False)
    for call in (course.regenerate, course.enqueue_generate, course.prepare):
        with pytest.raises(CaptureError, match=r"prepare.*test_course_conformance.py:\d+"), \
                wp.ScopedCapture(device="cpu"):
            call()
    assert not course.prepared


def test_preparing_prepare_is_an_identity_even_after_steps():
    course, _ = fake_course(prepare=False)
    course.enqueue_generate()
    course.bind(position=vec3s(E))
    course.step()
    before = snapshot(course)
    course.prepare()
    assert course.prepared and snapshot(course) == before
    course.prepare()  # a no-op now
    assert snapshot(course) == before


# --- Ownership and lifetime -----------------------------------------------------------------


def test_ownership_a_newer_course_takes_the_generator_over():
    old, _ = fake_course()
    old.bind(position=vec3s(E))
    new = Course(old.generator, [Log("a")])
    for call in (old.step, old.reset, old.regenerate, old.enqueue_generate, old.generate):
        with pytest.raises(RuntimeError, match="driven by another Course"):
            call()
    new.regenerate()


def test_ownership_a_construction_that_raises_takes_nothing_over():
    gen = TrackGenerator(track_cfg(), seeds=3)
    old = Course(gen, [tools.Checkpoints(0.6)])
    gen.layout = dataclasses.replace(gen.layout, max_loop_length=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning):
            Course(gen, [tools.Checkpoints(0.6)])
        with pytest.raises(ValueError):
            Course(gen, [Log("a"), Log("a")])
    old.regenerate()


class _RaisesOnGenerate(tools.Component):
    def on_generate(self, ctx, mask):
        raise RuntimeError("boom")


def test_ownership_a_construction_that_raises_in_its_warm_up_leaves_the_driving_course_as_it_was():
    """The warm-up regenerates the shared generator; a refused construction puts back its result
    and live parameters, so the course that drives it still reads its own courses."""
    spec = presets.track(num_envs=E, device="cpu").with_randomize({"band.width": (0.6, 1.0)})
    gen = build(spec, seeds=5)
    old = Course(gen, [tools.Checkpoints(0.6), tools.Progress()])
    gen.params["layout.size"] = 12.0  # the next regeneration draws other courses
    gen.params.set_range("band.width", 0.7, 0.9)  # ... and other widths
    before = snapshot(old)
    width = gen.params["band.width"].numpy().copy()
    with pytest.raises(RuntimeError, match="boom"):
        Course(gen, [tools.Checkpoints(0.6), _RaisesOnGenerate("acme.raises")])
    assert snapshot(old) == before
    assert np.array_equal(gen.params["band.width"].numpy(), width)
    old.regenerate()  # still the driver: it applies the new values itself
    assert snapshot(old)["gen.centerline"] != before["gen.centerline"]


def test_ownership_a_course_taken_over_by_a_course_now_gone_says_to_build_a_new_one():
    old, _ = fake_course()
    new = Course(old.generator, [Log("a")])
    with pytest.raises(RuntimeError, match="use that one"):
        old.regenerate()
    del new
    gc.collect()
    with pytest.raises(RuntimeError, match="that course is gone now, so build a new Course"):
        old.regenerate()
    newest = Course(old.generator, [Log("a")])
    with pytest.raises(RuntimeError, match="use that one"):  # a live course drives it again
        old.regenerate()
    newest.regenerate()


def test_a_courses_generator_and_components_are_read_only():
    course, _ = fake_course()
    for name in ("generator", "components"):
        with pytest.raises(AttributeError):
            setattr(course, name, None)
    with pytest.raises(TypeError):
        course.components["a"] = Log("x")
    assert list(course.components) == ["a", "b"]


def test_ownership_rebuilding_works():
    gen = FakeGenerator(E)
    course = Course(gen, [Log("a")])
    course = Course(gen, [Log("a")])
    course.regenerate()


def test_lifetime_a_graph_keeps_the_course_and_its_arrays_alive():
    course, _ = fake_course()
    pos = vec3s(E)
    course.bind(position=pos)
    mask = wp.zeros(E, dtype=wp.int32, device="cpu")
    with wp.ScopedCapture(device="cpu") as capture:
        course.step()
        course.regenerate(mask=mask, advance=True)
    refs = [weakref.ref(course), weakref.ref(pos), weakref.ref(mask)]
    del course, pos, mask
    gc.collect()
    assert all(r() is not None for r in refs)
    wp.capture_launch(capture.graph)
    del capture
    gc.collect()
    assert refs[0]() is None


def test_lifetime_the_course_owns_its_own_graphs():
    course, _ = fake_course()
    course.regenerate()
    ref = weakref.ref(course)
    del course
    gc.collect()
    assert ref() is None


@pytest.mark.cuda
def test_streams_a_course_with_a_default_stream_refuses_another_recording_stream():
    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    stream = wp.Stream("cuda:0")
    gen = FakeGenerator(E, "cuda:0")
    course = Course(gen, [Log("a")], stream=stream)
    with pytest.raises(CaptureError, match="stream="), wp.ScopedCapture(device="cuda:0"):
        course.regenerate()
    with wp.ScopedCapture(device="cuda:0") as capture:
        course.regenerate(stream=wp.get_device("cuda:0").stream)
    wp.capture_launch(capture.graph)


def test_registered_refuses_the_cpu():
    with pytest.raises(ValueError, match="ScopedCapture"):
        with exec_modes.registered("cpu"):
            pass


@pytest.mark.cuda
def test_registered_records_a_course_into_a_torch_graph():
    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    torch = pytest.importorskip("torch")
    course, _ = fake_course("cuda:0")
    course.bind(position=vec3s(E, "cuda:0"))
    done = wp.zeros(E, dtype=wp.int32, device="cuda:0")
    start = course.result.generation.numpy().copy()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        with exec_modes.registered("cuda:0", conditional=True) as reg:
            course.step()
            course.regenerate(mask=done, advance=True)
    graph.replay()
    torch.cuda.synchronize()
    assert np.array_equal(course.result.generation.numpy(), start)
    done.fill_(1)
    graph.replay()
    torch.cuda.synchronize()
    assert (course.result.generation.numpy() == start + 1).all() and reg.graph is not None


def test_regenerate_refuses_an_advance_that_is_not_a_bool():
    """A string or number for ``advance`` is a TypeError, before anything runs."""
    from trackgen_env.pipeline import presets

    course = Course.track(presets.track(num_envs=2, device="cpu"), checkpoint_spacing=0.6, seeds=1)
    before = course.result.centerline.numpy().copy()
    with pytest.raises(TypeError, match="advance must be a bool"):
        course.regenerate(advance="yes")
    assert np.array_equal(course.result.centerline.numpy(), before)
