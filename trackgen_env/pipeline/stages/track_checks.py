"""The track family's ``checks`` stage: a band that turns tighter than ``min_turn_radius_factor``
half widths, or crosses itself, is rejected (the env draws again).

The turn radius is read point by point (``curvature`` against ``half_width``). The
self-intersection test compares every pair of points of the band that lie far enough apart
along the loop to be distinct parts of it: two such points closer than the sum of their half
widths (the bands overlap) reject the draw. It runs in two passes over blocks of ``STRIDE``
points (``_STRIDE``): each block's bounds (its xy bounding box, its arc-length span, its largest reach and
least skip), then a scan of block pairs that only descends to the points of the pairs whose
boxes come within reach and whose arc-length runs do not skip each other. On the CPU one thread
does both passes per env (``_checks_one_pass``); on CUDA a kernel per pass, with lanes of
blocks per env (``_check_blocks``, then ``_checks``). Both give the point-by-point verdict
(``tests/test_track_checks.py``).
"""

from __future__ import annotations

import warp as wp

from ...core import env_loop
from ...core.polyline import BIG
from ..stage import Stage

__all__ = ["Checks"]

wp.set_module_options({"enable_backward": False})

_STRIDE = wp.constant(8)  # coarse step of the self-intersection scan


@wp.func
def _check_reach2(hw: float, step: float) -> float:
    """The coarse scan's squared reach of a point of half width ``hw``: a fine point within
    STRIDE - 1 steps of a coarse one is at most that far from it (see ``_checks``)."""
    reach = 2.0 * hw + float(_STRIDE - 1) * step
    return reach * reach


@wp.func
def _box_gap(a: float, b: float) -> float:
    """``max(a, b, 0)``: the gap between two intervals along one axis (a NaN reads as 0)."""
    return wp.max(wp.max(a, b), 0.0)


