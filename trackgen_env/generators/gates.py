"""``GateGenerator``: batches of closed 3-D gate courses for racing drones, in Warp kernels.

One regeneration (``enqueue``), all on the device, no host synchronisation::

    advance(mask) -> draw randomized params -> begin (pending = mask)
    -> while any env is pending (at most 1 + max_retries rounds):
         layout      (per env x gate: jittered angle, radius and altitude from the env's
                      stream, keyed by its attempt)
         gate_frames (per env x gate: yaw facing along the loop; gate 0 also places the start)
         checks      (per env x gate: spacing / non-overlap, turn, climb, start and ground
                      clearance)
         finalize    (per env: accept, or retry with fresh draws, or give up: valid = 0)
    -> masked commit into ``result`` (unmasked envs' rows stay bit-identical), generation += 1

A given layout (``GateGenConfig(source="layout")``, e.g. a real race course loaded by
:mod:`~trackgen_env.generators.gate_layouts`) replaces the layout, gate-frame and check
stages by one stage that copies the generator inputs ``"gates.pose"`` / ``"gates.count"``
and places the start; it draws nothing, so it has no retries.

The layout is the usual polar construction of procedural race courses: gates at jittered
angles around a centre, at jittered radii, so they stay in loop order and the loop is
star-shaped around the centre. A gate's normal (local +x) is the bisector of the horizontal
directions of its incoming and outgoing legs, so a path along the loop crosses every gate
front to back and at equal angles on both sides.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from ..checks import values_in_range
from ..pipeline import GateGenConfig
from ..polyline import TWO_PI, X_AXIS, next_point, prev_point, yaw_quat
from ..seeding import ATTEMPT_STREAMS, Stream, random_key, uniform
from ..types import GateLayout, GateResult, InputInfo
from .base import Generator, identity_quats
from .gate_layouts import RaceLayout, write_gate_layout

__all__ = ["GateGenConfig", "GateGenerator"]

wp.set_module_options({"enable_backward": False})

_STREAM_LAYOUT = wp.constant(int(Stream.LAYOUT) * ATTEMPT_STREAMS)  # + attempt: the layout stage's streams
# Float tolerance of the checks whose bound the construction meets exactly (gate 0 sits at
# exactly start_clearance from the start; the lowest drawn altitude is exactly the ground bound).
_TOL = wp.constant(1.0e-4)


# --- geometry shared by the stages ---------------------------------------------------------
@wp.func
def _horizontal_dir(d: wp.vec3) -> wp.vec3:
    """Unit horizontal direction of ``d`` (+x when ``d`` is vertical or zero)."""
    h = wp.vec3(d[0], d[1], 0.0)
    n = wp.length(h)
    if n > 1.0e-9:
        return h / n
    return X_AXIS


@wp.func
def gate_normal(prev: wp.vec3, p: wp.vec3, nxt: wp.vec3) -> wp.vec3:
    """Horizontal unit normal of the gate at ``p``: the bisector of the incoming leg
    ``prev -> p`` and the outgoing leg ``p -> nxt`` (the outgoing one for a U-turn)."""
    d_in = _horizontal_dir(p - prev)
    d_out = _horizontal_dir(nxt - p)
    b = d_in + d_out
    n = wp.length(b)
    if n > 1.0e-6:
        return b / n
    return d_out


# --- stages --------------------------------------------------------------------------------
@wp.kernel
def _layout(
    seeds: wp.array(dtype=wp.int32),
    counters: wp.array(dtype=wp.int32),
    attempt: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    size: wp.array(dtype=float),
    radius_jitter: wp.array(dtype=float),
    angle_jitter: wp.array(dtype=float),
    altitude_min: wp.array(dtype=float),
    altitude_max: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    ground_clearance: float,
    # outputs
    position: wp.array2d(dtype=wp.vec3),
    ok: wp.array(dtype=wp.int32),
    run: wp.array(dtype=wp.int32),
):
    e, j = wp.tid()
    if e == 0 and j == 0:
        run[0] = 0  # finalize sets it again while an env is still pending
    if pending[e] == 0:
        return
    if j == 0:
        ok[e] = 1  # checks clear it
    key = random_key(seeds[e], counters[e], _STREAM_LAYOUT + attempt[e])
    num_gates = position.shape[1]
    # one phase and sense per course: the loop may start anywhere and run either way round
    phase = TWO_PI * uniform(key, 0)
    sense = 1.0
    if uniform(key, 1) < 0.5:
        sense = -1.0
    step = TWO_PI / float(num_gates)
    aj = wp.clamp(angle_jitter[e], 0.0, 0.9)
    rj = wp.clamp(radius_jitter[e], 0.0, 0.9)
    theta = phase + sense * (float(j) + aj * (uniform(key, 8 + 3 * j) - 0.5)) * step
    r = 0.5 * wp.max(size[e], 0.0) * (1.0 - rj * uniform(key, 9 + 3 * j))
    # the gate's bottom edge must clear the ground: raise the range where it would not
    lowest = ground_clearance + 0.5 * wp.max(gate_height[e], 0.0)
    z_lo = wp.max(altitude_min[e], lowest)
    z_hi = wp.max(altitude_max[e], z_lo)
    z = z_lo + (z_hi - z_lo) * uniform(key, 10 + 3 * j)
    position[e, j] = wp.vec3(r * wp.cos(theta), r * wp.sin(theta), z)


@wp.kernel
def _gate_frames(
    pending: wp.array(dtype=wp.int32),
    position: wp.array2d(dtype=wp.vec3),
    start_clearance: float,
    # outputs
    orientation: wp.array2d(dtype=wp.quat),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
):
    e, j = wp.tid()
    if pending[e] == 0:
        return
    g = position.shape[1]
    p = position[e, j]
    n = gate_normal(position[e, prev_point(j, g)], p, position[e, next_point(j, g)])
    q = yaw_quat(n)
    orientation[e, j] = q
    if j == 0:
        # before gate 0, at its altitude, facing it
        start_position[e] = p - start_clearance * n
        start_orientation[e] = q


@wp.kernel
def _checks(
    pending: wp.array(dtype=wp.int32),
    position: wp.array2d(dtype=wp.vec3),
    start_position: wp.array(dtype=wp.vec3),
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    min_gate_spacing: float,
    max_turn: wp.array(dtype=float),
    max_climb: float,
    start_clearance: float,
    ground_clearance: float,
    # output: cleared on failure (every writer writes 0: no race on the value)
    ok: wp.array(dtype=wp.int32),
):
    e, j = wp.tid()
    if pending[e] == 0:
        return
    g = position.shape[1]
    w = wp.max(gate_width[e], 0.0)
    h = wp.max(gate_height[e], 0.0)
    p = position[e, j]
    # ground: the bottom edge of the opening
    if p[2] - 0.5 * h < ground_clearance - _TOL:
        ok[e] = 0
        return
    # start clearance (horizontal)
    ds = p - start_position[e]
    if ds[0] * ds[0] + ds[1] * ds[1] < (start_clearance * (1.0 - _TOL)) * (start_clearance * (1.0 - _TOL)):
        ok[e] = 0
        return
    # spacing and non-overlap: frames (or posts down to the ground) up to half the opening
    # thick fit in a vertical column of radius hypot(w, h) around the centre
    spacing = wp.max(min_gate_spacing, 2.0 * wp.sqrt(w * w + h * h))
    for k in range(j + 1, g):
        d = position[e, k] - p
        if d[0] * d[0] + d[1] * d[1] < spacing * spacing:
            ok[e] = 0
            return
    # climb of the outgoing leg, and the heading change at this gate
    prev = position[e, prev_point(j, g)]
    nxt = position[e, next_point(j, g)]
    leg = nxt - p
    run_h = wp.sqrt(leg[0] * leg[0] + leg[1] * leg[1])
    if wp.abs(leg[2]) > max_climb * run_h:
        ok[e] = 0
        return
    d_in = _horizontal_dir(p - prev)
    d_out = _horizontal_dir(leg)
    turn = wp.abs(wp.atan2(d_in[0] * d_out[1] - d_in[1] * d_out[0], wp.dot(d_in, d_out)))
    if turn > max_turn[e]:
        ok[e] = 0


@wp.kernel
def _layout_input(
    pose: wp.array2d(dtype=wp.transform),
    count: wp.array(dtype=wp.int32),
    pending: wp.array(dtype=wp.int32),
    start_clearance: float,
    # outputs
    position: wp.array2d(dtype=wp.vec3),
    orientation: wp.array2d(dtype=wp.quat),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    staged_count: wp.array(dtype=wp.int32),
    ok: wp.array(dtype=wp.int32),
    run: wp.array(dtype=wp.int32),
):
    e, j = wp.tid()
    if e == 0 and j == 0:
        run[0] = 0
    if pending[e] == 0:
        return
    g = position.shape[1]
    n = count[e]
    t = pose[e, j]
    position[e, j] = wp.transform_get_translation(t)
    orientation[e, j] = wp.normalize(wp.transform_get_rotation(t))
    if j == 0:
        # fewer than 3 gates is no course (nor is a count over the capacity): invalid
        ok[e] = wp.where(n >= 3 and n <= g, 1, 0)
        staged_count[e] = wp.clamp(n, 0, g)
        # as for a generated course: start_clearance behind gate 0 along its horizontal
        # normal, at its altitude, level, facing it
        d = _horizontal_dir(wp.quat_rotate(orientation[e, 0], X_AXIS))
        start_position[e] = position[e, 0] - start_clearance * d
        start_orientation[e] = yaw_quat(d)


@wp.kernel
def _commit(
    mask: wp.array(dtype=wp.int32),
    use_mask: int,
    # staged
    s_position: wp.array2d(dtype=wp.vec3),
    s_orientation: wp.array2d(dtype=wp.quat),
    s_start_position: wp.array(dtype=wp.vec3),
    s_start_orientation: wp.array(dtype=wp.quat),
    s_num_gates: wp.array(dtype=wp.int32),
    s_valid: wp.array(dtype=wp.int32),
    width: wp.array(dtype=float),
    height: wp.array(dtype=float),
    # committed
    gate_position: wp.array2d(dtype=wp.vec3),
    gate_orientation: wp.array2d(dtype=wp.quat),
    gate_width: wp.array(dtype=float),
    gate_height: wp.array(dtype=float),
    num_gates: wp.array(dtype=wp.int32),
    start_position: wp.array(dtype=wp.vec3),
    start_orientation: wp.array(dtype=wp.quat),
    valid: wp.array(dtype=wp.int32),
    generation: wp.array(dtype=wp.int32),
):
    e, j = wp.tid()
    if use_mask != 0 and mask[e] == 0:
        return
    gate_position[e, j] = s_position[e, j]
    gate_orientation[e, j] = s_orientation[e, j]
    if j == 0:
        gate_width[e] = wp.max(width[e], 0.0)
        gate_height[e] = wp.max(height[e], 0.0)
        num_gates[e] = s_num_gates[e]
        start_position[e] = s_start_position[e]
        start_orientation[e] = s_start_orientation[e]
        valid[e] = s_valid[e]
        generation[e] = generation[e] + 1


# --- the generator -------------------------------------------------------------------------
_VALIDATORS = {
    "layout.size": values_in_range(0.0, lo_open=True),
    "layout.radius_jitter": values_in_range(0.0, 0.9),
    "layout.angle_jitter": values_in_range(0.0, 0.9),
    "layout.max_turn": values_in_range(0.0, math.pi, lo_open=True),
    "layout.altitude_min": values_in_range(0.0, lo_open=True),
    "layout.altitude_max": values_in_range(0.0, lo_open=True),
    "gate_frames.gate_width": values_in_range(0.0),
    "gate_frames.gate_height": values_in_range(0.0, lo_open=True),
}


class GateGenerator(Generator):
    """A batch of closed gate courses, regenerated per env on the device.

    Env ``i``'s course is a pure function of the config, ``seeds.seeds[i]``,
    ``seeds.counters[i]`` and ``params[...][i]``: it does not depend on the number of envs,
    on the other envs, or on whether the regeneration ran eagerly or from a graph.

    Args:
        source: a :class:`GateGenConfig` or a ``PipelineSpec`` of the gates family
            (``presets.gates(...)``).
        seeds: None (seed 0), an int (env ``i`` gets ``hash(seed, i)``), an ``[E] int32``
            ``wp.array`` bound by pointer (never written), a ``PerEnvSeededRNG``, or a
            ``SeedState``.
        stream: the ``wp.Stream`` to launch on (default: the device's current stream).
        prepare: run the first generation now (loads the Warp module: do it before any
            capture) and read ``result.valid`` back once: a ``UserWarning`` names the valid
            rate if under 90 % of the envs hold a course. With False, ``result`` holds no course (``valid`` 0) until the first
            ``generate``.

    Attributes:
        family: ``"gates"``.
        result: :class:`~trackgen_env.types.GateResult`, stable arrays ``[E, G]`` / ``[E]``.
        layout: :class:`~trackgen_env.types.GateLayout` (``max_gates = config.num_gates``).
        params: live dynamic parameters: ``"layout.size"``, ``"layout.radius_jitter"``,
            ``"layout.angle_jitter"``, ``"layout.max_turn"``, ``"layout.altitude_min"``, ``"layout.altitude_max"``,
            ``"gate_frames.gate_width"``, ``"gate_frames.gate_height"`` (each ``[E]``
            float32; a set out of range raises ValueError).
        seeds: the :class:`~trackgen_env.seeding.SeedState`.
        inputs / input_info: ``{}`` for a procedural config; with ``source="layout"``
            ``"gates.pose"`` (``[E, G]`` ``wp.transform``: gate centre [m], orientation with
            local +x the normal) and ``"gates.count"`` (``[E]`` int32, gates in use, 3..G),
            written in place by the user (:func:`~trackgen_env.generators.gate_layouts.write_gate_layout`).

    :meth:`from_layout` builds one whose every env flies a given layout (a real race course).

    Raises:
        TypeError: ``source`` is not a GateGenConfig or a gates PipelineSpec, or a bad ``seeds``.
        ValueError: a seeds array (or SeedState) of the wrong shape, dtype or device.
    """

    family = "gates"
    config_type = GateGenConfig

    def __init__(self, source, *, seeds=None, stream=None, prepare: bool = True):
        super().__init__(source, seeds=seeds, stream=stream, validators=_VALIDATORS)
        cfg = self.config
        E, G, dev = cfg.num_envs, cfg.num_gates, self.device
        self.layout = GateLayout(num_envs=E, max_gates=G)
        self.result = GateResult(
            gate_position=wp.zeros((E, G), dtype=wp.vec3, device=dev),
            gate_orientation=identity_quats((E, G), dev),
            gate_width=wp.zeros(E, dtype=float, device=dev),
            gate_height=wp.zeros(E, dtype=float, device=dev),
            num_gates=wp.zeros(E, dtype=wp.int32, device=dev),
            start_position=wp.zeros(E, dtype=wp.vec3, device=dev),
            start_orientation=identity_quats((E,), dev),
            valid=wp.zeros(E, dtype=wp.int32, device=dev),
            generation=wp.zeros(E, dtype=wp.int32, device=dev),
        )
        # staging buffers: stages write here, the masked commit copies the masked envs' rows
        self._position = wp.zeros((E, G), dtype=wp.vec3, device=dev)
        self._orientation = identity_quats((E, G), dev)
        self._start_position = wp.zeros(E, dtype=wp.vec3, device=dev)
        self._start_orientation = identity_quats((E,), dev)
        self._num_gates = wp.full(E, G, dtype=wp.int32, device=dev)  # a procedural course uses all G
        self._given = cfg.source == "layout"
        if self._given:
            self.input_info = {
                "gates.pose": InputInfo(wp.transform, (E, G), "gates in race order per env: centre [m], orientation "
                                                              "(local +x = the normal, the direction of travel)"),
                "gates.count": InputInfo(wp.int32, (E,), "gates in use per env (3 .. num_gates)"),
            }
            self.inputs = {
                "gates.pose": wp.zeros((E, G), dtype=wp.transform, device=dev),
                "gates.count": wp.zeros(E, dtype=wp.int32, device=dev),
            }
        if prepare:
            self._first_generation()

    # --- construction from a given layout -------------------------------------------------
    @classmethod
    def from_layout(cls, layout: RaceLayout, *, num_envs: int = 1, device=None, start_clearance: float | None = None,
                    seeds=None, stream=None) -> "GateGenerator":
        """A generator whose every env flies the gate layout ``layout`` (e.g. a real race course).

        The openings are the layout's :attr:`~RaceLayout.course_width` and
        :attr:`~RaceLayout.course_height` (one size per course, see :class:`RaceLayout`).

        Args:
            layout: a :class:`~trackgen_env.generators.gate_layouts.RaceLayout`
                (:func:`~trackgen_env.generators.gate_layouts.load_gate_layout`).
            num_envs, device: as for :class:`GateGenConfig`.
            start_clearance: [m] the start's distance behind gate 0 (default: the config's, 1 m).

        Raises:
            TypeError: ``layout`` is not a RaceLayout.
        """
        if not isinstance(layout, RaceLayout):
            raise TypeError(f"layout must be a RaceLayout (gate_layouts.load_gate_layout), got {type(layout).__name__}")
        extra = {} if start_clearance is None else {"start_clearance": start_clearance}
        cfg = GateGenConfig(num_envs=num_envs, device=device, source="layout", num_gates=layout.num_gates,
                            gate_width=layout.course_width, gate_height=layout.course_height, **extra)
        gen = cls(cfg, seeds=seeds, stream=stream, prepare=False)
        write_gate_layout(gen, layout)
        gen.generate()
        return gen

    # --- regeneration (the skeleton is Generator.enqueue) ---------------------------------
    @property
    def max_retries(self) -> int:
        # a given layout draws nothing: a second round would rebuild the same course
        return 0 if self._given else self.config.max_retries

    def _commit(self, mask: wp.array, use_mask: int) -> None:
        r, p = self.result, self.params
        wp.launch(
            _commit, (self.num_envs, self.config.num_gates),
            inputs=[mask, use_mask, self._position, self._orientation, self._start_position, self._start_orientation,
                    self._num_gates, self._valid, p["gate_frames.gate_width"], p["gate_frames.gate_height"]],
            outputs=[r.gate_position, r.gate_orientation, r.gate_width, r.gate_height, r.num_gates,
                     r.start_position, r.start_orientation, r.valid, r.generation],
            device=self.device,
        )

    def _attempt_round(self) -> None:
        """One round of the stages for every pending env (the body of the retry loop)."""
        cfg, dev, E, G, p = self.config, self.device, self.num_envs, self.config.num_gates, self.params
        if self._given:
            wp.launch(
                _layout_input, (E, G),
                inputs=[self.inputs["gates.pose"], self.inputs["gates.count"], self._pending, cfg.start_clearance],
                outputs=[self._position, self._orientation, self._start_position, self._start_orientation,
                         self._num_gates, self._ok, self._run], device=dev,
            )
            self._finalize_round()
            return
        wp.launch(
            _layout, (E, G),
            inputs=[self.seeds.seeds, self.seeds.counters, self._attempt, self._pending, p["layout.size"],
                    p["layout.radius_jitter"], p["layout.angle_jitter"], p["layout.altitude_min"],
                    p["layout.altitude_max"], p["gate_frames.gate_height"], cfg.ground_clearance],
            outputs=[self._position, self._ok, self._run], device=dev,
        )
        wp.launch(
            _gate_frames, (E, G),
            inputs=[self._pending, self._position, cfg.start_clearance],
            outputs=[self._orientation, self._start_position, self._start_orientation], device=dev,
        )
        wp.launch(
            _checks, (E, G),
            inputs=[self._pending, self._position, self._start_position, p["gate_frames.gate_width"],
                    p["gate_frames.gate_height"], cfg.min_gate_spacing, p["layout.max_turn"], cfg.max_climb,
                    cfg.start_clearance, cfg.ground_clearance],
            outputs=[self._ok], device=dev,
        )
        self._finalize_round()

    def __repr__(self) -> str:
        return f"GateGenerator(num_envs={self.num_envs}, device={self.device}, num_gates={self.layout.max_gates})"
