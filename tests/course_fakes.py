"""A tiny generator with the producer surface and small components, for the course tests.

The spec lets a course drive "an object of your own with the same surface": ``FakeGenerator``
is one, kept as a permanent test of that promise. All kernels here form one Warp module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import warp as wp

from trackgen_env.core.seeding import SeedState, random_key, uniform
from trackgen_env.tools import Component, InputSpec
from trackgen_env.core.types import TrackLayout

wp.set_module_options({"enable_backward": False})


@wp.kernel
def _fill(seeds: wp.array(dtype=wp.int32), counters: wp.array(dtype=wp.int32), mask: wp.array(dtype=wp.int32),
          use_mask: int, value: wp.array2d(dtype=float), valid: wp.array(dtype=wp.int32),
          generation: wp.array(dtype=wp.int32)):
    e, j = wp.tid()
    if use_mask != 0 and mask[e] == 0:
        return
    value[e, j] = uniform(random_key(seeds[e], counters[e], 7), j)
    if j == 0:
        valid[e] = 1
        generation[e] = generation[e] + 1


@wp.kernel
def _copy_first(mask: wp.array(dtype=wp.int32), value: wp.array2d(dtype=float), out: wp.array(dtype=float)):
    e = wp.tid()
    if mask[e] == 0:
        return
    out[e] = value[e, 0]


@wp.kernel
def _count(position: wp.array(dtype=wp.vec3), count: wp.array(dtype=wp.int32), last_x: wp.array(dtype=float)):
    e = wp.tid()
    count[e] = count[e] + 1
    last_x[e] = position[e][0]


@wp.kernel
def _zero_masked(mask: wp.array(dtype=wp.int32), count: wp.array(dtype=wp.int32)):
    e = wp.tid()
    if mask[e] == 0:
        return
    count[e] = 0


@dataclass
class FakeResult:
    value: wp.array  # [E, P] float32
    valid: wp.array  # [E] int32
    generation: wp.array  # [E] int32


class FakeGenerator:
    """The producer protocol, minimally: ``value[e, j]`` is a pure function of (seed, counter, j)."""

    family = "track"

    def __init__(self, num_envs=4, device="cpu", seeds=None, points=8, capturable=True, input_info=None):
        self.num_envs, self.device, self.stream = num_envs, wp.get_device(device), None
        self.config = self.spec = None
        self.params = {}
        self.capturable = capturable
        self.seeds = seeds if isinstance(seeds, SeedState) else SeedState(num_envs, self.device, seeds)
        self.layout = TrackLayout(num_envs, points, None)
        self.result = FakeResult(
            wp.zeros((num_envs, points), dtype=float, device=self.device),
            wp.zeros(num_envs, dtype=wp.int32, device=self.device),
            wp.zeros(num_envs, dtype=wp.int32, device=self.device),
        )
        self.input_info = dict(input_info or {})
        self.inputs = {name: wp.zeros(num_envs, dtype=wp.int32, device=self.device) for name in self.input_info}
        self.calls = []

    def enqueue(self, ctx=None, *, advance=False, mask=None):
        self.calls.append(("generator", "enqueue"))
        if advance:
            self.seeds.advance(mask)
        wp.launch(_fill, (self.num_envs, self.layout.max_points),
                  inputs=[self.seeds.seeds, self.seeds.counters, mask if mask is not None else self.result.valid,
                          0 if mask is None else 1],
                  outputs=[self.result.value, self.result.valid, self.result.generation], device=self.device)

    def generate(self, seeds=None):
        if seeds is not None:
            self.seeds.reseed(seeds)
        self.enqueue()
        return self.result


@dataclass
class CountResult:
    count: wp.array  # [E] int32 steps since the reset
    last_x: wp.array  # [E] float32 x of the last bound position


class Log(Component):
    """A per-generation component that logs its calls and copies ``value[:, 0]`` per generation."""

    def __init__(self, name, log=None, **kw):
        super().__init__(name, **kw)
        self.log = log if log is not None else []
        self.first = None

    def attach(self, ctx):
        self.log.append((self.name, "attach"))
        self.first = wp.zeros(ctx.num_envs, dtype=float, device=ctx.device)

    def on_generate(self, ctx, mask):
        self.log.append((self.name, "on_generate"))
        if not hasattr(ctx.result, "value"):  # over a real generator: only log
            return
        wp.launch(_copy_first, ctx.num_envs, inputs=[ctx.mask(mask), ctx.result.value], outputs=[self.first],
                  device=ctx.device)

    def reset(self, ctx, mask):
        self.log.append((self.name, "reset"))

    @property
    def result(self):
        return self.first


class Counter(Log):
    """A per-step component: counts steps per env (reset per episode), reads ``position``."""

    inputs = (InputSpec("position", wp.vec3),)

    def attach(self, ctx):
        super().attach(ctx)
        self.res = CountResult(wp.zeros(ctx.num_envs, dtype=wp.int32, device=ctx.device),
                               wp.zeros(ctx.num_envs, dtype=float, device=ctx.device))

    def step(self, ctx):
        self.log.append((self.name, "step"))
        wp.launch(_count, ctx.num_envs, inputs=[self.bound["position"]], outputs=[self.res.count, self.res.last_x],
                  device=ctx.device)

    def reset(self, ctx, mask):
        super().reset(ctx, mask)
        wp.launch(_zero_masked, ctx.num_envs, inputs=[ctx.mask(mask)], outputs=[self.res.count], device=ctx.device)

    @property
    def result(self):
        return self.res


def vec3s(num_envs, device="cpu", x=0.0):
    return wp.full(num_envs, wp.vec3(x, 0.0, 0.0), dtype=wp.vec3, device=device)


def snapshot(course):
    """Bytes of the generator result and of every component's arrays (state included)."""
    out = {}
    for f in dataclasses.fields(course.result):
        out[f"gen.{f.name}"] = getattr(course.result, f.name).numpy().tobytes()
    for name, c in course.components.items():
        for key, value in vars(c).items():
            if isinstance(value, wp.array):
                out[f"{name}.{key}"] = value.numpy().tobytes()
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                for f in dataclasses.fields(value):
                    v = getattr(value, f.name)
                    if isinstance(v, wp.array):
                        out[f"{name}.{key}.{f.name}"] = v.numpy().tobytes()
    return out
