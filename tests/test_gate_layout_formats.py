"""The planners' and competitions' layout formats: TOGT-Planner YAML, safe-control-gym competition YAML,
obstacles (read, and refused by the env rather than dropped)."""

import math

import numpy as np
import pytest

from trackgen_env.generators.gate_layouts import (
    LSY_POLE_RADIUS,
    SCG_GATE_SIZE,
    SCG_POLE,
    RaceLayout,
    load_gate_layout,
)

TOGT = """\
initState:
  pos: [-6.0, 0.0, 1.2]
  vel: [0.0, 0.0, 0.0]
endState:
  pos: [0.0, 0.0, 1.2]
orders: [{orders}]
Gate1:
  type: 'RectanglePrisma'
  position: [0.0, 0.0, 1.5]
  rpy: [0.0, -90.0, 0.0]
  width: 2.4
  height: 1.6
  marginW: 0.0
  marginH: 0.0
  stationary: true
Gate2:
  type: 'RectanglePrisma'
  position: [8.0, 4.0, 2.5]
  rpy: [0.0, -90.0, 90.0]
  width: 2.0
  height: 2.0
Gate3:
  type: 'HexagonPrisma'
  position: [0.0, 8.0, 1.5]
  rpy: [0.0, -90.0, 0.0]
  side: 1.0
Gate4:
  type: 'SingleBall'
  position: [-8.0, 4.0, 1.5]
  radius: 0.5
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_togt_yaml(tmp_path):
    one_lap = "'Gate1', 'Gate2', 'Gate3', 'Gate4'"
    path = write(tmp_path, "track.yaml", TOGT.format(orders=f"{one_lap}, {one_lap}, 'Gate1'"))  # 2 laps and a gate
    layout = load_gate_layout(path)
    assert layout.num_gates == 4
    np.testing.assert_allclose(layout.position, [[0, 0, 1.5], [8, 4, 2.5], [0, 8, 1.5], [-8, 4, 1.5]])
    # rpy [0, -90, yaw] degrees: the gate's axis along yaw, signed along the course (gate 3 is flown towards -x)
    n = layout.normal
    np.testing.assert_allclose(n[0], [1, 0, 0], atol=1e-9)
    np.testing.assert_allclose(n[1], [0, 1, 0], atol=1e-9)
    np.testing.assert_allclose(n[2], [-1, 0, 0], atol=1e-9)
    # no rpy (a waypoint ball): faces along the course, the bisector of its legs
    np.testing.assert_allclose(n[3], np.array([0, -1, 0]), atol=1e-9)
    # a rectangle's own opening; a hexagon of side s and a ball of radius r: the square in their incircle
    np.testing.assert_allclose(layout.width, [2.4, 2.0, math.sqrt(2) * math.sqrt(3) / 2, math.sqrt(2) * 0.5])
    np.testing.assert_allclose(layout.height, [1.6, 2.0, math.sqrt(2) * math.sqrt(3) / 2, math.sqrt(2) * 0.5])
    assert len(layout.obstacles) == 0


@pytest.mark.parametrize("edit, match", [
    (("  position: [8.0, 4.0, 2.5]\n", ""), r"track.yaml: Gate2 has no 'position'"),
    (("rpy: [0.0, -90.0, 90.0]", "rpy: [0.0, 90.0]"), r"track.yaml: Gate2.rpy must hold 3 numbers"),
    (("'HexagonPrisma'", "'Cylinder'"), r"track.yaml: Gate3.type must be one of"),
    (("  side: 1.0\n", ""), r"track.yaml: Gate3.side must be a number"),
    (("width: 2.0", "width: -2.0"), r"track.yaml: Gate2.width must be > 0"),
    (("Gate4:\n", "GateX:\n"), r"track.yaml: orders\[3\] = 'Gate4' has no 'Gate4:' entry"),
])
def test_togt_malformed(tmp_path, edit, match):
    text = TOGT.format(orders="'Gate1', 'Gate2', 'Gate3', 'Gate4'")
    assert edit[0] in text
    with pytest.raises(ValueError, match=match):
        load_gate_layout(write(tmp_path, "track.yaml", text.replace(edit[0], edit[1], 1)))


SCG = """\
num_episodes: 1
quadrotor_config:
  seed: 1
  init_state:
    init_x: -1.0
    init_y: -3.0
  gates:
    [
      [1.0, -2.0, 0, 0, 0, 1.57079632679, 0],
      [2.0, 1.0, 0, 0, 0, 0, 1],
      [0.0, 2.0, 0, 0, 0, 1.57079632679, 1],
      [-1.0, 0.0, 0, 0, 0, 0, 0]
    ]
  obstacles:
    [
      [1.5, -1.0, 0, 0, 0, 0],
      [-0.5, 1.0, 0, 0, 0, 0]
    ]
