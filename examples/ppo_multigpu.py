"""PPO over several processes (GPUs or CPU cores, one or more machines) with torch.distributed.

One self-contained file by design, as CleanRL's are: it repeats much of
``examples/cleanrl_ppo_track.py`` and ``examples/cleanrl_ppo_gates.py`` so that it reads top to bottom alone.

Launch with ``torchrun``; each process (rank) runs one native vector env of
``--num-envs`` envs on ``cuda:<local rank>`` (or the CPU), collects its own rollout, and
all ranks train one policy: the same initial weights (broadcast from rank 0), the
gradients of every minibatch averaged over the ranks (all-reduce), so the weights stay
identical. The PPO itself is ``cleanrl_ppo_track.py`` (CleanRL's
``ppo_continuous_action.py`` with NEXT_STEP reset transitions left out of the batch);
the data-parallel pattern follows CleanRL's ``ppo_atari_multigpu.py``.

No two ranks train on the same course. Env ``j`` of rank ``r`` is seeded with
``env_seeds(seed, world_size * num_envs)[r * num_envs + j]``: ``env_seeds(s, n)[i]`` is
``lowbias32(lowbias32(i + c) ^ h(s))`` and ``lowbias32`` (xor-shifts and odd
multiplications mod 2^32) is a bijection, so the ``world_size * num_envs`` seeds are
pairwise distinct and the ranks' slices are disjoint. A course is a function of (seed,
generation counter), so the ranks' first courses come from disjoint seeds; every later
course too, up to a collision of the 32-bit random keys. Each rank prints the
fingerprint of its first courses (a hash over all its envs), then the seeds and course
hashes of its first 16 envs, on its last line, so this can be checked.

One machine, 4 GPUs (NCCL)::

    torchrun --standalone --nproc_per_node=4 examples/ppo_multigpu.py --total-timesteps 10000000

CPU only, 2 processes (gloo; the backend follows ``--device``)::

    torchrun --standalone --nproc_per_node=2 examples/ppo_multigpu.py --device cpu

Several machines (here 2 x 8 GPUs): run the same command on every node, with the
rendezvous on a host:port that all nodes reach (``--rdzv-id`` any job name)::

    torchrun --nnodes=2 --nproc_per_node=8 --rdzv-backend=c10d --rdzv-endpoint=node0.example:29400 \\
        --rdzv-id=ppo-track examples/ppo_multigpu.py --num-envs 4096 --total-timesteps 1000000000

``RANK`` (global) picks the seeds; ``LOCAL_RANK`` (on the node) picks the GPU.
``--total-timesteps`` counts the env steps of all ranks together.
"""

import argparse
import hashlib
import os
import random
import sys
import time
from dataclasses import dataclass, fields

import gymnasium as gym
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.optim as optim
from gymnasium.vector import AutoresetMode
from torch.distributions.normal import Normal

import trackgen_env  # noqa: F401  (registers the TrackGen envs)
from trackgen_env.seeding import env_seeds


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """the name of this experiment"""
    seed: int = 1
    """seed of the experiment: the base seed of every rank's courses"""
    torch_deterministic: bool = True
    """if toggled, `torch.backends.cudnn.deterministic=True`"""
    device: str = "cuda" if torch.cuda.is_available() else "cpu"
    """"cuda" (rank on cuda:<local rank>, NCCL) or "cpu" (gloo)"""
    track: str | None = None
    """rank 0 logs to TensorBoard under this directory (`--track` alone: runs/)"""
    save_model: bool = False
    """whether rank 0 saves the model into the run's directory (runs/ without --track)"""

    # Algorithm specific arguments
    env_id: str = "TrackGen-Track-v0"
    """the id of the environment (TrackGen-Track-v0 or TrackGen-Gates-v0)"""
    total_timesteps: int = 2_000_000
    """total timesteps of the experiment, all ranks together"""
    learning_rate: float = 3e-4
    """the learning rate of the optimizer"""
    num_envs: int = 256
    """the number of envs per rank (one native vector env)"""
    num_steps: int = 64
    """the number of steps to run in each environment per policy rollout"""
    anneal_lr: bool = True
    """toggle learning rate annealing for policy and value networks"""
    gamma: float = 0.99
    """the discount factor gamma"""
    gae_lambda: float = 0.95
    """the lambda for the general advantage estimation"""
    num_minibatches: int = 8
    """the number of mini-batches per rank (the same on every rank: one all-reduce each)"""
    update_epochs: int = 10
    """the K epochs to update the policy"""
    norm_adv: bool = True
    """toggles advantages normalization"""
    clip_coef: float = 0.2
    """the surrogate clipping coefficient"""
    clip_vloss: bool = True
    """toggles whether or not to use a clipped loss for the value function, as per the paper"""
    ent_coef: float = 0.0
    """coefficient of the entropy"""
    vf_coef: float = 0.5
    """coefficient of the value function"""
    max_grad_norm: float = 0.5
    """the maximum norm for the gradient clipping"""
    init_logstd: float = 0.0
    """the initial log-std of the Gaussian policy (CleanRL: 0; -1 suits TrackGen-Gates-v0)"""

    # to be filled in runtime
    batch_size: int = 0
    """the batch size of one rank, reset transitions included (computed in runtime)"""
    num_iterations: int = 0
    """the number of iterations (computed in runtime)"""


