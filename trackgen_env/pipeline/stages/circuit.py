"""The circuit-like layout stage (``"circuit_layout"``): a filleted star polygon with a main straight.

It replaces the track family's ``layout`` stage in the spec of
:func:`trackgen_env.pipeline.presets.circuit` and writes the same fields (``ctrl``,
``ctrl_count``), which the ``spline``, ``resample``, ``checks`` and ``start`` stages turn
into a centreline as for any procedural track. Per env (one lane each)::

    polygon   K vertices (K drawn in [corners_lo, corners_hi]) at jittered angles around the
              centre, radii R (1 - depth u) with R drawn in [radius_lo, radius_hi] widths;
              one angular gap of gap_lo..gap_hi rad between two vertices at R: the main straight
    fillets   each vertex rounded by a circular arc: a slow corner (the one that ends the main
              straight, every corner turning by more than slow_turn rad, and a slow_share of
              the others) of a radius drawn log-uniformly in [slow_radius_lo, slow_radius_hi]
              widths (0.55-3: a loop's tightest is ~0.57-1.3 widths, as real circuits'
              hairpins, 0.45-2); the others of a
              radius drawn log-uniformly in [corner_radius_lo, corner_radius_hi] widths times
              one common factor, found by bisection, that puts a drawn share
              (straight_fraction_lo..hi) of the loop on straights (arcs wider than
              straight_radius widths count as straight, as in ``trackgen_env.core.stats``); each
              shrunk so that its tangent length fits half of each adjacent edge. A draw is
              rejected when a fillet is shrunk below min_corner_radius widths, or when its
              straight share misses the drawn one by more than straight_fraction_tolerance
    control   the arcs sampled every arc_step rad (and at most arc_chord widths apart), the
    points    straights every straight_step widths with a lateral wiggle of up to wiggle
              widths (real straights are not perfectly straight), their ends graded (a point
              one arc chord from the arc) so that the spline meets an arc without overshoot

then the ``spline`` stage fits the periodic uniform cubic B-spline of those control points
(de Boor 1978). A draw is also rejected when its control polygon is longer than
``max_length`` widths, which bounds the loop (a B-spline is no longer than its control
polygon: it is the limit of corner cutting, Lane & Riesenfeld 1980), so the capacities
(``max_loop_length``, ``max_points``) hold every accepted loop; or when it needs more
control points than ``num_control_points``.

Every length is a multiple of the band's width (``band.width``, read from ``ctrl_hw``), so
the same seed draws the same shape, scaled, at any width: a 1:10 RC track at 1.2 m or a
full-size circuit at 12 m. The shape of the distribution follows real circuits' structure:
long straights into slow corners, sweepers, hairpins, chicanes (alternating turns where
the polygon is star-shaped inward), corner radii from ~0.55 to ~80 widths; the defaults were
tuned against the 19 circuits of the TUMFTM racetrack database (Heilmeier et al., *Vehicle
System Dynamics* 58(10), 2020) with :mod:`trackgen_env.core.stats` (``docs/courses.md``).
Fillets: the tangent length of a circular arc of radius ``r`` turning by ``a`` is ``r
tan(a / 2)`` (standard road-design geometry). The slowest corner's floor, 0.55 widths: a
centreline radius of half the width (0.5 widths) closes the inner edge of the band into a
point (its radius ``r - w / 2``), the geometric limit the checks hold (``min_turn_radius_factor
= 1``); 0.55 leaves an inner edge of 0.05 widths and room for the spline, which turns a
sampled arc slightly tighter (the uniform cubic B-spline of points every ``t`` rad on a
circle of radius ``r`` has radius ``r (2 + cos t) / 3`` at the knots: 0.989 ``r`` at the
default ``arc_step``).
"""

from __future__ import annotations

import math

import warp as wp

from ...core import env_loop
from ...core.polyline import TWO_PI
from ...core.seeding import ATTEMPT_STREAMS, Stream, random_key, uniform
from ..stage import Param, Stage

__all__ = ["CircuitLayout", "MAX_CORNERS", "control_point_capacity"]

wp.set_module_options({"enable_backward": False})

#: the most polygon vertices (corners) a draw can have (the scratch capacity)
MAX_CORNERS = 32

