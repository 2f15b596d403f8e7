"""Real race layouts: the gate-layout loader's conventions, its errors, the generator input, and the Split-S flown."""

import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from trackgen_env import GateGenConfig, GateGenerator
from trackgen_env.generators.gate_layouts import (
    DEFAULT_GATE_SIZE,
    LSY_GATE_SIZE,
    SIM2REAL_GATE_HEIGHT,
    RaceLayout,
    load_gate_layout,
    parse_gate_layout,
    write_gate_layout,
)

# The shared folder of real layouts: beside the repository in CI, /work/shared here (never copied in).
_CANDIDATES = [Path(__file__).resolve().parents[2] / "shared" / "real-courses" / "gates",
               Path("/work/shared/real-courses/gates")]
REAL = next((p for p in _CANDIDATES if p.is_dir()), None)
needs_real = pytest.mark.skipif(REAL is None, reason="the shared real-courses/gates folder is not present")
SPLIT_S = "uzh_splits_rpg_time_optimal_track.yaml"
ALPHAPILOT = ("alphapilot2019_nominal_gate_locations.yaml", "alphapilot2019_challenge_final.yaml")

# a square loop, counter-clockwise, 4 m across
SQUARE = [[2.0, 0.0, 1.0], [0.0, 2.0, 1.5], [-2.0, 0.0, 1.0], [0.0, -2.0, 1.5]]


def _yaml(tmp_path, doc, name="layout.yaml"):
    """JSON is YAML: write ``doc`` as a YAML file."""
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _toml_gates(tmp_path, rows: str, name="layout.toml"):
    path = tmp_path / name
    path.write_text(rows)
    return path


def _yaw(normals):
    return np.degrees(np.arctan2(normals[:, 1], normals[:, 0]))


# --- the real files ----------------------------------------------------------------------------
@needs_real
def test_every_real_file_loads():
    """Each file of the folder loads (the FlightGoggles pair together, as ROS loads it)."""
    files = sorted(p.name for p in REAL.iterdir() if p.suffix in (".yaml", ".yml", ".toml"))
    assert files, REAL
    single = [f for f in files if f not in ALPHAPILOT]
    for f in single:
        layout = load_gate_layout(REAL / f)
        assert layout.num_gates >= 3 and np.isfinite(layout.position).all(), f
    if set(ALPHAPILOT) <= set(files):
        assert load_gate_layout([REAL / f for f in ALPHAPILOT]).num_gates == 11


@needs_real
def test_split_s_is_one_lap_of_seven_gates_facing_along_the_course():
    layout = load_gate_layout(REAL / SPLIT_S)
    assert layout.num_gates == 7  # 19 entries = 3 laps written out, the last cut short
    assert layout.position[3].tolist() == [-4.5, -6.0, 3.5] and layout.position[4].tolist() == [-4.5, -6.0, 0.8]
    n = layout.normal
    # the stacked pair: the upper gate is flown towards -x (its incoming leg), the lower one
    # out towards gate 5 (its outgoing leg), not the +x a vertical leg would give
    out = layout.position[5] - layout.position[4]
    assert n[3] @ (layout.position[3] - layout.position[2]) > 0 and n[3][0] < -0.9
    assert n[4] @ out > 0.99 * np.linalg.norm(out[:2])
    assert np.allclose(layout.width, DEFAULT_GATE_SIZE) and np.allclose(n[:, 2], 0.0)


@needs_real
def test_lsy_toml_reads_rpy_and_the_04_m_gates():
    layout = load_gate_layout(REAL / "lsy_drone_racing_level0.toml")
    assert layout.num_gates == 4
    assert np.allclose(_yaw(layout.normal), np.degrees([-0.78, 2.35, 3.14, 0.0]), atol=1e-6)
    assert np.allclose(layout.width, LSY_GATE_SIZE) and layout.position[1].tolist() == [1.05, 0.75, 1.2]


@needs_real
def test_sim2real_yaw_is_an_axis_signed_along_the_course_and_z_is_raised_to_the_fly_through_point():
    layout = load_gate_layout(REAL / "uzh_sim2real_drone_racing_goals.yaml")
    assert layout.num_gates == 14
    assert np.isclose(layout.position[0, 2], 2.0 + SIM2REAL_GATE_HEIGHT)
    p, n = layout.position, layout.normal
    ahead = np.roll(p, -1, axis=0) - np.roll(p, 1, axis=0)
    assert ((n * ahead).sum(axis=1) > 0).all()
    # the axis is the file's yaw (mod pi)
    assert np.isclose(math.remainder(math.atan2(n[3, 1], n[3, 0]) - (-2.2), math.pi), 0.0, atol=1e-9)


