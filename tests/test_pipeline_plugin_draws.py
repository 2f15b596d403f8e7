"""A plugin stage that draws its own random numbers and adds its own field: its streams
(``Stage.random_stream``), its place in the spec (``with_stage(before=)``) and the field's
public access (``Program.fields``), with the rules docs/pipelines.md states for them."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from trackgen_env import pipeline
from trackgen_env.core import seeding
from trackgen_env.pipeline import build, presets

DEV = "cpu"
E = 6


@wp.kernel
def _theme(pending: wp.array(dtype=wp.int32), seeds: wp.array(dtype=wp.int32), counters: wp.array(dtype=wp.int32),
           attempt: wp.array(dtype=wp.int32), stream: int, least: float, ok: wp.array(dtype=wp.int32),
           theme: wp.array(dtype=float)):
    e = wp.tid()
    if pending[e] == 0:
        return
    value = seeding.uniform(seeding.random_key(seeds[e], counters[e], stream + attempt[e]), 0)
    theme[e] = value
    if value < least:  # a draw the stage rejects: the env draws again, from its next attempt's stream
        ok[e] = 0


class Theme(pipeline.Stage):
    """A per-env number in [0, 1) from the stage's own streams, written to its own field (named as the stage)."""

    name, family = "test.theme", "track"
    writes = ("test.theme",)
    draws = True
    least = 0.0

    def allocate(self, ctx):
        ctx.field(self.name, ctx.num_envs, float)

    def enqueue(self, ctx, pending):
        wp.launch(_theme, ctx.num_envs, inputs=[pending, ctx.seeds.seeds, ctx.seeds.counters, ctx.attempt,
                                                self.random_stream(), self.least, ctx.ok],
                  outputs=[ctx.fields[self.name]], device=ctx.device)


class PickyTheme(Theme):
    """The same draws, rejecting those under 0.6 (most first draws: retries)."""

    name = "test.picky_theme"
    writes = ("test.picky_theme",)
    least = 0.6


def _registry(*stages) -> pipeline.Registry:
    reg = pipeline.Registry()
    for stage in stages or (Theme, PickyTheme):
        reg.register(stage)
    return reg


def _spec(num_envs=E, stage="test.theme", reg=None):
    return presets.track(num_envs=num_envs, device=DEV).with_stage(stage, before="band", registry=reg or _registry())


def test_with_stage_before_inserts_a_stage_first_or_before_any_other():
    reg = _registry()
    spec = presets.track(device=DEV)
    assert spec.with_stage("test.theme", before="band", registry=reg).stages[:2] == ("test.theme", "band")
    assert spec.with_stage("test.theme", before="start", registry=reg).stages[-2:] == ("test.theme", "start")
    assert spec.with_stage("test.theme", after="band", registry=reg).stages[:3] == ("band", "test.theme", "layout")
    with pytest.raises(TypeError, match="after= or before=, not both"):
        spec.with_stage("test.theme", after="band", before="layout", registry=reg)
    with pytest.raises(ValueError, match="before='bend' is not a stage of the spec"):
        spec.with_stage("test.theme", before="bend", registry=reg)
    for what in ("after", "before"):
        for bad in (3, True, ["band"]):
            with pytest.raises(TypeError, match=f"{what}= takes a stage's name \\(a str\\) or None, got"):
                spec.with_stage("test.theme", registry=reg, **{what: bad})
    with pytest.raises(TypeError, match="with_stage takes a stage's name \\(a str\\), got int 3"):
        spec.with_stage(3, registry=reg)
    for bad in ({}, pipeline.Registry):
        with pytest.raises(TypeError, match="registry must be a pipeline.Registry or None, got"):
            spec.with_stage("test.theme", registry=bad)


def test_a_plugin_field_is_public_read_only_and_holds_the_accepted_draw():
    reg = _registry()
    program = build(_spec(stage="test.picky_theme", reg=reg), registry=reg, seeds=11)
    assert list(program.fields) == ["test.picky_theme"]
    with pytest.raises(TypeError):
        program.fields["test.picky_theme"] = None
    theme = program.fields["test.picky_theme"].numpy()
    valid = program.result.valid.numpy() != 0
    assert valid.all() and (theme >= 0.6).all() and (theme < 1.0).all()
    # most envs' first draw is rejected (60 % of them, on average): the accepted one is another attempt's
    first = build(_spec(stage="test.theme", reg=reg), registry=reg, seeds=11).fields["test.theme"].numpy()
    assert not np.array_equal(theme, first)
    assert build(presets.track(num_envs=E, device=DEV), seeds=11).fields == {}


