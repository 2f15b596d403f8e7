"""Banked tracks (``TrackGenConfig(banking=b)``, the built-in ``"banking"`` stage): the normal
turns about the tangent into each corner, and what reads the normal follows the tilted road
(the localizer's lateral offset across it, the height field's cross-section)."""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

from trackgen_env import TrackGenConfig, TrackGenerator, tools
from trackgen_env.course import Course
from trackgen_env.pipeline import presets
from trackgen_env.tools.heightfield import sample_height

E = 4
BANK = 0.35  # [rad]


def _gen(device, banking=BANK, **kw):
    cfg = TrackGenConfig(num_envs=E, device=device, banking=banking, **kw)
    return TrackGenerator(cfg, seeds=11)


def _host(result):
    n = result.num_points.numpy()
    return n, {k: getattr(result, k).numpy().astype(np.float64) for k in
               ("centerline", "tangent", "normal", "curvature", "half_width")}


def test_the_spec_runs_banking_after_resample_only_when_asked():
    assert "banking" not in TrackGenConfig().to_spec().stages
    assert "banking.max_bank" not in TrackGenConfig().to_spec().params
    spec = TrackGenConfig(banking=0.2).to_spec()
    assert spec.stages == ("band", "layout", "spline", "resample", "banking", "checks", "start")
    assert spec.params["banking.max_bank"] == 0.2
    assert TrackGenConfig.from_spec(spec) == TrackGenConfig(banking=0.2)
    # a given centreline may be banked too
    given = presets.track(source="centerline", max_input_points=8, max_points=64, banking=0.1)
    assert given.stages == ("centerline", "spline", "resample", "banking", "start")


@pytest.mark.parametrize("bad", [-0.1, 0.8, float("nan")])
def test_a_bank_outside_zero_to_quarter_pi_is_refused(bad):
    with pytest.raises(ValueError, match="banking"):
        TrackGenConfig(banking=bad)


@pytest.mark.parametrize("elevation", [0.0, 1.5])
def test_normal_stays_unit_and_perpendicular_and_the_outside_edge_is_higher(device, elevation):
    banked, level = _gen(device, elevation=elevation), _gen(device, banking=0.0, elevation=elevation)
    n, b = _host(banked.result)
    _, f = _host(level.result)
    # the same loops: banking only turns the normal
    for k in ("centerline", "tangent", "curvature", "half_width"):
        np.testing.assert_array_equal(b[k], f[k])
    for e in range(E):
        nb, t, kappa, hw = (b["normal"][e, :n[e]], b["tangent"][e, :n[e]], b["curvature"][e, :n[e]],
                            b["half_width"][e, :n[e]])
        np.testing.assert_allclose(np.linalg.norm(nb, axis=1), 1.0, atol=1e-6)
        np.testing.assert_allclose((nb * t).sum(1), 0.0, atol=1e-6)
        # the angle from the level normal is the bank, growing with the curvature
        bank = np.arccos(np.clip((nb * f["normal"][e, :n[e]]).sum(1), -1.0, 1.0))
        want = BANK * np.clip(np.abs(kappa) * 2.0 * hw, 0.0, 1.0)
        np.testing.assert_allclose(bank, want, atol=2e-3)
        corner = np.abs(kappa) * 2.0 * hw > 0.3
        assert corner.any()
        c = b["centerline"][e, :n[e]]
        left_edge = (c + hw[:, None] * nb)[:, 2]
        right_edge = (c - hw[:, None] * nb)[:, 2]
        outside_higher = np.where(kappa > 0, right_edge - left_edge, left_edge - right_edge)
        assert np.all(outside_higher[corner] > 0.0)
        # by 2 hw sin(bank) cos(slope): the bank tilts the road's own up axis
        cos_slope = np.linalg.norm(t[:, :2], axis=1)
        np.testing.assert_allclose(outside_higher, 2.0 * hw * np.sin(want) * cos_slope, atol=2e-3)


def test_an_unbanked_config_draws_what_it_drew_before(device):
    """banking=0 adds no stage, so the batch is the one the spec without it builds (the
    pinned hashes of tests/test_pinned_hashes.py cover the defaults' bytes)."""
    a = TrackGenerator(TrackGenConfig(num_envs=E, device=device), seeds=11)
    spec = presets.track(num_envs=E, device=device)
    b = TrackGenerator(spec, seeds=11)
    for k in ("centerline", "normal", "half_width"):
        np.testing.assert_array_equal(getattr(a.result, k).numpy(), getattr(b.result, k).numpy())
    assert np.all(a.result.normal.numpy()[..., 2] == 0.0)


