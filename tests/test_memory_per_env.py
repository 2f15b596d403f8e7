"""The memory target of TrackGen-Track-v0 (issue 12) and what reaching it must not change.

* device memory per env at default capacities (``memory_estimate``, from the allocations:
  a memory figure, not a timing) <= 16 KiB, without the host copies of the NumPy outputs;
* the default centreline capacity (``flat_loop_bound``) holds every loop the layout draws
  at the corners of the documented ranges, so that every valid course is the one the old
  capacity (``ceil(max_loop_length / point_spacing) + 2``) gave, byte for byte;
* the checks' block bounds live in the spline's arc-length table (``StageContext.scratch``)
  when every stage is a built-in, and in arrays of their own otherwise.
"""

from __future__ import annotations

import math

import pytest
import warp as wp

from trackgen_env import TrackGenConfig, TrackGenerator
from trackgen_env.envs.track import TrackVectorEnv
from trackgen_env.pipeline import Registry, Stage, build, presets
from trackgen_env.pipeline.stages.track_curves import flat_loop_bound

TARGET = 16 * 1024  # [B] per env
_POINT_FIELDS = ("centerline", "tangent", "normal", "arc_length", "curvature", "half_width")
_ENV_FIELDS = ("num_points", "loop_length", "start_position", "start_orientation", "valid", "generation")


def test_default_track_env_device_memory_per_env_is_within_16_kib():
    num_envs = 4096
    est = TrackVectorEnv.memory_estimate(num_envs, device="cpu")
    device = sum(b for name, b in est.parts.items() if name != "numpy outputs")  # host copies of the outputs
    assert device / num_envs <= TARGET, f"{device / num_envs:.0f} B per env: {est.largest_parts(8)}"


def _courses(gen, generations: int = 2) -> list[bytes]:
    """Per env and generation: its first num_points rows of every point field and its scalars."""
    out = []
    for g in range(generations):
        if g:
            gen.enqueue(advance=True)
        r = gen.result
        rows = {n: getattr(r, n).numpy() for n in _POINT_FIELDS}
        scalars = {n: getattr(r, n).numpy() for n in _ENV_FIELDS}
        for e in range(gen.num_envs):
            n = int(scalars["num_points"][e])
            out.append(b"".join([rows[f][e, :n].tobytes() for f in _POINT_FIELDS]
                                + [scalars[f][e].tobytes() for f in _ENV_FIELDS]))
    return out


def test_default_capacity_keeps_every_course_of_the_old_one():
    """The default P (251) against the former default ceil(4 size / spacing) + 2 = 402, whose
    checks keep their block bounds in arrays of their own: the same courses, invalid ones too."""
    cfg = TrackGenConfig(num_envs=2000, device="cpu")
    old = TrackGenConfig(num_envs=2000, device="cpu", max_points=math.ceil(cfg.max_loop_length / cfg.point_spacing) + 2)
    assert cfg.max_points < old.max_points == 402
    assert _courses(TrackGenerator(cfg, seeds=21)) == _courses(TrackGenerator(old, seeds=21))


def test_default_capacity_keeps_the_courses_of_randomized_sizes_widths_and_hills():
    """Ranges beyond the construction values that the capacity still holds (it is sized for the
    construction values: a size drawn up to 12 m, hills up to 1 m)."""
    ranges = {"layout.size": (8.0, 12.0), "band.width": (0.6, 1.0), "layout.elevation": (0.0, 1.0)}
    new = build(presets.track(num_envs=1000, device="cpu").with_randomize(ranges), seeds=4)
    old = build(presets.track(num_envs=1000, device="cpu", max_points=402).with_randomize(ranges), seeds=4)
    assert new.layout.max_points == 251
    assert _courses(new) == _courses(old)