def test_a_plugin_stage_draws_per_env_from_seed_and_counter_alone():
    reg = _registry()
    seeds = np.arange(100, 100 + 9, dtype=np.int32)
    few = build(_spec(4, reg=reg), registry=reg, seeds=wp.array(seeds[:4], device=DEV))
    many = build(_spec(9, reg=reg), registry=reg, seeds=wp.array(seeds, device=DEV))
    assert np.array_equal(few.fields["test.theme"].numpy(), many.fields["test.theme"].numpy()[:4])
    # a masked regeneration with advance: the masked envs draw anew, the others keep their rows
    before = many.fields["test.theme"].numpy().copy()
    mask = np.array([1, 0, 0, 1, 0, 0, 0, 0, 1], dtype=np.int32)
    many.enqueue(advance=True, mask=wp.array(mask, device=DEV))
    after = many.fields["test.theme"].numpy()
    assert np.array_equal(after[mask == 0], before[mask == 0])
    assert not np.any(after[mask == 1] == before[mask == 1])


def test_a_plugin_stage_that_draws_changes_no_other_stages_draws():
    reg = _registry()
    plain = build(presets.track(num_envs=E, device=DEV), seeds=3).result
    themed = build(_spec(reg=reg), registry=reg, seeds=3).result
    for name in ("centerline", "half_width", "num_points", "valid"):
        assert np.array_equal(getattr(plain, name).numpy(), getattr(themed, name).numpy()), name


def test_plugin_stage_streams_lie_apart_from_every_other_consumer():
    stream = Theme.random_stream()
    assert stream == seeding.plugin_stage_stream("test.theme") != PickyTheme.random_stream()
    assert int(seeding.Stream.PLUGIN_STAGES) <= stream and stream + seeding.ATTEMPT_STREAMS <= 1 << 30
    others = [int(s) for s in seeding.Stream if s is not seeding.Stream.PLUGIN_STAGES]
    layout = int(seeding.Stream.LAYOUT) * seeding.ATTEMPT_STREAMS
    randomize = (int(seeding.Stream.RANDOMIZE), 2 * int(seeding.Stream.RANDOMIZE))
    for s in range(stream, stream + seeding.ATTEMPT_STREAMS):
        assert s not in others and not layout <= s < layout + seeding.ATTEMPT_STREAMS
        assert not randomize[0] <= s < randomize[1]


def test_build_refuses_two_drawing_plugin_stages_that_share_their_streams():
    # "acme.s1509" and "acme.s2804" hash to the same slot (found by search)
    a, b = (type(f"S{n}", (Theme,), {"name": f"acme.s{n}"}) for n in (1509, 2804))
    assert a.random_stream() == b.random_stream()
    reg = _registry(a, b)
    spec = presets.track(num_envs=2, device=DEV).with_stage("acme.s1509", registry=reg).with_stage(
        "acme.s2804", registry=reg)
    with pytest.raises(ValueError, match="'acme.s1509' and 'acme.s2804' draw from the same random streams.*rename one"):
        build(spec, registry=reg)


def test_a_param_stream_offset_is_checked_where_it_is_declared_and_where_two_meet():
    for bad in (-1, 256):
        with pytest.raises(ValueError, match=r"stream must be an offset in \[0, 256\)"):
            pipeline.Param("k", 0.0, 0.0, 1.0, stream=bad)

    class Clashes(pipeline.Stage):
        name, family = "test.clashes", "track"
        params = (pipeline.Param("k", 0.5, 0.0, 1.0, stream=3),)  # layout.radius_jitter's offset

        def enqueue(self, ctx, pending):
            pass

    reg = _registry(Clashes)
    spec = presets.track(num_envs=2, device=DEV).with_stage("test.clashes", registry=reg)
    with pytest.raises(ValueError, match=r"\['layout.radius_jitter', 'test.clashes.k'\] share a random stream "
                                         r"\(offsets .*3.*3.*another Param.stream offset"):
        build(spec, registry=reg)


def test_the_plugin_fields_are_a_read_only_attribute():
    reg = _registry()
    program = build(_spec(reg=reg), registry=reg, seeds=1)
    with pytest.raises(AttributeError):
        program.fields = {}
    assert list(program.fields) == ["test.theme"]


def test_a_refused_course_over_a_driven_program_puts_its_plugin_fields_back():
    from trackgen_env import tools
    from trackgen_env.course import Course

    class Raises(tools.Component):
        def on_generate(self, ctx, mask):
            raise RuntimeError("boom")

    reg = _registry()
    program = build(_spec(reg=reg), registry=reg, seeds=1)
    old = Course.track(program, checkpoint_spacing=0.6)
    theme = program.fields["test.theme"].numpy().copy()
    program.seeds.counters.assign(program.seeds.counters.numpy() + 1)  # the next regeneration draws anew
    with pytest.raises(RuntimeError, match="boom"):
        Course(program, [tools.Checkpoints(0.6), Raises("acme.raises")])
    assert np.array_equal(program.fields["test.theme"].numpy(), theme)
    old.regenerate()
    assert not np.array_equal(program.fields["test.theme"].numpy(), theme)