def test_max_bank_is_a_dynamic_param(device):
    gen = _gen(device)
    gen.params["banking.max_bank"] = 0.0
    gen.enqueue()
    assert np.all(gen.result.normal.numpy()[..., 2] == 0.0)
    spec = TrackGenConfig(num_envs=E, device=device,
                          banking=0.1).to_spec().with_randomize({"banking.max_bank": (0.1, 0.5)})
    drawn = TrackGenerator(spec, seeds=3).params["banking.max_bank"].numpy()
    assert np.all((drawn >= 0.1) & (drawn < 0.5)) and np.ptp(drawn) > 0


@wp.kernel
def _sample(heights: wp.array3d(dtype=float), origin: wp.vec2, cell_size: float,
            points: wp.array2d(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    e, j = wp.tid()
    p = points[e, j]
    out[e, j] = sample_height(heights, e, origin, cell_size, p[0], p[1])


def test_the_height_field_follows_the_bank_across_the_band(device):
    """Points on the tilted cross-section (``centerline + l * normal``, ``|l| <= 0.9 hw``):
    the sampled ground is their z within the surface's slope over one cell diagonal."""
    gen = _gen(device, elevation=1.0)
    course = Course(gen, [tools.HeightFieldBake(160)])
    hf = course.heightfield
    n, b = _host(gen.result)
    for frac in (-0.9, -0.5, 0.5, 0.9):
        pts = b["centerline"] + frac * b["half_width"][..., None] * b["normal"]
        out = wp.zeros(pts.shape[:2], dtype=float, device=device)
        wp.launch(_sample, pts.shape[:2], inputs=[hf.heights, hf.origin, hf.cell_size,
                                                  wp.array(pts.astype(np.float32), dtype=wp.vec3, device=device), out],
                  device=device)
        got = out.numpy()
        for e in range(E):
            m = n[e]
            # the surface's steepest grade there: along the road and across the bank
            along = np.abs(np.diff(np.append(pts[e, :m, 2], pts[e, 0, 2]))) / 0.1
            across = np.abs(b["normal"][e, :m, 2]) / np.linalg.norm(b["normal"][e, :m, :2], axis=1)
            tol = (np.maximum(along, np.roll(along, 1)) + across + 0.05) * hf.cell_size * np.sqrt(2.0)
            err = np.abs(got[e, :m] - pts[e, :m, 2])
            # where the band nears another part of the loop the closest point may be the other's
            assert np.mean(err <= tol) > 0.98, (frac, e, err.max())
    # the bank shows: level ground would miss the edges by l * sin(bank)
    flat = Course(_gen(device, banking=0.0, elevation=1.0), [tools.HeightFieldBake(160)]).heightfield.heights_numpy()
    assert np.abs(hf.heights_numpy() - flat).max() > 0.5 * np.sin(BANK) * b["half_width"].max()


def test_the_localizer_reads_the_distance_across_the_banked_road(device):
    """A body on the tilted cross-section at ``l`` reads lateral offset ``l`` (not its x-y
    share ``l cos(bank)``)."""
    gen = _gen(device, elevation=1.0)
    course = Course(gen, [tools.Localizer()])
    n, b = _host(gen.result)
    pos = wp.zeros(E, dtype=wp.vec3, device=device)
    course.bind(position=pos)
    for e in range(E):
        kappa, hw = b["curvature"][e, :n[e]], b["half_width"][e, :n[e]]
        j = int(np.argmax(np.abs(kappa)))  # the tightest corner: the largest bank
        for frac in (-0.8, 0.8):
            p = b["centerline"][:, 0].copy()  # the other envs at their start
            p[e] = b["centerline"][e, j] + frac * hw[j] * b["normal"][e, j]
            pos.assign(wp.array(p.astype(np.float32), dtype=wp.vec3, device=device))
            lateral = course.step().frame.lateral_offset.numpy()[e]
            assert lateral == pytest.approx(frac * hw[j], abs=2e-3)


def test_banking_and_num_turns_draw_from_their_own_streams():
    """Every dynamic param of a banked track has a random stream of its own (a clash is refused at build)."""
    from trackgen_env.pipeline import build, presets

    program = build(presets.track(num_envs=2, device="cpu", banking=0.2).with_randomize(
        {"banking.max_bank": (0.0, 0.3), "layout.num_turns": (6.0, 12.0)}), seeds=0)
    assert "banking.max_bank" in program.params and "layout.num_turns" in program.params
