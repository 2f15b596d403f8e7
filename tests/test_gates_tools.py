"""Gate components: GateCheckpoints, CenterlineFromGates, DiscCollision, FrameCollision."""

import numpy as np
import pytest
import warp as wp
from prefill import prefill

from trackgen_env import GateGenerator, tools
from trackgen_env.pipeline import presets
from trackgen_env.core.types import CheckpointSet, Contacts, CourseLine

W, H, R = 0.1, 0.1, 0.02  # the spec's gate width, a square opening, the spec's post radius
NO_FIT = {"layout.size": (3.6, 3.6)}  # room for two gates 1.5 m apart, but no course fits (the config refuses it)


def make(num_envs=4, device="cpu", *components, seeds=1, randomize=None, **kwargs):
    spec = presets.gates(num_envs=num_envs, device=device, gate_width=W, **kwargs)
    gen = GateGenerator(spec.with_randomize(randomize) if randomize else spec, seeds=seeds)
    ctx = tools.ComponentContext(gen)
    for c in components:
        ctx.add(c)
        prefill(c.result)  # an output a kernel leaves unwritten must fail, not read as a plausible 0
        c.on_generate(ctx, None)
        c.reset(ctx, None)
    return gen, ctx


def frames(gen):
    """Gate centres [E, G, 3], normals (+x), lateral axes (+y) of the generator's result."""
    p = gen.result.gate_position.numpy().astype(np.float64)
    q = gen.result.gate_orientation.numpy()
    yaw = 2.0 * np.arctan2(q[..., 2], q[..., 3])
    zero = np.zeros_like(yaw)
    normal = np.stack([np.cos(yaw), np.sin(yaw), zero], axis=-1)
    lateral = np.stack([-np.sin(yaw), np.cos(yaw), zero], axis=-1)
    return p, normal, lateral


def vec3s(points, device="cpu"):
    return wp.array(np.asarray(points, dtype=np.float32), dtype=wp.vec3, device=device)


# -- GateCheckpoints ------------------------------------------------------------------------
def test_gate_checkpoints_are_the_gate_openings(device):
    cps = tools.GateCheckpoints()
    gen, _ = make(4, device, cps)
    p, normal, _ = frames(gen)
    cs = cps.result
    assert isinstance(cs, CheckpointSet) and cps.name == "checkpoints" and not cps.is_per_step
    assert np.array_equal(cs.num_checkpoints.numpy(), np.full(4, 7))
    assert np.allclose(cs.position.numpy(), p)
    assert np.allclose(cs.direction.numpy(), normal, atol=1e-6)
    assert np.allclose(cs.half_width.numpy(), W / 2) and np.allclose(cs.half_height.numpy(), H / 2)
    chord = np.linalg.norm(np.roll(p, -1, axis=1) - p, axis=2)
    assert np.allclose(cs.arc_length.numpy(),
                       np.concatenate([np.zeros((4, 1)), np.cumsum(chord, axis=1)[:, :-1]], axis=1), rtol=1e-5)
    assert np.allclose(cs.loop_length.numpy(), chord.sum(axis=1), rtol=1e-5)


def test_masked_on_generate_leaves_unmasked_rows_bit_identical():
    cps, line = tools.GateCheckpoints(), tools.CenterlineFromGates(4)
    gen, ctx = make(6, "cpu", cps, line)
    before = [a.numpy().copy() for a in (*vars(cps.result).values(), *vars(line.result).values())]
    mask_np = np.array([0, 1, 0, 0, 1, 0], dtype=np.int32)
    mask = wp.array(mask_np, device="cpu")
    gen.enqueue(advance=True, mask=mask)
    cps.on_generate(ctx, mask)
    line.on_generate(ctx, mask)
    after = [a.numpy() for a in (*vars(cps.result).values(), *vars(line.result).values())]
    for b, a in zip(before, after):
        for e in range(6):
            assert (b[e].tobytes() == a[e].tobytes()) or mask_np[e], e
    assert np.allclose(cps.result.position.numpy()[1], gen.result.gate_position.numpy()[1])
    assert not np.array_equal(before[0][1], cps.result.position.numpy()[1])