"""


def test_safe_control_gym_yaml(tmp_path):
    layout = load_gate_layout(write(tmp_path, "level0.yaml", SCG))
    # centres: tall gates 1.0 m, low gates 0.525 m above z
    np.testing.assert_allclose(layout.position, [[1, -2, 1.0], [2, 1, 0.525], [0, 2, 0.525], [-1, 0, 1.0]])
    # the opening spans the gate frame's x: the normal is its y axis (yaw + 90 deg), signed along the course
    np.testing.assert_allclose(layout.normal, [[1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0]], atol=1e-9)
    np.testing.assert_allclose(layout.width, SCG_GATE_SIZE)
    np.testing.assert_allclose(layout.height, SCG_GATE_SIZE)
    height, radius = SCG_POLE
    np.testing.assert_allclose(layout.obstacles, [[1.5, -1, 0, height, radius], [-0.5, 1, 0, height, radius]])


@pytest.mark.parametrize("edit, match", [
    (("[2.0, 1.0, 0, 0, 0, 0, 1]", "[2.0, 1.0, 0, 0, 0, 1]"), r"level0.yaml: quadrotor_config.gates\[1\] must hold 7"),
    (("[2.0, 1.0, 0, 0, 0, 0, 1]", "[2.0, 1.0, 0, 0, 0, 0, 3]"), r"level0.yaml: quadrotor_config.gates\[1\]'s type"),
    (("[-0.5, 1.0, 0, 0, 0, 0]", "[-0.5, 1.0, x, 0, 0, 0]"), r"level0.yaml: quadrotor_config.obstacles\[1\] must be a"),
])
def test_safe_control_gym_malformed(tmp_path, edit, match):
    assert edit[0] in SCG
    with pytest.raises(ValueError, match=match):
        load_gate_layout(write(tmp_path, "level0.yaml", SCG.replace(edit[0], edit[1], 1)))


def test_task_config_nesting(tmp_path):
    layout = load_gate_layout(write(tmp_path, "c.yaml", SCG.replace("quadrotor_config:", "task_config:")))
    assert layout.num_gates == 4 and len(layout.obstacles) == 2


def test_lsy_obstacles_are_read(tmp_path):
    text = "".join(f"[[env.track.gates]]\npos = [{x}, {y}, 1.0]\nrpy = [0.0, 0.0, {yaw}]\n"
                   for x, y, yaw in [(0, 0, 0.0), (2, 1, 1.5707963), (0, 2, 3.1415926)])
    text += "[[env.track.obstacles]]\npos = [1.0, 1.0, 1.55]\n"
    layout = load_gate_layout(write(tmp_path, "level.toml", text))
    np.testing.assert_allclose(layout.obstacles, [[1.0, 1.0, 0.0, 1.55, LSY_POLE_RADIUS]])
    with pytest.raises(ValueError, match=r"level.toml: env.track.obstacles\[0\].pos must hold 3"):
        load_gate_layout(write(tmp_path, "level.toml", text.replace("[1.0, 1.0, 1.55]", "[1.0, 1.55]")))


def test_generic_obstacles(tmp_path):
    text = "gates:\n  - [0, 0, 1.5]\n  - [6, 0, 1.5]\n  - [3, 5, 1.5]\nobstacles:\n  - [3, 1, 0, 2, 0.1]\n"
    assert load_gate_layout(write(tmp_path, "g.yaml", text)).obstacles.tolist() == [[3, 1, 0, 2, 0.1]]
    with pytest.raises(ValueError, match=r"g.yaml: obstacles\[0\] must hold 5"):
        load_gate_layout(write(tmp_path, "g.yaml", text.replace("0, 2, 0.1", "0, 2")))
    with pytest.raises(ValueError, match="obstacle 0 must be finite with radius > 0 and top > bottom"):
        load_gate_layout(write(tmp_path, "g.yaml", text.replace("0, 2, 0.1", "2, 0, 0.1")))


def test_env_refuses_obstacles_it_does_not_collide_with(tmp_path):
    from trackgen_env.envs import GatesVectorEnv

    layout = load_gate_layout(write(tmp_path, "level0.yaml", SCG))
    with pytest.raises(ValueError, match=r"level0.yaml: 2 obstacles .*layout.without_obstacles\(\)"):
        GatesVectorEnv(1, "cpu", layout=layout)
    gates_only = layout.without_obstacles()
    assert isinstance(gates_only, RaceLayout) and len(gates_only.obstacles) == 0
    np.testing.assert_array_equal(gates_only.position, layout.position)
    env = GatesVectorEnv(1, "cpu", layout=gates_only)
    env.close()


def test_the_cli_flies_a_layout_with_obstacles_only_when_told_to_leave_them_out(tmp_path, capsys):
    """demo --gates-file refuses a layout with poles (the env does not collide with them) and names
    --without-obstacles; with it, the gates are flown; the flag alone is refused."""
    from trackgen_env.__main__ import main

    path = tmp_path / "poles.toml"
    # four gates around a 4 m square, a pole in the middle
    path.write_text("".join(f"[[env.track.gates]]\npos = [{x}, {y}, 1.0]\nrpy = [0.0, 0.0, {yaw}]\n"
                            for x, y, yaw in [(2, 0, 1.5707963), (0, 2, 3.1415926), (-2, 0, -1.5707963), (0, -2, 0.0)])
                    + "[[env.track.obstacles]]\npos = [0.0, 0.0, 1.55]\n")
    args = ["demo", "--env", "gates", "--gates-file", str(path), "--steps", "5", "--device", "cpu", "--no-progress",
            "--out", str(tmp_path / "out")]
    assert main(args) == 2
    assert "--without-obstacles" in capsys.readouterr().err
    assert main(args + ["--without-obstacles"]) == 0
    assert main(["demo", "--env", "gates", "--without-obstacles", "--steps", "5", "--device", "cpu"]) == 2
    assert "applies to a --gates-file" in capsys.readouterr().err
