"""Audit of trackgen_env.course against "Composing a course": the rules no other test pinned.

Each test names the rule and quotes the spec phrase it pins (``track_gen`` there is
``trackgen_env`` here). The rest of the spec is walked by test_course_conformance.py.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings

import numpy as np
import pytest
import warp as wp
from course_fakes import Counter, FakeGenerator, Log, vec3s

from trackgen_env import GateGenConfig, SeedState, TrackGenConfig, tools
from trackgen_env.core.capture import (
    CaptureError,
    NotCapturableError,
    RebindAfterCaptureWarning,
)
from trackgen_env.course import Course, CourseConfig, StepResult
from trackgen_env.course import presets as course_presets
from trackgen_env.pipeline import build, presets
from trackgen_env.tools import InputSpec

E = 4


def track_cfg(**kw):
    return TrackGenConfig(num_envs=E, device="cpu", **kw)


def gate_cfg(**kw):
    return GateGenConfig(num_envs=E, device="cpu", **{"gate_width": 0.1, **kw})


@pytest.fixture
def no_build(monkeypatch):
    """Fail the test if a preset builds a generator (its checks must raise first)."""

    def refuse(*a, **k):
        raise AssertionError("a generator was built before the checks raised")

    monkeypatch.setattr(course_presets, "build", refuse)


def _params(fn) -> dict:
    return {name: (p.kind, p.default) for name, p in inspect.signature(fn).parameters.items() if name != "self"}


# --- Building a course ----------------------------------------------------------------------


def test_building_signatures_of_the_course_and_its_presets():
    """"Course(generator, components=(), *, stream=None, prepare=True)"; "Course.track(source, *,
    checkpoint_spacing, collision=None, max_checkpoints=None, extra=(), seeds=None, stream=None,
    prepare=True)"; "Course.gates(source, *, collision=None, samples_per_gate=8,
    localize_window=None, extra=(), seeds=None, stream=None, prepare=True)"."""
    P, K = inspect.Parameter, inspect.Parameter.KEYWORD_ONLY
    init = _params(Course.__init__)
    assert list(init)[:4] == ["generator", "components", "stream", "prepare"]
    assert init["components"] == (P.POSITIONAL_OR_KEYWORD, ()) and init["stream"] == (K, None)
    assert init["prepare"] == (K, True)
    track = _params(Course.track)
    assert list(track) == ["source", "checkpoint_spacing", "collision", "max_checkpoints", "extra", "seeds", "stream",
                           "prepare", "heightfield", "size_hi", "registry"]  # the spec's, then ours
    assert track["checkpoint_spacing"] == (K, P.empty)
    assert [track[n][1] for n in list(track)[2:]] == [None, None, (), None, None, True, None, None, None]
    gates = _params(Course.gates)
    assert list(gates) == ["source", "collision", "samples_per_gate", "localize_window", "extra", "seeds", "stream",
                           "prepare", "registry"]
    assert all(kind == K for kind, _ in list(gates.values())[1:])
    assert [gates[n][1] for n in list(gates)[1:]] == [None, 8, None, (), None, None, True, None]


def test_building_stream_is_the_default_stream_else_the_generators():
    """"stream= is the course's default stream (the generator's own default stream when not given)"."""
    class Sentinel(wp.Stream):  # stands for a stream on the CPU, which has none
        def __init__(self):
            pass

        def __del__(self):
            pass

    theirs, mine = Sentinel(), Sentinel()
    gen = FakeGenerator(E)
    gen.stream = theirs
    assert Course(gen, [Log("a")], prepare=False).stream is theirs
    assert Course(gen, [Log("a")], stream=mine, prepare=False).stream is mine


