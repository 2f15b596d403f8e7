"""Runtime components of the track family: Checkpoints, Progress, BandCollision, Localizer.

The fixture is a hand-built batch of circles (``CircleGenerator``: a TrackResult from
NumPy and the generator surface the components read), so every expected value is
analytic. Components are used standalone, through a ``ComponentContext``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import warp as wp
from hypothesis import given, settings
from hypothesis import strategies as st
from prefill import prefill

from trackgen_env.core.polyline import segment_param
from trackgen_env.core.seeding import SeedState
from trackgen_env.tools import BandCollision, Checkpoints, Component, ComponentContext, Localizer, Progress
from trackgen_env.core.types import CheckpointSet, CourseLine, TrackLayout, TrackResult

HALF_WIDTH = 0.5  # [m] band half width of every fixture circle
CAPACITY = 72  # P: centreline capacity of the fixture


def sagitta(radius: float, num_points: int) -> float:
    """[m] largest gap between a circle and its inscribed polygon: the geometric tolerance."""
    return radius * (1.0 - math.cos(math.pi / num_points))


class CircleGenerator:
    """The generator surface over circles (counter-clockwise, point 0 at angle 0).

    ``circles[e] = (radius, num_points, (cx, cy))`` or None for an invalid env. Arc
    lengths are those of the polygon (chords), as a resampled centreline has them.
    """

    family = "track"

    def __init__(self, circles, device, *, declare_max_length=True, seed=7):
        self.device = wp.get_device(device)
        self.num_envs = len(circles)
        self.stream = None
        self.seeds = SeedState(self.num_envs, self.device, seeds=seed)
        E, P = self.num_envs, CAPACITY
        z3 = lambda: np.zeros((E, P, 3), np.float32)  # noqa: E731
        self.np = dict(centerline=z3(), tangent=z3(), normal=z3(), arc_length=np.zeros((E, P), np.float32),
                       curvature=np.zeros((E, P), np.float32), half_width=np.zeros((E, P), np.float32),
                       num_points=np.zeros(E, np.int32), loop_length=np.zeros(E, np.float32),
                       start_position=np.zeros((E, 3), np.float32),
                       start_orientation=np.tile(np.float32([0, 0, 0, 1]), (E, 1)),
                       valid=np.zeros(E, np.int32), generation=np.zeros(E, np.int32))
        for e, c in enumerate(circles):
            self.set_circle(e, c)
        dtypes = dict(centerline=wp.vec3, tangent=wp.vec3, normal=wp.vec3, start_position=wp.vec3,
                      start_orientation=wp.quat)
        self.result = TrackResult(**{k: wp.array(v,
                                                 dtype=dtypes.get(k, wp.int32 if v.dtype == np.int32 else wp.float32),
                                                 device=self.device)
                                     for k, v in self.np.items()})
        longest = float(self.np["loop_length"].max())
        self.layout = TrackLayout(E, P, longest if declare_max_length else None)

    def set_circle(self, e, circle):
        a = self.np
        if circle is None:
            a["valid"][e], a["num_points"][e] = 0, 0
            return
        radius, n, (cx, cy) = circle
        th = 2.0 * np.pi * np.arange(n) / n
        chord = 2.0 * radius * np.sin(np.pi / n)
        pts = np.stack([cx + radius * np.cos(th), cy + radius * np.sin(th), np.zeros(n)], -1)
        tan = np.stack([-np.sin(th), np.cos(th), np.zeros(n)], -1)
        pad = lambda v: np.concatenate([v, np.repeat(v[-1:], CAPACITY - n, 0)])  # noqa: E731
        a["centerline"][e] = pad(pts)
        a["tangent"][e] = pad(tan)
        a["normal"][e] = pad(np.stack([-tan[:, 1], tan[:, 0], np.zeros(n)], -1))  # z x tangent
        a["arc_length"][e] = pad(chord * np.arange(n))
        a["curvature"][e] = 1.0 / radius
        a["half_width"][e] = HALF_WIDTH
        a["num_points"][e], a["loop_length"][e], a["valid"][e] = n, chord * n, 1
        a["start_position"][e] = pts[0]

    def set_polyline(self, e, points):
        """A closed line through ``points`` ``[N, 2]`` or ``[N, 3]`` [m] (N <= CAPACITY), as a
        resampled centreline has it: tangents from the chord of each point's neighbours (0
        where the chord vanishes, as at the tip of an out-and-back line), the horizontal left
        normal, arc lengths of the chords."""
        a = self.np
        pts = np.zeros((len(points), 3), np.float32)
        pts[:, : np.shape(points)[1]] = points
        n = len(pts)
        chord = np.roll(pts, -1, 0) - np.roll(pts, 1, 0)
        length = np.linalg.norm(chord, axis=1, keepdims=True)
        tan = np.where(length > 0, chord / np.maximum(length, 1e-30), 0.0)
        flat = np.linalg.norm(tan[:, :2], axis=1, keepdims=True)
        left = np.where(flat > 0, np.stack([-tan[:, 1], tan[:, 0], np.zeros(n)], -1) / np.maximum(flat, 1e-30), 0.0)
        seg = np.linalg.norm(np.roll(pts, -1, 0) - pts, axis=1)
        pad = lambda v: np.concatenate([v, np.repeat(v[-1:], CAPACITY - n, 0)])  # noqa: E731
        a["centerline"][e] = pad(pts)
        a["tangent"][e] = pad(tan)
        a["normal"][e] = pad(left)
        a["arc_length"][e] = pad(np.concatenate([[0.0], np.cumsum(seg)[:-1]]))
        a["curvature"][e] = 0.0
        a["half_width"][e] = HALF_WIDTH
        a["num_points"][e], a["loop_length"][e], a["valid"][e] = n, seg.sum(), 1
        a["start_position"][e] = pts[0]

    def commit(self):
        """Write the NumPy rows into the stable result arrays (in place)."""
        for k, v in self.np.items():
            getattr(self.result, k).assign(v)


CIRCLES = [(5.0, 64, (0.0, 0.0)), (4.0, 48, (20.0, -3.0)), None]


def circle_point(circle, angle, radius=None, z=0.0):
    r, _, (cx, cy) = circle
    r = r if radius is None else radius
    return np.float32([cx + r * math.cos(angle), cy + r * math.sin(angle), z])


def make(device, *components, circles=CIRCLES, **gen_kwargs):
    gen = CircleGenerator(circles, device, **gen_kwargs)
    ctx = ComponentContext(gen)
    for c in components:
        ctx.add(c)
        if isinstance(c, (Checkpoints, Progress, BandCollision, Localizer)):
            # an output a kernel leaves unwritten must fail, not read as the 0 it was allocated with
            prefill(c.result, *([c.clipped] if isinstance(c, Checkpoints) else []))
    for c in components:
        c.on_generate(ctx, None)
    for c in reversed(components):
        c.reset(ctx, None)
    return gen, ctx


def yaw_quat(yaw):
    return np.float32([0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)])


def rows(result):
    """Host copies of every array field of a result dataclass."""
    return {k: getattr(result, k).numpy().copy() for k in result.__dataclass_fields__}


# -- Checkpoints ------------------------------------------------------------------------
def test_checkpoints_are_evenly_spaced_on_the_centerline(device):
    cp = Checkpoints(1.0)
    gen, _ = make(device, cp)
    res = rows(cp.result)
    for e in (0, 1):
        radius, n_pts, center = CIRCLES[e]
        length = gen.np["loop_length"][e]
        n = max(3, math.floor(length / 1.0))
        assert res["num_checkpoints"][e] == n
        assert res["loop_length"][e] == pytest.approx(length, rel=1e-6)
        s = np.arange(n) * length / n
        np.testing.assert_allclose(res["arc_length"][e, :n], s, rtol=1e-5, atol=1e-5)
        # checkpoint k lies on the polygon at arc length s_k: angle ~ 2 pi s_k / L
        angle = 2 * np.pi * s / length
        expect = np.stack([center[0] + radius * np.cos(angle), center[1] + radius * np.sin(angle), np.zeros(n)], -1)
        np.testing.assert_allclose(res["position"][e, :n], expect, atol=sagitta(radius, n_pts) + 1e-4)
        np.testing.assert_allclose(res["direction"][e, :n], np.stack([-np.sin(angle), np.cos(angle), np.zeros(n)], -1),
                                   atol=math.pi / n_pts)
        np.testing.assert_allclose(res["half_width"][e, :n], HALF_WIDTH)
        assert np.all(res["half_height"][e] == np.float32(1e30))
    # checkpoint 0 is the start/finish line: exactly centreline point 0
    np.testing.assert_array_equal(res["position"][:2, 0], gen.np["centerline"][:2, 0])


def test_checkpoints_auto_capacity_uses_declared_max_loop_length(device):
    cp = Checkpoints(0.5)
    gen, _ = make(device, cp)
    assert cp.capacity == max(3, math.ceil(gen.layout.max_loop_length / 0.5))
    assert cp.result.position.shape == (3, cp.capacity)


def test_checkpoints_auto_capacity_reads_back_valid_envs_when_undeclared(device):
    cp = Checkpoints(0.5, max_checkpoints=None)
    gen, _ = make(device, cp, declare_max_length=False)
    assert gen.layout.max_loop_length is None
    assert cp.capacity == math.ceil(float(gen.np["loop_length"][:2].max()) / 0.5)


def test_checkpoints_clip_to_capacity_and_flag_clipped_envs(device):
    small = [(5.0, 64, (0.0, 0.0)), (0.6, 16, (9.0, 9.0)), None]  # loops of ~31.4 m and ~3.8 m
    cp = Checkpoints(1.0, max_checkpoints=10)
    make(device, cp, circles=small)
    np.testing.assert_array_equal(cp.result.num_checkpoints.numpy(), [10, 3, 0])
    np.testing.assert_array_equal(cp.clipped.numpy(), [1, 0, 0])
    length = cp.result.loop_length.numpy()[0]
    np.testing.assert_allclose(cp.result.arc_length.numpy()[0], np.arange(10) * length / 10, rtol=1e-5)


def test_checkpoints_invalid_env_has_none(device):
    cp = Checkpoints(1.0)
    make(device, cp)
    assert cp.result.num_checkpoints.numpy()[2] == 0
    assert cp.result.loop_length.numpy()[2] == 0.0


@pytest.mark.parametrize(
    "args, error",
    [(("1",), TypeError), ((True,), TypeError), ((0.0,), ValueError), ((-1.0,), ValueError), ((math.nan,), ValueError),
     ((1.0, 2), ValueError), ((1.0, 3.5), TypeError), ((1.0, "many"), TypeError), ((1.0, True), TypeError)],
)
def test_checkpoints_refuse_bad_arguments(args, error):
    with pytest.raises(error):
        Checkpoints(*args)


def test_checkpoints_masked_on_generate_leaves_unmasked_rows_bit_identical(device):
    cp = Checkpoints(1.0)
    gen, ctx = make(device, cp)
    before = rows(cp.result)
    clipped = cp.clipped.numpy().copy()
    gen.set_circle(0, (4.5, 60, (1.0, 2.0)))
    gen.set_circle(1, (3.0, 40, (-5.0, 0.0)))
    gen.commit()
    cp.on_generate(ctx, wp.array([0, 1, 0], dtype=wp.int32, device=device))
    after = rows(cp.result)
    for k in before:
        np.testing.assert_array_equal(after[k][0], before[k][0], err_msg=k)
        np.testing.assert_array_equal(after[k][2], before[k][2], err_msg=k)
    np.testing.assert_array_equal(cp.clipped.numpy()[[0, 2]], clipped[[0, 2]])
    assert not np.array_equal(after["position"][1], before["position"][1])
    assert after["loop_length"][1] == pytest.approx(gen.np["loop_length"][1])


def test_checkpoint_sampler_draws_checkpoint_poses_deterministically(device):
    cp = Checkpoints(1.0)
    gen, ctx = make(device, cp)
    sampler = cp.utility
    E = ctx.num_envs
    pos = wp.array(np.full((E, 3), np.inf, np.float32), dtype=wp.vec3, device=device)
    quat = wp.array(np.full((E, 4), np.inf, np.float32), dtype=wp.quat, device=device)
    idx = wp.full(E, -7, dtype=wp.int32, device=device)
    draws = []
    for _ in range(6):
        sampler.sample(wp.array([1, 1, 0], dtype=wp.int32, device=device), pos, quat, idx)
        k = idx.numpy()
        draws.append(k[:2].copy())
        res = rows(cp.result)
        for e in (0, 1):
            assert 0 <= k[e] < res["num_checkpoints"][e]
            np.testing.assert_array_equal(pos.numpy()[e], res["position"][e, k[e]])
            d = res["direction"][e, k[e]]
            np.testing.assert_allclose(quat.numpy()[e], yaw_quat(math.atan2(d[1], d[0])), atol=1e-6)
        # the unmasked env is untouched
        assert k[2] == -7 and np.all(np.isinf(pos.numpy()[2]))
    assert len({tuple(d) for d in draws}) > 1  # successive calls draw anew
    # a new generation restarts each env's sequence: the same seeds and counters replay it
    cp.on_generate(ctx, None)
    again = []
    for _ in range(6):
        sampler.sample(None, pos, quat, idx)
        again.append(idx.numpy()[:2].copy())
    np.testing.assert_array_equal(np.array(again), np.array(draws))
    assert idx.numpy()[2] == 0  # an env without checkpoints gets index 0


# -- Progress ---------------------------------------------------------------------------
class Driver:
    """Steps a ``Progress`` (and whatever else is bound to ``pos``) through scripted positions."""

    def __init__(self, device, *components, circles=CIRCLES):
        self.components = components
        self.gen, self.ctx = make(device, *components, circles=circles)
        self.pos = wp.zeros(self.ctx.num_envs, dtype=wp.vec3, device=device)
        for c in components:
            if c.inputs:
                c.bind(position=self.pos)

    def step(self, positions):
        self.pos.assign(np.asarray(positions, np.float32))
        for c in self.components:
            if c.is_per_step:
                c.step(self.ctx)


def lap_positions(angles, circles=CIRCLES, radius_offset=0.0):
    out = []
    for a in angles:
        out.append([circle_point(c, a, c[0] + radius_offset) if c else np.zeros(3, np.float32) for c in circles])
    return out


def test_progress_counts_passes_in_order_and_completes_a_lap(device):
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    n = cp.result.num_checkpoints.numpy()
    passed = np.zeros(3, int)
    laps_done = np.zeros(3, int)
    fractions = []
    angles = np.arange(0.0, 2 * math.pi + 0.05, 0.01)
    for i, p in enumerate(lap_positions(angles)):
        drv.step(p)
        ev = rows(pr.result)
        passed += ev["passed"]
        laps_done += ev["lap_completed"]
        fractions.append(ev["lap_fraction"][0])
        if i == 0:
            assert ev["next_checkpoint"][0] == 1 and ev["checkpoints_passed"][0] == 0
    ev = rows(pr.result)
    np.testing.assert_array_equal(passed[:2], n[:2])  # every checkpoint once, checkpoint 0 last
    np.testing.assert_array_equal(ev["checkpoints_passed"][:2], n[:2])
    np.testing.assert_array_equal(laps_done, [1, 1, 0])
    np.testing.assert_array_equal(ev["laps"], [1, 1, 0])
    np.testing.assert_array_equal(ev["next_checkpoint"][:2], [1, 1])
    np.testing.assert_array_equal(ev["wrong_way"], [0, 0, 0])
    assert ev["passed"].sum() == 0 and ev["checkpoints_passed"][2] == 0  # invalid env passes nothing
    lap = np.array(fractions[: int(2 * math.pi / 0.01) - 1])
    assert np.all(np.diff(lap) >= 0) and lap.max() == pytest.approx((n[0] - 1) / n[0])
    assert fractions[-1] < 0.1  # a new lap began


def test_progress_lap_completes_only_on_crossing_checkpoint_zero(device):
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    n = int(cp.result.num_checkpoints.numpy()[0])
    length = float(cp.result.loop_length.numpy()[0])
    completed_at = []
    for a in np.arange(0.0, 2 * math.pi + 0.05, 0.01):
        drv.step(lap_positions([a])[0])
        if pr.result.lap_completed.numpy()[0]:
            completed_at.append(a)
    assert len(completed_at) == 1
    assert 2 * math.pi <= completed_at[0] < 2 * math.pi + 0.011  # the step that crosses angle 0 again
    assert n == math.floor(length)


def test_progress_wrong_way_steps_back_until_passed_forward_again(device):
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    n = int(cp.result.num_checkpoints.numpy()[0])
    a1 = 2 * math.pi / n  # checkpoint 1 (approximately: the polygon's arc length)
    ahead, behind = a1 + 0.02, a1 - 0.02
    drv.step(lap_positions([0.0])[0])
    drv.step(lap_positions([ahead])[0])
    ev = rows(pr.result)
    assert (ev["passed"][0], ev["next_checkpoint"][0], ev["checkpoints_passed"][0]) == (1, 2, 1)
    drv.step(lap_positions([behind])[0])
    ev = rows(pr.result)
    assert (ev["wrong_way"][0], ev["next_checkpoint"][0], ev["passed"][0]) == (1, 1, 0)
    assert ev["checkpoints_passed"][0] == 1  # a count of passes, never undone
    drv.step(lap_positions([behind - 0.01])[0])
    assert pr.result.wrong_way.numpy()[0] == 1  # stays set until undone
    drv.step(lap_positions([ahead])[0])
    ev = rows(pr.result)
    # passed forward again: order restored, no new pass earned
    assert (ev["wrong_way"][0], ev["next_checkpoint"][0], ev["passed"][0], ev["checkpoints_passed"][0]) == (0, 2, 0, 1)


def test_progress_backwards_over_the_start_line_is_wrong_way(device):
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    n = int(cp.result.num_checkpoints.numpy()[0])
    drv.step(lap_positions([0.05])[0])
    drv.step(lap_positions([-0.05])[0])
    ev = rows(pr.result)
    assert (ev["wrong_way"][0], ev["next_checkpoint"][0], ev["lap_fraction"][0]) == (1, 0, 0.0)
    drv.step(lap_positions([0.05])[0])  # forward over checkpoint 0 again: no lap, no pass
    ev = rows(pr.result)
    assert (ev["lap_completed"][0], ev["passed"][0], ev["laps"][0], ev["next_checkpoint"][0]) == (0, 0, 0, 1)
    assert n > 3


def test_progress_ignores_crossings_outside_the_opening(device):
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    # a full lap 2 half widths outside the band crosses every checkpoint plane, outside its opening
    for p in lap_positions(np.arange(0.0, 2 * math.pi + 0.05, 0.01), radius_offset=4 * HALF_WIDTH):
        drv.step(p)
        assert pr.result.passed.numpy().sum() == 0
    np.testing.assert_array_equal(pr.result.next_checkpoint.numpy()[:2], [1, 1])


def test_progress_counts_every_checkpoint_a_fast_step_crosses(device):
    """Steps of 0.6 rad cross 2 or 3 checkpoints (0.20 and 0.25 rad apart) each: all count, in order."""
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    n = cp.result.num_checkpoints.numpy()
    step = 0.6
    assert np.all(step > 2 * (2 * math.pi / n[:2]))  # at least 2 checkpoints per step
    passed, laps_done, most = np.zeros(3, int), np.zeros(3, int), np.zeros(3, int)
    for a in [*np.arange(0.0, 2 * math.pi, step), 2 * math.pi + 0.05]:  # just past the start line
        drv.step(lap_positions([a])[0])
        ev = rows(pr.result)
        passed += ev["passed"]
        laps_done += ev["lap_completed"]
        most = np.maximum(most, ev["passed"])
    ev = rows(pr.result)
    np.testing.assert_array_equal(passed[:2], n[:2])  # every checkpoint once, checkpoint 0 last
    np.testing.assert_array_equal(ev["checkpoints_passed"][:2], n[:2])
    np.testing.assert_array_equal(laps_done, [1, 1, 0])
    np.testing.assert_array_equal(ev["laps"], [1, 1, 0])
    np.testing.assert_array_equal(ev["next_checkpoint"][:2], [1, 1])
    assert np.all(most[:2] >= 2)  # ``passed`` is the count of this step's passes, not a flag
    assert passed[2] == 0  # the invalid env passes nothing


def test_progress_fast_step_backwards_steps_back_over_every_checkpoint_crossed(device):
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    n = int(cp.result.num_checkpoints.numpy()[0])
    gap = 2 * math.pi / n  # angle between checkpoints (approximately)
    drv.step(lap_positions([0.5 * gap])[0])
    drv.step(lap_positions([4.5 * gap])[0])  # forward over checkpoints 1..4
    ev = rows(pr.result)
    assert (ev["passed"][0], ev["next_checkpoint"][0], ev["checkpoints_passed"][0]) == (4, 5, 4)
    drv.step(lap_positions([1.5 * gap])[0])  # backwards over 4, 3 and 2
    ev = rows(pr.result)
    assert (ev["wrong_way"][0], ev["next_checkpoint"][0], ev["passed"][0]) == (1, 2, 0)
    drv.step(lap_positions([5.5 * gap])[0])  # forward again: 2..4 restore the order, 5 is new ground
    ev = rows(pr.result)
    assert (ev["wrong_way"][0], ev["next_checkpoint"][0], ev["passed"][0], ev["checkpoints_passed"][0]) == (0, 6, 1, 5)
    assert ev["lap_fraction"][0] == pytest.approx(5 / n)


class GateSet(Component):
    """A gate-like ``checkpoints`` component: 4 square openings on the x axis, finite half height."""

    def __init__(self):
        super().__init__("checkpoints")

    def attach(self, ctx):
        E = ctx.num_envs
        x = np.float32([0.0, 2.0, 4.0, 6.0])
        self.set = CheckpointSet(
            position=wp.array(np.tile(np.stack([x, 0 * x, 0 * x + 1.0], -1), (E, 1, 1)), dtype=wp.vec3,
                              device=ctx.device),
            direction=wp.array(np.tile(np.float32([1, 0, 0]), (E, 4, 1)), dtype=wp.vec3, device=ctx.device),
            half_width=wp.full((E, 4), 0.3, dtype=wp.float32, device=ctx.device),
            half_height=wp.full((E, 4), 0.2, dtype=wp.float32, device=ctx.device),
            arc_length=wp.array(np.tile(x, (E, 1)), dtype=wp.float32, device=ctx.device),
            num_checkpoints=wp.full(E, 4, dtype=wp.int32, device=ctx.device),
            loop_length=wp.full(E, 8.0, dtype=wp.float32, device=ctx.device),
        )

    @property
    def result(self):
        return self.set


@pytest.mark.parametrize("z, passes", [(1.0, 1), (1.15, 1), (1.25, 0), (0.7, 0)])
def test_progress_through_a_gate_opening_of_finite_height(device, z, passes):
    pr = Progress()
    drv = Driver(device, GateSet(), pr)
    drv.step([[1.5, 0.0, z]] * 3)
    drv.step([[2.5, 0.1, z]] * 3)
    np.testing.assert_array_equal(pr.result.passed.numpy(), [passes] * 3)


def test_progress_masked_reset_leaves_unmasked_envs_and_first_step_only_records(device):
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    for a in np.arange(0.0, 1.5, 0.01):
        drv.step(lap_positions([a])[0])
    before = rows(pr.result)
    assert before["checkpoints_passed"][0] > 0 and before["checkpoints_passed"][1] > 0
    pr.reset(drv.ctx, wp.array([0, 1, 0], dtype=wp.int32, device=device))
    after = rows(pr.result)
    for k in before:
        np.testing.assert_array_equal(after[k][[0, 2]], before[k][[0, 2]], err_msg=k)
    assert (after["next_checkpoint"][1], after["checkpoints_passed"][1], after["laps"][1]) == (1, 0, 0)
    # env 1 jumps far ahead along its circle: the first step after the reset only records it
    drv.step(lap_positions([3.0])[0])
    assert pr.result.passed.numpy()[1] == 0 and pr.result.next_checkpoint.numpy()[1] == 1


def test_progress_reset_to_starts_on_the_sampled_checkpoint(device):
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    E = drv.ctx.num_envs
    pos = wp.zeros(E, dtype=wp.vec3, device=device)
    quat = wp.zeros(E, dtype=wp.quat, device=device)
    idx = wp.zeros(E, dtype=wp.int32, device=device)
    cp.utility.sample(None, pos, quat, idx)
    pr.reset_to(drv.ctx, None, idx)
    k = idx.numpy()
    n = cp.result.num_checkpoints.numpy()
    np.testing.assert_array_equal(pr.result.next_checkpoint.numpy()[:2], (k[:2] + 1) % n[:2])
    # drive one lap from there: the lap ends back on the start checkpoint
    length = cp.result.loop_length.numpy()
    laps = 0
    for e in (0,):
        start = 2 * math.pi * cp.result.arc_length.numpy()[e, k[e]] / length[e]
        for a in np.arange(start, start + 2 * math.pi + 0.05, 0.01):
            drv.step(lap_positions([a])[0])
            laps += pr.result.lap_completed.numpy()[e]
    assert laps == 1


def test_progress_reset_to_refuses_a_bad_start_and_changes_nothing(device):
    cp, pr = Checkpoints(1.0), Progress()
    drv = Driver(device, cp, pr)
    for a in np.arange(0.0, 1.0, 0.05):
        drv.step(lap_positions([a])[0])
    before = rows(pr.result)
    E = drv.ctx.num_envs
    for start, error in ((np.zeros(E, np.int32), TypeError), (wp.zeros(E, dtype=wp.float32, device=device), ValueError),
                         (wp.zeros(E + 1, dtype=wp.int32, device=device), ValueError)):
        with pytest.raises(error, match=rf"start must be a \[{E}\] int32 wp.array on {device}"):
            pr.reset_to(drv.ctx, None, start)
    after = rows(pr.result)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


# -- BandCollision ----------------------------------------------------------------------
BACKENDS = ["segments", "sdf"]


def collide(device, positions, backend="segments", **box):
    col = BandCollision(backend)
    gen, ctx = make(device, col)
    pos = wp.array(np.asarray(positions, np.float32), dtype=wp.vec3, device=device)
    arrays = {k: wp.array(np.asarray(v, np.float32), dtype=wp.quat if k == "orientation" else wp.vec3, device=device)
              for k, v in box.items()}
    col.bind(position=pos, **arrays)
    col.result.hit.fill_(-5)
    col.result.distance.fill_(math.inf)
    col.step(ctx)
    return col.result.hit.numpy(), col.result.distance.numpy(), col


def clearance_tolerance(col, e):
    """[m] the polygon's sagitta; for "sdf" plus one grid cell (bilinear interpolation across
    the clearance's ridge on the centreline; exact on the straight slopes near the edges)."""
    radius, n, _ = CIRCLES[e]
    return sagitta(radius, n) + 1e-5 + (float(col.cell.numpy()[e]) if col.backend == "sdf" else 0.0)