def parse_args(argv=None) -> Args:
    """Build the command line from :class:`Args` (``--total-timesteps``, ``--no-anneal-lr``, ...)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for f in fields(Args):
        if f.name in ("batch_size", "num_iterations"):
            continue
        flag = "--" + f.name.replace("_", "-")
        if f.type is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        elif f.name == "track":
            parser.add_argument(flag, nargs="?", const="runs", default=None, metavar="DIR")
        else:
            kind = int if f.type is int else float if f.type is float else str
            parser.add_argument(flag, type=kind, default=f.default)
    return Args(**vars(parser.parse_args(argv)))


def rank_env_seeds(seed: int, rank: int, world_size: int, num_envs: int) -> np.ndarray:
    """``[num_envs]`` uint32 seeds of ``rank``'s envs: its slice of ``env_seeds(seed, world_size * num_envs)``."""
    return env_seeds(seed, world_size * num_envs)[rank * num_envs : (rank + 1) * num_envs]


def make_env(args: Args, env_device: str, seeds: np.ndarray):
    """This rank's vector env on ``env_device``, its envs reseeded with ``seeds``, and the vector wrappers."""
    # one seed per env (env i's courses come from seeds[i]): this rank's disjoint slice
    envs = gym.make_vec(args.env_id, num_envs=args.num_envs, device=env_device, seed=seeds.view(np.uint32))
    # the masking below is written for NEXT_STEP auto-reset: refuse any other mode
    assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP, envs.metadata["autoreset_mode"]
    envs = gym.wrappers.vector.RecordEpisodeStatistics(envs)  # raw returns, before normalisation
    # gymnasium's vector ClipAction clips env by env in Python; np.clip on the batch is the same
    low, high = envs.single_action_space.low, envs.single_action_space.high
    envs = gym.wrappers.vector.TransformAction(envs, lambda a: np.clip(a, low, high))
    envs = gym.wrappers.vector.NormalizeObservation(envs)
    envs = gym.wrappers.vector.TransformObservation(envs, lambda obs: np.clip(obs, -10, 10))
    envs = gym.wrappers.vector.NormalizeReward(envs, gamma=args.gamma)
    envs = gym.wrappers.vector.TransformReward(envs, lambda reward: np.clip(reward, -10, 10))
    return envs


def course_fingerprints(env) -> list[str]:
    """A short hash of each env's current course (track centreline, or gate positions)."""
    if hasattr(env, "tracks"):
        courses = [t["centerline"] for t in env.tracks()]
    else:
        courses = [c["gate_position"] for c in env.courses()]
    return [hashlib.sha256(np.ascontiguousarray(c, dtype=np.float32).tobytes()).hexdigest()[:12] for c in courses]


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, envs, init_logstd=0.0):
        super().__init__()
        obs_dim = int(np.prod(envs.single_observation_space.shape))
        act_dim = int(np.prod(envs.single_action_space.shape))
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor_mean = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, 64)),
            nn.Tanh(),
            layer_init(nn.Linear(64, act_dim), std=0.01),
        )
        self.actor_logstd = nn.Parameter(torch.full((1, act_dim), init_logstd))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        action_mean = self.actor_mean(x)
        action_logstd = self.actor_logstd.expand_as(action_mean)
        action_std = torch.exp(action_logstd)
        probs = Normal(action_mean, action_std)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


