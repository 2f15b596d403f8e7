"""``tools.HeightFieldBake`` / ``course.heightfield``: the baked ground under an elevated track,
the presets' heightfield slot, and the grid-resolution warnings of ``Course.track``."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import warnings

import numpy as np
import pytest
import warp as wp

from trackgen_env import TrackGenConfig, TrackGenerator, tools
from trackgen_env.course import Course
from trackgen_env.pipeline import presets
from trackgen_env.tools import heightfield
from trackgen_env.tools.heightfield import sample_height

E = 4
DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


def _elevated(device, *, seeds=7, **kw):
    return TrackGenerator(TrackGenConfig(num_envs=E, device=device, elevation=2.0, **kw), seeds=seeds)


def _nearest_height(line: np.ndarray, n: int, x: np.ndarray, y: np.ndarray):
    """Reference (float64, brute force): per query, the x-y distance to env's closed line and
    the height of the closest point, linear along its segment."""
    a = line[:n].astype(np.float64)
    b = np.roll(a, -1, axis=0)
    q = np.stack([x.ravel(), y.ravel()], axis=1)
    ab = b[:, :2] - a[:, :2]
    l2 = np.maximum((ab ** 2).sum(1), 1e-30)
    t = np.clip(((q[:, None, :] - a[None, :, :2]) * ab[None]).sum(2) / l2[None], 0.0, 1.0)
    d2 = ((q[:, None, :] - (a[None, :, :2] + ab[None] * t[..., None])) ** 2).sum(2)
    j = d2.argmin(1)
    tj = t[np.arange(len(j)), j]
    z = a[j, 2] + (b[j, 2] - a[j, 2]) * tj
    return np.sqrt(d2[np.arange(len(j)), j]).reshape(x.shape), z.reshape(x.shape)


@wp.kernel
def _sample_line(heights: wp.array3d(dtype=float), origin: wp.vec2, cell_size: float,
                 line: wp.array2d(dtype=wp.vec3), out: wp.array2d(dtype=float)):
    """A user's kernel: the ground height under every centreline point, through sample_height."""
    e, j = wp.tid()
    p = line[e, j]
    out[e, j] = sample_height(heights, e, origin, cell_size, p[0], p[1])


# --- what the grid holds -------------------------------------------------------------------


def test_heights_match_the_centreline_z_within_one_cell_of_slope_on_the_band(device):
    """Sampled at each centreline point, the grid gives that point's z, up to the slope over
    one cell diagonal (bilinear interpolation between nodes a cell apart)."""
    gen = _elevated(device)
    course = Course(gen, [tools.HeightFieldBake(96)])
    hf = course.heightfield
    line = gen.result.centerline
    out = wp.zeros(line.shape, dtype=float, device=device)
    wp.launch(_sample_line, dim=line.shape, inputs=[hf.heights, hf.origin, hf.cell_size, line, out], device=device)
    pts, got = line.numpy(), out.numpy()
    n, valid = gen.result.num_points.numpy(), gen.result.valid.numpy()
    assert valid.all() and np.ptp(pts[..., 2]) > 0.5  # an elevated batch
    for e in range(E):
        p = pts[e, :n[e]]
        seg = np.roll(p, -1, axis=0) - p
        slope = np.max(np.abs(seg[:, 2]) / np.linalg.norm(seg[:, :2], axis=1))
        tol = slope * hf.cell_size * np.sqrt(2.0) + 1e-4
        err = np.abs(got[e, :n[e]] - p[:, 2])
        assert err.max() <= tol, (e, err.max(), tol)
        assert err.max() > 0.0  # the test reads the grid, not the line


def test_every_node_holds_the_height_of_the_nearest_centreline_point(device):
    """On the band and off it (the documented fill: the nearest road height), against a
    float64 brute-force reference."""
    gen = _elevated(device)
    course = Course(gen, [tools.HeightFieldBake(48)])
    hf = course.heightfield
    heights = hf.heights_numpy()
    assert heights.shape == (E, 48, 48) and heights.dtype == np.float32
    x, y = hf.node_xy()
    line, n = gen.result.centerline.numpy(), gen.result.num_points.numpy()
    hw = float(gen.result.half_width.numpy()[0, 0])
    for e in range(E):
        dist, z = _nearest_height(line[e], n[e], x, y)
        band = dist <= hw
        assert band.sum() > 50 and (~band).sum() > 50
        np.testing.assert_allclose(heights[e], z, atol=2e-3)


