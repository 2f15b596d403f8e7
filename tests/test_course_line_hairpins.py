"""CenterlineFromGates through hairpins: a segment whose single cubic would fold (the next gate lies further on
and faces back) turns through a turning point instead, and the reference controller flies it."""

import numpy as np

from trackgen_env.course import Course
from trackgen_env.envs import GatesVectorEnv
from trackgen_env.envs.controllers import CourseLinePilot
from trackgen_env.generators.gate_layouts import parse_gate_layout
from trackgen_env.generators.gates import GateGenerator

# two 180-degree turns, each to a gate 1.5 m further on and 0.8 m to the side, facing back: the line must run
# past it and turn round (0.6 m openings)
HAIRPINS = parse_gate_layout({"gate_size": 0.6, "gates": [
    {"position": [0, 0, 1.2], "yaw_deg": 0}, {"position": [1.5, 0.8, 1.2], "yaw_deg": 180},
    {"position": [-1.5, 0.8, 1.2], "yaw_deg": 180}, {"position": [-3, 0, 1.2], "yaw_deg": 0}]}, name="hairpins")


def _course_line(layout):
    course = Course.gates(GateGenerator.from_layout(layout))
    line = course.course_line
    n = int(line.num_points.numpy()[0])
    return line.centerline.numpy()[0, :n], line.curvature.numpy()[0, :n], line.tangent.numpy()[0, :n]


def test_hairpins_keep_a_flyable_radius():
    points, curvature, tangent = _course_line(HAIRPINS)
    # the single cubics fold into 3.4 cm knots; through the turning point the tightest radius is 0.25 m
    assert 1.0 / np.abs(curvature).max() > 0.2
    # the line still passes every gate's centre along its normal (point gate * samples_per_gate)
    per = len(points) // HAIRPINS.num_gates
    np.testing.assert_allclose(points[::per], HAIRPINS.position, atol=1e-5)
    np.testing.assert_allclose(tangent[::per], HAIRPINS.normal, atol=1e-5)
    # and turns round beyond the gate it turns back to (x > 1.5 m), not through it
    assert points[:, 0].max() > 1.5 + 0.3


def test_the_reference_controller_flies_the_hairpins():
    from trackgen_env.demos.gates import fly

    env = GatesVectorEnv(1, "cpu", layout=HAIRPINS)
    try:
        result = fly(env, CourseLinePilot(env), round(10.0 / env.quadrotor.dt), progress=False)
    finally:
        env.close()
    assert result["collisions"] == 0 and result["out_of_bounds"] == 0 and result["laps"] >= 1


def test_the_pilot_starts_on_the_leg_into_its_next_gate():
    """From the start, 1 m behind gate 0, the nearest point of the whole loop lies on the leg from gate 1 to gate 2
    (it passes 0.4 m away); the pilot searches the leg into gate 0 instead, as after every reset."""
    layout = parse_gate_layout({"gate_size": 0.6, "gates": [
        {"position": [0, 0, 1.0], "yaw_deg": 0}, {"position": [2, 1, 1.0], "yaw_deg": 180},
        {"position": [-3, 0.3, 1.0], "yaw_deg": 180}, {"position": [-0.5, -2, 1.0], "yaw_deg": 0}]}, name="crossing")
    env = GatesVectorEnv(1, "cpu", layout=layout)
    try:
        pilot = CourseLinePilot(env)
        points, _, _ = _course_line(layout)
        per = len(points) // layout.num_gates
        env.reset(seed=0)
        start = env.drone_state()["position"][0]
        nearest = int(np.argmin(np.linalg.norm(points - start, axis=1)))
        assert per <= nearest < 2 * per  # the trap: the loop's nearest point is on the leg from gate 1 to gate 2
        for _ in range(2):  # the first episode and a reset
            obs, _ = env.reset(seed=0)
            pilot(obs)
            assert pilot.controller.segment.numpy()[0] >= 3 * per  # on the leg from gate 3 into gate 0
    finally:
        env.close()
