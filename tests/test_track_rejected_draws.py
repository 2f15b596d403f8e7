"""A draw that is rejected and draws again costs as little as its verdict needs: the spline
stops at a tight knot sample before its table, and no later stage writes its rows or pose
(the next round overwrites them; the last attempt keeps its own draw)."""

from __future__ import annotations

import numpy as np
import warp as wp

from trackgen_env.pipeline import build, presets
from trackgen_env.pipeline.stages import track, track_curves

DEV = "cpu"


def test_a_draw_with_a_tight_knot_is_rejected_before_its_table():
    """The one pass tests the knot samples (t = 0 of each control segment) first: a draw
    that retries and has a tight knot sample stops there, without writing any of its
    arc-length table, with the verdict of the full dense scan (``_spline_bend``)."""
    E = 512
    program = build(presets.track(num_envs=E, device=DEV), seeds=11, prepare=False)
    ctx, stages = program._ctx, {s.name: s for s in program._stages}
    ctx.pending.fill_(1)
    ctx.begin_round()  # ok = 1 and, on the CPU, the list of the pending envs
    ctx.attempt.zero_()  # every draw retries when rejected
    for name in ("band", "layout"):
        stages[name].enqueue(ctx, ctx.pending)
    f, s = ctx.fields, ctx.settings
    full = wp.ones(E, dtype=wp.int32, device=DEV)
    wp.launch(track._spline_bend, (E, 1), inputs=[ctx.pending, f["ctrl"], f["ctrl_count"], int(track_curves.BSPLINE),
                                                  stages["spline"].samples, stages["spline"].weights, 1, f["ctrl_hw"],
                                                  s["min_turn_radius_factor"]], outputs=[full], device=DEV)
    # the knot samples alone (t = 0), evaluated on the host with the curve's B-spline formula
    ctrl, hw = f["ctrl"].numpy().astype(np.float64), f["ctrl_hw"].numpy()
    n = f["ctrl_count"].numpy()
    knot_tight = np.zeros(E, bool)
    for e in range(E):
        p = ctrl[e, :n[e]]
        d1 = 0.5 * (np.roll(p, -1, 0) - np.roll(p, 1, 0))
        d2 = np.roll(p, 1, 0) - 2.0 * p + np.roll(p, -1, 0)
        bend = (d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0]) * s["min_turn_radius_factor"] * hw[e, :n[e]]
        speed2 = d1[:, 0] ** 2 + d1[:, 1] ** 2
        # well clear of the float32 rounding of the kernel's test
        knot_tight[e] = np.any(bend * bend > 1.01 * speed2 ** 3)
    f["table"].fill_(-1.0)
    ctx.ok.fill_(1)
    stages["spline"].enqueue(ctx, ctx.pending)
    ok, table = ctx.ok.numpy(), f["table"].numpy()
    assert np.array_equal(ok, full.numpy())  # the verdict of the full scan
    assert 0.3 * E < np.count_nonzero(knot_tight)  # most rejected draws are tight at a knot
    assert np.all(ok[knot_tight] == 0)
    assert np.all(table[knot_tight] == -1.0), "a draw tight at a knot wrote its table"
    assert np.all(table[ok != 0][:, 1] != -1.0)  # an accepted draw has its table



def test_a_rejected_draw_that_retries_gets_no_start_pose():
    E = 64
    program = build(presets.track(num_envs=E, device=DEV), seeds=4, prepare=False)
    ctx, f = program._ctx, program._ctx.fields
    ctx.pending.fill_(1)
    ctx.begin_round()  # ok = 1 and, on the CPU, the list of the pending envs
    for stage in program._stages[:-1]:
        stage.enqueue(ctx, ctx.pending)
    start = program._stages[-1]
    assert start.name == "start"
    rng = np.random.default_rng(0)
    ok = (rng.uniform(size=E) < 0.5).astype(np.int32)
    attempt = np.where(rng.uniform(size=E) < 0.5, ctx.max_retries, 0).astype(np.int32)
    ctx.ok.assign(ok)
    ctx.attempt.assign(attempt)
    f["start_position"].fill_(7.0)
    start.enqueue(ctx, ctx.pending)
    posed = np.any(f["start_position"].numpy() != 7.0, axis=1)
    # a pose for an accepted draw and for the last attempt, rejected or not; none for a retry
    assert np.array_equal(posed, (ok != 0) | (attempt >= ctx.max_retries))
    assert np.array_equal(f["start_position"].numpy()[posed], f["centerline"].numpy()[posed, 0])