def test_invalid_env_has_no_checkpoints_and_no_course_line():
    cps, line = tools.GateCheckpoints(), tools.CenterlineFromGates()
    with pytest.warns(UserWarning, match="only 0 of 2 envs"):  # a live 3 m disc: 7 gates 1.5 m apart do not fit
        gen, _ = make(2, "cpu", cps, line, randomize=NO_FIT, max_retries=2)
    assert not gen.result.valid.numpy().any()
    assert not cps.result.num_checkpoints.numpy().any() and not line.result.num_points.numpy().any()
    assert np.all(np.isfinite(line.result.centerline.numpy()))


def _progress_course(paths, device="cpu"):
    """Fly env e from paths[e][0] to paths[e][1] (one step each) through a gate course."""
    cps, progress = tools.GateCheckpoints(), tools.Progress()
    _, ctx = make(len(paths), device, cps, progress, seeds=3)
    pos = vec3s([a for a, _ in paths], device)
    progress.bind(position=pos)
    progress.step(ctx)  # the first step records the previous position
    pos.assign(np.asarray([b for _, b in paths], dtype=np.float32))
    progress.step(ctx)
    return progress.result


def test_gate_is_passed_only_through_its_opening_in_order(device):
    cps = tools.GateCheckpoints()
    gen, _ = make(5, device, cps, seeds=3)
    p, n, lat = frames(gen)
    up = np.array([0.0, 0.0, 1.0])
    k = 1  # after a reset the next checkpoint is 1 (checkpoint 0, gate 0, is the start/finish)
    paths = [
        (p[0, k] - 0.3 * n[0, k], p[0, k] + 0.3 * n[0, k]),  # through the opening
        (p[1, k] - 0.3 * n[1, k] + 0.1 * lat[1, k], p[1, k] + 0.3 * n[1, k] + 0.1 * lat[1, k]),  # beside it
        (p[2, k] - 0.3 * n[2, k] + 0.1 * up, p[2, k] + 0.3 * n[2, k] + 0.1 * up),  # over it
        (p[3, k + 1] - 0.3 * n[3, k + 1], p[3, k + 1] + 0.3 * n[3, k + 1]),  # through the wrong gate
        (p[4, k] + 0.3 * n[4, k], p[4, k] - 0.3 * n[4, k]),  # through the opening backwards
    ]
    ev = _progress_course(paths, device)
    assert ev.passed.numpy().tolist() == [1, 0, 0, 0, 0]
    assert ev.next_checkpoint.numpy().tolist() == [2, 1, 1, 1, 1]


def test_flying_the_course_line_passes_every_gate_and_completes_a_lap():
    cps, line, progress = tools.GateCheckpoints(), tools.CenterlineFromGates(8), tools.Progress()
    _, ctx = make(2, "cpu", cps, line, progress, seeds=5)
    pts = line.result.centerline.numpy()
    pos = vec3s(pts[:, 0])
    progress.bind(position=pos)
    progress.step(ctx)
    passes = np.zeros(2, int)
    for k in list(range(1, pts.shape[1])) + [0, 1]:
        pos.assign(pts[:, k])
        progress.step(ctx)
        passes += progress.result.passed.numpy()
    # gate 0 is crossed at the start (the first sample sits on it) and counts at the lap's end
    assert passes.tolist() == [7, 7]
    assert progress.result.laps.numpy().tolist() == [1, 1]


def test_a_fast_body_counts_every_gate_it_flies_through_in_one_step():
    """Gates 1..6 of env 0 put in a row 0.3 m apart along +x and gate 0 after them: one step
    through gates 1 and 2 counts both; the next, through 3..6 and 0, counts those and the lap."""
    cps, progress = tools.GateCheckpoints(), tools.Progress()
    gen, ctx = make(2, "cpu", cps, progress, seeds=3)
    res = gen.result
    num_gates = int(res.num_gates.numpy()[0])
    assert num_gates == 7
    position, orientation = res.gate_position.numpy(), res.gate_orientation.numpy()
    x = 0.3 * np.arange(num_gates, dtype=np.float32)
    x[0] = 0.3 * num_gates  # gate 0 (start/finish) last in the row
    position[0, :num_gates] = np.stack([x, np.zeros_like(x), np.ones_like(x)], axis=-1)
    orientation[0, :num_gates] = [0.0, 0.0, 0.0, 1.0]  # normal +x
    res.gate_position.assign(position)
    res.gate_orientation.assign(orientation)
    for c in (cps, progress):  # a gate row written in place: refresh the components
        c.on_generate(ctx, None)
        c.reset(ctx, None)
    start = res.start_position.numpy()[1]
    pos = vec3s([[0.15, 0.0, 1.0], start])
    progress.bind(position=pos)
    progress.step(ctx)  # the first step records the previous position
    ev = progress.result
    for x_to, passed, nxt, laps in ((0.65, 2, 3, 0), (0.3 * num_gates + 0.1, 5, 1, 1)):
        pos.assign(np.float32([[x_to, 0.0, 1.0], start]))
        progress.step(ctx)
        assert (ev.passed.numpy()[0], ev.next_checkpoint.numpy()[0], ev.laps.numpy()[0]) == (passed, nxt, laps)
        assert ev.lap_completed.numpy()[0] == laps
    assert ev.checkpoints_passed.numpy().tolist() == [num_gates, 0]  # env 1 did not move