def assert_clearance(col, dist, e, expect):
    if col.backend == "sdf" and expect < -2.0 * col.cell.numpy()[e]:
        assert dist[e] == pytest.approx(-2.0 * col.cell.numpy()[e])  # clamped beyond 2 cells outside
    else:
        assert dist[e] == pytest.approx(expect, abs=clearance_tolerance(col, e))


def out_and_back(length=10.0, spacing=1.0):
    """[N, 2] an out-and-back line: out along +x from the origin to ``length`` and back."""
    x = np.arange(0.0, length + spacing / 2, spacing)
    return np.stack([np.concatenate([x, x[-2:0:-1]]), np.zeros(2 * len(x) - 2)], -1)


@pytest.mark.parametrize("offset", [-0.4, 0.0, 0.3, 0.7])
def test_the_lateral_offset_on_a_sloped_line_excludes_the_height(device, offset):
    """A circle climbing and falling 1 m (slopes up to 11 degrees), a body 0.3 m above a point
    beside it: the offset is the distance across the line, not its horizontal distance to the
    closest point in 3-D (which lies up or down the slope) nor the body's height."""
    col, loc = BandCollision(), Localizer()
    gen, ctx = make(device, col, loc)
    th = 2.0 * np.pi * np.arange(64) / 64
    gen.set_polyline(0, np.stack([5.0 * np.cos(th), 5.0 * np.sin(th), np.sin(th)], -1))
    gen.commit()
    for c in (col, loc):
        c.on_generate(ctx, None)
        c.reset(ctx, None)
    pos = wp.zeros(3, dtype=wp.vec3, device=device)
    col.bind(position=pos)
    loc.bind(position=pos)
    for k in (5, 20, 40, 55):  # up and down the slope
        line, normal = gen.np["centerline"][0], gen.np["normal"][0]
        mid = 0.5 * (line[k] + line[k + 1])
        side = 0.5 * (normal[k] + normal[k + 1])
        side /= np.linalg.norm(side)
        pos.assign(np.float32([mid + offset * side + [0.0, 0.0, 0.3], circle_point(CIRCLES[1], 0.0), [0.0] * 3]))
        col.step(ctx)
        loc.step(ctx)
        assert loc.result.lateral_offset.numpy()[0] == pytest.approx(offset, abs=2e-3), k
        assert col.result.distance.numpy()[0] == pytest.approx(HALF_WIDTH - abs(offset), abs=2e-3), k
        assert col.result.hit.numpy()[0] == int(abs(offset) > HALF_WIDTH)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_body_far_off_the_band_is_a_hit_whatever_the_line(device, backend):
    """An out-and-back line (its normal vanishes at the tips): a body far beyond a tip is off
    the band, from a cold start and from a warm start beside it; the Localizer's offset is
    the body's distance to the line (issue 9: x = -442 m read as on the band, offset 0)."""
    col, loc = BandCollision(backend), Localizer()
    gen, ctx = make(device, col, loc)
    line = out_and_back()
    gen.set_polyline(0, line)
    gen.commit()
    for c in (col, loc):
        c.on_generate(ctx, None)
        c.reset(ctx, None)
    pos = wp.zeros(3, dtype=wp.vec3, device=device)
    col.bind(position=pos)
    loc.bind(position=pos)
    other = circle_point(CIRCLES[1], 0.0)  # env 1 stays on its band

    def step(body):
        pos.assign(np.float32([body, other, [0.0, 0.0, 0.0]]))
        col.step(ctx)
        loc.step(ctx)

    for body in ([-442.0, 0.0, 0.0], [-3.0, 0.2, 0.0], [10.0 + 442.0, 0.0, 0.0]):
        for warm in (False, True):
            if warm:  # beside the tip, on the band: the warm start of the next search
                step([0.5, 0.1, 0.0] if body[0] < 0 else [9.5, 0.1, 0.0])
                assert col.result.hit.numpy()[0] == 0
            step(body)
            gap = np.linalg.norm(line - np.float32(body[:2]), axis=1)
            tip = int(np.argmin(gap))  # the point closest to the body: a tip
            assert col.result.hit.numpy()[0] == 1, (body, warm)
            if backend == "segments":
                assert col.result.distance.numpy()[0] == pytest.approx(HALF_WIDTH - gap[tip], abs=1e-4)
            # the frame names that point: s its arc length, the offset the body's distance to it
            assert abs(loc.result.lateral_offset.numpy()[0]) == pytest.approx(gap[tip], abs=1e-4)
            assert loc.result.s.numpy()[0] == pytest.approx(gen.np["arc_length"][0, tip], abs=1e-4)
    assert col.result.hit.numpy()[1] == 0  # the other env, on its band, is untouched


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("offset", [-0.8, -0.45, -0.1, 0.0, 0.3, 0.49, 0.6, 2.0])
def test_collision_point_distance_is_half_width_minus_lateral_offset(device, backend, offset):
    positions = [circle_point(c, 1.0, c[0] + offset) if c else np.zeros(3) for c in CIRCLES]
    hit, dist, col = collide(device, positions, backend)
    expect = HALF_WIDTH - abs(offset)
    for e in (0, 1):
        assert_clearance(col, dist, e, expect)
        if abs(expect) > clearance_tolerance(col, e):
            assert hit[e] == int(expect < 0)
    assert (hit[2], dist[2]) == (1, 0.0)  # invalid env: safe values


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("angle", [-0.03, -0.001, 0.0, 0.001, 0.03])
def test_collision_across_the_start_seam(device, backend, angle):
    positions = [circle_point(c, angle, c[0] + 0.3) if c else np.zeros(3) for c in CIRCLES]
    hit, dist, col = collide(device, positions, backend)
    np.testing.assert_array_equal(hit[:2], [0, 0])
    assert_clearance(col, dist, 0, 0.2)
    positions = [circle_point(c, angle, c[0] + 0.7) if c else np.zeros(3) for c in CIRCLES]
    hit, dist, col = collide(device, positions, backend)
    np.testing.assert_array_equal(hit[:2], [1, 1])
    assert_clearance(col, dist, 0, -0.2)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("yaw_offset, expect_hit", [(0.0, 0), (0.3, 0), (math.pi / 2, 1), (-math.pi / 2, 1)])
