"""TrackGen-Gates-v0, issue 13 (a drone env PPO learns): the hover-centred thrust, the
random-gate start distribution, the gate-plane semantics and the reward terms."""

import numpy as np
import pytest
import warp as wp

from trackgen_env.envs.controllers import CourseLinePilot
from trackgen_env.envs.gates import GatesVectorEnv
from trackgen_env.core.seeding import env_seeds

HOVER_DRIFT = 0.1  # [m] issue 13: action 0 keeps the start altitude within 0.1 m for 1 s


def _still(env, thrust=0.0):
    a = np.zeros((env.num_envs, 4), np.float32)
    a[:, 0] = thrust
    return a


def _random_gate_env(num_envs, seed, random_start_prob=1.0, **kwargs):
    return GatesVectorEnv(num_envs, "cpu", seed=seed, start="random_gate", random_start_prob=random_start_prob,
                          **kwargs)


# -- the action ----------------------------------------------------------------------------
def test_action_zero_hovers_at_the_start_altitude_for_1_s():
    env = GatesVectorEnv(16, "cpu", seed=21)
    env.reset(seed=21)
    z0 = env.drone_state()["position"][:, 2].copy()
    steps = round(1.0 / env.quadrotor.dt)
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(_still(env))
        assert not (terminated | truncated).any()
        assert np.abs(env.drone_state()["position"][:, 2] - z0).max() <= HOVER_DRIFT


@pytest.mark.parametrize("action, expected_g", [(1.0, 3.0), (0.5, 2.0), (0.0, 1.0), (-0.5, 0.5), (-1.0, 0.0)])
def test_thrust_is_centred_on_hover(action, expected_g):
    """m g (1 + a (T/W - 1)) for a >= 0, m g (1 + a) below: the first step's vertical acceleration from rest."""
    env = GatesVectorEnv(1, "cpu", seed=22)
    env.reset(seed=22)
    z0 = env.drone_state()["position"][0, 2]
    env.step(_still(env, action))
    vz = env.drone_state()["velocity"][0, 2]
    g, dt = env.quadrotor.gravity, env.quadrotor.dt
    assert vz == pytest.approx((expected_g - 1.0) * g * dt, abs=1e-3)  # level; drag acts from the second substep on
    assert env.drone_state()["position"][0, 2] > z0 - g * dt * dt


# -- the start distribution ----------------------------------------------------------------
def test_a_random_gate_start_depends_only_on_the_env_seed_and_counter():
    """Env i's starts are the same in a batch of 8 and alone (seeded with its per-env seed), episode after episode."""
    seeds = env_seeds(31, 8).view(np.uint32)  # the per-env seeds of seed=31, as the non-negative ints reset takes
    batch = _random_gate_env(8, 31, random_start_prob=0.5)
    batch.reset(seed=31)
    singles = [_random_gate_env(1, [int(s)], random_start_prob=0.5) for s in seeds[:3]]
    for single, s in zip(singles, seeds[:3]):
        single.reset(seed=[int(s)])
    starts = set()
    for _ in range(3):
        state = batch.drone_state()
        for i, single in enumerate(singles):
            for key, value in single.drone_state().items():
                np.testing.assert_array_equal(value[0], state[key][i], err_msg=f"env {i} {key}")
        starts.update(tuple(p) for p in np.round(state["position"], 4))
        batch.reset()
        for single in singles:
            single.reset()
    assert len(starts) == 3 * 8  # new courses, new starts


def _frame_clearance(p, radius, course, bar):
    """Smallest clearance [m] of a sphere at p (radius) from any gate frame (< 0: it may touch a bar)."""
    best = np.inf
    hw, hh = course["gate_width"] / 2, course["gate_height"] / 2
    for c, q in zip(course["gate_position"], course["gate_orientation"]):
        x, y, z, w = q
        normal = np.array([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)])
        lateral = np.cross([0.0, 0.0, 1.0], normal)
        lateral /= np.linalg.norm(lateral)
        vertical = np.cross(normal, lateral)
        rel = p - c
        along, lat, vert = abs(rel @ normal), abs(rel @ lateral), abs(rel @ vertical)
        # away from the frame's slab, inside the opening, or outside the frame's outer edge
        clear = max(along - bar / 2, min(hw - lat, hh - vert), max(lat - hw - bar, vert - hh - bar)) - radius
        best = min(best, clear)
    return best