def compute_gae(rewards, values, terminated, truncated, reset_step, next_value, gamma, gae_lambda):
    """GAE over a NEXT_STEP rollout, reset transitions left out: see ``cleanrl_ppo_track.compute_gae``.

    ``[T, E]`` tensors (``next_value`` ``[E]``); bootstraps from the next row's value
    unless terminated (after a truncation it is the final observation's value), stops the
    recursion at every episode end, and gives reset transitions advantage 0.

    Returns:
        ``(advantages, returns)``, ``[T, E]``.
    """
    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = torch.zeros_like(next_value)
    for t in reversed(range(num_steps)):
        nextvalues = next_value if t == num_steps - 1 else values[t + 1]
        delta = rewards[t] + gamma * nextvalues * (1.0 - terminated[t]) - values[t]
        episode_goes_on = 1.0 - torch.maximum(terminated[t], truncated[t])
        lastgaelam = (delta + gamma * gae_lambda * episode_goes_on * lastgaelam) * (1.0 - reset_step[t])
        advantages[t] = lastgaelam
    return advantages, advantages + values


def real_transitions(reset_step):
    """Indices into the flattened ``[T * E]`` batch of the rows that are not NEXT_STEP reset transitions."""
    return torch.nonzero(reset_step.reshape(-1) == 0).flatten()


