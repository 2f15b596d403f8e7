"""The result written in place: a program of built-in stages has no staged copy of the result,
gives the same bytes as a staged one, and every built-in stage writes only its pending envs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import warp as wp

from trackgen_env import pipeline
from trackgen_env.course.memory import array_bytes
from trackgen_env.pipeline import Registry, Stage, build, presets
from trackgen_env.pipeline.registry import _BUILTIN_STAGES

DEV = "cpu"
E = 6


class Noop(Stage):
    """A plugin stage that does nothing: its program stages every field."""

    name, family = "test.noop", None

    def enqueue(self, ctx, pending):
        pass


def _registry() -> Registry:
    reg = Registry()
    reg.register(Noop)
    return reg


def _numpy(result) -> dict:
    return {f.name: getattr(result, f.name).numpy().copy() for f in dataclasses.fields(result)}


def _given_centerline_spec():
    return presets.track(num_envs=E, device=DEV, source="centerline", max_input_points=16)


def _write_centerlines(program):
    angles = np.linspace(0.0, 2.0 * np.pi, 16, endpoint=False)
    xy = np.zeros((E, 16, 4), np.float32)
    for e in range(E):
        r = 3.0 + 0.3 * e
        xy[e, :, 0], xy[e, :, 1], xy[e, :, 2:] = r * np.cos(angles), r * np.sin(angles), 0.4
    program.inputs["centerline.xy"].assign(xy)
    # env 1 gives 2 points: no course (a degenerate invalid track); env 4 only its first 8
    program.inputs["centerline.count"].assign(np.array([16, 2, 16, 16, 8, 16], np.int32))


def test_a_program_of_builtin_stages_holds_one_copy_of_the_result():
    program = build(presets.track(num_envs=E, device=DEV), seeds=0)
    staged = build(presets.track(num_envs=E, device=DEV).with_stage("test.noop", after="start", registry=_registry()),
                   registry=_registry(), seeds=0)
    rows = array_bytes(program.result)
    # the staged program holds the result's [E, P] rows twice; in place, once (plus the table,
    # control points, the checks' block bounds and per-env scalars, under a fifth of the rows)
    assert array_bytes(staged) > 1.9 * rows
    assert array_bytes(program) < 1.2 * rows


@pytest.mark.parametrize("source", ["procedural", "centerline"])
def test_in_place_and_staged_programs_give_the_same_bytes(source):
    reg = _registry()
    spec = presets.track(num_envs=E, device=DEV) if source == "procedural" else _given_centerline_spec()
    programs = [build(spec, seeds=3, prepare=False),
                build(spec.with_stage("test.noop", after="start", registry=reg), registry=reg, seeds=3, prepare=False)]
    masks = [None, np.array([1, 0, 1, 0, 0, 1], np.int32), np.array([0, 1, 0, 0, 1, 0], np.int32)]
    for program in programs:
        if source == "centerline":
            _write_centerlines(program)
    for mask in masks:
        outs = []
        for program in programs:
            program.enqueue(advance=True, mask=None if mask is None else wp.array(mask, device=DEV))
            outs.append(_numpy(program.result))
        for name in outs[0]:
            assert outs[0][name].tobytes() == outs[1][name].tobytes(), (mask, name)
    if source == "centerline":
        r = programs[0].result
        assert r.valid.numpy().tolist() == [1, 0, 1, 1, 1, 1] and r.num_points.numpy()[1] == 0
        assert np.all(r.tangent.numpy()[1] == np.float32([1.0, 0.0, 0.0]))


def _builtin_programs():
    """A program over every built-in stage (each preset), with its inputs written."""
    programs = [build(presets.track(num_envs=E, device=DEV), seeds=1),
                build(presets.gates(num_envs=E, device=DEV), seeds=1),
                build(presets.circuit(num_envs=E, device=DEV), seeds=1),
                build(presets.race_gates(num_envs=E, device=DEV), seeds=1),
                build(presets.track(num_envs=E, device=DEV, banking=0.3), seeds=1)]
    given = build(_given_centerline_spec(), seeds=1, prepare=False)
    _write_centerlines(given)
    gates = build(presets.gates(num_envs=E, device=DEV, source="layout"), seeds=1, prepare=False)
    poses = np.zeros((E, gates.layout.max_gates, 7), np.float32)
    angles = np.linspace(0.0, 2.0 * np.pi, gates.layout.max_gates, endpoint=False)
    poses[..., 0], poses[..., 1], poses[..., 2], poses[..., 6] = 4.0 * np.cos(angles), 4.0 * np.sin(angles), 1.5, 1.0
    gates.inputs["gates.pose"].assign(poses)
    gates.inputs["gates.count"].fill_(gates.layout.max_gates)
    return programs + [given, gates]


@pytest.mark.parametrize("listed", ["pending", "every", "first"])
def test_every_builtin_stage_writes_only_its_pending_envs(listed):
    """Each stage leaves the rows of the envs not pending as they were, whether the CPU env loop's
    list (``pending_envs``, as :meth:`StageContext.begin_round` writes it) holds the pending envs
    or every env (so the kernels' own ``pending`` test, CUDA's, is what keeps the others). With
    only the first pending env listed, the other one is left too: on the CPU a stage visits the
    listed envs, not every env."""
    programs = _builtin_programs()
    for program in programs:
        program.generate()
    covered = {type(stage) for program in programs for stage in program._stages}
    assert covered == set(_BUILTIN_STAGES), f"add a program over {set(_BUILTIN_STAGES) - covered} to this test"
    pending = np.array([0, 1, 0, 0, 1, 0], np.int32)
    drawn = pending.astype(bool) if listed != "first" else np.arange(E) == 1
    for program in programs:
        ctx = program._ctx
        start = {name: a.numpy().copy() for name, a in ctx.fields.items()}
        ctx.pending.assign(pending)
        ctx.begin_round()  # lists the pending envs on the CPU
        if listed == "every":
            ctx.pending_envs.assign(np.arange(E, dtype=np.int32))
            ctx.num_pending.fill_(E)
        elif listed == "first":
            ctx.num_pending.fill_(1)
        ctx.attempt.fill_(1)  # a fresh draw for the pending envs
        ctx.seeds.advance(wp.array(pending, device=DEV))
        for stage in program._stages:
            before = {name: a.numpy().copy() for name, a in {**ctx.fields, "ok": ctx.ok}.items()}
            stage.enqueue(ctx, ctx.pending)
            for name, a in {**ctx.fields, "ok": ctx.ok}.items():
                assert a.numpy()[~drawn].tobytes() == before[name][~drawn].tobytes(), (program, stage.name, name)
        if program._draws:  # the drawn envs drew a new course: the test is not vacuous
            assert any(a.numpy()[drawn].tobytes() != start[name][drawn].tobytes() for name, a in ctx.fields.items())


def test_a_plugin_program_stages_every_field():
    reg = _registry()
    staged = build(presets.track(num_envs=E, device=DEV).with_stage("test.noop", after="resample", registry=reg),
                   registry=reg, seeds=0)
    in_place = build(presets.track(num_envs=E, device=DEV), seeds=0)
    assert staged._ctx.in_place == frozenset()
    assert in_place._ctx.in_place == frozenset(pipeline.stages.track_family.TRACK.in_place_fields)
    for name in pipeline.stages.track_family.TRACK.commit_reads:
        assert staged._ctx.fields[name] is not getattr(staged.result, name)
        assert in_place._ctx.fields[name] is getattr(in_place.result, name)

