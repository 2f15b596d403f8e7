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
    def snap():
        return [a.numpy().copy() for a in (cp.result.position, cp.result.num_checkpoints, pr.result.next_checkpoint,
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
    """(closest segment's distance, clearance) of ``p`` by brute force over every segment, float64:
    the clearance is the half width minus the horizontal distance to the closest point."""
    n = int(gen.result.num_points.numpy()[e])
    a = gen.result.centerline.numpy()[e, :n].astype(np.float64)
    hw = gen.result.half_width.numpy()[e, :n].astype(np.float64)
    b, hw1 = np.roll(a, -1, 0), np.roll(hw, -1, 0)
    ab = b - a
    t = np.clip(((p - a) * ab).sum(-1) / (ab * ab).sum(-1), 0.0, 1.0)
    q = a + ab * t[:, None]
    dist = np.linalg.norm(p - q, axis=1)
    j = int(np.argmin(dist))
    return dist[j], hw[j] * (1 - t[j]) + hw1[j] * t[j] - np.linalg.norm((p - q[j])[:2])


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


@pytest.mark.parametrize("backend", ["segments", "sdf"])
def test_a_body_teleported_far_from_a_given_centerline_is_off_the_band(backend):
    """A course from a ``"centerline.xy"`` input: a thin spike 100 m long and 2 cm wide at its
    base. The resampled line turns back at the tip within one point spacing, its normals
    there across the spike, so the component along them of a body far beyond the tip is
    near 0 (issue 9: a car at x = -442 m read as on the band, offset 0). Teleported there, the body
    is off the band and the Localizer's frame names the tip: the line point at s is the
    closest to the body, and |lateral offset| is the distance to it."""
    from trackgen_env.course import Course
    from trackgen_env.tools import BandCollision, Localizer

    w = 0.01
    spike = np.float32([[50.1, w * 0.501, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [100.0, -w, 1.0, 1.0], [100.0, w, 1.0, 1.0]])
    cfg = TrackGenConfig(num_envs=1, device="cpu", source="centerline", max_input_points=8, point_spacing=0.5,
                         max_loop_length=400.0)
    gen = TrackGenerator(cfg, seeds=0, prepare=False)
    rows = np.zeros((1, 8, 4), np.float32)
    rows[0, :4] = spike
    gen.inputs["centerline.xy"].assign(wp.array(rows, dtype=wp.vec4, device="cpu"))
    gen.inputs["centerline.count"].assign(np.int32([4]))
    gen.generate()
    assert gen.result.valid.numpy()[0] == 1
    course = Course.track(gen, checkpoint_spacing=1.0, collision=BandCollision(backend), extra=[Localizer()])
    pos = wp.array(np.float32([[50.0, 0.0, 0.0]]), dtype=wp.vec3, device="cpu")
    course.bind(position=pos)
    res = course.step()
    assert res.contacts.hit.numpy()[0] == 0  # on the band: the warm start of the next search
    body = np.float32([-442.0, 0.0, 0.0])
    pos.assign(body[None])
    res = course.step()
    assert res.contacts.hit.numpy()[0] == 1
    frame = course.components["localizer"].result
    n = int(gen.result.num_points.numpy()[0])
    line, arc = gen.result.centerline.numpy()[0, :n], gen.result.arc_length.numpy()[0, :n]
    s, lateral = float(frame.s.numpy()[0]), float(frame.lateral_offset.numpy()[0])
    j = int(np.searchsorted(arc, s, side="right") - 1)  # the line point at s
    t = (s - arc[j]) / ((arc[j + 1] if j + 1 < n else gen.result.loop_length.numpy()[0]) - arc[j])
    at_s = line[j] + (line[(j + 1) % n] - line[j]) * t
    closest, _ = reference_clearance(gen, 0, body.astype(np.float64))
    assert np.linalg.norm(body - at_s) == pytest.approx(closest, abs=1e-3)  # s names the closest point
    assert abs(lateral) == pytest.approx(closest, abs=1e-3)
    assert closest > 440.0