@needs_real
def test_alphapilot_corners_give_centre_normal_and_size_in_the_challenge_order():
    layout = load_gate_layout([REAL / f for f in ALPHAPILOT])
    # Gate10 is first: corners at x 16.35 / 18.15, y 3.63, z 5.38 / 7.23
    assert np.allclose(layout.position[0], [17.25111, 3.6314985, 6.3064975], atol=1e-5)
    assert np.allclose(np.abs(layout.normal[0]), [0.0, 1.0, 0.0], atol=1e-4)
    assert np.isclose(layout.width[0], 1.8, atol=1e-3) and np.isclose(layout.height[0], 1.846001, atol=1e-3)
    # the normals point along the race (Gate10 to Gate6, an open course): the first gate
    # towards the second, every other gate the way it is entered from the one before
    p, n = layout.position, layout.normal
    assert n[0] @ (p[1] - p[0]) > 0 and ((n[1:] * np.diff(p, axis=0)).sum(axis=1) > 0).all()
    # one opening per course: the smallest
    assert layout.course_width == pytest.approx(layout.width.min()) and layout.course_width < 2.0


@needs_real
@pytest.mark.parametrize("name, message",
                         [(ALPHAPILOT[0], "no 'gate_names'"), (ALPHAPILOT[1], "has no 'Gate10: nominal_location'")])
def test_each_alphapilot_file_alone_says_what_is_missing(name, message):
    with pytest.raises(ValueError, match=message) as exc:
        load_gate_layout(REAL / name)
    assert name in str(exc.value)


# --- each convention, on files written here ---------------------------------------------------------
def test_centres_only_face_along_the_course(tmp_path):
    layout = load_gate_layout(_yaml(tmp_path, {"gates": SQUARE}))
    # counter-clockwise around the square: each gate's normal is the bisector, the tangent of the loop
    assert np.allclose(_yaw(layout.normal), [90.0, 180.0, -90.0, 0.0], atol=1e-6)
    assert np.allclose(layout.width, DEFAULT_GATE_SIZE) and np.allclose(layout.height, DEFAULT_GATE_SIZE)
    assert layout.position.tolist() == SQUARE


def test_a_list_written_out_for_several_laps_is_one_lap(tmp_path):
    layout = load_gate_layout(_yaml(tmp_path, {"gates": SQUARE * 2 + SQUARE[:2]}))
    assert layout.num_gates == 4


@pytest.mark.parametrize("key, values", [
    ("yaw_deg", [30.0, 120.0, -150.0, 0.0]),
    ("yaw", list(np.radians([30.0, 120.0, -150.0, 0.0]))),
    ("quaternion_wxyz",
     [[math.cos(math.radians(a) / 2), 0, 0, math.sin(math.radians(a) / 2)] for a in (30, 120, -150, 0)]),
    ("quaternion_xyzw",
     [[0, 0, math.sin(math.radians(a) / 2), math.cos(math.radians(a) / 2)] for a in (30, 120, -150, 0)]),
    ("rpy", [[0.0, 0.0, math.radians(a)] for a in (30, 120, -150, 0)]),
])
def test_given_yaws_are_kept_with_their_sign(tmp_path, key, values):
    gates = [{"position": p, key: v} for p, v in zip(SQUARE, values)]
    layout = load_gate_layout(_yaml(tmp_path, {"gates": gates, "gate_width": 0.8, "gate_height": 0.5}))
    assert np.allclose(_yaw(layout.normal), [30.0, 120.0, -150.0, 0.0], atol=1e-6)
    assert np.allclose(layout.width, 0.8) and np.allclose(layout.height, 0.5)


def test_a_pitched_gate_keeps_its_climbing_normal_and_a_horizontal_width_axis(tmp_path):
    gates = [{"position": p} for p in SQUARE]
    gates[0]["rpy"] = [0.0, -0.3, math.pi / 2]  # pitch up 0.3 rad (body y down: nose up), heading +y
    layout = load_gate_layout(_yaml(tmp_path, {"gates": gates}))
    n = layout.normal[0]
    assert np.allclose(n, [0.0, math.cos(0.3), math.sin(0.3)], atol=1e-9)