def test_the_grid_covers_the_largest_course_size_plus_the_band_width():
    gen = build_randomized_size((8.0, 12.0))
    course = Course(gen, [tools.HeightFieldBake(33)])
    hf = course.heightfield
    assert (hf.size, hf.margin, hf.resolution) == (12.0, 0.8, 33)
    assert hf.cell_size == pytest.approx((12.0 + 1.6) / 32)
    assert (float(hf.origin[0]), float(hf.origin[1])) == pytest.approx((-6.8, -6.8))
    explicit = Course(build_randomized_size((8.0, 12.0)), [tools.HeightFieldBake(33, size=20.0, margin=0.0,
                                                                                 center=(1.0, -1.0))]).heightfield
    assert (explicit.size, explicit.margin) == (20.0, 0.0)
    assert (float(explicit.origin[0]), float(explicit.origin[1])) == pytest.approx((-9.0, -11.0))


def build_randomized_size(size_range, **kw):
    spec = presets.track(num_envs=E, device="cpu", elevation=1.0, **kw).with_randomize({"layout.size": size_range})
    return TrackGenerator(spec, seeds=2)


@pytest.mark.parametrize("lanes", [7, 1024])
def test_the_bake_in_runs_of_nodes_as_cuda_runs_it_gives_the_same_grid(monkeypatch, lanes):
    """CUDA bakes each env in runs of consecutive nodes, one per thread (each run's first node
    bounds its distance afresh): the same grid, bit for bit, as the CPU's single run."""
    one = Course(_elevated("cpu"), [tools.HeightFieldBake(40)]).heightfield.heights_numpy()
    monkeypatch.setattr(heightfield, "node_lanes", lambda device, resolution: lanes)
    runs = Course(_elevated("cpu"), [tools.HeightFieldBake(40)]).heightfield.heights_numpy()
    assert runs.tobytes() == one.tobytes()


def test_sample_helper_reads_the_ground_under_each_body_and_clamps_beyond_the_grid(device):
    gen = _elevated(device)
    course = Course(gen, [tools.HeightFieldBake(64)])
    hf = course.heightfield
    line = gen.result.centerline.numpy()
    far = hf.size  # beyond the grid on +x: the edge column's height
    xy = np.array([[line[0, 5, 0], line[0, 5, 1], 99.0], [far, 0.0, 0.0], [np.nan, 0.0, 0.0], [0.0, -far, 0.0]],
                  dtype=np.float32)
    pos = wp.array(xy, dtype=wp.vec3, device=device)
    out = wp.zeros(E, dtype=float, device=device)
    hf.sample(pos, out)
    got, heights = out.numpy(), hf.heights_numpy()
    assert abs(got[0] - line[0, 5, 2]) < 0.05  # the body's own z is ignored
    row = (0.0 - float(hf.origin[1])) / hf.cell_size
    i = int(row)
    edge = heights[1, i, -1] * (1 - (row - i)) + heights[1, i + 1, -1] * (row - i)
    assert got[1] == pytest.approx(edge, abs=1e-5)
    assert np.isnan(got[2])
    with pytest.raises(ValueError, match="float32"):
        hf.sample(pos, wp.zeros(E, dtype=wp.int32, device=device))
    with pytest.raises(TypeError, match="position"):
        hf.sample(xy, out)


def test_an_invalid_env_reads_flat_ground():
    gen = _elevated("cpu")
    ctx = tools.ComponentContext(gen)
    bake = tools.HeightFieldBake(16)
    ctx.add(bake)
    valid = gen.result.valid.numpy()
    valid[1] = 0
    gen.result.valid.assign(valid)
    bake.on_generate(ctx, None)
    heights = bake.result.heights_numpy()
    assert (heights[1] == 0).all() and (heights[0] != 0).any()


# --- the component contract ----------------------------------------------------------------


def test_masked_regeneration_leaves_unmasked_grids_bit_identical(device):
    gen = _elevated(device)
    course = Course(gen, [tools.HeightFieldBake(32)])
    before = course.heightfield.heights_numpy()
    mask = wp.array([0, 1, 0, 0], dtype=wp.int32, device=device)
    course.regenerate(mask, advance=True)
    after = course.heightfield.heights_numpy()
    assert after[[0, 2, 3]].tobytes() == before[[0, 2, 3]].tobytes()
    assert not np.array_equal(after[1], before[1])
    # the masked env's grid is the bake of its new course
    hf = course.heightfield
    x, y = hf.node_xy()
    _, z = _nearest_height(gen.result.centerline.numpy()[1], gen.result.num_points.numpy()[1], x, y)
    np.testing.assert_allclose(after[1], z, atol=2e-3)