@pytest.mark.parametrize("kwargs", [
    dict(radius_jitter=0.0, width=0.05, num_control_points=20),  # the roundest, widest loop
    dict(radius_jitter=0.0, width=0.8, num_control_points=12, angle_jitter=0.3),
    dict(radius_jitter=0.7, width=0.05, num_control_points=20, angle_jitter=0.3),  # the deepest, wiggliest
    dict(radius_jitter=0.7, width=0.8, num_control_points=5),
    dict(radius_jitter=0.35, width=2.0, num_control_points=16),  # the widest band: a round loop
    dict(radius_jitter=0.7, width=0.3, size=3.0, min_turn_radius_factor=1.0, num_control_points=20),
])
def test_flat_loop_bound_holds_the_longest_loop_at_the_corners_of_the_documented_ranges(kwargs):
    cfg = TrackGenConfig(num_envs=500, device="cpu", **kwargs)
    bound = flat_loop_bound(cfg.size, cfg.width, cfg.radius_jitter, cfg.min_turn_radius_factor, cfg.num_control_points)
    assert cfg.max_points == min(math.ceil(cfg.max_loop_length / cfg.point_spacing),
                                 math.ceil(bound / cfg.point_spacing)) + 2
    roomy = TrackGenerator(TrackGenConfig(num_envs=500, device="cpu", max_points=2 * cfg.max_points, **kwargs), seeds=8)
    valid = roomy.result.valid.numpy() != 0
    assert valid.mean() > 0.99
    assert roomy.result.loop_length.numpy()[valid].max() <= bound
    assert roomy.result.num_points.numpy()[valid].max() <= cfg.max_points - 2


def test_the_declared_loop_bound_is_the_capacity_where_it_is_tighter():
    gen = TrackGenerator(TrackGenConfig(num_envs=2, device="cpu"), seeds=1)
    s = gen.spec.settings
    assert gen.layout.max_loop_length == pytest.approx((s["max_points"] + 0.5) * s["point_spacing"])
    assert gen.layout.max_loop_length < s["max_loop_length"]
    loose = TrackGenerator(TrackGenConfig(num_envs=2, device="cpu", max_loop_length=32.0, max_points=4000), seeds=1)
    assert loose.layout.max_loop_length == 32.0
    # an elevated loop climbs: the capacity keeps its length bound, and the generator declares none
    hills = TrackGenConfig(num_envs=2, device="cpu", elevation=1.0)
    assert hills.max_points == math.ceil(hills.max_loop_length / hills.point_spacing) + 2
    assert hills.declared_max_loop_length is None


def _checks(program):
    return next(s for s in program._stages if s.name == "checks")


def _inside(view: wp.array, base: wp.array) -> bool:
    view_end = view.ptr + view.strides[0] * (view.shape[0] - 1) + view.shape[1] * 16
    return base.ptr <= view.ptr and view_end <= base.ptr + base.capacity


def test_checks_block_bounds_share_the_spline_table_when_every_stage_is_builtin():
    program = build(presets.track(num_envs=3, device="cpu"), seeds=2)
    table, checks = program._ctx.fields["table"], _checks(program)
    assert checks.box.deleter is None and checks.span.deleter is None  # views: no memory of their own
    assert _inside(checks.box, table) and _inside(checks.span, table)
    # both in each env's own row, apart
    row = table.strides[0]
    assert checks.box.strides[0] == checks.span.strides[0] == row
    assert checks.box.ptr + checks.box.shape[1] * 16 <= checks.span.ptr < table.ptr + row


class _Nudge(Stage):
    """A plugin stage (not a built-in): the program then lends no field to scratch."""

    name, family = "test.nudge", "track"
    reads = ("centerline",)
    writes = ("centerline",)

    def enqueue(self, ctx, pending):
        pass


def test_scratch_is_its_own_array_with_a_plugin_stage_or_without_room():
    reg = Registry()
    reg.register(_Nudge)
    spec = presets.track(num_envs=3, device="cpu").with_stage("test.nudge", after="resample", registry=reg)
    plugin = build(spec, registry=reg, seeds=2)
    assert _checks(plugin).box.deleter is not None and _checks(plugin).span.deleter is not None
    # 51 blocks: the box bounds (816 B per env) fit in the table's 1540 B rows, the arc-length ones no more
    roomy = build(presets.track(num_envs=3, device="cpu", max_points=402), seeds=2)
    assert _checks(roomy).box.deleter is None and _checks(roomy).span.deleter is not None