def test_collision_box_footprint_corners(device, backend, yaw_offset, expect_hit):
    """A 1.2 x 0.2 m box on the centreline fits the 1 m band along the track, not across it."""
    angle, half_extents = 0.7, np.float32([0.6, 0.1, 0.05])
    positions = [circle_point(c, angle) if c else np.zeros(3) for c in CIRCLES]
    yaw = angle + math.pi / 2 + yaw_offset
    hit, dist, col = collide(device, positions, backend, orientation=[yaw_quat(yaw)] * 3, half_extents=[half_extents]
                             * 3)
    np.testing.assert_array_equal(hit, [expect_hit, expect_hit, 1])
    for e in (0, 1):
        radius, n, center = CIRCLES[e]
        fwd, left = np.array([math.cos(yaw), math.sin(yaw)]), np.array([-math.sin(yaw), math.cos(yaw)])
        corners = [positions[e][:2] + sx * half_extents[0] * fwd + sy * half_extents[1] * left
                   for sx in (-1, 1) for sy in (-1, 1)]
        # clearance of each corner: half width minus its distance from the circle
        assert_clearance(col, dist, e,
                         min(HALF_WIDTH - abs(np.linalg.norm(c - np.array(center)) - radius) for c in corners))


@pytest.mark.parametrize("backend", BACKENDS)
def test_collision_box_position_routes_from_position_unless_given(device, backend):
    positions = [circle_point(c, 0.5) if c else np.zeros(3) for c in CIRCLES]
    far = [circle_point(c, 0.5, c[0] + 3.0) if c else np.zeros(3) for c in CIRCLES]
    box = dict(orientation=[yaw_quat(0.5 + math.pi / 2)] * 3, half_extents=[[0.1, 0.1, 0.1]] * 3)
    hit, _, _ = collide(device, positions, backend, **box)
    assert hit[0] == 0
    hit, _, _ = collide(device, positions, backend, box_position=far, **box)
    assert hit[0] == 1