def test_heightfield_bake_passes_check_component():
    tools.check_component(tools.HeightFieldBake(16), _elevated("cpu"))


def test_course_heightfield_is_none_without_the_component_and_the_height_field_with_it():
    gen = _elevated("cpu")
    assert Course(gen, [tools.Checkpoints(0.6)]).heightfield is None
    course = Course(_elevated("cpu"), [tools.HeightFieldBake(16)])
    assert isinstance(course.heightfield, tools.HeightField)
    assert course.heightfield is course.components["heightfield"].result
    assert "heightfield" not in course.step().keys()  # a per-generation component


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(resolution=16.0), TypeError, "resolution"),
    (dict(resolution="64"), TypeError, "resolution"),
    (dict(resolution=1), ValueError, "resolution"),
    (dict(resolution=4097), ValueError, r"resolution must be in \[2, 4096\] nodes per side \(64 MiB per env at 4096\), "
                                         r"got 4097: 64 MiB per env, 65,568 MiB for 1024 envs"),
    (dict(resolution=100_000), ValueError, r"got 100000: 38,147 MiB per env"),
    (dict(size=-1.0), ValueError, "size"),
    (dict(size=0.0), ValueError, "size"),
    (dict(size="10"), TypeError, "size"),
    (dict(margin=-0.1), ValueError, "margin"),
    (dict(center=(0.0,)), TypeError, "center"),
    (dict(center=(0.0, float("nan"))), ValueError, "center"),
])
def test_bad_arguments_are_refused_with_the_expected_value(kwargs, error, match):
    with pytest.raises(error, match=match):
        tools.HeightFieldBake(**kwargs)


def test_a_generator_without_a_course_size_needs_size():
    cfg = TrackGenConfig(num_envs=1, device="cpu", source="centerline", max_input_points=8)
    gen = TrackGenerator(cfg, prepare=False)
    with pytest.raises(ValueError, match="pass size="):
        tools.ComponentContext(gen).add(tools.HeightFieldBake(16))
    ctx = tools.ComponentContext(gen)
    ctx.add(tools.HeightFieldBake(16, size=30.0, center=(100.0, 5.0)))
    assert ctx.components["heightfield"].result.margin == 0.0


# --- the preset's slot and the resolution warnings -----------------------------------------


