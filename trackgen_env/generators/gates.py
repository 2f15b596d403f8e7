"""``GateGenerator``: batches of closed 3-D gate courses for racing drones, in Warp kernels.

A thin public wrapper of :class:`~trackgen_env.pipeline.Program`: a
:class:`GateGenConfig` (or a gates spec) compiled to a spec and built. The stages and
their kernels are ``pipeline.stages.gates`` (procedural) and ``pipeline.stages.given``
(a given layout, e.g. a real race course loaded by
:mod:`~trackgen_env.generators.gate_layouts`: :meth:`GateGenerator.from_layout`).
"""

from __future__ import annotations

from ..pipeline import PipelineSpec, Program
from ..pipeline.stages.gates import MAX_GATES
from .gate_layouts import RaceLayout, write_gate_layout
from .gates_config import GateGenConfig

__all__ = ["GateGenConfig", "GateGenerator"]


class GateGenerator(Program):
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
            rate if under 90 % of the envs hold a course. With False, ``result`` holds no
            course (``valid`` 0) until the first ``generate``.

    Attributes:
        family: ``"gates"``.
        result: :class:`~trackgen_env.core.types.GateResult`, stable arrays ``[E, G]`` / ``[E]``.
        layout: :class:`~trackgen_env.core.types.GateLayout` (``max_gates = config.num_gates``).
        params: live dynamic parameters: ``"layout.size"``, ``"layout.radius_jitter"``,
            ``"layout.angle_jitter"``, ``"layout.max_turn"``, ``"layout.altitude_min"``, ``"layout.altitude_max"``,
            ``"gate_frames.gate_width"``, ``"gate_frames.gate_height"`` (each ``[E]``
            float32; a set out of range raises ValueError).
        seeds: the :class:`~trackgen_env.seeding.SeedState`.
        config: the :class:`GateGenConfig` it was built from (of its spec when built from one).
        inputs / input_info: ``{}`` for a procedural config; with ``source="layout"``
            ``"gates.pose"`` (``[E, G]`` ``wp.transform``: gate centre [m], orientation with
            local +x the normal) and ``"gates.count"`` (``[E]`` int32, gates in use, 3..G),
            written in place by the user (:func:`~trackgen_env.generators.gate_layouts.write_gate_layout`).

    :meth:`from_layout` builds one whose every env flies a given layout (a real race course).

    Raises:
        TypeError: ``source`` is not a GateGenConfig or a gates PipelineSpec, or a bad ``seeds``.
        ValueError: a seeds array (or SeedState) of the wrong shape, dtype or device.
    """

    def __init__(self, source, *, seeds=None, stream=None, prepare: bool = True):
        self._config = source if isinstance(source, GateGenConfig) else None
        if self._config is not None:
            source = source.to_spec()
        elif not (isinstance(source, PipelineSpec) and source.family == "gates"):
            got = f"a {source.family} PipelineSpec" if isinstance(source, PipelineSpec) else type(source).__name__
            raise TypeError(f"GateGenerator takes a GateGenConfig or a gates PipelineSpec, got {got}")
        super().__init__(source, seeds=seeds, stream=stream, prepare=prepare)

    @property
    def config(self) -> GateGenConfig:
        """The config it was built from (``GateGenConfig.from_spec(spec)`` when built from a spec)."""
        if self._config is None:
            self._config = GateGenConfig.from_spec(self.spec)
        return self._config

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
            ValueError: ``layout`` has more than ``MAX_GATES`` (64) gates.
        """
        if not isinstance(layout, RaceLayout):
            raise TypeError(f"layout must be a RaceLayout (gate_layouts.load_gate_layout), got {type(layout).__name__}")
        if layout.num_gates > MAX_GATES:
            raise ValueError(f"this layout has {layout.num_gates} gates; a gate course holds at most {MAX_GATES}")
        extra = {} if start_clearance is None else {"start_clearance": start_clearance}
        cfg = GateGenConfig(num_envs=num_envs, device=device, source="layout", num_gates=layout.num_gates,
                            gate_width=layout.course_width, gate_height=layout.course_height, **extra)
        gen = cls(cfg, seeds=seeds, stream=stream, prepare=False)
        write_gate_layout(gen, layout)
        gen.generate()
        return gen

    def __repr__(self) -> str:
        return f"GateGenerator(num_envs={self.num_envs}, device={self.device}, num_gates={self.layout.max_gates})"