def test_collision_sdf_grid_covers_the_band_with_a_margin(device):
    _, _, col = collide(device, [np.zeros(3)] * 3, "sdf")
    res = col.resolution
    for e in (0, 1):
        radius, _, (cx, cy) = CIRCLES[e]
        o, h = col.origin.numpy()[e], col.cell.numpy()[e]
        far = radius + HALF_WIDTH + 4 * h
        np.testing.assert_allclose(o, [cx - far, cy - far], atol=1e-3)
        assert o[0] + (res - 1) * h >= cx + far - 1e-3
        assert col.grid.numpy()[e].max() == pytest.approx(HALF_WIDTH, abs=float(h))
    assert col.cell.numpy()[2] == 0.0


def test_collision_sdf_masked_bake_rewrites_masked_envs_only(device):
    col = BandCollision("sdf", resolution=32)
    gen, ctx = make(device, col)
    before = [a.numpy().copy() for a in (col.grid, col.origin, col.cell)]
    gen.set_circle(0, (3.0, 40, (5.0, 5.0)))
    gen.set_circle(1, (3.0, 40, (5.0, 5.0)))
    gen.commit()
    col.on_generate(ctx, wp.array([0, 1, 0], dtype=wp.int32, device=device))
    after = [a.numpy() for a in (col.grid, col.origin, col.cell)]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a[[0, 2]], b[[0, 2]])
        assert not np.array_equal(a[1], b[1])


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [((3,), {}, TypeError, "segments"), ((None,), {}, TypeError, "segments"), (("mesh",), {}, ValueError, "segments"),
     (("sdf",), {"resolution": 8}, ValueError, "resolution"), (("sdf",), {"resolution": 64.0}, TypeError, "resolution"),
     ((), {"window": 0}, ValueError, "window")],
)
def test_collision_refuses_bad_arguments(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        BandCollision(*args, **kwargs)


def test_step_before_bind_raises(device):
    col = BandCollision()
    _, ctx = make(device, col)
    with pytest.raises(RuntimeError, match="call bind\\(\\) before step\\(\\)"):
        col.step(ctx)


def test_bind_refuses_wrong_dtype_and_shape(device):
    loc = Localizer()
    _, ctx = make(device, loc)
    with pytest.raises(TypeError, match="vec3"):
        loc.bind(position=wp.zeros(3, dtype=wp.vec4, device=device))
    with pytest.raises(ValueError, match="shape"):
        loc.bind(position=wp.zeros(4, dtype=wp.vec3, device=device))


# -- Localizer --------------------------------------------------------------------------
HEADING_TOL = 1e-3  # [rad] nlerp of neighbouring tangents vs the circle's tangent (on the line)


def heading_tolerance(radius: float, num_points: int, offset: float) -> float:
    """[rad] the tangent is read at the chord parameter, shifted as in :func:`s_tolerance`."""
    return abs(offset) / radius * math.pi / num_points + HEADING_TOL


def s_tolerance(radius: float, num_points: int, offset: float) -> float:
    """[m] s of a point ``offset`` off a circle, projected on the inscribed polygon: the chord
    parameter scales with the point's radius, shifting s by up to |offset| / R half chords."""
    half_chord = radius * math.sin(math.pi / num_points)
    return abs(offset) / radius * half_chord + 1e-3


@pytest.mark.parametrize("offset", [-0.3, 0.0, 0.2])
def test_localizer_matches_the_circle_analytically(device, offset):
    loc = Localizer(warm_window=4)
    drv = Driver(device, loc)
    length = drv.gen.np["loop_length"]
    heading = 0.25
    quat = wp.array([yaw_quat(0.0)] * 3, dtype=wp.quat, device=device)
    loc.bind(position=drv.pos, orientation=quat)
    for a in np.arange(0.05, 2 * math.pi, 0.37):
        quat.assign(np.array([yaw_quat(a + math.pi / 2 + heading)] * 3))
        drv.step(lap_positions([a], radius_offset=offset)[0])
        fr = rows(loc.result)
        for e in (0, 1):
            radius, n, _ = CIRCLES[e]
            assert fr["s"][e] == pytest.approx(a / (2 * math.pi) * length[e], abs=s_tolerance(radius, n, offset))
            # left of a counter-clockwise circle is inwards
            assert fr["lateral_offset"][e] == pytest.approx(-offset, abs=sagitta(radius, n) + 1e-5)
            assert fr["heading_error"][e] == pytest.approx(heading, abs=heading_tolerance(radius, n, offset))
            assert fr["curvature"][e] == pytest.approx(1.0 / radius)
            assert fr["segment"][e] == math.floor(a / (2 * math.pi / n))
        assert (fr["s"][2], fr["lateral_offset"][2], fr["heading_error"][2], fr["segment"][2]) == (0, 0, 0, 0)


def test_localizer_heading_error_is_zero_without_orientation_and_wraps(device):
    loc = Localizer()
    drv = Driver(device, loc)
    drv.step(lap_positions([1.0])[0])
    np.testing.assert_array_equal(loc.result.heading_error.numpy(), [0, 0, 0])
    quat = wp.array([yaw_quat(1.0 + math.pi / 2 + math.pi - 0.01)] * 3, dtype=wp.quat, device=device)
    loc.bind(position=drv.pos, orientation=quat)
    drv.step(lap_positions([1.0])[0])
    h = loc.result.heading_error.numpy()[:2]
    assert np.all(h >= -math.pi) and np.all(h < math.pi)
    np.testing.assert_allclose(h, math.pi - 0.01, atol=HEADING_TOL)
    quat.assign(np.array([yaw_quat(1.0 + math.pi / 2 - math.pi + 0.01)] * 3))
    drv.step(lap_positions([1.0])[0])
    np.testing.assert_allclose(loc.result.heading_error.numpy()[:2], -math.pi + 0.01, atol=HEADING_TOL)


class LineOfGenerator(Component):
    """A ``centerline`` component whose ``CourseLine`` is the generator's circles, shifted in z."""

    def __init__(self):
        super().__init__("centerline")

    def attach(self, ctx):
        r = ctx.result
        shifted = wp.array(r.centerline.numpy() + np.float32([0, 0, 2.0]), dtype=wp.vec3, device=ctx.device)
        self.line = CourseLine(shifted, r.tangent, r.normal, r.arc_length, r.curvature, r.half_width, r.num_points,
                               r.loop_length)

    @property
    def result(self):
        return self.line


def test_localizer_reads_a_course_line_source(device):
    line, loc, ref = LineOfGenerator(), Localizer(source="centerline", name="on_line"), Localizer()
    drv = Driver(device, line, loc, ref)
    drv.step(lap_positions([1.3], radius_offset=0.2)[0])
    pos = drv.pos.numpy()
    drv.pos.assign(pos + np.float32([0, 0, 2.0]))
    loc.step(drv.ctx)
    for k in ("s", "lateral_offset", "segment"):
        np.testing.assert_allclose(getattr(loc.result, k).numpy(), getattr(ref.result, k).numpy(), atol=1e-5, err_msg=k)


def test_localizer_recovers_after_a_teleport(device):
    """Windowed search around the old segment would stay near it; the global fallback finds the new one."""
    loc, col = Localizer(warm_window=2), BandCollision(window=2)
    drv = Driver(device, loc, col)
    drv.step(lap_positions([0.3])[0])
    drv.step(lap_positions([math.pi + 0.3])[0])
    seg = loc.result.segment.numpy()
    for e in (0, 1):
        n = CIRCLES[e][1]
        assert seg[e] == math.floor((math.pi + 0.3) / (2 * math.pi / n))
    np.testing.assert_array_equal(col.result.hit.numpy(), [0, 0, 1])
    np.testing.assert_array_equal(col.segment.numpy()[:2], seg[:2])


def test_localizer_reset_unsets_only_masked_warm_segments(device):
    loc = Localizer(warm_window=1)
    drv = Driver(device, loc)
    drv.step(lap_positions([0.3])[0])
    loc.reset(drv.ctx, wp.array([1, 0, 0], dtype=wp.int32, device=device))
    np.testing.assert_array_equal(loc._warm.numpy()[:2], [-1, loc.result.segment.numpy()[1]])


@pytest.mark.parametrize("window, error",
                         [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError), ("8", TypeError)])