# -- CenterlineFromGates --------------------------------------------------------------------
def test_course_line_passes_through_every_gate_along_its_normal(device):
    line = tools.CenterlineFromGates(8)
    gen, _ = make(4, device, line)
    cl = line.result
    assert isinstance(cl, CourseLine) and line.utility is cl and line.name == "centerline"
    p, n, _ = frames(gen)
    assert np.array_equal(cl.num_points.numpy(), np.full(4, 56))
    pts, tan, nor = cl.centerline.numpy(), cl.tangent.numpy(), cl.normal.numpy()
    assert np.allclose(pts[:, ::8], p, atol=1e-5)
    assert np.allclose(tan[:, ::8], n, atol=1e-5)
    assert np.allclose(np.linalg.norm(tan, axis=2), 1.0, atol=1e-5)
    assert np.allclose(nor[..., 2], 0.0) and np.allclose(np.sum(nor * tan, axis=2), 0.0, atol=1e-5)
    assert np.allclose(nor[..., :2],
                       np.stack([-tan[..., 1], tan[..., 0]], axis=-1)
                       / np.linalg.norm(tan[..., :2], axis=2, keepdims=True), atol=1e-5)
    seg = np.linalg.norm(np.roll(pts, -1, axis=1) - pts, axis=2)
    assert np.allclose(cl.arc_length.numpy(),
                       np.concatenate([np.zeros((4, 1)), np.cumsum(seg, axis=1)[:, :-1]], axis=1), rtol=1e-4)
    assert np.allclose(cl.loop_length.numpy(), seg.sum(axis=1), rtol=1e-5)
    assert np.allclose(cl.half_width.numpy(), W / 2)


def test_course_line_curvature_is_the_signed_horizontal_curvature():
    line = tools.CenterlineFromGates(32)
    make(8, "cpu", line, seeds=11)
    cl = line.result
    pts, kappa = cl.centerline.numpy()[..., :2].astype(np.float64), cl.curvature.numpy()
    # Menger curvature of three consecutive samples, signed by the turn (left > 0)
    a, b, c = np.roll(pts, 1, axis=1), pts, np.roll(pts, -1, axis=1)
    cross = (b - a)[..., 0] * (c - b)[..., 1] - (b - a)[..., 1] * (c - b)[..., 0]
    menger = 2 * cross / (np.linalg.norm(b - a, axis=2) * np.linalg.norm(c - b, axis=2) * np.linalg.norm(c - a, axis=2))
    # away from the gates: the segments meet with one tangent but their curvatures may jump there
    inner = np.arange(kappa.shape[1]) % 32 != 0
    assert np.allclose(kappa[:, inner], menger[:, inner], atol=0.01 + 0.01 * np.abs(kappa).max())


def test_localizer_reads_the_course_line():
    line, loc = tools.CenterlineFromGates(8), tools.Localizer(source="centerline")
    gen, ctx = make(3, "cpu", line, loc)
    p, _, _ = frames(gen)
    loc.bind(position=vec3s(p[:, 2]))
    loc.step(ctx)
    assert np.allclose(loc.result.s.numpy(), line.result.arc_length.numpy()[:, 16], atol=1e-4)
    assert np.allclose(loc.result.lateral_offset.numpy(), 0.0, atol=1e-5)


@pytest.mark.parametrize("value, error",
                         [(1, ValueError), (0, ValueError), (2.0, TypeError), (True, TypeError), ("8", TypeError)])
def test_samples_per_gate_is_checked(value, error):
    with pytest.raises(error, match=r"samples_per_gate must be (an int|>= 2), got"):  # checks.check_int
        tools.CenterlineFromGates(value)