@pytest.mark.parametrize("corners", [
    [[0.0, 2.6, 1.9], [0.0, 1.4, 1.9], [0.0, 1.4, 1.1], [0.0, 2.6, 1.1]],  # around the rim
    [[0.0, 2.6, 1.9], [0.0, 1.4, 1.9], [0.0, 2.6, 1.1], [0.0, 1.4, 1.1]],  # TL, TR, BL, BR (AlphaPilot's Gate9)
    [[0.0, 1.4, 1.1], [0.0, 2.6, 1.9], [0.0, 2.6, 1.1], [0.0, 1.4, 1.9]],
])
def test_four_corners_in_any_order_give_centre_normal_width_and_height(tmp_path, corners):
    # gate 1 of the square: a 1.2 m wide, 0.8 m high opening in the plane x = 0; the loop
    # runs through it towards -x (the bisector of its legs), which signs the plane's normal
    gates = [{"position": p} for p in SQUARE]
    gates[1] = {"corners": corners}
    layout = load_gate_layout(_yaml(tmp_path, {"gates": gates}))
    assert np.allclose(layout.position[1], [0.0, 2.0, 1.5])
    assert np.allclose(layout.normal[1], [-1.0, 0.0, 0.0], atol=1e-9)
    assert np.isclose(layout.width[1], 1.2) and np.isclose(layout.height[1], 0.8)


def test_generic_toml_gates_with_per_gate_sizes(tmp_path):
    rows = "".join(f"[[gates]]\nposition = {p}\nyaw_deg = {a}\nwidth = {w}\nheight = 0.5\n\n"
                   for p, a, w in zip(SQUARE, (90, 180, -90, 0), (0.9, 0.7, 0.8, 1.0)))
    layout = load_gate_layout(_toml_gates(tmp_path, rows))
    assert np.allclose(_yaw(layout.normal), [90.0, 180.0, -90.0, 0.0])
    assert layout.width.tolist() == [0.9, 0.7, 0.8, 1.0] and layout.course_width == 0.7


def test_lsy_style_toml(tmp_path):
    rows = "[env.track]\nrandomize = false\n" + "".join(
        f"[[env.track.gates]]\npos = {p}\nrpy = [0.0, 0.0, {math.radians(a)}]\n"
        for p, a in zip(SQUARE, (90, 180, -90, 0)))
    layout = load_gate_layout(_toml_gates(tmp_path, rows))
    assert np.allclose(_yaw(layout.normal), [90.0, 180.0, -90.0, 0.0]) and np.allclose(layout.width, LSY_GATE_SIZE)


def test_gate_size_argument_sets_the_opening_of_gates_without_one(tmp_path):
    layout = load_gate_layout(_yaml(tmp_path, {"gates": SQUARE}), gate_size=(0.6, 0.4))
    assert np.allclose(layout.width, 0.6) and np.allclose(layout.height, 0.4)


