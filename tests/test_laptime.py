"""Reference lap time (trackgen_env.integrations.laptime): the stadium's closed form, within 1%."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from trackgen_env.integrations.laptime import reference_lap_time, speed_profile
from trackgen_env.core.polyline import GRAVITY

from stadium import stadium


def _closed_form(ls, r, car):
    """Corners at v_c = sqrt(mu g R); each straight: the motor line a = A (1 - v / V) from v_c up
    to v_p, then braking at B back to v_c, with the two distances adding up to the straight."""
    A, B, V = car.max_accel, car.max_brake, car.max_speed
    vc = math.sqrt(car.friction * GRAVITY * r)

    def x_acc(v):  # distance to accelerate from vc to v: int u du / (A (1 - u / V))
        return V / A * (-(v - vc) - V * math.log((V - v) / (V - vc)))

    lo, hi = vc, V * (1 - 1e-12)
    for _ in range(200):
        vp = 0.5 * (lo + hi)
        lo, hi = (vp, hi) if x_acc(vp) + (vp**2 - vc**2) / (2 * B) < ls else (lo, vp)
    t_straight = V / A * math.log((V - vc) / (V - vp)) + (vp - vc) / B
    return 2 * (math.pi * r / vc + t_straight), vc, vp


# A, B below mu g: the motor and the brakes limit on the straights, the tyres in the corners
CAR = SimpleNamespace(friction=1.2, max_accel=6.0, max_brake=10.0, max_speed=80.0)


@pytest.mark.parametrize("ls,r", [(600.0, 60.0), (200.0, 15.0), (30.0, 5.0)])
def test_stadium_lap_time_equals_its_closed_form(ls, r):
    expected, vc, vp = _closed_form(ls, r, CAR)
    assert vp < CAR.max_speed
    assert reference_lap_time(stadium(ls, r, r / 50), CAR) == pytest.approx(expected, rel=0.01)


def test_corner_speed_is_the_friction_limit():
    _, v, kappa = speed_profile(stadium(600.0, 60.0, 1.0), CAR)
    on_arc = np.abs(kappa * 60.0 - 1.0) < 1e-3
    assert on_arc.mean() > 0.1  # the arcs are 39% of the loop (within 0.1% of 1 / R: most of them)
    limit = np.sqrt(CAR.friction * GRAVITY / kappa[on_arc])
    assert np.all(v[on_arc] <= limit * (1 + 1e-12))
    # the polyline's curvature wobbles by ~0.1%: the car slows for the next, tighter sample
    np.testing.assert_allclose(v[on_arc], limit, rtol=5e-3)


def test_bad_inputs_are_refused():
    with pytest.raises(TypeError, match="friction"):
        reference_lap_time(stadium(100.0, 10.0, 1.0), object())
    with pytest.raises(ValueError, match="shape"):
        reference_lap_time(np.zeros((2, 2)), CAR)
    with pytest.raises(ValueError, match="> 0"):
        reference_lap_time(stadium(100.0, 10.0, 1.0),
                           SimpleNamespace(friction=0.0, max_accel=1, max_brake=1, max_speed=1))
