"""The track family's curve math: the spline bases, the dense samples, and the layout's loop geometry.

Procedural tracks are periodic uniform cubic B-splines through jittered control points
around the centre (the curve lies in the control points' convex hull, so it stays inside
the course square); a given centreline is interpolated by a uniform Catmull-Rom spline,
which passes through every given point. Curve formulas: Catmull & Rom (1974); de Boor,
*A Practical Guide to Splines* (1978).
"""

from __future__ import annotations

import math

import warp as wp

from ...core.polyline import TWO_PI

__all__ = ["BSPLINE", "CATMULL_ROM", "DENSE_SAMPLES", "bspline_weights", "bspline", "curve", "segment_t",
           "dense_sample", "dense_weights", "REF_CONTROL_POINTS", "layout_depth", "flat_loop_bound"]

wp.set_module_options({"enable_backward": False})

# Dense spline samples per control segment (the arc-length table), per source: powers of two,
# so that a segment parameter x / samples is the exact product x * (1 / samples) (segment_t).
DENSE_SAMPLES = {"procedural": 32, "centerline": 4}
assert all(n & (n - 1) == 0 for n in DENSE_SAMPLES.values())

BSPLINE = wp.constant(0)
CATMULL_ROM = wp.constant(1)


# --- curve evaluation --------------------------------------------------------------------
@wp.func
def bspline_weights(t: float):
    """The uniform cubic B-spline's basis weights at ``t`` of the position (times 6), the first
    derivative (times 2) and the second derivative, as three ``vec4`` (one per control point)."""
    t2 = t * t
    t3 = t2 * t
    return (wp.vec4((1.0 - t) * (1.0 - t) * (1.0 - t), 3.0 * t3 - 6.0 * t2 + 4.0, -3.0 * t3 + 3.0 * t2 + 3.0 * t + 1.0,
                    t3),
            wp.vec4(-(1.0 - t) * (1.0 - t), 3.0 * t2 - 4.0 * t, -3.0 * t2 + 2.0 * t + 1.0, t2),
            wp.vec4(1.0 - t, 3.0 * t - 2.0, -3.0 * t + 1.0, t))


@wp.func
def bspline(p0: wp.vec3, p1: wp.vec3, p2: wp.vec3, p3: wp.vec3, w_pos: wp.vec4, w_d1: wp.vec4, w_d2: wp.vec4):
    """Position, first and second derivative of a B-spline segment from its basis weights."""
    s = 1.0 / 6.0
    pos = s * (w_pos[0] * p0 + w_pos[1] * p1 + w_pos[2] * p2 + w_pos[3] * p3)
    d1 = 0.5 * (w_d1[0] * p0 + w_d1[1] * p1 + w_d1[2] * p2 + w_d1[3] * p3)
    d2 = w_d2[0] * p0 + w_d2[1] * p1 + w_d2[2] * p2 + w_d2[3] * p3
    return pos, d1, d2


@wp.func
def curve(p0: wp.vec3, p1: wp.vec3, p2: wp.vec3, p3: wp.vec3, t: float, kind: int):
    """Position, first and second derivative (per unit t) of one spline segment."""
    if kind == BSPLINE:
        w_pos, w_d1, w_d2 = bspline_weights(t)
        return bspline(p0, p1, p2, p3, w_pos, w_d1, w_d2)
    t2 = t * t
    t3 = t2 * t
    a = -p0 + p2
    b = 2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3
    c = -p0 + 3.0 * p1 - 3.0 * p2 + p3
    pos = 0.5 * (2.0 * p1 + a * t + b * t2 + c * t3)
    d1 = 0.5 * (a + 2.0 * b * t + 3.0 * c * t2)
    d2 = 0.5 * (2.0 * b + 6.0 * c * t)
    return pos, d1, d2


@wp.func
def segment_t(x: float, samples: int) -> float:
    """``x / samples``, the segment parameter of dense sample position ``x``, as a product:
    exact (the same float) for a power of two ``samples``, and no division per sample."""
    return x * (1.0 / float(samples))