def test_localizer_refuses_bad_warm_window(window, error):
    with pytest.raises(error, match="warm_window"):
        Localizer(warm_window=window)


def test_localizer_warm_window_none_is_default():
    assert Localizer(warm_window=None).warm_window == 8


def brute_force_distance(gen, e, p):
    n = gen.np["num_points"][e]
    a = gen.np["centerline"][e, :n].astype(np.float64)
    b = np.roll(a, -1, 0)
    ab = b - a
    t = np.clip(((p - a) * ab).sum(-1) / (ab * ab).sum(-1), 0, 1)
    return np.sqrt((((a + ab * t[:, None]) - p) ** 2).sum(-1)).min()


@settings(max_examples=15, deadline=None)
@given(walk=st.lists(st.tuples(st.floats(-0.4, 0.4), st.floats(-1.5, 1.5), st.booleans()), min_size=2, max_size=12))
def test_localizer_finds_the_closest_segment_along_any_walk(walk):
    """Small moves and teleports alike: the warm-started search returns a closest segment."""
    loc = Localizer(warm_window=2)
    drv = Driver("cpu", loc)
    angle = 0.0
    for da, off, teleport in walk:
        angle = angle + (math.pi if teleport else 0.0) + da
        positions = lap_positions([angle], radius_offset=off)[0]
        drv.step(positions)
        for e in (0, 1):
            n = CIRCLES[e][1]
            j = loc.result.segment.numpy()[e]
            a, b = drv.gen.np["centerline"][e, j], drv.gen.np["centerline"][e, (j + 1) % n]
            p = positions[e].astype(np.float64)
            t = np.clip(np.dot(p - a, b - a) / np.dot(b - a, b - a), 0, 1)
            found = np.linalg.norm(a + (b - a) * t - p)
            assert found == pytest.approx(brute_force_distance(drv.gen, e, p), abs=1e-4)