@wp.kernel
def _check_blocks(
    pending: wp.array(dtype=wp.int32),
    min_turn_radius_factor: float,
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    centerline: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    lanes: int,
    box: wp.array2d(dtype=wp.vec4),
    span: wp.array2d(dtype=wp.vec4),
    ok: wp.array(dtype=wp.int32),
):
    e, lane = wp.tid()
    if pending[e] == 0 or ok[e] == 0:
        return
    count = num_points[e]
    step = loop_length[e] / float(count)
    for b in range(lane, (count + _STRIDE - 1) // _STRIDE, lanes):
        if _block_bounds(e, b, count, step, min_turn_radius_factor, centerline, arc_length, curvature, half_width,
                         box, span):
            ok[e] = 0  # the scan (_checks) skips the env
            return


@wp.func
def _block_bounds(
    e: int,
    b: int,
    count: int,
    step: float,
    min_turn_radius_factor: float,
    centerline: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    box: wp.array2d(dtype=wp.vec4),
    span: wp.array2d(dtype=wp.vec4),
) -> bool:
    """The bounds of block ``b`` (points ``b * STRIDE`` on) of env ``e``, for the scan
    (``_scan_blocks``); whether the block rejects the draw: a point turns tighter than the
    bound (tested here, on the rows the bounds read: the scan then tests crossings only), or a
    value is not finite (a plugin stage's NaN, which every comparison of the checks passes)."""
    first = b * _STRIDE
    lo = wp.vec2(BIG, BIG)
    hi = wp.vec2(-BIG, -BIG)
    a_lo = float(BIG)
    a_hi = float(-BIG)
    r2 = float(0.0)
    skip = float(BIG)
    probe = float(0.0)  # a NaN or infinity of any value read makes it non-finite (min and max may drop a NaN)
    for j in range(first, wp.min(first + _STRIDE, count)):
        p = centerline[e, j]
        s = arc_length[e, j]
        hw = half_width[e, j]
        # turn radius >= factor * half width (the inner band edge must not fold over)
        if wp.abs(curvature[e, j]) * min_turn_radius_factor * hw > 1.0:
            return True
        probe = probe + (p[0] + p[1] + p[2] + s + hw + curvature[e, j])
        lo = wp.vec2(wp.min(lo[0], p[0]), wp.min(lo[1], p[1]))
        hi = wp.vec2(wp.max(hi[0], p[0]), wp.max(hi[1], p[1]))
        a_lo = wp.min(a_lo, s)
        a_hi = wp.max(a_hi, s)
        r2 = wp.max(r2, _check_reach2(hw, step))
        skip = wp.min(skip, 3.0 * (2.0 * hw))
    if not wp.isfinite(probe):
        return True
    if not wp.isfinite(r2):
        # bounds that prune nothing: every pair of this block is tested one by one
        lo = wp.vec2(-BIG, -BIG)
        hi = wp.vec2(BIG, BIG)
        a_lo = -BIG
        a_hi = BIG
        r2 = BIG
        skip = -BIG
    box[e, b] = wp.vec4(lo[0], lo[1], hi[0], hi[1])
    span[e, b] = wp.vec4(a_lo, a_hi, r2, skip)
    return False


@wp.func
def _runs_skip(span_i: wp.vec4, span_k: wp.vec4, total: float) -> bool:
    """Whether no point of block i and point of block k are far enough apart along the loop
    for the band test (ds <= skip, or total - ds <= skip, for every pair), from the blocks'
    arc-length bounds: ds of a pair lies in [a_lo_k - a_hi_i, a_hi_k - a_lo_i] (rounded
    monotonically), and skip_i >= the block's least."""
    skip = span_i[3]
    return (span_k[1] - span_i[0]) <= skip or (total - (span_k[0] - span_i[1])) <= skip


@wp.func
def _scan_blocks(
    e: int,
    lane: int,
    lanes: int,
    count: int,
    total: float,
    centerline: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    box: wp.array2d(dtype=wp.vec4),
    span: wp.array2d(dtype=wp.vec4),
    ok: wp.array(dtype=wp.int32),
) -> bool:
    """Whether a point of lane ``lane``'s blocks of env ``e`` crosses the band (the blocks'
    bounds ``box`` / ``span`` written and the bound tested: ``_block_bounds``)."""
    blocks = (count + _STRIDE - 1) // _STRIDE
    # Blocks of STRIDE consecutive points, i's block bi against the blocks bj >= bi: a pair of
    # blocks whose bounding boxes are farther apart than i's reach, or none of whose fine runs
    # is far enough along the loop, is skipped whole. The point pairs left are tested exactly
    # as a point-by-point scan would (below), so the verdict is the same: the bounds are
    # rounded the way the tests' own differences are.
    for bi in range(lane, blocks, lanes):
        first = bi * _STRIDE
        last = wp.min(first + _STRIDE, count)
        box_i = box[e, bi]
        span_i = span[e, bi]
        for bj in range(bi, blocks):
            box_j = box[e, bj]
            gx = _box_gap(box_j[0] - box_i[2], box_i[0] - box_j[2])
            gy = _box_gap(box_j[1] - box_i[3], box_i[1] - box_j[3])
            if gx * gx + gy * gy >= span_i[2]:
                continue  # every coarse test between the blocks fails
            span_j = span[e, bj]
            if _runs_skip(span_i, span_j, total):
                if bj + 1 >= blocks:
                    continue
                if _runs_skip(span_i, span[e, bj + 1], total):
                    continue  # the fine runs of bj's coarse points lie in bj and bj + 1
            # band self-intersection: points far apart along the loop must be >= 2 half
            # widths apart. Point i scans every STRIDE-th point jc = i + 1 + STRIDE m (one in
            # each block): a point within STRIDE - 1 steps of jc is at most (STRIDE - 1) * step
            # from it, so only a jc closer than 2 hw + that bound needs its run checked.
            for i in range(first, last):
                jc = bj * _STRIDE + (i + 1) % _STRIDE
                if jc <= i or jc >= count:
                    continue
                hw = half_width[e, i]
                skip = 3.0 * (2.0 * hw)
                pi = centerline[e, i]
                si = arc_length[e, i]
                d = centerline[e, jc] - pi
                if d[0] * d[0] + d[1] * d[1] < _check_reach2(hw, total / float(count)):
                    for j in range(jc, wp.min(jc + _STRIDE, count)):
                        ds = arc_length[e, j] - si
                        if ds > skip and total - ds > skip:
                            dj = centerline[e, j] - pi
                            if dj[0] * dj[0] + dj[1] * dj[1] < (hw + half_width[e, j]) * (hw + half_width[e, j]):
                                return True
        if lanes > 1 and ok[e] == 0:
            return False  # another lane rejected the draw
    return False


@wp.kernel
def _checks(
    pending: wp.array(dtype=wp.int32),
    lanes: int,
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    centerline: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    box: wp.array2d(dtype=wp.vec4),
    span: wp.array2d(dtype=wp.vec4),
    ok: wp.array(dtype=wp.int32),
):
    e, lane = wp.tid()
    if pending[e] == 0 or ok[e] == 0:
        return  # not pending, or rejected (by _check_blocks' bound too)
    if _scan_blocks(e, lane, lanes, num_points[e], loop_length[e], centerline, arc_length, half_width, box, span, ok):
        ok[e] = 0


@wp.kernel
def _checks_one_pass(
    envs_per_thread: int,
    pending: wp.array(dtype=wp.int32),
    pending_envs: wp.array(dtype=wp.int32),
    num_pending: wp.array(dtype=wp.int32),
    min_turn_radius_factor: float,
    num_points: wp.array(dtype=wp.int32),
    loop_length: wp.array(dtype=float),
    centerline: wp.array2d(dtype=wp.vec3),
    arc_length: wp.array2d(dtype=float),
    curvature: wp.array2d(dtype=float),
    half_width: wp.array2d(dtype=float),
    box: wp.array2d(dtype=wp.vec4),
    span: wp.array2d(dtype=wp.vec4),
    ok: wp.array(dtype=wp.int32),
):
    # one lane per env (the CPU): the bound and the blocks' bounds, then the scan, while the
    # env's rows are still in the cache (two kernels read them back from memory, env after env)
    thread = wp.tid()
    for i in range(thread * envs_per_thread,
                   env_loop.listed_end(thread, envs_per_thread, num_pending, pending.shape[0])):
        e = env_loop.listed_env(envs_per_thread, pending_envs, i)
        if pending[e] == 0 or ok[e] == 0:
            continue
        count = num_points[e]
        total = loop_length[e]
        step = total / float(count)
        bounded = int(1)
        for b in range((count + _STRIDE - 1) // _STRIDE):
            if _block_bounds(e, b, count, step, min_turn_radius_factor, centerline, arc_length, curvature, half_width,
                             box, span):
                bounded = 0
                break
        if bounded == 0 or _scan_blocks(e, 0, 1, count, total, centerline, arc_length, half_width, box, span, ok):
            ok[e] = 0


class Checks(Stage):
    """Rejects a band that turns tighter than ``min_turn_radius_factor`` half widths or crosses itself."""

    name, family = "checks", "track"
    reads = ("num_points", "loop_length", "centerline", "arc_length", "curvature", "half_width")

    def allocate(self, ctx):
        points = ctx.settings["max_points"]
        self.lanes = env_loop.lanes(ctx.device, (points + _STRIDE - 1) // _STRIDE)
        # per block of STRIDE points: xy bounding box; arc-length bounds, largest reach^2, least skip
        blocks = (ctx.num_envs, (points + _STRIDE - 1) // _STRIDE)
        self.box = ctx.scratch(blocks, wp.vec4)  # rows of the spline's table, dead once resampled
        self.span = ctx.scratch(blocks, wp.vec4)

    def enqueue(self, ctx, pending):
        f = ctx.fields
        if self.lanes == 1:
            threads, per = env_loop.shape(ctx.device, ctx.num_envs)
            self.launch(_checks_one_pass, threads,
                        inputs=[per, pending, ctx.pending_envs, ctx.num_pending, ctx.settings["min_turn_radius_factor"],
                                f["num_points"], f["loop_length"],
                                f["centerline"], f["arc_length"], f["curvature"], f["half_width"], self.box,
                                self.span], outputs=[ctx.ok], device=ctx.device)
            return
        self.launch(_check_blocks, (ctx.num_envs, self.lanes),
                    inputs=[pending, ctx.settings["min_turn_radius_factor"], f["num_points"], f["loop_length"],
                            f["centerline"], f["arc_length"], f["curvature"], f["half_width"], self.lanes],
                    outputs=[self.box, self.span, ctx.ok], device=ctx.device)
        self.launch(_checks, (ctx.num_envs, self.lanes),
                    inputs=[pending, self.lanes, f["num_points"], f["loop_length"], f["centerline"], f["arc_length"],
                            f["half_width"], self.box, self.span], outputs=[ctx.ok], device=ctx.device)