def _no_warnings(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


def test_track_preset_heightfield_slot():
    spec = presets.track(num_envs=2, device="cpu", elevation=1.0)
    course = Course.track(spec, checkpoint_spacing=0.6, heightfield=True)
    assert list(course.components) == ["checkpoints", "progress", "heightfield"]
    assert course.heightfield.resolution == 128
    assert Course.track(spec, checkpoint_spacing=0.6, heightfield=24).heightfield.resolution == 24
    mine = tools.HeightFieldBake(20, margin=0.0)
    assert Course.track(spec, checkpoint_spacing=0.6, heightfield=mine).heightfield is mine.result
    assert Course.track(spec, checkpoint_spacing=0.6, heightfield=False).heightfield is None


@pytest.mark.parametrize("value, error, match", [
    ("yes", TypeError, "heightfield must be"),
    (2.5, TypeError, "heightfield must be"),
    (1, ValueError, "resolution"),
    (tools.HeightFieldBake(16, name="ground"), ValueError, "named 'heightfield'"),
])
def test_track_preset_refuses_a_bad_heightfield(value, error, match):
    with pytest.raises(error, match=match):
        Course.track(presets.track(num_envs=2, device="cpu"), checkpoint_spacing=0.6, heightfield=value)


@pytest.mark.parametrize("value, error", [(-1.0, ValueError), (0, ValueError), ("12", TypeError)])
def test_track_preset_refuses_a_bad_size_hi(value, error):
    with pytest.raises(error, match="size_hi"):
        Course.track(presets.track(num_envs=2, device="cpu"), checkpoint_spacing=0.6, size_hi=value)


def test_heightfield_warning_fires_when_the_grid_does_not_cover_a_randomized_size_hi():
    spec = presets.track(num_envs=E, device="cpu", elevation=1.0).with_randomize({"layout.size": (8.0, 12.0)})
    assert spec.params["layout.size"] == 10.0  # the construction size the grid covers
    with pytest.warns(UserWarning, match=r"covers a course square of 10 m.*up to 12 m.*HeightFieldBake\(size=12\)"):
        Course.track(spec, checkpoint_spacing=0.6, heightfield=tools.HeightFieldBake(32, size=10.0))
    # the preset's own bake reads the randomizer's hi: no warning
    course = _no_warnings(lambda: Course.track(spec, checkpoint_spacing=0.6, heightfield=32))
    assert course.heightfield.size == 12.0


def test_heightfield_warning_reads_size_hi_for_a_curriculum_that_widens_later():
    spec = presets.track(num_envs=E, device="cpu", elevation=1.0)
    with pytest.warns(UserWarning, match="up to 14 m"):
        Course.track(spec, checkpoint_spacing=0.6, heightfield=tools.HeightFieldBake(32), size_hi=14.0)
    course = _no_warnings(lambda: Course.track(spec, checkpoint_spacing=0.6, heightfield=32, size_hi=14.0))
    assert course.heightfield.size == 14.0
    _no_warnings(lambda: Course.track(spec, checkpoint_spacing=0.6,
                                      heightfield=tools.HeightFieldBake(32, size=14.0), size_hi=14.0))
    # a size_hi under the generator's own bound: the larger one counts
    wide = spec.with_randomize({"layout.size": (8.0, 12.0)})
    course = _no_warnings(lambda: Course.track(wide, checkpoint_spacing=0.6, heightfield=True, size_hi=9.0))
    assert course.heightfield.size == 12.0


def test_sdf_warning_fires_when_its_cells_are_too_coarse_at_the_largest_size():
    """At 64 nodes the cells are 10 / 55 = 0.18 m at the construction size (under 0.8 / 4 = 0.2 m)
    but 12 / 55 = 0.22 m at the randomizer's hi."""
    spec = presets.track(num_envs=E, device="cpu")
    _no_warnings(lambda: Course.track(spec, checkpoint_spacing=0.6,
                                      collision=tools.BandCollision("sdf", resolution=64)))
    wide = spec.with_randomize({"layout.size": (8.0, 12.0)})
    with pytest.warns(UserWarning, match=r"largest course size 12 m.*resolution=70\)"):
        Course.track(wide, checkpoint_spacing=0.6, collision=tools.BandCollision("sdf", resolution=64))
    _no_warnings(lambda: Course.track(wide, checkpoint_spacing=0.6,
                                      collision=tools.BandCollision("sdf", resolution=70)))
    with pytest.warns(UserWarning, match="largest course size 12 m"):
        Course.track(spec, checkpoint_spacing=0.6, collision=tools.BandCollision("sdf", resolution=64), size_hi=12.0)


def test_the_grid_warnings_check_the_components_in_extra_too():
    """A coarse sdf collision or a small height field passed in extra= (under another name) warned
    nothing; the message names the component and its fix."""
    wide = presets.track(num_envs=E, device="cpu", elevation=1.0).with_randomize({"layout.size": (8.0, 12.0)})
    with pytest.warns(UserWarning,
                      match=r"height field 'acme.hf' covers a course square of 10 m.*build 'acme.hf' with size=12"):
        Course.track(wide, checkpoint_spacing=0.6, extra=[tools.HeightFieldBake(32, size=10.0, name="acme.hf")])
    with pytest.warns(UserWarning, match=r"grid of 'acme.sdf', 64 nodes.*build 'acme.sdf' with resolution=70"):
        Course.track(wide, checkpoint_spacing=0.6, extra=[tools.BandCollision("sdf", resolution=64, name="acme.sdf")])
    _no_warnings(lambda: Course.track(wide, checkpoint_spacing=0.6, extra=[
        tools.HeightFieldBake(32, size=12.0, name="acme.hf"),
        tools.BandCollision("sdf", resolution=70, name="acme.sdf")]))


# --- the docs page -------------------------------------------------------------------------


def test_elevated_tracks_page_examples_run_in_order(tmp_path):
    """Run from a file: Warp reads a kernel's source, which an exec'd string lacks."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "elevated-tracks.md").read_text(), re.S)
    assert len(blocks) == 4  # the banking and the car env examples too
    path = tmp_path / "elevated_tracks_page.py"
    path.write_text("\n".join(blocks))
    spec = importlib.util.spec_from_file_location("elevated_tracks_page", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.z.shape == (4,) and np.ptp(module.z) > 0  # the cars on the ground of their hills
    course = module.course
    assert course.heightfield.size == 14.0 and course.generator.params["layout.size"].numpy()[0] == 12.0
