"""The track components on tracks of the real ``TrackGenerator`` (standalone, no Course)."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from trackgen_env import TrackGenConfig, TrackGenerator
from trackgen_env.tools import BandCollision, Checkpoints, ComponentContext, Localizer, Progress

NUM_ENVS = 6
LATERAL_TOL = 1e-4  # [m] a centreline point is on the line


@pytest.fixture(scope="module")
def generated():
    """One generator and its components, built once (module-scope: generation takes a while)."""
    gen = TrackGenerator(TrackGenConfig(num_envs=NUM_ENVS, device="cpu"), seeds=11)
    ctx = ComponentContext(gen)
    comps = [Checkpoints(0.6), Progress(), BandCollision(), Localizer(), BandCollision("sdf", name="collision.sdf")]
    for c in comps:
        ctx.add(c)
    pos = wp.zeros(NUM_ENVS, dtype=wp.vec3, device="cpu")
    for c in comps[1:]:
        c.bind(position=pos)
    return gen, ctx, comps, pos


def regenerate(ctx, comps, mask=None):
    for c in comps:
        c.on_generate(ctx, mask)
    for c in reversed(comps):
        c.reset(ctx, mask)


def test_auto_capacity_fits_every_generated_track(generated):
    gen, ctx, (cp, *_), _ = generated
    regenerate(ctx, generated[2])
    assert cp.capacity == max(3, int(np.ceil(gen.layout.max_loop_length / 0.6)))
    valid = gen.result.valid.numpy() != 0
    assert valid.any()
    np.testing.assert_array_equal(cp.clipped.numpy(), 0)
    n = cp.result.num_checkpoints.numpy()
    np.testing.assert_array_equal(n[valid], np.maximum(3, np.floor(gen.result.loop_length.numpy()[valid] / 0.6)))


def test_driving_the_centerline_laps_without_contact(generated):
    """Each env steps through its own centreline points once around (and one past the start)."""
    gen, ctx, comps, pos = generated
    cp, pr, col, loc, sdf = comps
    regenerate(ctx, comps)
    line = gen.result.centerline.numpy()
    arc = gen.result.arc_length.numpy()
    n = gen.result.num_points.numpy()
    length = np.maximum(gen.result.loop_length.numpy(), 1e-6)
    valid = gen.result.valid.numpy() != 0
    passed = np.zeros(NUM_ENVS, int)
    for i in range(int(n.max()) + 2):
        j = np.minimum(i, n + 1) % np.maximum(n, 1)
        pos.assign(line[np.arange(NUM_ENVS), j])
        for c in (pr, col, loc, sdf):
            c.step(ctx)
        passed += pr.result.passed.numpy()
        live = valid & (i <= n + 1)
        np.testing.assert_array_equal(col.result.hit.numpy()[live], 0)
        np.testing.assert_array_equal(sdf.result.hit.numpy()[live], 0)
        # on the centreline the clearance is the half width (sdf: up to a cell across the ridge)
        hw = gen.result.half_width.numpy()[np.arange(NUM_ENVS), j]
        np.testing.assert_allclose(col.result.distance.numpy()[live], hw[live], atol=LATERAL_TOL)
        np.testing.assert_allclose(sdf.result.distance.numpy()[live], hw[live], atol=sdf.cell.numpy().max())
        np.testing.assert_allclose(loc.result.lateral_offset.numpy()[live], 0.0, atol=LATERAL_TOL)
        # s is the point's arc length, modulo the loop (point 0 may be read as s = L)
        ds = loc.result.s.numpy() - arc[np.arange(NUM_ENVS), j]
        ds = (ds + length / 2) % length - length / 2
        np.testing.assert_allclose(ds[live], 0.0, atol=1e-3)
    np.testing.assert_array_equal(pr.result.laps.numpy()[valid], 1)
    np.testing.assert_array_equal(passed[valid], cp.result.num_checkpoints.numpy()[valid])


def test_masked_regeneration_keeps_unmasked_component_rows(generated):
    gen, ctx, comps, pos = generated
    cp, pr, col, loc, sdf = comps
    regenerate(ctx, comps)
    pos.assign(gen.result.centerline.numpy()[:, 3])
    for c in (pr, col, loc):
        c.step(ctx)
    snap = lambda: [a.numpy().copy() for a in (cp.result.position, cp.result.num_checkpoints, pr.result.next_checkpoint,  # noqa: E731
                                               pr._has_prev, col.segment, loc._warm, sdf.grid)]
    before = snap()
    mask = wp.array([1, 0] * (NUM_ENVS // 2), dtype=wp.int32, device="cpu")
    gen.enqueue(advance=True, mask=mask)
    regenerate(ctx, comps, mask)
    after = snap()
    keep = mask.numpy() == 0
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a[keep], b[keep])
    assert not np.array_equal(after[0][~keep], before[0][~keep])
    np.testing.assert_array_equal(after[3][~keep], 0)  # reset: the next step only records


def test_sdf_agrees_with_segments_within_a_cell(generated):
    """Random points over the course square: the baked grid matches the exact polyline clearance
    to one cell where it is not clamped (within 2 cells outside the band)."""
    gen, ctx, comps, pos = generated
    _, pr, col, loc, sdf = comps
    regenerate(ctx, comps)
    rng = np.random.default_rng(5)
    cell = sdf.cell.numpy()
    valid = gen.result.valid.numpy() != 0
    for _ in range(40):
        pos.assign(np.float32(rng.uniform(-6.0, 6.0, (NUM_ENVS, 3)) * [1, 1, 0]))
        col.step(ctx)
        sdf.step(ctx)
        exact, baked = col.result.distance.numpy(), sdf.result.distance.numpy()
        near = valid & (exact > -2.0 * cell)
        np.testing.assert_allclose(baked[near], exact[near], atol=float(cell.max()))
        far = valid & (exact < -2.0 * cell - cell)
        np.testing.assert_array_equal(sdf.result.hit.numpy()[far], 1)
