"""The track stages' CPU and CUDA layouts, run on the CPU: the blocked self-intersection scan
(one pass, or by lanes of blocks) gives the point-by-point verdict, the spline by
control-segment lanes and the resampling by lanes of points the one-pass bytes."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from trackgen_env.core import env_loop
from trackgen_env.pipeline import build, presets
from trackgen_env.pipeline.stages import track, track_checks, track_curves

DEV = "cpu"
STRIDE = wp.constant(8)


# the scan before blocks (each point against every STRIDE-th later point, then its run): the reference
@wp.kernel
def _point_by_point(
    pending: wp.array(dtype=wp.int32),
    lanes: int,
    min_turn_radius_factor: float,
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    centerline: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    ok: wp.array(dtype=wp.int32),
):
    e, lane = wp.tid()
    if pending[e] == 0 or ok[e] == 0:
        return
    count = num_points[e]
    total = loop_length[e]
    for i in range(lane, count, lanes):
        hw = half_width[e, i]
        p = centerline[e, i]
        if not wp.isfinite(p[0] + p[1] + p[2] + arc_length[e, i] + curvature[e, i] + hw):
            ok[e] = 0  # a non-finite value: no course
            return
        # turn radius >= factor * half width (the inner band edge must not fold over)
        if wp.abs(curvature[e, i]) * min_turn_radius_factor * hw > 1.0:
            ok[e] = 0
            return
        # band self-intersection: points far apart along the loop must be >= 2 half widths
        # apart. Scan every STRIDE-th point first: a point within STRIDE - 1 steps of a
        # coarse point p_j is at most (STRIDE - 1) * step from it, so only a coarse point
        # closer than 2 hw + that bound needs its run of fine points checked.
        skip = 3.0 * (2.0 * hw)
        pi = centerline[e, i]
        si = arc_length[e, i]
        step = total / float(count)
        reach = 2.0 * hw + float(STRIDE - 1) * step
        for jc in range(i + 1, count, STRIDE):
            d = centerline[e, jc] - pi
            if d[0] * d[0] + d[1] * d[1] < reach * reach:
                for j in range(jc, wp.min(jc + STRIDE, count)):
                    ds = arc_length[e, j] - si
                    if ds > skip and total - ds > skip:
                        dj = centerline[e, j] - pi
                        if dj[0] * dj[0] + dj[1] * dj[1] < (hw + half_width[e, j]) * (hw + half_width[e, j]):
                            ok[e] = 0
                            return
        if ok[e] == 0:
            return


def _random_loops(E: int, P: int, seed: int):
    """Closed loops of random lobes, squashes and noise (many cross themselves), some with a NaN."""
    rng = np.random.default_rng(seed)
    count = rng.integers(9, P + 1, E).astype(np.int32)
    centerline = np.zeros((E, P, 3), np.float32)
    arc = np.zeros((E, P), np.float32)
    hw = np.zeros((E, P), np.float32)
    curvature = rng.normal(0.0, 0.2, (E, P)).astype(np.float32)
    total = np.zeros(E, np.float32)
    for e in range(E):
        n = count[e]
        t = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
        r = 4.0 + rng.uniform(0.0, 1.5) * np.cos(rng.integers(1, 4) * t) + 0.05 * rng.normal(0.0, 0.2, n).cumsum()
        x = r * np.cos(t) + rng.uniform(-2.0, 2.0) * np.sin(2.0 * t)
        y = r * np.sin(t) * rng.uniform(0.3, 1.0)
        centerline[e, :n, 0], centerline[e, :n, 1] = x, y
        total[e] = np.float32(np.hypot(np.diff(x, append=x[0]), np.diff(y, append=y[0])).sum())
        arc[e, :n] = np.arange(n, dtype=np.float32) * total[e] / np.float32(n)  # as the resampling writes it
        hw[e, :n] = rng.uniform(0.1, 0.9) if rng.random() < 0.5 else rng.uniform(0.1, 0.9, n)
        if rng.random() < 0.05:
            centerline[e, rng.integers(0, n), rng.integers(0, 2)] = np.nan
        if rng.random() < 0.03:
            hw[e, rng.integers(0, n)] = np.inf if rng.random() < 0.5 else np.nan
    return count, total, centerline, arc, curvature, hw


@pytest.mark.parametrize("lanes", [0, 1, 7])
def test_the_blocked_scan_gives_the_point_by_point_verdict(lanes):
    """lanes 0: the CPU's one pass (_checks_one_pass: the bounds, then the scan, per env);
    1 and 7: the bounds kernel, then the scan kernel, by lanes of blocks (CUDA)."""
    E, P = 512, 402
    count, total, centerline, arc, curvature, hw = _random_loops(E, P, seed=lanes or 3)
    arrays = [wp.array(count, device=DEV), wp.array(total, device=DEV), wp.array(centerline, dtype=wp.vec3, device=DEV),
              wp.array(arc, device=DEV), wp.array(curvature, device=DEV), wp.array(hw, device=DEV)]
    pending = wp.ones(E, dtype=wp.int32, device=DEV)
    expected = wp.ones(E, dtype=wp.int32, device=DEV)
    wp.launch(_point_by_point, (E, 1), inputs=[pending, 1, 2.0, *arrays], outputs=[expected], device=DEV)
    ok = wp.ones(E, dtype=wp.int32, device=DEV)
    blocks = (E, (P + 7) // 8)
    box, span = wp.zeros(blocks, dtype=wp.vec4, device=DEV), wp.zeros(blocks, dtype=wp.vec4, device=DEV)
    c, tot, cl, al, cu, h = arrays
    if lanes == 0:
        threads, per = env_loop.shape(DEV, E)
        listed = wp.array(np.arange(E, dtype=np.int32), device=DEV)  # every env pending, as a round lists them
        num = wp.array([E], dtype=wp.int32, device=DEV)
        wp.launch(track_checks._checks_one_pass, threads, inputs=[per, pending, listed, num, 2.0, *arrays, box, span],
                  outputs=[ok], device=DEV)
    else:
        wp.launch(track_checks._check_blocks, (E, lanes), inputs=[pending, 2.0, *arrays, lanes],
                  outputs=[box, span, ok],
                  device=DEV)
        wp.launch(track_checks._checks, (E, lanes), inputs=[pending, lanes, c, tot, cl, al, h, box, span], outputs=[ok],
                  device=DEV)
    want = expected.numpy()
    assert 0.2 * E < np.count_nonzero(want == 0) < 0.9 * E  # both verdicts are common
    assert np.array_equal(ok.numpy(), want)


def _assign_jittered_circles(program, E: int, rng) -> None:
    """The centreline inputs of ``E`` envs: 16-point circles of radius 3-4 m, jittered per point, 0.4 m half widths."""
    t = np.linspace(0.0, 2.0 * np.pi, 16, endpoint=False)
    xy = np.zeros((E, 16, 4), np.float32)
    xy[..., 0] = (3.0 + rng.uniform(0, 1, (E, 16))) * np.cos(t)
    xy[..., 1] = (3.0 + rng.uniform(0, 1, (E, 16))) * np.sin(t)
    xy[..., 2:] = 0.4
    program.inputs["centerline.xy"].assign(xy)


@pytest.mark.parametrize("source", ["procedural", "centerline"])
def test_the_spline_by_control_segment_lanes_gives_the_one_pass_bytes(source):
    """The CUDA layout of the spline stage (the bound, the chords and their sum as three
    kernels, a lane per control segment), run on the CPU, against the CPU's one pass."""
    E = 256
    if source == "procedural":
        # a tight bound too, so that many draws are rejected (at the last attempt as well)
        specs = [presets.track(num_envs=E, device=DEV),
                 presets.track(num_envs=E, device=DEV, min_turn_radius_factor=4.0)]
    else:
        specs = [presets.track(num_envs=E, device=DEV, source="centerline", max_input_points=16)]
    for spec in specs:
        program = build(spec, seeds=5, prepare=False)
        if source == "centerline":
            rng = np.random.default_rng(0)
            _assign_jittered_circles(program, E, rng)
            program.inputs["centerline.count"].assign(rng.integers(2, 17, E).astype(np.int32))
        ctx = program._ctx
        ctx.pending.fill_(1)
        ctx.begin_round()  # ok = 1 and, on the CPU, the list of the pending envs
        ctx.attempt.assign(np.random.default_rng(1).integers(0, ctx.max_retries + 1, E).astype(np.int32))
        stages = [s.name for s in program._stages]
        for stage in program._stages[:stages.index("spline")]:
            stage.enqueue(ctx, ctx.pending)  # control points of fresh draws, about half of them rejected
        spline = program._stages[stages.index("spline")]
        outputs = []
        for lanes in (1, 7):
            ctx.ok.fill_(1)
            for name in ("table", "loop_length", "num_points"):
                ctx.fields[name].zero_()
            spline.lanes = lanes
            spline.enqueue(ctx, ctx.pending)
            ok = ctx.ok.numpy().copy()
            # a rejected draw that retries builds no table: compare the envs that keep theirs
            keep = (ok != 0) | (ctx.attempt.numpy() >= ctx.max_retries)
            outputs.append((ok,
                            {n: ctx.fields[n].numpy()[keep].tobytes() for n in ("table", "loop_length", "num_points")}))
        assert np.array_equal(outputs[0][0], outputs[1][0])
        assert outputs[0][1] == outputs[1][1]
        assert np.count_nonzero(outputs[0][0] == 0) > 0  # rejections are compared too