_MAX_CORNERS = wp.constant(MAX_CORNERS)
_STREAM_LAYOUT = wp.constant(int(Stream.LAYOUT) * ATTEMPT_STREAMS)  # + attempt, as the track layout
# draw indices of the stream: scalars, then per vertex, then per control point (disjoint)
_PER_VERTEX = wp.constant(16)
_PER_POINT = wp.constant(16 + 4 * MAX_CORNERS)
_BISECTIONS = wp.constant(24)


def control_point_capacity(corners_hi: float, max_length: float, straight_step: float, arc_step: float,
                           arc_chord: float) -> int:
    """Control points a draw may need at most, from the construction values (in widths).

    Per corner: at most ``2 + pi / arc_step + arc / arc_chord`` arc points (``arc`` its arc
    length); per straight at most ``3 + length / straight_step`` (its graded ends); the arcs
    and straights together are about as long as the control polygon, ``<= max_length``. A
    draw that needs more is rejected (never written past the capacity).
    """
    k = min(int(math.floor(corners_hi)), MAX_CORNERS)
    per_length = 1.0 / min(arc_chord, straight_step)
    return int(k * (5 + math.ceil(math.pi / arc_step)) + math.ceil(max_length * per_length)) + 1


@wp.func
def _cross(a: wp.vec2, b: wp.vec2) -> float:
    return a[0] * b[1] - a[1] * b[0]


@wp.func
def _fillet_radius(f: wp.vec3, scale: float) -> float:
    """A fillet's radius: (drawn radius, largest that fits, turn) with the common scale; a
    slow corner's (drawn < 0) is not scaled."""
    if f[0] < 0.0:
        return wp.min(-f[0], f[1])
    return wp.min(scale * f[0], f[1])


@wp.func
def _straight_share(fillet: wp.array2d(dtype=wp.vec3), e: int, k_count: int, perimeter: float, scale: float,
                    straight_r: float) -> float:
    """The share of the filleted polygon on straights (and arcs wider than straight_r) with
    the common scale on the drawn radii."""
    length = perimeter
    curved = float(0.0)
    for k in range(k_count):
        f = fillet[e, k]
        r = _fillet_radius(f, scale)
        bend = wp.abs(f[2])
        arc = r * bend
        length = length - 2.0 * r * wp.tan(0.5 * bend) + arc
        if r < straight_r:
            curved = curved + arc
    return 1.0 - curved / wp.max(length, 1.0e-12)


@wp.func
def _arc_points(f: wp.vec3, arc_step: float, arc_chord: float) -> int:
    """Control points of a fillet's arc (radius, tangent length, turn): every arc_step rad
    and at most arc_chord apart, at least 2."""
    return wp.max(2, int(wp.ceil(wp.abs(f[2]) / wp.min(arc_step, arc_chord / wp.max(f[0], 1.0e-12)))))