# -- DiscCollision --------------------------------------------------------------------------
def _step(component, ctx, **arrays):
    component.bind(**arrays)
    component.step(ctx)
    return component.result.hit.numpy(), component.result.distance.numpy()


def test_post_touch_is_a_hit_and_clear_flight_is_not(device):
    disc = tools.DiscCollision(R)
    gen, ctx = make(5, device, disc)
    assert disc.name == "collision" and disc.is_per_step
    p, n, lat = frames(gen)
    post = p[:, 3] + (W / 2 + R) * lat[:, 3]  # the left post's axis at the gate's height
    points = [
        p[0, 3],  # the opening's centre: clear by the half width
        post[1],  # on the post's axis
        post[2] - lat[2, 3] * (R - 0.001),  # just inside the post's surface
        post[3] + np.array([0.0, 0.0, H / 2 + 0.05]),  # over the post's top
        np.array([post[4, 0], post[4, 1], 0.01]),  # at the post's foot
    ]
    hit, dist = _step(disc, ctx, position=vec3s(points, device))
    assert isinstance(disc.result, Contacts)
    assert hit.tolist() == [0, 1, 1, 0, 1]
    assert dist[0] == pytest.approx(W / 2, abs=1e-5)
    assert dist[1] == pytest.approx(-R, abs=1e-5) and dist[3] == pytest.approx(0.05, abs=1e-5)


def test_a_non_finite_position_is_a_post_hit_as_in_the_other_collisions():
    disc = tools.DiscCollision(R)
    _, ctx = make(3, "cpu", disc, seeds=1)
    hit, dist = _step(disc, ctx, position=vec3s([[np.inf, 0, 1], [np.nan, 0, 1], [0, 0, -1]]))
    assert hit.tolist() == [1, 1, 0] and np.isnan(dist[:2]).all() and np.isfinite(dist[2])


def test_disc_collision_ignores_the_ground_and_flags_invalid_envs():
    disc = tools.DiscCollision(R)
    with pytest.warns(UserWarning, match="only 0 of 2 envs"):
        _, ctx = make(2, "cpu", disc, randomize=NO_FIT, max_retries=2)
    hit, dist = _step(disc, ctx, position=vec3s([[0, 0, 1], [0, 0, 1]]))
    assert hit.tolist() == [1, 1] and dist.tolist() == [0.0, 0.0]  # no course: an invalid env
    disc2 = tools.DiscCollision(R)
    _, ctx2 = make(1, "cpu", disc2, seeds=1)
    far = np.array([0.0, 0.0, -1.0])  # under the ground, far from every post
    hit, _ = _step(disc2, ctx2, position=vec3s([far]))
    assert hit.tolist() == [0]


@pytest.mark.parametrize("r, error",
                         [(0.0, ValueError), (-0.1, ValueError), (float("inf"), ValueError), ("0.02", TypeError),
                          (True, TypeError)])
def test_post_radius_is_checked(r, error):
    with pytest.raises(error, match="post radius"):
        tools.DiscCollision(r)


def test_collision_step_replays_from_a_graph():
    disc = tools.DiscCollision(R)
    gen, ctx = make(3, "cpu", disc)
    p, _, lat = frames(gen)
    pos = vec3s(p[:, 0])
    disc.bind(position=pos)
    disc.step(ctx)
    with wp.ScopedCapture(device="cpu") as cap:
        disc.step(ctx)
    pos.assign((p[:, 0] + (W / 2 + R) * lat[:, 0]).astype(np.float32))
    wp.capture_launch(cap.graph)
    assert disc.result.hit.numpy().tolist() == [1, 1, 1]


# -- FrameCollision -------------------------------------------------------------------------
def test_bar_touch_is_a_hit_and_the_opening_is_clear(device):
    frame = tools.FrameCollision(0.02)
    gen, ctx = make(4, device, frame)
    p, n, lat = frames(gen)
    up = np.array([0.0, 0.0, 1.0])
    points = [
        p[0, 2],  # the opening's centre
        p[1, 2] + (H / 2 + 0.01) * up,  # inside the top bar
        p[2, 2] - (W / 2 + 0.01) * lat[2, 2],  # inside the right bar
        p[3, 2] + (W / 2 + 0.01) * lat[3, 2] + 0.2 * n[3, 2],  # beside the bar, 0.2 m in front of it
    ]
    hit, dist = _step(frame, ctx, position=vec3s(points, device))
    assert frame.name == "collision"
    assert hit.tolist() == [0, 1, 1, 0]
    assert dist[0] == pytest.approx(W / 2, abs=1e-5)
    assert dist[3] == pytest.approx(0.2 - 0.01, abs=1e-5)