@pytest.mark.parametrize("source", ["procedural", "centerline"])
def test_the_resampling_by_point_lanes_gives_the_one_lane_bytes(source):
    """The CUDA layout of the resample stage (lanes of points, each a binary search of the
    table, so a lane's points jump across control segments), run on the CPU with 7 lanes,
    against one lane (the CPU's walk): the same rows, padding included."""
    E = 128
    spec = (presets.track(num_envs=E, device=DEV) if source == "procedural"
            else presets.track(num_envs=E, device=DEV, source="centerline", max_input_points=16))
    program = build(spec, seeds=9, prepare=False)
    if source == "centerline":
        _assign_jittered_circles(program, E, np.random.default_rng(2))
        program.inputs["centerline.count"].assign(np.full(E, 16, np.int32))
    ctx = program._ctx
    ctx.pending.fill_(1)
    ctx.begin_round()  # ok = 1 and, on the CPU, the list of the pending envs
    ctx.ok.fill_(1)
    ctx.attempt.fill_(ctx.max_retries)  # every draw is resampled, rejected or not
    stages = [s.name for s in program._stages]
    for stage in program._stages[:stages.index("resample")]:
        stage.enqueue(ctx, ctx.pending)
    resample = program._stages[stages.index("resample")]
    rows = []
    for lanes in (1, 7):
        for name in track.POINT_FIELDS:
            ctx.fields[name].fill_(-1.0)
        resample.lanes = lanes
        resample.enqueue(ctx, ctx.pending)
        rows.append([ctx.fields[name].numpy().tobytes() for name in track.POINT_FIELDS])
    assert rows[0] == rows[1]
    assert np.all(ctx.fields["num_points"].numpy() > 8)