def test_random_gate_starts_lie_in_free_space_clear_of_every_frame():
    env = _random_gate_env(128, 32)
    radius = float(np.linalg.norm(env.quadrotor.half_extents))
    for episode in range(3):
        obs, _ = env.reset(seed=32) if episode == 0 else env.reset()
        state, courses = env.drone_state(), env.courses()
        for e in range(env.num_envs):
            p = state["position"][e]
            assert _frame_clearance(p, radius, courses[e], env.bar_thickness) > 0.0, f"episode {episode} env {e}"
            assert p[2] > radius
            # moving along the course line towards the observed next gate, which is ahead (behind its plane)
            rot = obs[e, 3:12].reshape(3, 3)
            ahead = rot @ obs[e, 16:28].reshape(4, 3).mean(axis=0)
            assert state["velocity"][e] @ ahead >= 0.0
        _, _, terminated, _, info = env.step(_still(env))
        assert not info["collision"].any() and not info["missed_gate"].any() and not terminated.any()


def _observed_gate(env, obs, e):
    centre = env.drone_state()["position"][e] + obs[e, 3:12].reshape(3, 3) @ obs[e, 16:28].reshape(4, 3).mean(axis=0)
    gates = env.courses()[e]["gate_position"]
    k = int(np.argmin(np.linalg.norm(gates - centre, axis=1)))
    np.testing.assert_allclose(centre, gates[k], atol=1e-3)
    return k


def test_progress_after_a_random_gate_start_counts_the_next_gate_first():
    env = _random_gate_env(16, 33)
    pilot = CourseLinePilot(env)
    obs, _ = env.reset(seed=33)
    n = np.array([len(c["gate_position"]) for c in env.courses()])
    first = np.array([_observed_gate(env, obs, e) for e in range(env.num_envs)])
    assert (first != 0).sum() >= 8  # most start before another gate than gate 0
    expected = first.copy()
    counted = np.zeros(env.num_envs, np.int64)
    done = np.zeros(env.num_envs, bool)
    laps = np.zeros(env.num_envs, np.int64)
    for _ in range(600):
        obs, _, terminated, truncated, info = env.step(pilot(obs))
        for e in np.flatnonzero(~done):
            laps[e] = info["laps"][e]
            if info["gates_passed"][e] > counted[e]:
                assert info["gates_passed"][e] == counted[e] + 1
                counted[e] += 1
                expected[e] = (expected[e] + 1) % n[e]
            if not (terminated[e] or truncated[e]):
                assert _observed_gate(env, obs, e) == expected[e]
        done |= terminated | truncated
        if done.all():
            break
    # one lap from the start gate: every gate once, ending through the gate before the start gate
    assert done.all() and np.array_equal(counted, n)
    assert np.array_equal(laps, np.ones(env.num_envs))


def test_the_standard_start_counts_gate_0():
    env = GatesVectorEnv(1, "cpu", seed=34, start="first_gate")
    pilot = CourseLinePilot(env)
    obs, _ = env.reset(seed=34)
    assert _observed_gate(env, obs, 0) == 0
    for _ in range(200):
        obs, _, terminated, _, info = env.step(pilot(obs))
        assert not terminated[0]
        if info["gates_passed"][0] == 1:
            break
    assert info["gates_passed"][0] == 1 and _observed_gate(env, obs, 0) == 1


# -- gate-plane semantics ------------------------------------------------------------------
def _through_gate_0(lateral_offset, speed=1.0, **kwargs):
    """An env whose drone is moved beside its start (1 m behind gate 0) and flies straight along gate 0's normal."""
    env = GatesVectorEnv(1, "cpu", seed=35, body_rate_penalty=0.0, smoothness_penalty=0.0, **kwargs)
    env.reset(seed=35)
    course = env.courses()[0]
    x, y, z, w = course["gate_orientation"][0]
    normal = np.array([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 0.0])
    normal /= np.linalg.norm(normal)
    lateral = np.cross([0.0, 0.0, 1.0], normal)
    p = env.drone_state()["position"][0] + lateral_offset * lateral
    env.position.assign(p[None].astype(np.float32))
    env.velocity.assign((speed * normal)[None].astype(np.float32))
    return env, normal


def _set_velocity(env, v):
    env.velocity.assign(np.asarray(v, np.float32)[None])


def test_a_crossing_inside_the_opening_counts_once_and_switches_the_target():
    env, normal = _through_gate_0(0.0, gate_bonus=3.0)
    rewards, passes = [], 0
    for _ in range(80):  # 1 m at 1 m/s is 50 steps
        _set_velocity(env, normal)
        obs, reward, terminated, _, info = env.step(_still(env))
        assert not terminated[0]
        rewards.append(float(reward[0]))
        if info["gates_passed"][0] > passes:
            passes += 1
            assert reward[0] > 3.0 - 0.05
    assert passes == 1 and info["gates_passed"][0] == 1
    assert sum(r > 1.0 for r in rewards) == 1
    assert _observed_gate(env, obs, 0) == 1