# -- masks and graphs -------------------------------------------------------------------
def test_masked_generate_and_reset_leave_unmasked_rows_bit_identical(device):
    cp, pr, col, loc = Checkpoints(1.0), Progress(), BandCollision(), Localizer()
    sdf = BandCollision("sdf", resolution=32, name="collision.sdf")
    drv = Driver(device, cp, pr, col, loc, sdf)
    for a in np.arange(0.0, 1.2, 0.05):
        drv.step(lap_positions([a])[0])
    state = lambda: {**{f"cp.{k}": v for k, v in rows(cp.result).items()},  # noqa: E731
                     **{f"pr.{k}": v for k, v in rows(pr.result).items()},
                     "pr.net": pr._net.numpy().copy(), "pr.prev": pr._prev.numpy().copy(),
                     "col.segment": col.segment.numpy().copy(), "loc.warm": loc._warm.numpy().copy(),
                     "sdf.grid": sdf.grid.numpy().copy(), "sdf.cell": sdf.cell.numpy().copy()}
    before = state()
    mask = wp.array([0, 0, 0], dtype=wp.int32, device=device)
    for c in (cp, pr, col, loc, sdf):
        c.on_generate(drv.ctx, mask)
    for c in (sdf, loc, col, pr, cp):
        c.reset(drv.ctx, mask)
    after = state()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


