"""TrackGen-Track-v0 in a few lines: make the vector env, drive it, read episode statistics.

Every env holds its own procedurally generated track; when an episode ends (a lap, the
car touching a band edge, or the step limit) the next step auto-resets that env onto a
new track (Gymnasium's NEXT_STEP mode). The policy here is the built-in pure-pursuit
controller; swap in your own ``policy(obs) -> actions`` ([E, 2] floats in [-1, 1]).

Run::

    python examples/track_env_quickstart.py [--num-envs 256] [--steps 1000] [--device cpu]
"""

import argparse

import gymnasium as gym
import numpy as np
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import trackgen_env  # noqa: F401  (registers TrackGen-Track-v0)
from trackgen_env.envs.controllers import PurePursuit


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-envs", type=int, default=256)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--device", default=None, help="cpu or cuda:0 (default: cuda:0 if present)")
    args = parser.parse_args()

    env = gym.make_vec("TrackGen-Track-v0", num_envs=args.num_envs, device=args.device, seed=0)
    env = RecordEpisodeStatistics(env)
    policy = PurePursuit(env.unwrapped.car)  # reads the observation only

    obs, info = env.reset(seed=0)
    print(f"obs {obs.shape} {obs.dtype}, actions {env.action_space.shape}, device {env.unwrapped.device}")
    returns, lengths, laps = [], [], 0
    for _ in range(args.steps):
        obs, _, terminated, truncated, info = env.step(policy(obs))
        done = terminated | truncated
        laps += int(info["laps"][done].sum())
        if "episode" in info:
            ended = info["_episode"]
            returns += info["episode"]["r"][ended].tolist()
            lengths += info["episode"]["l"][ended].tolist()
    env.close()
    print(summary(returns, lengths, laps, args.steps))


def summary(returns: list[float], lengths: list[int], laps: int, steps: int) -> str:
    """One line of episode statistics; says so when no episode ended (no mean of nothing)."""
    if not returns:
        return (f"0 episodes ended in {steps} steps (a lap takes ~110 steps with pure pursuit): "
                "no episode statistics yet")
    return (f"{len(returns)} episodes: mean return {np.mean(returns):.1f} m of progress, "
            f"mean length {np.mean(lengths):.0f} steps, {laps} laps")


if __name__ == "__main__":
    main()