def main(argv=None) -> None:
    args = parse_args(argv)
    # torchrun sets these; RANK is global (seeds), LOCAL_RANK is on this node (the GPU)
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    use_cuda = args.device.startswith("cuda")
    if use_cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    device = torch.device(f"cuda:{local_rank}" if use_cuda else "cpu")
    env_device = f"cuda:{local_rank}" if use_cuda else "cpu"
    # which package each rank runs: a script's own folder is on its path, not the checkout's
    print(f"rank={rank} trackgen_env={os.path.dirname(trackgen_env.__file__)}", flush=True)

    args.batch_size = int(args.num_envs * args.num_steps)
    # at least one iteration: a total below one batch still trains (and logs) once
    args.num_iterations = max(1, args.total_timesteps // (args.batch_size * world_size))
    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    writer = None
    if rank == 0 and args.track is not None:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(os.path.join(args.track, run_name))
        writer.add_text(
            "hyperparameters",
            "|param|value|\n|-|-|\n%s" % ("\n".join([f"|{key}|{value}|" for key, value in vars(args).items()])),
        )

    # seeding: one seed for the initial weights (rank 0's are broadcast anyway), then a
    # different one per rank so that the ranks sample different actions and minibatches
    random.seed(args.seed + rank)
    np.random.seed(args.seed + rank)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic

    # env setup: disjoint seeds per rank
    seeds = rank_env_seeds(args.seed, rank, world_size, args.num_envs)
    envs = make_env(args, env_device, seeds)
    assert isinstance(envs.single_action_space, gym.spaces.Box), "only continuous action space is supported"

    agent = Agent(envs, args.init_logstd).to(device)
    for param in agent.parameters():
        dist.broadcast(param.data, src=0)
    torch.manual_seed(args.seed + rank)
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    # ALGO Logic: Storage setup
    obs = torch.zeros((args.num_steps, args.num_envs) + envs.single_observation_space.shape).to(device)
    actions = torch.zeros((args.num_steps, args.num_envs) + envs.single_action_space.shape).to(device)
    logprobs = torch.zeros((args.num_steps, args.num_envs)).to(device)
    rewards = torch.zeros((args.num_steps, args.num_envs)).to(device)
    terminateds = torch.zeros((args.num_steps, args.num_envs)).to(device)
    truncateds = torch.zeros((args.num_steps, args.num_envs)).to(device)
    reset_steps = torch.zeros((args.num_steps, args.num_envs)).to(device)
    values = torch.zeros((args.num_steps, args.num_envs)).to(device)

    # start the game
    global_step = 0
    start_time = time.time()
    next_obs, _ = envs.reset()  # keeps the courses of this rank's seeds
    first_courses = course_fingerprints(envs.unwrapped)
    next_obs = torch.Tensor(next_obs).to(device)
    # NEXT_STEP: an env done at the previous step resets during the next one
    next_reset = torch.zeros(args.num_envs).to(device)

    for iteration in range(1, args.num_iterations + 1):
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        # [sum of episodic returns, number of episodes] of this rank, summed over the ranks below
        episode_stats = torch.zeros(2, device=device)
        for step in range(args.num_steps):
            global_step += args.num_envs * world_size
            obs[step] = next_obs
            reset_steps[step] = next_reset

            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            next_obs, reward, terminations, truncations, infos = envs.step(action.cpu().numpy())
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32, device=device)
            terminateds[step] = torch.as_tensor(terminations, dtype=torch.float32, device=device)
            truncateds[step] = torch.as_tensor(truncations, dtype=torch.float32, device=device)
            next_reset = torch.maximum(terminateds[step], truncateds[step])
            next_obs = torch.Tensor(next_obs).to(device)

            if "episode" in infos:
                episodes_over = np.nonzero(infos["_episode"])[0]
                episode_stats[0] += float(infos["episode"]["r"][episodes_over].sum())
                episode_stats[1] += len(episodes_over)

        # bootstrap value if not terminated (a truncated episode's next_obs is its final observation)
        with torch.no_grad():
            next_value = agent.get_value(next_obs).flatten()
            advantages, returns = compute_gae(
                rewards, values, terminateds, truncateds, reset_steps, next_value, args.gamma, args.gae_lambda
            )

        # flatten the batch, keeping only real transitions (no NEXT_STEP reset transition)
        keep = real_transitions(reset_steps)
        b_obs = obs.reshape((-1,) + envs.single_observation_space.shape)[keep]
        b_logprobs = logprobs.reshape(-1)[keep]
        b_actions = actions.reshape((-1,) + envs.single_action_space.shape)[keep]
        b_advantages = advantages.reshape(-1)[keep]
        b_returns = returns.reshape(-1)[keep]
        b_values = values.reshape(-1)[keep]

        # Optimizing the policy and value network: every rank runs the same number of
        # minibatches (np.array_split), so the all-reduces pair up across ranks
        b_inds = np.arange(len(keep))
        clipfracs = []
        for epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for mb_inds in np.array_split(b_inds, args.num_minibatches):
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds],
                        -args.clip_coef,
                        args.clip_coef,
                    )
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

                optimizer.zero_grad()
                loss.backward()
                # average the gradients over the ranks: one flat all-reduce per minibatch
                grads = [param.grad for param in agent.parameters()]
                flat = torch.cat([g.view(-1) for g in grads])
                dist.all_reduce(flat, op=dist.ReduceOp.SUM)
                flat /= world_size
                offset = 0
                for g in grads:
                    g.copy_(flat[offset : offset + g.numel()].view_as(g))
                    offset += g.numel()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        dist.all_reduce(episode_stats, op=dist.ReduceOp.SUM)
        if rank == 0:
            episodes = int(episode_stats[1].item())
            mean_return = episode_stats[0].item() / episodes if episodes else float("nan")
            sps = int(global_step / (time.time() - start_time))
            print(
                f"iteration={iteration}/{args.num_iterations} global_step={global_step} episodes={episodes} "
                f"mean_episodic_return={mean_return:.3f} value_loss={v_loss.item():.4f} "
                f"policy_loss={pg_loss.item():.4f} SPS={sps}",
                flush=True,
            )
            if writer is not None:
                if episodes:
                    writer.add_scalar("charts/episodic_return", mean_return, global_step)
                writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
                writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
                writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
                writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
                writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
                writer.add_scalar("losses/clipfrac", np.mean(clipfracs), global_step)
                writer.add_scalar("charts/SPS", sps, global_step)

    if rank == 0 and args.save_model:
        model_path = os.path.join(args.track or "runs", run_name, f"{args.exp_name}.cleanrl_model")
        os.makedirs(os.path.dirname(model_path), exist_ok=True)
        torch.save(agent.state_dict(), model_path)
        print(f"model saved to {model_path}")

    # the weights must agree across ranks (same start, same averaged gradients)
    weights = torch.cat([param.data.view(-1) for param in agent.parameters()])
    weights_sum = hashlib.sha256(weights.cpu().numpy().tobytes()).hexdigest()[:12]
    course_sum = hashlib.sha256(",".join(first_courses).encode()).hexdigest()[:12]
    print(
        f"rank={rank} world_size={world_size} course_fingerprint={course_sum} weights={weights_sum} "
        f"env_seeds={','.join(map(str, seeds[:16]))} courses={','.join(first_courses[:16])}",
        flush=True,
    )
    envs.close()
    if writer is not None:
        writer.close()
    # every rank reaches the end before the group is torn down
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # End without the interpreter's teardown. On a loaded 2-core machine about one run in ten had a
    # rank abort after destroy_process_group() returned, its work done and printed, in C++'s static
    # destruction at exit ("terminate called without an active exception", SIGABRT); torchrun then
    # failed the run. The rank's output is flushed first; os._exit skips only that teardown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