# --- malformed files ----------------------------------------------------------------------------------
@pytest.mark.parametrize("doc, message", [
    ({"gates": [{"yaw": 0.0}] * 3}, r"gates\[0\] has no 'position' field"),
    ({"gates": [[0, 0, 1], [1, 0, 1], [1, 1]]}, r"gates\[2\] must hold 3 numbers"),
    ({"gates": [[0, 0, 1], [1, 0, "one"], [1, 1, 1]]}, r"gates\[1\] must be a number, got 'one'"),
    ({"gates": [[0, 0, 1], [1, 0, 1]]}, r"gates: a closed gate course needs >= 3 gates, got 2"),
    ({"gates": [{"position": p, "yaw_deg": "north"} for p in SQUARE]}, r"gates\[0\]\.yaw_deg must be a number"),
    ({"gates": [{"position": p, "yaw": 0, "yaw_deg": 0} for p in SQUARE]}, r"more than one orientation"),
    ({"gates": [{"position": p, "rpy": [0.3, 0, 0]} for p in SQUARE]}, r"rolled by 17\.2 deg"),
    ({"gates": [{"position": p, "rpy": [0, -1.5, 0]} for p in SQUARE]}, r"gate 0 lies flat"),
    ({"gates": [{"position": p, "quaternion_wxyz": [0, 0, 0, 0]} for p in SQUARE]}, r"zero quaternion"),
    ({"gates": [{"position": p, "size": -1} for p in SQUARE]}, r"gates\[0\]\.size must be > 0 m"),
    ({"gates": [{"position": p, "width": 1} for p in SQUARE]}, r"give both width and height"),
    ({"gates": "four"}, r"gates must be a list of gates"),
    ({"gates": [[0, 0, 1], [0, 0, 1], [1, 1, 1], [2, 0, 1]]}, r"gates 0 and 1 are at the same centre"),
    ({"gates": [{"corners": [[0, 0, 0]] * 4}, {"position": [1, 0, 1]}, {"position": [0, 1, 1]}]},
     r"corners do not span a plane"),
    ({"track": [[0, 0, 1]]}, r"no gate layout found"),
    ({"goal_positions": [{"x": 0, "y": 0, "z": 1}] * 3}, r"goal_orientations must list one"),
    ({"gate_names": ["G1", "G2", "G3"], "G1": {"nominal_location": [[0, 0, 1]] * 3}},
     r"G1\.nominal_location must hold 12 numbers"),
])
def test_malformed_yaml_is_refused_naming_the_file_and_the_field(tmp_path, doc, message):
    path = _yaml(tmp_path, doc, "bad.yaml")
    with pytest.raises(ValueError, match=message) as exc:
        load_gate_layout(path)
    assert str(path) in str(exc.value)


@pytest.mark.parametrize("text, message", [
    ("gates: [[0, 0, 1], [1, 0, .nan], [1, 1, 1]]", r"gates\[1\] must be finite, got nan"),
    ("gates: [[0, 0, 1], [1, 0, true], [1, 1, 1]]", r"gates\[1\] must be a number, got True"),
    ("gates: [[0, 0, 1], [1, 0", r"not valid YAML"),
    ("- [0, 0, 1]\n- [1, 0, 1]\n- [1, 1, 1]", r"expected a mapping at the top level, got list"),
])
def test_malformed_yaml_text(tmp_path, text, message):
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as exc:
        load_gate_layout(path)
    assert str(path) in str(exc.value)


@pytest.mark.parametrize("name, kind", [("bin.yaml", "YAML"), ("bin.toml", "TOML")])
def test_a_binary_file_is_refused_naming_it(tmp_path, name, kind):
    path = tmp_path / name
    path.write_bytes(bytes(range(128, 256)) * 4)
    with pytest.raises(ValueError, match=f"{name}: not valid {kind}"):
        load_gate_layout(path)


@pytest.mark.parametrize("bad", [None, 3, [None]])
def test_a_path_that_is_not_a_path_is_a_type_error(bad):
    with pytest.raises(TypeError, match="load_gate_layout takes a file path"):
        load_gate_layout(bad)


