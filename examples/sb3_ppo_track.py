"""Stable-Baselines3 PPO on ``TrackGen-Track-v0`` through the SB3 adapter.

One native vector env of 16 cars on generated tracks (SAME_STEP autoreset, as SB3
expects) becomes an SB3 ``VecEnv`` with :func:`trackgen_env.integrations.sb3.make_sb3_vec_env`;
SB3's own wrappers (``VecMonitor``, ``VecNormalize``) and ``PPO`` run on it unchanged.
The full training CLI with progress bar, TensorBoard and evaluation is
``python -m trackgen_env train`` / ``eval`` (:mod:`trackgen_env.integrations.train`).

The policy (a small MLP) runs on the CPU with one torch thread (``--torch-threads``): more
threads gain nothing on a 64-64 MLP and torch's idle OpenMP threads, spinning beside the
env and other busy processes, made the 8192-step run 20x slower on a 2-core machine
(64.7 s against 3.3 s).

Run (``pip install -e ".[sb3]"``)::

    python examples/sb3_ppo_track.py --steps 300000
"""

import argparse

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecMonitor, VecNormalize

from trackgen_env.integrations.sb3 import make_sb3_vec_env
from trackgen_env.integrations.train import minibatch_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300_000, help="env steps to train for")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="Warp device of the env (default: cuda:0 if present, else cpu)")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch's threads for the CPU policy (default: 1)")
    args = parser.parse_args()
    torch.set_num_threads(args.torch_threads)
    print(f"torch threads: {torch.get_num_threads()}")

    venv = make_sb3_vec_env("TrackGen-Track-v0", args.num_envs, device=args.device, seed=args.seed)
    venv = VecNormalize(VecMonitor(venv, info_keywords=("laps",)), gamma=0.99)
    # minibatches of 512, or the largest whole ones below with a rollout 256 x num_envs they do not divide
    model = PPO("MlpPolicy", venv, n_steps=256, batch_size=minibatch_size(512, 256 * args.num_envs), n_epochs=10,
                learning_rate=3e-4, seed=args.seed, device="cpu", verbose=1)
    model.learn(total_timesteps=args.steps)

    # a deterministic lap on tracks the policy has never seen (another seed)
    venv.training, venv.norm_reward = False, False
    venv.seed(10_000 + args.seed)  # passed down to the adapter: used by the next reset
    obs = venv.reset()
    laps, done = np.zeros(args.num_envs), np.zeros(args.num_envs, bool)
    while not done.all():
        obs, _, dones, infos = venv.step(model.predict(obs, deterministic=True)[0])
        for i in np.flatnonzero(dones & ~done):
            laps[i] = infos[i]["laps"]
        done |= dones
    print(f"laps completed on {args.num_envs} new tracks: {laps.mean():.0%}")


if __name__ == "__main__":
    main()
