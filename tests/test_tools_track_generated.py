"""The track components on tracks of the real ``TrackGenerator`` (standalone, no Course)."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp
from prefill import prefill

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
        prefill(c.result)  # an output a kernel leaves unwritten must fail, not read as a plausible 0
    prefill(comps[0].clipped)
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


def reference_clearance(gen, e, p):
    """(closest segment's distance, clearance) of ``p`` by brute force over every segment, float64."""
    n = int(gen.result.num_points.numpy()[e])
    a = gen.result.centerline.numpy()[e, :n].astype(np.float64)
    nrm = gen.result.normal.numpy()[e, :n].astype(np.float64)
    hw = gen.result.half_width.numpy()[e, :n].astype(np.float64)
    b, nrm1, hw1 = np.roll(a, -1, 0), np.roll(nrm, -1, 0), np.roll(hw, -1, 0)
    ab = b - a
    t = np.clip(((p - a) * ab).sum(-1) / (ab * ab).sum(-1), 0.0, 1.0)
    q = a + ab * t[:, None]
    dist = np.linalg.norm(p - q, axis=1)
    j = int(np.argmin(dist))
    u = nrm[j] * (1 - t[j]) + nrm1[j] * t[j]
    lateral = np.dot(p - q[j], u / np.linalg.norm(u))
    return dist[j], hw[j] * (1 - t[j]) + hw1[j] * t[j] - abs(lateral)


def test_warm_started_searches_find_the_closest_segment_while_driving(generated):
    """The descent from the warm segment (and, for the box's corners, from the centre's
    segment) agrees with a brute-force search over every segment: points driven along
    each track on and off the band, a few segments per step, with occasional teleports."""
    gen, ctx, comps, _ = generated
    regenerate(ctx, comps)
    E = NUM_ENVS
    window = 4
    loc = Localizer(warm_window=window, name="localizer.walk")
    box = BandCollision(window=window, name="collision.box")
    ctx.add(loc)
    ctx.add(box)
    pos = wp.zeros(E, dtype=wp.vec3, device="cpu")
    rot = wp.zeros(E, dtype=wp.quat, device="cpu")
    half = wp.array(np.tile(np.float32([0.225, 0.1, 0.05]), (E, 1)), dtype=wp.vec3, device="cpu")
    loc.bind(position=pos)
    box.bind(position=pos, orientation=rot, half_extents=half)
    for c in (loc, box):
        c.on_generate(ctx, None)
        c.reset(ctx, None)
    line, nrm = gen.result.centerline.numpy(), gen.result.normal.numpy()
    tan, hw = gen.result.tangent.numpy(), gen.result.half_width.numpy()
    n = np.maximum(gen.result.num_points.numpy(), 1)
    valid = np.flatnonzero(gen.result.valid.numpy())
    rng = np.random.default_rng(3)
    index = rng.integers(0, n)
    for step in range(60):
        teleport = rng.random(E) < 0.05
        index = np.where(teleport, rng.integers(0, n), index + rng.integers(-1, 4, E)) % n
        rows = np.arange(E)
        offset = rng.uniform(-1.3, 1.3, E) * hw[rows, index]
        p = line[rows, index] + offset[:, None] * nrm[rows, index] + rng.uniform(-0.05, 0.05, (E, 3)) * [1, 1, 0]
        yaw = np.arctan2(tan[rows, index, 1], tan[rows, index, 0]) + rng.uniform(-0.6, 0.6, E)
        pos.assign(p.astype(np.float32))
        rot.assign(np.stack([np.zeros(E), np.zeros(E), np.sin(yaw / 2), np.cos(yaw / 2)], 1).astype(np.float32))
        loc.step(ctx)
        box.step(ctx)
        segment, distance = loc.result.segment.numpy(), box.result.distance.numpy()
        for e in valid:
            pe = p[e].astype(np.float64)
            j = segment[e]
            a, b = line[e, j].astype(np.float64), line[e, (j + 1) % n[e]].astype(np.float64)
            t = np.clip(np.dot(pe - a, b - a) / np.dot(b - a, b - a), 0.0, 1.0)
            best, _ = reference_clearance(gen, e, pe)
            assert np.linalg.norm(a + (b - a) * t - pe) == pytest.approx(best, abs=1e-5), (step, e)
            c, s = np.cos(yaw[e]), np.sin(yaw[e])
            corners = [pe + [c * sx * 0.225 - s * sy * 0.1, s * sx * 0.225 + c * sy * 0.1, -0.05]
                       for sx in (1, -1) for sy in (1, -1)]
            expected = min(reference_clearance(gen, e, q)[1] for q in corners)
            assert distance[e] == pytest.approx(expected, abs=1e-4), (step, e)