@wp.func
def dense_sample(p0: wp.vec3, p1: wp.vec3, p2: wp.vec3, p3: wp.vec3, i: int, samples: int, kind: int,
                  weights: wp.array2d(dtype=wp.vec4)):
    """``curve`` at dense sample ``i`` of a segment (t = i / samples): a B-spline's basis
    weights there are the same for every segment and env, so they are read from
    ``weights[i]`` (``dense_weights``: the same floats as ``bspline_weights``)."""
    if kind == BSPLINE:
        return bspline(p0, p1, p2, p3, weights[i, 0], weights[i, 1], weights[i, 2])
    return curve(p0, p1, p2, p3, segment_t(float(i), samples), kind)


@wp.kernel
def dense_weights(samples: int, weights: wp.array2d(dtype=wp.vec4)):
    i = wp.tid()
    w_pos, w_d1, w_d2 = bspline_weights(segment_t(float(i), samples))
    weights[i, 0] = w_pos
    weights[i, 1] = w_d1
    weights[i, 2] = w_d2


# --- the layout's loop geometry ---------------------------------------------------------------
# The layout adapts to the band: the defaults (a 0.8 m band in a 10 m square, turn radius
# >= 2 half widths, 12 control points) draw their shapes unchanged; a wider band, a smaller
# square or a larger turn-radius factor (a tighter ratio q = min turn radius / loop radius)
# draws shallower lobes, and more control points draw less per-point noise, so that the
# same share of draws passes the checks whatever the documented values.
REF_CONTROL_POINTS = wp.constant(12.0)
_REF_TURN_RATIO = wp.constant(0.8 / 4.6)  # q of the defaults: 2 * 0.4 m over (5 - 0.4) m
_DEPTH_EXP = wp.constant(1.5)  # measured: the lowest power of those tried (1, 1.5, 2) that keeps >= 99 % valid


@wp.func
def layout_depth(radius_jitter: float, min_turn_radius: float, r_outer: float) -> float:
    """Depth of the radial profile: ``radius_jitter`` up to the defaults' ratio q, beyond it
    the depth whose innermost radius ``r_outer (1 - depth)`` grows as ``(q / q_ref)^1.5``
    (0 from q = 0.39 on with the default jitter: a round loop)."""
    q = min_turn_radius / wp.max(r_outer, 1.0e-9)
    if q <= _REF_TURN_RATIO:
        return radius_jitter
    return wp.clamp(1.0 - (1.0 - radius_jitter) * wp.pow(q / _REF_TURN_RATIO, _DEPTH_EXP), 0.0, radius_jitter)


#: Shrink of the flat loop bound per unit of profile depth, measured: over 648 corner configs of
#: the documented ranges x 1000 envs the longest loop is at most the bound without its 2 % margin
#: (equal to it at depth 0, a round loop).
_DEPTH_SHRINK = 1.0 / 6.0


def flat_loop_bound(size: float, width: float, radius_jitter: float, min_turn_radius_factor: float,
                    num_control_points: int) -> float:
    """[m] The longest flat procedural loop the layout draws at these values (the default ``max_points``).

    Every control point lies within the outer radius ``r = size / 2 - width / 2`` and the
    B-spline within their convex hull. Through the ``n`` corners of a regular ``n``-gon of
    radius ``r`` (no profile) the periodic cubic B-spline passes at radius
    ``beta r = (2 + cos(2 pi / n)) / 3 r`` (de Boor 1978: a knot of a uniform cubic B-spline
    is ``(P0 + 4 P1 + P2) / 6``), the circle of length ``2 pi beta r``; a radial profile of
    depth ``d`` (the layout's, ``layout_depth``) pulls the points inwards, shortening the
    loop. The bound is ``1.02 * 2 pi beta r (1 - d / 6)``: the shrink ``1 / 6`` per unit depth
    is measured (``_DEPTH_SHRINK``), the 2 % is margin. The layout's values are its
    construction ones: a curriculum that later lowers ``radius_jitter``, moves ``width`` far
    from it or grows ``size`` sizes ``max_points`` for its final values.
    """
    hw = 0.5 * width
    r_outer = 0.5 * size - hw
    depth = float(layout_depth(radius_jitter, min_turn_radius_factor * hw, r_outer))  # the wp.func, in Python
    beta = (2.0 + math.cos(TWO_PI / num_control_points)) / 3.0
    return 1.02 * TWO_PI * beta * r_outer * (1.0 - _DEPTH_SHRINK * depth)