def test_step_replayed_from_a_cpu_graph_matches_eager():
    def run(record):
        cp, pr, col, loc = Checkpoints(1.0), Progress(), BandCollision(), Localizer()
        sdf = BandCollision("sdf", resolution=32, name="collision.sdf")
        drv = Driver("cpu", cp, pr, col, loc, sdf)
        box = dict(orientation=wp.array([yaw_quat(0.3)] * 3, dtype=wp.quat, device="cpu"),
                   half_extents=wp.array([[0.2, 0.1, 0.1]] * 3, dtype=wp.vec3, device="cpu"))
        col.bind(position=drv.pos, **box)
        sdf.bind(position=drv.pos, **box)
        drv.step(lap_positions([0.0])[0])  # loads the module before any recording
        graph = None
        if record:
            with wp.ScopedCapture(device="cpu") as cap:
                for c in (pr, col, loc, sdf):
                    c.step(drv.ctx)
            graph = cap.graph
        out = []
        for a in np.arange(0.0, 2 * math.pi + 0.1, 0.03):
            drv.pos.assign(np.array(lap_positions([a], radius_offset=0.3 * math.sin(3 * a))[0]))
            if record:
                wp.capture_launch(graph)
            else:
                for c in (pr, col, loc, sdf):
                    c.step(drv.ctx)
            out.append(np.concatenate([np.concatenate([v.ravel().astype(np.float64) for v in rows(r).values()])
                                       for r in (pr.result, col.result, loc.result, sdf.result)]))
        return np.array(out)

    eager, replayed = run(False), run(True)
    np.testing.assert_array_equal(replayed, eager)
    assert eager.std(axis=0).max() > 0