def test_building_a_program_built_with_prepare_false_is_prepared_before_any_component_attaches():
    """"a Program (pipeline.build(...), including one built with prepare=False, which the course
    prepares first)": an "auto" capacity that reads the construction batch sees a real batch."""
    cfg = track_cfg(elevation=1.0)  # declares no loop-length bound: the capacity reads the batch
    unprepared = build(cfg.to_spec(), seeds=1, prepare=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a capacity of 3 would clip every env and warn
        course = Course(unprepared, [tools.Checkpoints(0.6)])
    prepared = Course(build(cfg.to_spec(), seeds=1), [tools.Checkpoints(0.6)])
    assert course.components["checkpoints"].capacity == prepared.components["checkpoints"].capacity > 3


def test_building_every_way_runs_a_subclass_init_for_gates_too():
    """"Every way runs Course.__init__ ... so a subclass's __init__ runs for MyCourse.track(...) too"."""
    class MyCourse(Course):
        def __init__(self, generator, components=(), *, stream=None, prepare=True):
            self.mine = True
            super().__init__(generator, components, stream=stream, prepare=prepare)

    course = MyCourse.gates(gate_cfg(), collision=0.02)
    assert isinstance(course, MyCourse) and course.mine


# --- The presets ----------------------------------------------------------------------------


def test_presets_track_passes_its_arguments_to_its_components():
    """"checkpoints: tools.Checkpoints(checkpoint_spacing, max_checkpoints=...)"; "collision ...
    tools.BandCollision(collision) for "segments" / "sdf""."""
    course = Course.track(track_cfg(), checkpoint_spacing=0.75, collision="sdf")
    assert course.components["checkpoints"].spacing == 0.75
    assert course.components["collision"].backend == "sdf"
    assert Course.track(track_cfg(), checkpoint_spacing=0.6, collision="segments").collision.backend == "segments"


def test_presets_gates_passes_localize_window_to_the_localizer():
    """"localizer: tools.Localizer(warm_window=localize_window, source="centerline")"."""
    course = Course.gates(gate_cfg(), localize_window=3)
    assert course.components["localizer"].warm_window == 3
    assert course.components["localizer"].source == "centerline"


def test_presets_max_checkpoints_auto_is_none_and_another_string_is_refused(no_build):
    """"max_checkpoints an int >= 3 ("auto" is None)"."""
    with pytest.raises(TypeError, match="max_checkpoints"):
        Course.track(track_cfg(), checkpoint_spacing=0.6, max_checkpoints="many")


def test_presets_max_checkpoints_auto_builds_an_auto_capacity():
    """"max_checkpoints an int >= 3 ("auto" is None)"."""
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, max_checkpoints="auto")
    assert course.components["checkpoints"].max_checkpoints is None


@pytest.mark.parametrize("source, other", [
    (lambda: presets.gates(num_envs=E, device="cpu", gate_width=0.1), "Course.gates"),
])
def test_presets_a_spec_of_the_other_family_names_the_other_preset(no_build, source, other):
    """"a generator of the other family is a TypeError naming the other preset" (a spec too)."""
    with pytest.raises(TypeError, match=other):
        Course.track(source(), checkpoint_spacing=0.6)


def test_presets_a_track_spec_to_gates_names_course_track(no_build):
    """"a generator of the other family is a TypeError naming the other preset"."""
    with pytest.raises(TypeError, match="Course.track"):
        Course.gates(presets.track(num_envs=E, device="cpu"))


def test_presets_gates_collision_component_under_another_name_is_refused(no_build):
    """"A component in this slot must be named "collision" ... (ValueError otherwise)"."""
    with pytest.raises(ValueError, match="extra"):
        Course.gates(gate_cfg(), collision=tools.DiscCollision(0.02, name="posts"))


def test_presets_a_collision_under_another_name_goes_in_extra_and_fills_no_field():
    """"A collision under another name goes in extra": an entry of its own, not contacts."""
    course = Course.track(track_cfg(), checkpoint_spacing=0.6, extra=[tools.BandCollision("segments", name="walls")])
    course.bind(position=vec3s(E))
    res = course.step()
    assert "walls" in res and res.contacts is None and course.collision is None


def test_presets_use_a_program_as_is():
    """"A built TrackGenerator / GateGenerator / Program is used as is (pipeline.build(spec, ...))"."""
    program = build(presets.track(num_envs=E, device="cpu"), seeds=1)
    assert Course.track(program, checkpoint_spacing=0.6).generator is program


def test_presets_seeds_take_a_seed_state():
    """"seeds= (anything TrackGenerator(seeds=) takes: ... a PerEnvSeededRNG, a SeedState)"."""
    state = SeedState(E, "cpu", 5)
    assert Course.track(track_cfg(), checkpoint_spacing=0.6, seeds=state).seeds is state


def test_checkpoint_capacity_auto_is_at_least_three():
    """"max(3, ceil(max_loop_length / checkpoint_spacing))"."""
    gen = build(presets.track(num_envs=E, device="cpu"), seeds=3)
    gen.layout = dataclasses.replace(gen.layout, max_loop_length=0.5)  # ceil(0.5 / 0.6) = 1
    with pytest.warns(UserWarning, match="pass a larger max_checkpoints"):
        course = Course(gen, [tools.Checkpoints(0.6)])
    assert course.components["checkpoints"].capacity == 3