def test_a_crossing_outside_the_opening_terminates_as_a_crash():
    env, normal = _through_gate_0(0.6, crash_penalty=2.0)  # 0.6 m beside the centre of a 0.6 m opening
    for _ in range(80):
        _set_velocity(env, normal)
        obs, reward, terminated, _, info = env.step(_still(env))
        if terminated[0]:
            break
    assert terminated[0] and info["missed_gate"][0]
    assert not info["collision"][0] and info["gates_passed"][0] == 0
    assert reward[0] < -2.0 + 0.05


def test_back_and_forth_at_the_plane_earns_no_progress():
    env, normal = _through_gate_0(0.0)
    for _ in range(80):  # through gate 0 (the counted pass), on to 0.3 m past it
        _set_velocity(env, normal)
        _, _, _, _, info = env.step(_still(env))
    assert info["gates_passed"][0] == 1
    start = env.drone_state()["position"][0].copy()
    total = 0.0
    for _ in range(3):  # back through gate 0 and forward again, three times (0.6 m each way)
        for sign in (-1.0, 1.0):
            for _ in range(30):
                _set_velocity(env, 2.0 * sign * normal)
                _, reward, terminated, _, info = env.step(_still(env))
                assert not terminated[0]
                total += float(reward[0])
    np.testing.assert_allclose(env.drone_state()["position"][0][:2], start[:2], atol=0.02)
    assert info["gates_passed"][0] == 1
    # the distance to the target (gate 1) is a potential: a closed loop earns what the altitude drift changed
    assert abs(total) < 0.02


# -- reward terms --------------------------------------------------------------------------
def test_action_smoothness_penalty_is_the_squared_action_change():
    env = GatesVectorEnv(1, "cpu", seed=36, smoothness_penalty=0.5, body_rate_penalty=0.0, progress_weight=0.0)
    env.reset(seed=36)
    env.step(_still(env))
    a = _still(env)
    a[0, 3] = 0.4  # a yaw-rate command: no progress, and progress_weight 0 anyway
    _, reward, *_ = env.step(a)
    assert reward[0] == pytest.approx(-0.5 * 0.4**2, abs=1e-6)
    _, reward, *_ = env.step(a)
    assert reward[0] == pytest.approx(0.0, abs=1e-6)


def test_approach_term_penalises_an_off_axis_approach_only():
    on_axis, _ = _through_gate_0(0.0, approach_penalty=1.0, approach_distance=2.0, progress_weight=0.0)
    off_axis, _ = _through_gate_0(0.25, approach_penalty=1.0, approach_distance=2.0, progress_weight=0.0)
    _, r_on, *_ = on_axis.step(_still(on_axis))
    _, r_off, *_ = off_axis.step(_still(off_axis))
    assert r_on[0] == pytest.approx(0.0, abs=1e-3)
    assert -1.0 < r_off[0] < -0.05


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"start": "anywhere"}, ValueError),
        ({"random_start_prob": 1.5}, ValueError),
        ({"start_distance": (1.0, 0.5)}, ValueError),
        ({"start_speed": 2.0}, TypeError),
        ({"start_tilt": -0.1}, ValueError),
        ({"progress_weight": "1"}, TypeError),
        ({"smoothness_penalty": -1.0}, ValueError),
        ({"approach_distance": 0.0}, ValueError),
    ],
)
def test_bad_start_and_reward_arguments_raise(kwargs, error):
    with pytest.raises(error):
        GatesVectorEnv(1, "cpu", seed=0, **kwargs)


@pytest.mark.filterwarnings("ignore:.*closer than their openings. diagonal")  # two gates 1 m apart on purpose
def test_the_gate_bonus_is_paid_for_every_gate_a_step_passes():
    """A step through two gates in a row earns two bonuses (Progress's ``passed`` is a count)."""
    from trackgen_env.generators.gate_layouts import parse_gate_layout

    layout = parse_gate_layout({"gates": [{"position": [0, 0, 1], "yaw_deg": 0}, {"position": [1, 0, 1], "yaw_deg": 0},
                                          {"position": [4, 4, 1], "yaw_deg": 180},
                                          {"position": [-3, 4, 1], "yaw_deg": 270}]})
    rewards = {}
    for bonus in (2.0, 0.0):
        env = GatesVectorEnv(1, "cpu", layout=layout, capture=False, gate_bonus=bonus)
        env.reset(seed=0)  # the start is 1 m behind gate 0, on its axis
        env.position.assign(wp.array([[1.5, 0.0, 1.0]], dtype=wp.vec3, device="cpu"))  # past gates 0 and 1
        _, reward, terminated, _, info = env.step(np.zeros((1, 4), np.float32))
        assert info["gates_passed"][0] == 2 and not terminated[0]
        rewards[bonus] = float(reward[0])
        env.close()
    assert rewards[2.0] - rewards[0.0] == pytest.approx(2 * 2.0, abs=1e-5)