def test_box_body_against_the_frame(device):
    frame = tools.FrameCollision(0.02)
    gen, ctx = make(3, device, frame)
    p, n, _ = frames(gen)
    q = gen.result.gate_orientation.numpy()[:, 1]
    centres = [p[0, 1], p[1, 1], p[2, 1] - 0.5 * n[2, 1]]
    half = [[0.02, 0.02, 0.02], [0.02, 0.07, 0.01], [0.02, 0.3, 0.3]]  # fits; wider than the opening; in front
    hit, dist = _step(frame, ctx, position=vec3s(centres, device),
                      orientation=wp.array(q, dtype=wp.quat, device=device),
                      half_extents=vec3s(half, device))
    assert hit.tolist() == [0, 1, 0]
    assert dist[0] == pytest.approx(W / 2 - 0.02, abs=1e-5)
    assert dist[2] == pytest.approx(0.5 - 0.02 - 0.01, abs=1e-5)


def test_the_distance_does_not_depend_on_the_order_of_the_gates():
    """The frame test starts at the nearest gate and skips what cannot beat the best so far: the
    distance, of a point and of a box, is the same bytes with every env's gates in another order."""
    E = 16
    frame = tools.FrameCollision(0.02)
    gen, ctx = make(E, "cpu", frame, seeds=4)
    r = gen.result
    n = r.num_gates.numpy()
    p = r.gate_position.numpy()
    rng = np.random.default_rng(0)
    near = p[np.arange(E), rng.integers(0, n)]  # beside a random gate of each env, and farther out
    points = np.concatenate([near + rng.normal(0.0, 0.05, (E, 3)), near + rng.normal(0.0, 1.0, (E, 3))])
    quats = rng.normal(size=(2 * E, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    half = np.full((2 * E, 3), [0.03, 0.03, 0.01])

    def distances():
        out = []
        for k in range(2):
            rows = slice(k * E, (k + 1) * E)
            # copies: on the CPU a result's numpy() is a view that the next step overwrites
            out.append(_step(frame, ctx, position=vec3s(points[rows]))[1].copy())
            out.append(_step(frame, ctx, position=vec3s(points[rows]),
                             orientation=wp.array(quats[rows].astype(np.float32), dtype=wp.quat),
                             half_extents=vec3s(half[rows]))[1].copy())
        return np.concatenate(out)

    before = distances()
    # a point's distance is the least over every gate's four bars (the kernel's _bar), in NumPy
    w, h, t = r.gate_width.numpy(), r.gate_height.numpy(), 0.02
    quat = r.gate_orientation.numpy().astype(np.float64)
    for k in range(2):
        for e in range(E):
            best = np.inf
            for g in range(n[e]):
                x, y, z, s_ = quat[e, g]
                rot = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - s_ * z), 2 * (x * z + s_ * y)],
                                [2 * (x * y + s_ * z), 1 - 2 * (x * x + z * z), 2 * (y * z - s_ * x)],
                                [2 * (x * z - s_ * y), 2 * (y * z + s_ * x), 1 - 2 * (x * x + y * y)]])
                local = rot.T @ (points[k * E + e] - p[e, g])
                W_, H_ = w[e], h[e]
                for centre, half_ in (([0, 0, (H_ + t) / 2], [t / 2, W_ / 2 + t, t / 2]),
                                      ([0, 0, -(H_ + t) / 2], [t / 2, W_ / 2 + t, t / 2]),
                                      ([0, (W_ + t) / 2, 0], [t / 2, t / 2, H_ / 2]),
                                      ([0, -(W_ + t) / 2, 0], [t / 2, t / 2, H_ / 2])):
                    d = np.abs(local - centre) - half_
                    best = min(best, np.linalg.norm(np.maximum(d, 0.0)) + min(d.max(), 0.0))
            assert before[2 * k * E + e] == pytest.approx(best, abs=1e-5)
    q = r.gate_orientation.numpy()
    for e in range(E):  # reverse, then rotate, each env's ring of gates in place
        order = np.roll(np.arange(n[e])[::-1], e)
        p[e, : n[e]], q[e, : n[e]] = p[e, order], q[e, order]
    r.gate_position.assign(p)
    r.gate_orientation.assign(q)
    after = distances()
    assert np.array_equal(before, after) and np.all(np.isfinite(before)) and (before < 0.5).any()