def test_checkpoint_capacity_of_an_elevated_config_is_the_readback_of_the_construction_batch():
    """"else (an elevated config, which declares no bound) the readback of the construction batch"."""
    course = Course.track(track_cfg(elevation=1.0), checkpoint_spacing=0.6)
    assert course.generator.layout.max_loop_length is None
    lengths = course.result.loop_length.numpy()[course.result.valid.numpy() != 0]
    assert course.components["checkpoints"].capacity == max(3, math.ceil(float(lengths.max()) / 0.6))


@pytest.mark.filterwarnings("ignore:only .* hold a valid track course")  # sizes past the capacity
def test_resolution_checks_warn_for_a_construction_size_too_large_for_the_sdf_grid():
    """"read the largest course size the generator can draw (a size randomizer's construction hi,
    else the construction size) and warn at construction"."""
    spec = presets.track(num_envs=E, device="cpu").with_params({"layout.size": 40.0})
    with pytest.warns(UserWarning, match="largest course size 40"):
        Course.track(spec, checkpoint_spacing=0.6, collision="sdf")


# --- Components and their order -------------------------------------------------------------


def _component_lacking(method: str):
    body = {"name": "acme.partial", "after": (), "source": None, "inputs": (), "context": None}
    body.update({m: (lambda self, *a, **k: None) for m in ("attach", "bind", "on_generate", "step", "reset")
                 if m != method})
    return type("Partial", (), body)()


@pytest.mark.parametrize("method", ["attach", "bind", "on_generate", "step", "reset"])
def test_order_a_component_lacking_a_method_is_a_type_error_naming_the_base(method):
    """"a component lacking any of attach, bind, on_generate, step, reset (TypeError: subclass
    tools.Component for the defaults)"."""
    first = Log("a")
    with pytest.raises(TypeError, match=rf"{method}.*Component"):
        Course(FakeGenerator(E), [first, _component_lacking(method)])
    assert first.context is None and first.first is None


@pytest.mark.parametrize("make, message", [
    (lambda: [Log("a"), Log("a")], "names are unique within a course"),
    (lambda: [Log("a"), _attached()], "build a new instance"),
])
def test_order_refusal_messages_say_what_to_do(make, message):
    """"two components with one name (ValueError: names are unique within a course)"; "a component
    already attached to another course or context (ValueError: build a new instance)"."""
    with pytest.raises(ValueError, match=message):
        Course(FakeGenerator(E), make())


def _attached():
    c = Log("acme.attached")
    Course(FakeGenerator(E), [c])
    return c


def test_order_optional_reads_need_not_exist():
    """"ComponentContext.add (its declared reads, requires / optional, ...)": an optional name may be absent."""
    class Maybe(Log):
        optional = ("heightfield", "no_such_field")

    assert list(Course(FakeGenerator(E), [Maybe("acme.maybe")]).components) == ["acme.maybe"]


def test_order_requires_reads_the_source_components_result():
    """"each component goes through ComponentContext.add (its declared reads, requires ...)": a
    required field is looked up on the result of the component named by source."""
    class Reads(Log):
        requires = ("count",)

    course = Course(FakeGenerator(E), [Counter("a"), Reads("acme.reads", source="a")])
    assert list(course.components) == ["a", "acme.reads"]
    first = Counter("a")
    with pytest.raises(ValueError, match="count"):
        Course(FakeGenerator(E), [first, Reads("acme.reads")])  # the generator result has no count
    assert first.context is None


def test_order_conflicting_slots_are_refused_at_construction():
    """"Two declarations of one name with different (dtype, slots) are refused at construction"."""
    class Two(Log):
        inputs = (InputSpec("position", wp.vec3, slots=2),)

    first = Counter("a")
    with pytest.raises(ValueError, match="slots"):
        Course(FakeGenerator(E), [first, Two("b")])
    assert first.context is None


def test_order_course_attributes_back_the_built_in_names_of_your_components():
    """"The built-in names back the course's attributes ... course.heightfield ... course.course_line
    the utility of centerline; each is None when the component is absent"."""
    class Baked(Log):
        @property
        def utility(self):
            return ("utility of", self.name)

    course = Course(FakeGenerator(E), [Baked("heightfield"), Baked("centerline")])
    assert course.heightfield == ("utility of", "heightfield")
    assert course.course_line == ("utility of", "centerline")
    assert course.checkpoints is None and course.checkpoint_sampler is None


# --- Binding inputs -------------------------------------------------------------------------