@wp.kernel
def _circuit_layout(
    envs_per_thread: int,
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    ctrl_hw: wp.array2d(dtype=float),
    # params, [E] each (lengths in widths, angles in rad)
    corners_lo: wp.array(dtype=float),
    corners_hi: wp.array(dtype=float),
    radius_lo: wp.array(dtype=float),
    radius_hi: wp.array(dtype=float),
    depth: wp.array(dtype=float),
    angle_jitter: wp.array(dtype=float),
    gap_lo: wp.array(dtype=float),
    gap_hi: wp.array(dtype=float),
    corner_radius_lo: wp.array(dtype=float),
    corner_radius_hi: wp.array(dtype=float),
    min_corner_radius: wp.array(dtype=float),
    arc_step: wp.array(dtype=float),
    arc_chord: wp.array(dtype=float),
    straight_step: wp.array(dtype=float),
    wiggle: wp.array(dtype=float),
    max_length: wp.array(dtype=float),
    straight_fraction_lo: wp.array(dtype=float),
    straight_fraction_hi: wp.array(dtype=float),
    straight_radius: wp.array(dtype=float),
    slow_share: wp.array(dtype=float),
    slow_radius_lo: wp.array(dtype=float),
    slow_radius_hi: wp.array(dtype=float),
    slow_turn: wp.array(dtype=float),
    straight_fraction_tolerance: wp.array(dtype=float),
    # scratch
    vertex: wp.array2d(dtype=wp.vec2),
    fillet: wp.array2d(dtype=wp.vec3),
    # outputs
    ctrl: wp.array2d(dtype=wp.vec3),
    ctrl_count: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
):
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0:
            continue
        key = random_key(seeds[e], counters[e], _STREAM_LAYOUT + attempt[e])
        w = 2.0 * ctrl_hw[e, 0]
        cap = ctrl.shape[1]
        # -- the polygon: K vertices counter-clockwise; the last at angle 0 and the one before at
        # the outer radius R, the first after the gap: edge K-1 -> 0 spans the gap (the main straight)
        klo = wp.min(corners_lo[e], corners_hi[e])
        khi = wp.max(corners_lo[e], corners_hi[e])
        k_count = int(wp.ceil(klo)) + int(uniform(key, 0) * (wp.floor(khi) - wp.ceil(klo) + 1.0))
        k_count = wp.clamp(k_count, 3, _MAX_CORNERS)
        r_outer = w * (radius_lo[e] + (radius_hi[e] - radius_lo[e]) * uniform(key, 1))
        gap = gap_lo[e] + (gap_hi[e] - gap_lo[e]) * uniform(key, 2)
        step = (TWO_PI - gap) / float(k_count)
        for k in range(k_count):
            theta = TWO_PI
            r = r_outer
            if k < k_count - 1:
                theta = gap + (float(k + 1) + angle_jitter[e] * (2.0 * uniform(key, _PER_VERTEX + 4 * k) - 1.0)) * step
                if k < k_count - 2:
                    r = r_outer * (1.0 - depth[e] * uniform(key, _PER_VERTEX + 4 * k + 1))
            vertex[e, k] = wp.vec2(r * wp.cos(theta), r * wp.sin(theta))
        # -- fillets: the drawn radius, the largest that fits (its tangent length r tan(|turn| / 2)
        # at most half of each adjacent edge) and the signed turn, per vertex
        lr_lo = wp.log(corner_radius_lo[e])
        lr_hi = wp.log(corner_radius_hi[e])
        perimeter = float(0.0)
        for k in range(k_count):
            prev = vertex[e, (k + k_count - 1) % k_count]
            here = vertex[e, k]
            nxt = vertex[e, (k + 1) % k_count]
            el_in = wp.length(here - prev)
            el_out = wp.length(nxt - here)
            perimeter = perimeter + el_out
            d_in = (here - prev) / wp.max(el_in, 1.0e-12)
            d_out = (nxt - here) / wp.max(el_out, 1.0e-12)
            turn = wp.atan2(_cross(d_in, d_out), wp.dot(d_in, d_out))
            r = w * wp.exp(lr_lo + (lr_hi - lr_lo) * uniform(key, _PER_VERTEX + 4 * k + 2))
            if k == 0 or wp.abs(turn) >= slow_turn[e] or uniform(key, _PER_VERTEX + 4 * k + 3) < slow_share[e]:
                # a slow corner (always the one that ends the main straight, the braking zone, and
                # every sharp one), its radius kept out of the scaling below (stored negative)
                # log-uniform, as the other corners: real circuits' slowest corners crowd the low end
                ls_lo = wp.log(slow_radius_lo[e])
                r = -w * wp.exp(ls_lo + (wp.log(slow_radius_hi[e]) - ls_lo) * uniform(key, _PER_VERTEX + 4 * k + 2))
            r_fit = 0.5 * wp.min(el_in, el_out) / wp.max(wp.tan(0.5 * wp.abs(turn)), 1.0e-6)
            fillet[e, k] = wp.vec3(r, r_fit, turn)
        # -- one common factor on the drawn radii sets the share of the loop on straights to a
        # drawn target (bisection in log scale): the radii keep their spread, the lap its rhythm
        aim = straight_fraction_lo[e] + (straight_fraction_hi[e] - straight_fraction_lo[e]) * uniform(key, 5)
        straight_r = straight_radius[e] * w
        lo = float(-3.0)
        hi = float(3.0)
        for it in range(_BISECTIONS):
            mid = 0.5 * (lo + hi)
            if _straight_share(fillet, e, k_count, perimeter, wp.exp(mid), straight_r) > aim:
                lo = mid  # too straight: wider corners
            else:
                hi = mid
        scale = wp.exp(0.5 * (lo + hi))
        accept = int(1)
        if wp.abs(_straight_share(fillet, e, k_count, perimeter, scale,
                                  straight_r) - aim) > straight_fraction_tolerance[e]:
            accept = 0  # the polygon cannot reach its drawn share (its edges too short for the fillets)
        for k in range(k_count):
            f = fillet[e, k]
            r = _fillet_radius(f, scale)
            if r < min_corner_radius[e] * w:
                accept = 0
            fillet[e, k] = wp.vec3(r, r * wp.tan(0.5 * wp.abs(f[2])), f[2])
        # -- control points: per vertex its arc, then the straight to the next arc
        phase = TWO_PI * uniform(key, 3)
        mirror = 1.0
        if uniform(key, 4) < 0.5:
            mirror = -1.0
        ca = wp.cos(phase)
        sa = wp.sin(phase)
        j = int(0)
        polygon = float(0.0)
        last = wp.vec2()
        first = wp.vec2()
        for k in range(k_count):
            here = vertex[e, k]
            nxt = vertex[e, (k + 1) % k_count]
            d_in = wp.normalize(here - vertex[e, (k + k_count - 1) % k_count])
            d_out = wp.normalize(nxt - here)
            f = fillet[e, k]
            f_next = fillet[e, (k + 1) % k_count]
            r = f[0]
            turn = f[2]
            side = wp.sign(turn)
            begin = here - d_in * f[1]
            centre = begin + wp.vec2(-d_in[1], d_in[0]) * (side * r)
            h0 = wp.atan2(d_in[1], d_in[0])
            m = _arc_points(f, arc_step[e], arc_chord[e] * w)
            end = here + d_out * f[1]
            target = nxt - d_out * f_next[1]
            run = wp.length(target - end)
            # the straight's ends are graded: a point one arc chord from each arc, so that the
            # B-spline meets the arc without a curvature overshoot; a straight shorter than
            # half a chord has only its first point (none when the fillets touch)
            chord_in = r * wp.abs(turn) / float(m)
            chord_out = f_next[0] * wp.abs(f_next[2]) / float(_arc_points(f_next, arc_step[e], arc_chord[e] * w))
            d0 = wp.min(run / 3.0, chord_in)
            d1 = wp.min(run / 3.0, chord_out)
            inner = run - d0 - d1
            n = wp.max(1, int(inner / (straight_step[e] * w)))
            points = m + n + 2
            if run < 0.5 * wp.min(chord_in, chord_out):
                points = m + 1
                if run < 0.25 * wp.min(chord_in, chord_out):
                    points = m
            lateral = wp.vec2(-d_out[1], d_out[0])
            for i in range(points):
                p = wp.vec2()
                if i < m:
                    h = h0 + turn * float(i) / float(m)
                    p = centre + wp.vec2(wp.sin(h), -wp.cos(h)) * (side * r)
                elif i == m:
                    p = end
                elif i == m + n + 1:
                    p = target - d_out * d1
                else:
                    a = i - m - 1
                    p = end + d_out * (d0 + inner * float(a) / float(n))
                    if a > 0:
                        p = p + lateral * (wiggle[e] * w * (2.0 * uniform(key, _PER_POINT + j) - 1.0))
                if j > 0:
                    polygon = polygon + wp.length(p - last)
                else:
                    first = p
                last = p
                if j < cap:
                    # rotated by the drawn phase and mirrored half of the time: both directions
                    ctrl[e, j] = wp.vec3(ca * p[0] - sa * mirror * p[1], sa * p[0] + ca * mirror * p[1], 0.0)
                j = j + 1
        polygon = polygon + wp.length(first - last)
        if j > cap or polygon > max_length[e] * w:
            accept = 0
        if accept == 0:
            ok[e] = 0
        ctrl_count[e] = wp.min(j, cap)