def test_the_distance_holds_at_a_float32_near_tie_and_with_a_nan_gate_orientation():
    """The gate test's sphere bound is safe against rounding and NaN: a body whose nearest bar is a
    frame corner of gate A, while gate B's centre is nearer (B's distance 1 ulp above A's in some
    envs: B is tested first, and a bound rounded up would skip A), reads the least of the two
    gates' distances alone; a gate with a NaN orientation, far away, is a hit whatever its place
    (its bars read 0)."""
    E = 400
    frame = tools.FrameCollision(0.02)
    gen, ctx = make(E, "cpu", frame, seeds=1)
    r = gen.result
    n = int(r.num_gates.numpy().min())
    assert n >= 3 and np.all(r.num_gates.numpy() == n)
    body = np.array([0.025403466, 1.3209803, 1.3209803], np.float32)
    x = np.float32(1.142862) + np.arange(-E // 2, E // 2).astype(np.float32) * np.spacing(np.float32(1.1))
    gates = np.full((E, r.gate_position.shape[1], 3), 100.0, np.float32)  # the others far away
    gates[:, 0] = 0.0  # A
    gates[:, 1] = body - np.stack([x, np.zeros(E), np.full(E, 0.51)], 1)  # B, a bar's face nearest
    quats = np.zeros((E, r.gate_orientation.shape[1], 4), np.float32)
    quats[..., 3] = 1.0
    r.gate_width.assign(np.ones(E, np.float32))
    r.gate_height.assign(np.ones(E, np.float32))

    def distance(order, orientation):
        pos, quat = gates.copy(), orientation.copy()
        pos[:, :n], quat[:, :n] = gates[:, order], orientation[:, order]
        r.gate_position.assign(pos)
        r.gate_orientation.assign(quat)
        hit, d = _step(frame, ctx, position=vec3s(np.tile(body, (E, 1))))
        return hit.copy(), d.copy()

    a_first, b_first = list(range(n)), [1, 0, *range(2, n)]
    only_a = distance([0, *range(2, n), 2], quats)[1]  # B's place taken by a far gate
    only_b = distance([1, *range(2, n), 2], quats)[1]
    assert ((only_b > only_a) & (only_b - only_a < 1e-6)).any()  # the near tie is there
    for order in (a_first, b_first):
        assert np.array_equal(distance(order, quats)[1], np.minimum(only_a, only_b))
    bad = quats.copy()
    bad[:, 2] = np.nan  # a far gate, skipped by a bound that ignored its orientation
    for order in (a_first, b_first, [*range(2, n), 0, 1]):
        hit, d = distance(order, bad)
        assert hit.all() and not d.any()


@pytest.mark.parametrize("t, error", [(0.0, ValueError), (-1.0, ValueError), (None, TypeError)])
def test_bar_thickness_is_checked(t, error):
    with pytest.raises(error, match="bar_thickness"):
        tools.FrameCollision(t)


def test_step_before_bind_is_refused():
    frame = tools.FrameCollision()
    _, ctx = make(2, "cpu", frame)
    with pytest.raises(RuntimeError, match="call bind\\(\\) before step\\(\\)"):
        frame.step(ctx)


def test_gate_components_refuse_a_track_generator():
    from trackgen_env import TrackGenConfig, TrackGenerator

    ctx = tools.ComponentContext(TrackGenerator(TrackGenConfig(num_envs=2, device="cpu")))
    with pytest.raises(ValueError, match="gate_position"):
        ctx.add(tools.GateCheckpoints())


def test_checkpoint_sampler_starts_in_a_gate_facing_through_it():
    cps = tools.GateCheckpoints()
    gen, ctx = make(16, "cpu", cps, seeds=6)
    pos = wp.zeros(16, dtype=wp.vec3)
    quat = wp.zeros(16, dtype=wp.quat)
    index = wp.zeros(16, dtype=wp.int32)
    cps.utility.sample(None, pos, quat, index)
    p, n, _ = frames(gen)
    k = index.numpy()
    assert len(set(k.tolist())) > 1 and np.all((k >= 0) & (k < 7))
    assert np.allclose(pos.numpy(), p[np.arange(16), k], atol=1e-6)
    assert np.allclose(quat.numpy(), gen.result.gate_orientation.numpy()[np.arange(16), k], atol=1e-6)