@wp.kernel
def _both_evaluations(ctrl: wp.array(dtype=wp.vec3), samples: int, kind: int, weights: wp.array2d(dtype=wp.vec4),
                      tabled: wp.array2d(dtype=wp.vec3), direct: wp.array2d(dtype=wp.vec3)):
    i = wp.tid()
    a, b, c = track_curves.dense_sample(ctrl[0], ctrl[1], ctrl[2], ctrl[3], i, samples, kind, weights)
    x, y, z = track_curves.curve(ctrl[0], ctrl[1], ctrl[2], ctrl[3], float(i) / float(samples), kind)
    tabled[i, 0] = a
    tabled[i, 1] = b
    tabled[i, 2] = c
    direct[i, 0] = x
    direct[i, 1] = y
    direct[i, 2] = z


@pytest.mark.parametrize("source", ["procedural", "centerline"])
def test_a_dense_sample_from_the_weight_table_is_the_curve_at_i_over_samples(source):
    """The spline reads a B-spline's basis weights at its dense samples from a table: the same
    floats as the curve evaluated at t = i / samples (a power of two: the product is exact)."""
    inputs = 16 if source == "centerline" else 0
    program = build(presets.track(num_envs=1, device=DEV, source=source, max_input_points=inputs), seeds=0,
                    prepare=False)
    spline = next(s for s in program._stages if s.name == "spline")
    kind = int(track_curves.BSPLINE if source == "procedural" else track_curves.CATMULL_ROM)
    rng = np.random.default_rng(4)
    for _ in range(5):
        ctrl = wp.array(rng.normal(0.0, 3.0, (4, 3)).astype(np.float32), dtype=wp.vec3, device=DEV)
        out = [wp.zeros((spline.samples, 3), dtype=wp.vec3, device=DEV) for _ in range(2)]
        wp.launch(_both_evaluations, spline.samples, inputs=[ctrl, spline.samples, kind, spline.weights], outputs=out,
                  device=DEV)
        assert out[0].numpy().tobytes() == out[1].numpy().tobytes()