@pytest.mark.parametrize("field", ["valid", "generation"])
def test_build_refuses_a_stage_that_writes_what_the_program_writes_itself(field):
    class Writes(pipeline.Stage):
        name, family, writes = "test.writes", "track", (field,)

        def allocate(self, ctx):
            ctx.field(field, ctx.num_envs, wp.int32)

        def enqueue(self, ctx, pending):
            pass

    reg = _registry(Writes)
    with pytest.raises(ValueError, match=rf"stage 'test.writes' writes \['{field}'\], which the program writes itself"
                                         r".*ctx.ok\[e\] = 0"):
        build(presets.track(num_envs=2, device=DEV).with_stage("test.writes", registry=reg), registry=reg)


@pytest.mark.parametrize("shape", [3, (3, 2), (2, 4)])
def test_a_field_needs_the_env_axis_first(shape):
    class Field(pipeline.Stage):
        name, family, writes = "test.field", "track", ("test.field",)

        def allocate(self, ctx):
            ctx.field("test.field", shape, float)

        def enqueue(self, ctx, pending):
            pass

    reg = _registry(Field)
    with pytest.raises(ValueError, match=r"stage 'test.field': field 'test.field' needs the env axis first: shape "
                                         r"\(4, \.\.\.\)"):
        build(presets.track(num_envs=4, device=DEV).with_stage("test.field", registry=reg), registry=reg)


def test_bad_stream_names_and_methods_are_named():
    with pytest.raises(TypeError, match="plugin_stage_stream takes a stage's name \\(a str\\), got NoneType None"):
        seeding.plugin_stage_stream(None)

    class Instance(Theme):
        name = "test.instance"

        def random_stream(self):
            return 7

    class Floaty(Theme):
        name = "test.floaty"
        random_stream = classmethod(lambda cls: 7.5)

    for stage, message in ((Instance, "a classmethod"), (Floaty, "return an int, got float 7.5")):
        reg = _registry(stage)
        with pytest.raises(TypeError, match=f"stage '{stage.name}': random_stream\\(\\) must.*{message}"):
            build(presets.track(num_envs=2, device=DEV).with_stage(stage.name, registry=reg), registry=reg)


def test_a_stage_of_the_other_family_and_a_plugin_without_its_registry_are_named():
    reg = _registry()
    with pytest.raises(KeyError, match="'test.theme' is a stage of the track family, not of the gates family"):
        presets.gates(num_envs=2, device=DEV, gate_width=0.2).with_stage("test.theme", registry=reg)
    spec = _spec(2, reg=reg)
    from trackgen_env.course import Course

    with pytest.raises(KeyError, match="registry= to build, to the env or to Course.track / Course.gates"):
        Course.track(spec, checkpoint_spacing=0.6)


@pytest.mark.parametrize("advance", ["yes", None, 1])
def test_program_enqueue_refuses_an_advance_that_is_not_a_bool(advance):
    program = build(presets.track(num_envs=2, device=DEV), seeds=0)
    counters = program.seeds.counters.numpy().copy()
    with pytest.raises(TypeError, match="advance must be a bool"):
        program.enqueue(advance=advance)
    assert np.array_equal(program.seeds.counters.numpy(), counters)


def test_course_presets_build_a_plugin_spec_with_its_registry():
    from trackgen_env.course import Course

    reg = _registry()
    spec = _spec(4, stage="test.picky_theme", reg=reg)
    course = Course.track(spec, checkpoint_spacing=0.6, registry=reg, seeds=9)
    program = build(spec, registry=reg, seeds=9)
    assert np.array_equal(course.generator.fields["test.picky_theme"].numpy(),
                          program.fields["test.picky_theme"].numpy())
    assert np.array_equal(course.result.centerline.numpy(), program.result.centerline.numpy())

    class GatesTheme(Theme):
        name, family, writes = "test.gates_theme", "gates", ("test.gates_theme",)

    greg = _registry(GatesTheme)
    gspec = presets.gates(num_envs=4, device=DEV, gate_width=0.2).with_stage("test.gates_theme", registry=greg)
    gates = Course.gates(gspec, registry=greg, seeds=2)
    assert (gates.generator.fields["test.gates_theme"].numpy() < 1.0).all() and gates.result.valid.numpy().all()


def test_course_presets_refuse_a_registry_they_cannot_use_before_building(monkeypatch):
    from trackgen_env import TrackGenConfig
    from trackgen_env.course import Course
    from trackgen_env.course import presets as course_presets

    reg = _registry()
    spec = _spec(2, reg=reg)
    built = build(spec, registry=reg)

    def refuse(*a, **k):
        raise AssertionError("a generator was built before the checks raised")

    monkeypatch.setattr(course_presets, "build", refuse)
    for source, registry, message in (
        (built, reg, "this source is a built generator"),
        (TrackGenConfig(num_envs=2, device=DEV), reg, "a TrackGenConfig has none"),
        (spec, {"test.theme": Theme}, "registry must be a pipeline.Registry or None, got dict"),
    ):
        with pytest.raises(TypeError, match=message):
            Course.track(source, checkpoint_spacing=0.6, registry=registry)