def test_masked_generate_and_reset_replayed_from_a_cpu_graph_match_eager():
    """The regeneration half of the contract (on_generate + reset, masked) is capturable too."""

    def run(record):
        cp, pr, col, loc = Checkpoints(1.0), Progress(), BandCollision(), Localizer()
        sdf = BandCollision("sdf", resolution=32, name="collision.sdf")
        drv = Driver("cpu", cp, pr, col, loc, sdf)
        mask = wp.zeros(drv.ctx.num_envs, dtype=wp.int32, device="cpu")

        def body():
            for c in (cp, pr, col, loc, sdf):
                c.on_generate(drv.ctx, mask)
            for c in (sdf, loc, col, pr, cp):
                c.reset(drv.ctx, mask)

        graph = None
        if record:
            with wp.ScopedCapture(device="cpu") as cap:
                body()
            graph = cap.graph
        out = []
        for i, (circle, m) in enumerate([((4.5, 60, (1.0, 2.0)), [1, 0, 0]), ((3.0, 40, (0.0, 0.0)), [0, 1, 1])]):
            for a in np.arange(0.0, 1.0, 0.05):
                drv.step(lap_positions([a])[0])
            drv.gen.set_circle(i, circle)
            drv.gen.commit()
            mask.assign(np.int32(m))
            if record:
                wp.capture_launch(graph)
            else:
                body()
            out.append([v for r in (cp.result, pr.result) for v in rows(r).values()]
                       + [pr._has_prev.numpy(), col.segment.numpy(), loc._warm.numpy(), sdf.grid.numpy(),
                          sdf.origin.numpy(), sdf.cell.numpy()])
        return out

    for eager, replayed in zip(run(False), run(True)):
        for a, b in zip(eager, replayed):
            np.testing.assert_array_equal(b, a)


def test_checkpoints_tiny_spacing_clips_without_overflow(device):
    cp = Checkpoints(1e-9, max_checkpoints=5)
    make(device, cp)
    np.testing.assert_array_equal(cp.result.num_checkpoints.numpy(), [5, 5, 0])
    np.testing.assert_array_equal(cp.clipped.numpy(), [1, 1, 0])


def test_checkpoint_sampler_index_is_optional_and_outputs_are_checked(device):
    cp = Checkpoints(1.0)
    _, ctx = make(device, cp)
    pos = wp.zeros(3, dtype=wp.vec3, device=device)
    quat = wp.zeros(3, dtype=wp.quat, device=device)
    cp.utility.sample(None, pos, quat)
    positions = cp.result.position.numpy()
    for e in (0, 1):
        assert any(np.array_equal(pos.numpy()[e], positions[e, k]) for k in range(cp.result.num_checkpoints.numpy()[e]))
    with pytest.raises(ValueError, match="out_orientation"):  # a dtype is a value (checks.check_env_array)
        cp.utility.sample(None, pos, pos)
    with pytest.raises(TypeError, match="out_position"):
        cp.utility.sample(None, pos.numpy(), quat)
    with pytest.raises(ValueError, match="shape"):
        cp.utility.sample(None, wp.zeros(2, dtype=wp.vec3, device=device), quat)


@wp.kernel
def _segment_params(p: wp.array(dtype=wp.vec3), a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3),
                    fast: wp.array(dtype=float), textbook: wp.array(dtype=float)):
    i = wp.tid()
    fast[i] = segment_param(p[i], a[i], b[i])
    ab = b[i] - a[i]
    l2 = wp.dot(ab, ab)
    t = float(0.0)
    if l2 > 0.0:
        t = wp.clamp(wp.dot(p[i] - a[i], ab) / l2, 0.0, 1.0)
    textbook[i] = t


def test_segment_param_is_the_clamped_quotient_bit_for_bit(device):
    """segment_param divides only where the quotient is not clamped: the same float32 as
    clamp(dot(p - a, b - a) / |b - a|^2, 0, 1) everywhere, on and past the ends, on a point
    segment, and for a NaN position (every collision and localizer search goes through it)."""
    rng = np.random.default_rng(5)
    n = 20000
    a = rng.normal(size=(n, 3)).astype(np.float32)
    b = (a + rng.normal(size=(n, 3)) * rng.choice([1e-3, 1.0, 100.0], size=(n, 1))).astype(np.float32)
    u = rng.choice([-1.0, 0.0, 1.0, 2.0], size=(n, 1)) * rng.random((n, 1))
    p = (a + (b - a) * u + rng.normal(size=(n, 3)) * 0.3).astype(np.float32)
    p[:200], p[200:400] = a[:200], b[200:400]  # on an end: along = 0 and along = l2
    b[400:600] = a[400:600]  # a point segment
    p[600:650] = np.nan
    arrays = [wp.array(x, dtype=wp.vec3, device=device) for x in (p, a, b)]
    fast, textbook = (wp.zeros(n, dtype=float, device=device) for _ in range(2))
    wp.launch(_segment_params, n, inputs=arrays, outputs=[fast, textbook], device=device)
    f, t = fast.numpy(), textbook.numpy()
    assert np.array_equal(f.view(np.uint32), t.view(np.uint32))
    assert (f[:200] == 0.0).all() and (f[200:400] == 1.0).all() and 0.05 < (f == 0.0).mean() < 0.9
