"""A plugin stage, ``"acme.chicane"``: an S-bend on each track's longest straight, randomized, trained on.

The stage runs between the built-in ``layout`` and ``spline`` stages (``docs/pipelines.md``):
it finds the longest edge of the control polygon (the longest straight of the loop, as the
cubic B-spline follows its control polygon) and moves that edge's two control points
sideways in opposite directions by ``acme.chicane.offset`` metres (perpendicular to the
edge, in the ground plane, kept inside the course square), so the straight becomes a
left-right chicane. Because it changes the control points, the built-in stages after it
re-derive everything from them: the spline, the evenly spaced centreline with its
tangent, normal, curvature and arc length, the loop length, the turn-radius and
self-intersection checks (a draw the chicane made too tight is rejected and redrawn by
the retry loop) and the start pose; checkpoints, collision and the localizer then see one
consistent course. The control points lie ~1.6 m apart on the default tracks, so an
offset up to 0.4 m keeps >= 99 % of the draws within the turn-radius bound.

The offset is randomized per env and per generation (``with_randomize``), and PPO
(Stable-Baselines3, through :class:`~trackgen_env.integrations.sb3.SB3VecEnv`) trains on
``TrackVectorEnv(track=spec, registry=REGISTRY)``.

Run (CPU, ``pip install -e ".[sb3]"``)::

    python examples/plugin_stage.py --steps 200000 [--out out/plugin_stage]

The same spec can be saved and trained by the CLI (``docs/pipelines.md``)::

    PYTHONPATH=examples python -c "import json, plugin_stage as p; \\
        json.dump(p.make_spec(16).to_dict(), open('spec.json', 'w'))"
    PYTHONPATH=examples python -m trackgen_env train --spec spec.json --plugin plugin_stage:REGISTRY --steps 200000
"""

from __future__ import annotations

import argparse
import os

import warp as wp

from trackgen_env import pipeline
from trackgen_env.pipeline import presets

wp.set_module_options({"enable_backward": False})

#: the randomized offset range [m]: per env, per generation
OFFSET_RANGE = (0.1, 0.4)


@wp.func
def _inside(p: wp.vec3, r_max: float) -> wp.vec3:
    """``p`` with its ground-plane radius clamped to ``r_max`` (height kept)."""
    r = wp.sqrt(p[0] * p[0] + p[1] * p[1])
    if r <= r_max:
        return p
    s = r_max / r
    return wp.vec3(p[0] * s, p[1] * s, p[2])


@wp.kernel
def _chicane(
    pending: wp.array(dtype=wp.int32),
    offset: wp.array(dtype=float),
    size: wp.array(dtype=float),
    ctrl_hw: wp.array2d(dtype=float),
    ctrl_count: wp.array(dtype=wp.int32),
    ctrl: wp.array2d(dtype=wp.vec3),
):
    e = wp.tid()
    if pending[e] == 0:  # only the envs being regenerated
        return
    n = ctrl_count[e]
    if n < 4:
        return
    # the longest edge of the control polygon: the loop's longest straight
    best = int(0)
    longest = float(-1.0)
    for k in range(n):
        d = ctrl[e, (k + 1) % n] - ctrl[e, k]
        length = wp.sqrt(d[0] * d[0] + d[1] * d[1])
        if length > longest:
            longest = length
            best = k
    if longest <= 0.0:
        return
    a = ctrl[e, best]
    b = ctrl[e, (best + 1) % n]
    left = wp.vec3(-(b[1] - a[1]), b[0] - a[0], 0.0) / longest
    # the band's outer edge stays inside the course square, as the layout keeps it
    r_max = 0.5 * size[e] - ctrl_hw[e, 0]
    ctrl[e, best] = _inside(a + offset[e] * left, r_max)
    ctrl[e, (best + 1) % n] = _inside(b - offset[e] * left, r_max)


class Chicane(pipeline.Stage):
    """An S-bend on the longest straight: its two control points moved ``offset`` m apart sideways."""

    name, family = "acme.chicane", "track"
    params = (pipeline.Param("offset", 0.3, 0.0, 1.0, "[m] sideways move of each control point of the straight"),)
    reads = ("ctrl", "ctrl_count", "ctrl_hw")
    writes = ("ctrl",)

    def enqueue(self, ctx, pending):
        f = ctx.fields
        wp.launch(_chicane, ctx.num_envs,
                  inputs=[pending, ctx.params["acme.chicane.offset"], ctx.params["layout.size"], f["ctrl_hw"],
                          f["ctrl_count"]],
                  outputs=[f["ctrl"]], device=ctx.device)


#: the registry holding the plugin (the built-ins and ``acme.chicane``)
REGISTRY = pipeline.Registry()
REGISTRY.register(Chicane)


def make_spec(num_envs: int = 16, device: str | None = None, offset=OFFSET_RANGE) -> pipeline.PipelineSpec:
    """The default track pipeline with the chicane after ``layout``, its offset drawn in ``offset``."""
    spec = presets.track(num_envs=num_envs, device=device).with_stage("acme.chicane", after="layout",
                                                                      registry=REGISTRY)
    return spec.with_randomize({"acme.chicane.offset": tuple(offset)})


def main(argv=None) -> dict:
    """Train PPO on chicane tracks; returns ``{"model": path, "env": the TrackVectorEnv}``."""
    wp.config.log_level = wp.LOG_WARNING  # as the CLI: no "Module ... load" line per Warp module
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=200_000, help="env steps (default 200000)")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--n-steps", type=int, default=256, help="rollout length per env (default 256)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None)
    parser.add_argument("--out", default="out/plugin_stage")
    args = parser.parse_args(argv)

    import torch
    from gymnasium.vector import AutoresetMode
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

    from trackgen_env.envs.track import TrackVectorEnv
    from trackgen_env.integrations.sb3 import SB3VecEnv
    from trackgen_env.integrations.train import minibatch_size

    torch.set_num_threads(1)  # a 64-64 MLP gains nothing from more (integrations.runs.torch_threads_for)
    env = TrackVectorEnv(args.num_envs, args.device, seed=args.seed, track=make_spec(args.num_envs, args.device),
                         registry=REGISTRY, autoreset_mode=AutoresetMode.SAME_STEP)
    venv = VecNormalize(VecMonitor(SB3VecEnv(env), info_keywords=("laps",)), gamma=0.99)
    model = PPO("MlpPolicy", venv, n_steps=args.n_steps, batch_size=minibatch_size(512, args.n_steps * args.num_envs),
                n_epochs=4, seed=args.seed, device="cpu", verbose=0)
    model.learn(total_timesteps=args.steps)
    os.makedirs(args.out, exist_ok=True)  # SB3 would make it, with a warning
    path = f"{args.out}/model.zip"
    model.save(path)
    print(f"saved {path}; trained {model.num_timesteps} env steps on chicane tracks "
          f"(offset drawn in {OFFSET_RANGE} m per env and generation)")
    return {"model": path, "env": env}


if __name__ == "__main__":
    main()