class _Box(Counter):
    inputs = (InputSpec("position", wp.vec3), InputSpec("box_position", wp.vec3, required=False, default="position"))


def test_binding_again_replaces_every_binding():
    """"Calling bind again replaces every binding": an input given before and not now is routed anew."""
    course = Course(FakeGenerator(E), [_Box("acme.box")])
    box = vec3s(E, x=1.0)
    course.bind(position=vec3s(E), box_position=box)
    pos = vec3s(E, x=2.0)
    course.bind(position=pos)
    assert course.components["acme.box"].bound == {"position": pos, "box_position": pos}


class _Refuses(Counter):
    def on_bind(self, arrays):
        super().on_bind(arrays)
        raise RuntimeError("refused")


def test_binding_a_first_bind_that_raises_leaves_every_component_unbound():
    """"if a component's on_bind raises part-way, the components already rebound by the call, and
    the one that raised, get their previous arrays back" (none, on a first bind)."""
    first, refusing = Counter("a"), _Refuses("z", after=("a",))
    course = Course(FakeGenerator(E), [first, refusing])
    with pytest.raises(RuntimeError, match="refused"):
        course.bind(position=vec3s(E))
    assert first.bound == {} and refusing.bound == {}
    with pytest.raises(RuntimeError, match=r"call bind\(\) before step\(\)"):
        course.step()


def test_binding_a_rebind_after_the_courses_own_graphs_does_not_warn():
    """"The course's own graphs never read a bound input ..., so a rebind never replays a stale
    course graph"."""
    course = Course(FakeGenerator(E), [Counter("a")])
    course.bind(position=vec3s(E))
    course.regenerate()
    course.regenerate(mask=wp.zeros(E, dtype=wp.int32, device="cpu"), advance=True)
    course.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RebindAfterCaptureWarning)
        course.bind(position=vec3s(E, x=1.0))


def test_binding_step_needs_no_bind_when_no_input_is_required():
    """"step() raises RuntimeError("call bind() before step()") while a component with a required
    input is unbound": only then."""
    class Optional(Log):
        inputs = (InputSpec("position", wp.vec3, required=False),)

        def step(self, ctx):
            self.log.append((self.name, "step"))

    log = []
    course = Course(FakeGenerator(E), [Optional("acme.opt", log)])
    course.step()
    assert log[-1] == ("acme.opt", "step")


# --- Reading results ------------------------------------------------------------------------


def test_results_mapping_access_is_read_only():
    """"read-only mapping access to the result of every per-step component, by name"."""
    course = Course(FakeGenerator(E), [Counter("a")])
    course.bind(position=vec3s(E))
    res = course.step()
    with pytest.raises(TypeError):
        res["a"] = None
    with pytest.raises(TypeError):
        del res["a"]
    assert res["a"] is course.components["a"].result


def test_results_bool_is_true_without_entries():
    """"bool(res) is True" (a dataclass, not a sized container)."""
    course = Course(FakeGenerator(E), [Log("a")])
    res = course.step()
    assert list(res.keys()) == [] and bool(res) is True and bool(StepResult()) is True


def test_results_a_course_config_gates_course_has_exactly_the_field_sources():
    """"On a CourseConfig course the entries are exactly the sources of these fields"."""
    course = Course(CourseConfig(mode="gates", gen=gate_cfg(), post_radius=0.02))
    course.bind(position=vec3s(E))
    res = course.step()
    assert list(res.keys()) == ["progress", "collision", "localizer"]
    assert (res.events, res.contacts, res.frame) == (res["progress"], res["collision"], res["localizer"])


class _ArrayResult(Counter):
    @property
    def result(self):
        return self.first


class _Cloneable:
    def __init__(self, generation):
        self.generation = generation

    def clone(self):
        return _Cloneable(self.generation + 1)


class _CloneableResult(Counter):
    def attach(self, ctx):
        super().attach(ctx)
        self.made = _Cloneable(0)

    @property
    def result(self):
        return self.made


def test_results_clone_copies_an_array_entry_and_calls_an_entrys_clone():
    """"res.clone() deep-copies every entry (a wp.array, an object with clone(), ...)"."""
    course = Course(FakeGenerator(E), [_ArrayResult("acme.arr"), _CloneableResult("acme.obj")])
    course.bind(position=vec3s(E))
    res = course.step()
    copy = res.clone()
    assert copy["acme.arr"] is not res["acme.arr"]
    assert np.array_equal(copy["acme.arr"].numpy(), res["acme.arr"].numpy())
    assert copy["acme.obj"].generation == 1