def test_malformed_toml(tmp_path):
    path = _toml_gates(tmp_path, "[[gates]]\nposition = [0, 0, nan]\n[[gates]]\nposition = [1, 0, 1]\n"
                                 "[[gates]]\nposition = [1, 1, 1]\n", "bad.toml")
    with pytest.raises(ValueError, match=r"bad\.toml: gates\[0\]\.position must be finite"):
        load_gate_layout(path)
    path.write_text("[[gates]\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_gate_layout(path)


def test_files_that_cannot_be_read(tmp_path):
    with pytest.raises(FileNotFoundError, match="no gate layout file"):
        load_gate_layout(tmp_path / "missing.yaml")
    (tmp_path / "gates.json").write_text("{}")
    with pytest.raises(ValueError, match="expected a .yaml, .yml or .toml"):
        load_gate_layout(tmp_path / "gates.json")
    a, b = _yaml(tmp_path, {"gates": SQUARE}, "a.yaml"), _yaml(tmp_path, {"gates": SQUARE}, "b.yaml")
    with pytest.raises(ValueError, match="key 'gates' is also in an earlier file"):
        load_gate_layout([a, b])


def test_yaml_without_pyyaml_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now raises ImportError
    with pytest.raises(ImportError, match=r"trackgen_env\[gates\]"):
        load_gate_layout(_yaml(tmp_path, {"gates": SQUARE}))
    # TOML needs no optional dependency
    rows = "".join(f"[[gates]]\nposition = {p}\n" for p in SQUARE)
    assert load_gate_layout(_toml_gates(tmp_path, rows)).num_gates == 4


def test_the_loader_never_builds_python_objects_from_tags(tmp_path):
    path = tmp_path / "evil.yaml"
    path.write_text("gates: !!python/object/apply:os.system ['echo unsafe']\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_gate_layout(path)


def test_race_layout_checks_its_arrays():
    q = np.tile([0.0, 0.0, 0.0, 1.0], (3, 1))
    ok = dict(position=np.eye(3), orientation=q, width=np.ones(3), height=np.ones(3))
    assert RaceLayout(**ok).num_gates == 3
    with pytest.raises(ValueError, match=r"orientation must have shape \(3, 4\)"):
        RaceLayout(**{**ok, "orientation": q[:, :3]})
    with pytest.raises(ValueError, match="gate 1's width is not finite"):
        RaceLayout(**{**ok, "width": [1.0, np.nan, 1.0]})
    with pytest.raises(ValueError, match="needs >= 3 gates"):
        RaceLayout(position=np.eye(3)[:2], orientation=q[:2], width=[1, 1], height=[1, 1])
    with pytest.raises(ValueError, match="not a mapping|expected a mapping"):
        parse_gate_layout([1, 2, 3])


# --- the generator input -------------------------------------------------------------------------------
def _square_layout(**kw):
    return parse_gate_layout({"gates": SQUARE}, name="square", **kw)


def test_from_layout_flies_the_given_gates_in_every_env():
    layout = _square_layout(gate_size=(0.8, 0.6))
    gen = GateGenerator.from_layout(layout, num_envs=3, device="cpu")
    r = gen.result
    assert r.valid.numpy().tolist() == [1, 1, 1] and r.num_gates.numpy().tolist() == [4, 4, 4]
    assert np.allclose(r.gate_position.numpy(), layout.position[None], atol=1e-6)
    assert np.allclose(r.gate_orientation.numpy(), layout.orientation[None], atol=1e-6)
    assert np.allclose(r.gate_width.numpy(), 0.8) and np.allclose(r.gate_height.numpy(), 0.6)
    # the start: start_clearance (1 m) behind gate 0 along its normal (+y), level, at its altitude
    assert np.allclose(r.start_position.numpy()[0], [2.0, -1.0, 1.0], atol=1e-6)
    # a regeneration with advance rebuilds the same course (nothing is drawn)
    gen.enqueue(advance=True)
    assert np.allclose(r.gate_position.numpy(), layout.position[None], atol=1e-6) and gen.max_retries == 0


def test_the_layout_input_is_live_and_a_short_count_is_invalid():
    gen = GateGenerator(GateGenConfig(num_envs=2, device="cpu", source="layout", num_gates=6, gate_width=0.5),
                        prepare=False)
    assert set(gen.inputs) == {"gates.pose", "gates.count"} and gen.input_info["gates.pose"].shape == (2, 6)
    gen.generate()
    assert gen.result.valid.numpy().tolist() == [0, 0]  # nothing written: 0 gates
    write_gate_layout(gen, _square_layout(), mask=np.array([False, True]))
    gen.generate()
    assert gen.result.valid.numpy().tolist() == [0, 1] and gen.result.num_gates.numpy()[1] == 4
    assert np.isclose(gen.params["gate_frames.gate_width"].numpy()[1], DEFAULT_GATE_SIZE)
    assert np.isclose(gen.params["gate_frames.gate_width"].numpy()[0], 0.5)  # the unmasked env keeps its own
    gen.inputs["gates.count"].fill_(2)
    gen.generate()
    assert gen.result.valid.numpy().tolist() == [0, 0]


def test_write_gate_layout_refusals():
    big = parse_gate_layout({"gates": [[3 * math.cos(a), 3 * math.sin(a), 1.0]
                                       for a in np.linspace(0, 2 * np.pi, 8, endpoint=False)]})
    gen = GateGenerator(GateGenConfig(device="cpu", source="layout", num_gates=4, gate_width=0.5))
    with pytest.raises(ValueError, match="over the input capacity num_gates=4"):
        write_gate_layout(gen, big)
    with pytest.raises(KeyError, match="gates.pose"):
        write_gate_layout(GateGenerator(GateGenConfig(device="cpu", gate_width=0.5)), big)
    with pytest.raises(ValueError, match="source must be 'procedural' or 'layout'"):
        GateGenConfig(source="file")
    with pytest.raises(TypeError, match="RaceLayout"):
        GateGenerator.from_layout(np.zeros((4, 3)))


def test_write_gate_layout_refuses_a_randomized_gate_size_and_writes_nothing():
    """Each generation would draw the gate width over the layout's: refused, nothing written."""
    from trackgen_env.pipeline import build

    spec = GateGenConfig(num_envs=2, device="cpu", source="layout", num_gates=6, gate_width=0.5).to_spec()
    gen = build(spec.with_randomize({"gate_frames.gate_width": (0.4, 0.6)}), seeds=0)
    pose, count = gen.inputs["gates.pose"].numpy().copy(), gen.inputs["gates.count"].numpy().copy()
    height = gen.params["gate_frames.gate_height"].numpy().copy()
    with pytest.raises(ValueError, match=r"randomizes \['gate_frames.gate_width'\].*without_randomize"):
        write_gate_layout(gen, _square_layout())
    assert np.array_equal(gen.inputs["gates.pose"].numpy(), pose)
    assert np.array_equal(gen.inputs["gates.count"].numpy(), count)
    assert np.array_equal(gen.params["gate_frames.gate_height"].numpy(), height)


# --- the env ---------------------------------------------------------------------------------------------
def test_env_takes_a_layout_or_a_config_not_both():
    from trackgen_env.envs.gates import GatesVectorEnv

    with pytest.raises(TypeError, match="not both"):
        GatesVectorEnv(1, "cpu", gates=GateGenConfig(gate_width=0.6), layout=_square_layout(), capture=False)
    env = GatesVectorEnv(1, "cpu", layout=_square_layout(), capture=False)
    assert env.course.result.num_gates.numpy().tolist() == [4]
    assert env.max_episode_steps == 1500  # a short layout keeps the default time limit
    env.close()


@needs_real
def test_reference_controller_flies_the_split_s_through_every_gate_without_a_collision():
    """The UZH Split-S (Foehn et al. 2021): 7 gates, the stacked pair, a 71 m lap, flown by CourseLinePilot."""
    from trackgen_env.envs.controllers import CourseLinePilot
    from trackgen_env.envs.gates import GatesVectorEnv

    layout = load_gate_layout(REAL / SPLIT_S)
    env = GatesVectorEnv(2, "cpu", seed=0, layout=layout)
    # the time limit follows the layout: 71 m at 1 m/s, over the 30 s of a generated course
    assert env.max_episode_steps == math.ceil(layout.length() / (1.0 * env.quadrotor.dt))
    pilot = CourseLinePilot(env)
    obs, _ = env.reset(seed=0)
    done = np.zeros(2, bool)
    gates = np.zeros(2, int)
    for step in range(env.max_episode_steps):
        obs, _, terminated, truncated, info = env.step(pilot(obs))
        ended = (terminated | truncated) & ~done
        assert not info["collision"][ended].any() and not info["out_of_bounds"][ended].any(), step
        gates[ended] = info["gates_passed"][ended]
        done |= ended
        if done.all():
            break
    assert done.all() and gates.tolist() == [7, 7]  # a lap: every gate, gate 0 last
    env.close()


# --- the command line ----------------------------------------------------------------------------------
def test_demo_flies_a_gates_file(tmp_path, capsys):
    from trackgen_env.__main__ import main

    path = _yaml(tmp_path, {"gates": SQUARE})
    out = tmp_path / "out"
    assert main(["demo", "--env", "gates", "--gates-file", str(path), "--steps", "40", "--device", "cpu",
                 "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "the race layout layout.yaml (4 gates" in printed and "lap time:" in printed
    assert (out / "gates.png").read_bytes()[:4] == b"\x89PNG"


def test_demo_gates_file_errors_get_one_line(tmp_path, capsys):
    from trackgen_env.__main__ import main

    assert main(["demo", "--gates-file", "x.yaml", "--out", str(tmp_path)]) == 2
    assert "add --env gates" in capsys.readouterr().err
    bad = _yaml(tmp_path, {"gates": SQUARE[:2]}, "two.yaml")
    assert main(["demo", "--env", "gates", "--gates-file", str(bad), "--device", "cpu", "--out", str(tmp_path)]) == 2
    assert "two.yaml: gates: a closed gate course needs >= 3 gates, got 2" in capsys.readouterr().err


def test_eval_flies_a_policy_on_a_gates_file(tmp_path):
    pytest.importorskip("stable_baselines3")
    from trackgen_env.__main__ import main
    from trackgen_env.integrations.evaluation import evaluate

    run = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "--trainer",
                "sb3",
                "--env",
                "TrackGen-Gates-v0",
                "--steps",
                "256",
                "--num-envs",
                "2",
                "--seed",
                "3",
                "--device",
                "cpu",
                "--out",
                str(run),
                "--no-progress",
            ]
        )
        == 0
    )
    path = _yaml(tmp_path, {"gates": SQUARE})
    trained, random = evaluate(run / "model.zip", episodes=2, device="cpu", gates_file=path)
    assert trained.episodes == 2 and random.episodes == 2 and trained.mean_gates_passed is not None
    with pytest.raises(ValueError, match="env must be TrackGen-Gates-v0"):
        evaluate(run / "model.zip", env_id="TrackGen-Track-v0", episodes=1, device="cpu", gates_file=path)


def test_the_bounds_hold_the_course_line_where_it_swings_out_past_the_gates():
    """Bounds = the box of the gates *and* the course line, + bounds_margin: a drone on the line is inside."""
    import warp as wp

    from trackgen_env.envs.gates import GatesVectorEnv

    # gate 0 faces +x, gate 1 (10 m north) faces -x: the line between them bulges 2.5 m east
    # of both, past the gates' box grown by the 2 m margin
    layout = parse_gate_layout({"gates": [{"position": [0, 0, 1], "yaw_deg": 0},
                                          {"position": [0, 10, 1], "yaw_deg": 180},
                                          {"position": [-5, 5, 1], "yaw_deg": -90}]})
    env = GatesVectorEnv(1, "cpu", layout=layout, capture=False)
    line = env.course.course_line.centerline.numpy()[0]
    assert line[:, 0].max() > 2.4
    still = np.zeros((1, 4), np.float32)  # one 20 ms step moves the drone by millimetres, whatever the action
    for x, outside in ((2.4, False), (4.8, True)):
        env.reset(seed=0)
        env.position.assign(wp.array([[x, 5.0, 1.0]], dtype=wp.vec3, device="cpu"))
        _, _, terminated, _, info = env.step(still)
        # the teleport crosses gate 0's plane outside its opening: a missed gate may end it too
        assert bool(info["out_of_bounds"][0]) is outside, x
        assert bool(terminated[0]) is (outside or bool(info["missed_gate"][0])), x
    env.close()


def test_the_bounds_reach_the_top_of_each_opening_plus_the_margin():
    """A drone above a gate's centre but inside its opening (a 1.5 m gate at 1.5 m reaches 2.25 m) is
    inside the bounds with a small bounds_margin; above the top plus the margin it is out."""
    import warp as wp

    from trackgen_env.envs.gates import GatesVectorEnv

    layout = parse_gate_layout({"gates": [{"position": [0, 0, 1.5], "yaw_deg": 90},
                                          {"position": [5, 5, 1.5], "yaw_deg": 0},
                                          {"position": [0, 10, 1.5], "yaw_deg": -90}, {"position": [-5, 5, 1.5],
                                                                                       "yaw_deg": 180}]}, gate_size=1.5)
    env = GatesVectorEnv(1, "cpu", layout=layout, bounds_margin=0.2, capture=False)
    still = np.zeros((1, 4), np.float32)
    for z, outside in ((2.1, False), (2.4, False), (2.6, True)):
        env.reset(seed=0)
        env.position.assign(wp.array([[0.0, 5.0, z]], dtype=wp.vec3, device="cpu"))
        _, _, _, _, info = env.step(still)
        assert bool(info["out_of_bounds"][0]) is outside, z
    env.close()


def test_a_layout_of_more_gates_than_a_course_holds_is_refused_naming_its_count():
    from trackgen_env.envs.gates import GatesVectorEnv

    angles = np.linspace(0.0, 2.0 * np.pi, 65, endpoint=False)
    layout = parse_gate_layout({"gates": [{"position": [30 * np.cos(a), 30 * np.sin(a), 1.5],
                                           "yaw_deg": float(np.degrees(a) + 90)} for a in angles]})
    with pytest.raises(ValueError, match="this layout has 65 gates; a gate course holds at most 64"):
        GatesVectorEnv(1, "cpu", layout=layout)


@pytest.mark.parametrize("quat, match", [
    ([0.0, math.sqrt(0.5), 0.0, math.sqrt(0.5)], r"gate 0 lies flat"),
    ([math.sin(math.radians(15.0)), 0.0, 0.0, math.cos(math.radians(15.0))], r"gate 0's opening is rolled by 30.0 deg"),
])
def test_a_race_layout_built_in_python_gets_the_loaders_upright_rules(quat, match):
    """RaceLayout(...) skipped the roll and flat checks of the file loaders: a flat gate 0 ended
    every episode at its first step, a rolled one was flown as upright."""
    upright = [[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]]
    with pytest.raises(ValueError, match=match):
        RaceLayout(position=[[0, 0, 2.5], [8, 0, 2.5], [4, 6, 2.5]], orientation=[quat, *upright], width=[1.5] * 3,
                   height=[1.5] * 3)
    RaceLayout(position=[[0, 0, 2.5], [8, 0, 2.5], [4, 6, 2.5]], orientation=[[0, 0, 0, 1], *upright], width=[1.5] * 3,
               height=[1.5] * 3)


def test_gates_on_one_line_are_refused_and_overlapping_frames_warn():
    """Collinear gates were accepted (the course line doubled back through them and the pilot
    hovered or fell); gates closer than their openings were flown into their neighbour's frame."""
    upright = [[0.0, 0.0, 0.0, 1.0]] * 4
    with pytest.raises(ValueError, match="the 4 gate centres lie on one line"):
        RaceLayout(position=[[0, 0, 1.5], [5, 0, 1.5], [10, 0, 1.5], [15, 0, 1.5]], orientation=upright,
                   width=[1.5] * 4, height=[1.5] * 4)
    with pytest.raises(ValueError, match="lie on one line"):
        parse_gate_layout({"gates": [[0, 0, 1.5], [5, 0, 1.5], [10, 0, 1.5], [15, 0, 1.5]]})
    with pytest.warns(UserWarning,
                      match=r"gates 0 and 1 are 0.5 m apart, closer than their openings' diagonal \(2.12 m\)"):
        RaceLayout(position=[[0, 0, 1.5], [0.5, 0, 1.5], [0.5, 0.5, 1.5], [0, 0.5, 1.5]], orientation=upright,
                   width=[1.5] * 4, height=[1.5] * 4)


def test_a_gate_field_that_is_not_read_or_a_yaw_in_degrees_warns():
    """yaw: 90 (degrees meant) was flown as 90 rad, and yaw_degrees / sise were ignored, silently."""
    gates = [{"position": [0, 0, 1.5]}, {"position": [10, 0, 1.5]}, {"position": [5, 8, 1.5]}]
    with pytest.warns(UserWarning,
                      match=r"gates\[0\].yaw is 94.25, over 2 pi: radians are expected \(degrees\? yaw_deg\)"):
        parse_gate_layout({"gates": [{**gates[0], "yaw": 94.25}, *gates[1:]]})  # 15 turns: along the route
    with pytest.warns(UserWarning, match=r"gates\[2\] has fields that are not read: \['sise'\]"):
        parse_gate_layout({"gates": [*gates[:2], {**gates[2], "sise": 0.3}]})


def test_a_gate_facing_against_the_route_warns():
    """A given yaw against the route loaded silently; the course line then turned back through the gate."""
    gates = [{"position": [0, 0, 1.5], "yaw_deg": 0}, {"position": [10, 0, 1.5], "yaw_deg": 90},
             {"position": [10, 10, 1.5], "yaw_deg": 0}, {"position": [0, 10, 1.5], "yaw_deg": 270}]
    with pytest.warns(UserWarning, match=r"gate 2 faces against the route .* 135 deg from the direction of travel"):
        parse_gate_layout({"gates": gates})
    gates[2]["yaw_deg"] = 180
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_gate_layout({"gates": gates})