def test_the_checks_stage_by_block_lanes_gives_the_one_pass_verdict():
    """The checks stage's two layouts through its enqueue (the CPU's one pass, CUDA's bounds and
    scan kernels by lanes of blocks, run on the CPU) on resampled draws, tight ones included."""
    E = 256
    program = build(presets.track(num_envs=E, device=DEV), seeds=13, prepare=False)
    ctx = program._ctx
    ctx.pending.fill_(1)
    ctx.begin_round()  # ok = 1 and, on the CPU, the list of the pending envs
    ctx.ok.fill_(1)
    ctx.attempt.fill_(ctx.max_retries)  # every draw gets its table and rows, tight or not
    stages = [s.name for s in program._stages]
    for stage in program._stages[:stages.index("checks")]:
        stage.enqueue(ctx, ctx.pending)
    checks = program._stages[stages.index("checks")]
    verdicts = []
    for lanes in (1, 7):
        ctx.ok.fill_(1)
        checks.lanes = lanes
        checks.enqueue(ctx, ctx.pending)
        verdicts.append(ctx.ok.numpy().copy())
    assert np.array_equal(verdicts[0], verdicts[1])
    assert 0.2 * E < np.count_nonzero(verdicts[0] == 0) < 0.8 * E  # both verdicts are common


@wp.kernel
def _nan_at_point_3(pending: wp.array(dtype=wp.int32), half_width: wp.array2d(dtype=float)):
    e = wp.tid()
    if pending[e] != 0:
        half_width[e, 3] = wp.nan


def test_a_course_with_a_nan_is_rejected_by_the_checks():
    """A plugin's NaN after the resampling passed every comparison of the checks: valid courses
    with NaN observations and rewards."""
    from trackgen_env.pipeline import Registry, Stage

    class NaN(Stage):
        name, family, reads, writes = "acme.nan", "track", ("half_width",), ("half_width",)

        def enqueue(self, ctx, pending):
            wp.launch(_nan_at_point_3, ctx.num_envs, inputs=[pending, ctx.fields["half_width"]], device=ctx.device)

    reg = Registry()
    reg.register(NaN)
    spec = presets.track(num_envs=4, device=DEV).with_stage("acme.nan", after="resample", registry=reg)
    with pytest.warns(UserWarning, match="hold a valid track course"):
        program = build(spec, registry=reg, seeds=0)
    assert not program.result.valid.numpy().any()