def _p(name, default, lo, hi, doc, stream, lo_open=False):
    return Param(name, default, lo, hi, doc, lo_open=lo_open, stream=stream)


class CircuitLayout(Stage):
    """Control points of a circuit-like loop: a filleted star polygon with a main straight
    (see the module docstring; every length in band widths, every angle in rad)."""

    name, family = "circuit_layout", "track"
    # randomizer streams 32.. (the track layout's are 0..4)
    params = (
        _p("corners_lo", 13.0, 3.0, MAX_CORNERS, "fewest polygon vertices (corners) of a draw", 32),
        _p("corners_hi", 22.0, 3.0, MAX_CORNERS, "most polygon vertices (corners) of a draw", 33),
        _p("radius_lo", 50.0, 0.0, math.inf, "[widths] least outer radius of the polygon", 34, True),
        _p("radius_hi", 68.0, 0.0, math.inf, "[widths] largest outer radius of the polygon", 35, True),
        _p("depth", 0.64, 0.0, 0.95, "fraction of the outer radius a vertex is drawn inward", 36),
        _p("angle_jitter", 0.26, 0.0, 0.45, "fraction of the angular step a vertex is drawn away", 37),
        _p("gap_lo", 0.644, 0.0, 2.0, "[rad] least angular gap of the main straight", 38),
        _p("gap_hi", 1.216, 0.0, 2.0, "[rad] largest angular gap of the main straight", 39),
        _p("corner_radius_lo", 1.0, 0.0, math.inf, "[widths] least drawn fillet radius (log-uniform)", 40, True),
        _p("corner_radius_hi", 80.0, 0.0, math.inf, "[widths] largest drawn fillet radius (log-uniform)", 41, True),
        _p("min_corner_radius", 0.55, 0.5, math.inf, "[widths] a fillet shrunk below this rejects the draw", 42),
        _p("arc_step", 0.2618, 0.0, 1.0, "[rad] largest turn between arc control points", 43, True),
        _p("arc_chord", 2.0, 0.0, math.inf, "[widths] largest chord between arc control points", 44, True),
        _p("straight_step", 7.9, 1.0, math.inf, "[widths] spacing of the control points on a straight", 45),
        _p("wiggle", 0.3, 0.0, 1.0, "[widths] largest lateral offset of a straight's control point", 46),
        _p("max_length", 480.0, 0.0, math.inf, "[widths] a longer control polygon rejects the draw", 47, True),
        _p("straight_fraction_lo", 0.55, 0.0, 1.0, "least target share of the loop on straights", 48),
        _p("straight_fraction_hi", 0.67, 0.0, 1.0, "largest target share of the loop on straights", 49),
        _p("straight_radius", 50.0, 0.0, math.inf, "[widths] an arc wider than this counts as straight", 50, True),
        _p("slow_share", 0.2, 0.0, 1.0, "share of the corners drawn slow (and the one after the main straight)", 51),
        _p("slow_radius_lo", 0.55, 0.0, math.inf, "[widths] least radius of a slow corner (log-uniform)", 52, True),
        _p("slow_radius_hi", 3.0, 0.0, math.inf, "[widths] largest radius of a slow corner", 53, True),
        _p("slow_turn", 1.4, 0.0, 4.0, "[rad] a corner turning more is slow (4: none by its turn)", 54),
        _p("straight_fraction_tolerance", 0.05, 0.0, 1.0, "a draw that misses its straight share by more is rejected",
           55),
    )
    ordered = tuple((f"{pair}_lo", f"{pair}_hi") for pair in
                    ("corners", "radius", "gap", "corner_radius", "slow_radius", "straight_fraction"))
    reads = ("ctrl_hw",)
    writes = ("ctrl", "ctrl_count")
    draws = True
    valid_hint = ("the circuit layout rejects most draws; see pipeline.presets.circuit's docstring and "
                  "stages.circuit.CircuitLayout.params for its parameters (a slow_radius_lo below "
                  "min_corner_radius, few corners or a short max_length reject most draws)")

    def allocate(self, ctx):
        E, c = ctx.num_envs, ctx.settings["num_control_points"]
        ctx.field("ctrl", (E, c), wp.vec3)
        ctx.field("ctrl_count", E, wp.int32)
        # scratch: the polygon's vertices and their fillets (radius, tangent length, turn)
        ctx.field("circuit_vertex", (E, MAX_CORNERS), wp.vec2)
        ctx.field("circuit_fillet", (E, MAX_CORNERS), wp.vec3)

    def enqueue(self, ctx, pending):
        p, f = ctx.params, ctx.fields
        threads, per = env_loop.shape(ctx.device, ctx.num_envs)
        wp.launch(
            _circuit_layout, threads,
            inputs=[per, ctx.seeds.seeds, ctx.seeds.counters, ctx.attempt, pending, ctx.pending_envs, ctx.num_pending,
                    f["ctrl_hw"]]
                   + [p[f"{self.name}.{q.name}"] for q in self.params] + [f["circuit_vertex"], f["circuit_fillet"]],
            outputs=[f["ctrl"], f["ctrl_count"], ctx.ok], device=ctx.device,
        )