# --- Regeneration: one body, one graph ------------------------------------------------------


class _ArgsGenerator(FakeGenerator):
    def enqueue(self, ctx=None, *, advance=False, mask=None):
        self.calls.append(("enqueue", ctx, advance, mask))
        super().enqueue(ctx, advance=advance, mask=mask)


class _ArgsLog(Log):
    def on_generate(self, ctx, mask):
        self.log.append((self.name, "on_generate", ctx, mask))

    def reset(self, ctx, mask):
        self.log.append((self.name, "reset", ctx, mask))


@pytest.mark.parametrize("call", ["enqueue_generate", "regenerate"])
def test_regeneration_body_passes_ctx_advance_and_mask(call):
    """"generator.enqueue(ctx, advance=a, mask=m) -> on_generate(ctx, m) for each component (sorted)
    -> reset(ctx, m) for each component (reversed)"; unmasked: on_generate(ctx, None)."""
    log = []
    gen = _ArgsGenerator(E)
    course = Course(gen, [_ArgsLog("a", log), _ArgsLog("b", log, after=("a",))])
    ctx = course.components["a"].context
    mask = wp.ones(E, dtype=wp.int32, device="cpu")
    for kw, m, advance in (({}, None, False), ({"advance": True}, None, True), ({"mask": mask, "advance": True}, mask,
                                                                                 True)):
        log.clear(), gen.calls.clear()
        getattr(course, call)(**kw)
        enqueues = [c for c in gen.calls if c[0] == "enqueue"]
        assert len(enqueues) == 1 and enqueues[0][1] is ctx and enqueues[0][2] is advance and enqueues[0][3] is m
        assert [(n, p) for n, p, *_ in log] == [("a", "on_generate"), ("b", "on_generate"), ("b", "reset"),
                                                 ("a", "reset")]
        assert all(c is ctx and got is m for _, _, c, got in log)


@pytest.mark.parametrize("call", [
    lambda c: c.regenerate(),
    lambda c: c.enqueue_generate(),
    lambda c: c.enqueue_generate(mask=wp.ones(E, dtype=wp.int32, device="cpu"), advance=True),
    lambda c: c.generate(),
])
def test_regeneration_a_host_step_generator_refuses_every_call_under_a_capture(call):
    """"A generator with a step that runs on the host ... raises NotCapturableError under a capture"."""
    course = Course(FakeGenerator(E, capturable=False), [Log("a")])
    with pytest.raises(NotCapturableError), wp.ScopedCapture(device="cpu"):
        call(course)


def test_regeneration_the_generators_own_generate_does_not_refresh_the_components():
    """"Calling course.generator.generate() yourself regenerates the source without refreshing the
    components: regenerate through the course"."""
    log = []
    course = Course(FakeGenerator(E), [Log("a", log)])
    stale = course.components["a"].first.numpy().copy()
    log.clear()
    course.generator.generate(seeds=99)
    assert log == [] and np.array_equal(course.components["a"].first.numpy(), stale)
    assert not np.array_equal(course.result.value.numpy()[:, 0], stale)
    course.regenerate()
    assert np.array_equal(course.components["a"].first.numpy(), course.result.value.numpy()[:, 0])


# --- Preparing ------------------------------------------------------------------------------


def test_preparing_construction_runs_the_body_once_as_a_warm_up():
    """"Construction (prepare=True, the default) runs the regeneration body once as a warm-up"."""
    log = []
    gen = FakeGenerator(E)
    course = Course(gen, [Log("a", log), Log("b", log, after=("a",))])
    assert course.prepared and gen.result.valid.numpy().all()
    assert log[:6] == [("a", "attach"), ("b", "attach"), ("a", "on_generate"), ("b", "on_generate"),
                       ("b", "reset"), ("a", "reset")]
    first = course.components["a"].first.numpy()
    assert np.array_equal(first, gen.result.value.numpy()[:, 0])


@pytest.mark.parametrize("call", ["regenerate", "enqueue_generate"])
def test_preparing_capture_error_says_built_with_prepare_false(call):
    """Troubleshooting: "CaptureError "built with prepare=False": call course.prepare() before recording"."""
    course = Course(FakeGenerator(E), [Log("a")], prepare=False)
    with pytest.raises(CaptureError, match=r"built with prepare=False.*course\.prepare\(\)"), \
            wp.ScopedCapture(device="cpu"):
        getattr(course, call)()
