"""PPO on ``TrackGen-Gates-v0`` (a quadrotor through freshly generated gates), in one file, CleanRL style.

One self-contained file by design, as CleanRL's are: it repeats much of
``examples/cleanrl_ppo_track.py`` and ``examples/ppo_multigpu.py`` so that it reads top to bottom alone.

Follows CleanRL's ``ppo_continuous_action.py`` (Huang et al., "The 37 Implementation
Details of Proximal Policy Optimization", ICLR Blog Track 2022; PPO: Schulman et al.
2017; GAE: Schulman et al. 2016): separate actor and critic MLPs with orthogonal init, a
Gaussian policy with a state-independent log-std, GAE, the clipped surrogate objective,
value clipping, per-minibatch advantage normalisation, observation and reward
normalisation, TensorBoard logging.

What differs is the env: one native vector env (``gymnasium.make_vec``) whose
auto-reset is Gymnasium's ``NEXT_STEP`` mode. There, the step after an env's episode ends
is a *reset transition*: the env ignores its action and returns the first observation of
the next episode with reward 0. So:

* a reset transition never enters the PPO batch (its action did nothing): we flag it
  (``reset_step``: the env was done at the previous step) and drop it from the loss;
* the observation returned with ``terminated`` or ``truncated`` is the episode's last
  one, and it is stored as the next row's observation, so ``values[t + 1]`` is the value
  of the final observation: a truncated episode bootstraps from it, a terminated one
  does not, and the GAE recursion stops at either end of an episode.

The drone is commanded by collective thrust and body rates (thrust 0 = hover); the
reward is progress towards the next gate plus a bonus per gate, minus a crash penalty
(see :class:`trackgen_env.envs.gates.GatesVectorEnv`). Besides the returns, the log
shows the gates passed per episode. What makes it learn (``docs/gates-env.md``):

* ``--start random_gate --random-start-prob 0.5`` (the defaults here): half of the
  episodes start on the course line before a random gate, moving towards it (Kaufmann
  et al., Nature 2023), so gate passes are in the rollouts from the first iteration;
* ``--init-logstd -1`` (CleanRL: 0): std 1 is +-8 rad/s of body-rate noise, under which
  even the reference controller crashes;
* 64 envs x 256 steps per iteration: a batch holds hundreds of gate passes and crashes;
  gamma 0.99 (a ~2 s horizon: the next two gates); no entropy bonus.

The training episodes mix random-gate and standard starts; evaluate a policy from the
standard start (``start="first_gate"``).

Run (CPU; TensorBoard logs under ``runs/`` with ``--track``)::

    python examples/cleanrl_ppo_gates.py --track
    tensorboard --logdir runs
"""

import argparse
import math
import os
import random
import time
from dataclasses import dataclass, fields

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from gymnasium.vector import AutoresetMode
from torch.distributions.normal import Normal

import trackgen_env  # noqa: F401  (registers the TrackGen envs)


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """the name of this experiment"""
    seed: int = 1
    """seed of the experiment (courses, torch, numpy)"""
    torch_deterministic: bool = True
    """if toggled, `torch.backends.cudnn.deterministic=True`"""
    device: str | None = None
    """the env's Warp device ("cpu", "cuda:0"; None: cuda:0 if present, else cpu); the policy runs there too"""
    track: str | None = None
    """log to TensorBoard under this directory (`--track` alone: runs/)"""
    save_model: bool = False
    """whether to save the model into the run's directory (runs/ without --track)"""

    # Algorithm specific arguments
    env_id: str = "TrackGen-Gates-v0"
    """the id of the environment"""
    total_timesteps: int = 2_000_000
    """total timesteps of the experiment (rounded up to whole iterations of num_envs x num_steps)"""
    learning_rate: float = 3e-4
    """the learning rate of the optimizer"""
    num_envs: int = 64
    """the number of parallel envs (one native vector env)"""
    num_steps: int = 256
    """the number of steps to run in each environment per policy rollout"""
    start: str = "random_gate"
    """the env's start distribution ("random_gate": a share of episodes before a random gate; "first_gate")"""
    random_start_prob: float = 0.5
    """the share of episodes that start before a random gate (with --start random_gate)"""
    anneal_lr: bool = True
    """toggle learning rate annealing for policy and value networks"""
    gamma: float = 0.99
    """the discount factor gamma"""
    gae_lambda: float = 0.95
    """the lambda for the general advantage estimation"""
    num_minibatches: int = 8
    """the number of mini-batches"""
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
    init_logstd: float = -1.0
    """the initial log-std of the Gaussian policy: noise of e^-1 of the action range (full-range body-rate
    noise keeps the drone tumbling)"""
    target_kl: float | None = None
    """the target KL divergence threshold"""

    # to be filled in runtime
    batch_size: int = 0
    """the batch size, reset transitions included (computed in runtime)"""
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
            kind = int if f.type is int else float if f.type in (float, float | None) else str
            parser.add_argument(flag, type=kind, default=f.default)
    args = parser.parse_args(argv)
    for name in ("total_timesteps", "num_envs", "num_steps", "num_minibatches", "update_epochs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.num_minibatches > args.num_envs * args.num_steps:
        parser.error(f"--num-minibatches {args.num_minibatches} is more than the {args.num_envs * args.num_steps} "
                     "transitions of a rollout (--num-envs x --num-steps)")
    return Args(**vars(args))


def make_env(args: Args):
    """The native vector env with Gymnasium 1.x vector wrappers (all on NumPy arrays)."""
    envs = gym.make_vec(args.env_id, num_envs=args.num_envs, device=args.device, seed=args.seed,
                        start=args.start, random_start_prob=args.random_start_prob)
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
    """GAE (Schulman et al. 2016) over a NEXT_STEP rollout, with reset transitions left out.

    All arguments are ``[T, E]`` float tensors (flags as 0/1) but ``next_value`` ``[E]``
    (the value of the observation after the last step). Row ``t`` holds the observation
    ``obs[t]`` (``values[t]``), the reward of acting there, and whether that step ended
    the episode; ``reset_step[t]`` is 1 where the env was done at step ``t - 1``, so row
    ``t`` is a reset transition and ``obs[t]`` is the final observation of that episode.

    * The TD target bootstraps from the next row's value unless the episode
      terminated: after a truncation ``values[t + 1]`` is the value of the final
      observation (NEXT_STEP returns it with ``truncated``), the partial-episode
      bootstrapping of Pardo et al. 2018.
    * The recursion stops at every episode end (terminated or truncated): row ``t + 1``
      is then the reset transition, not the same episode.
    * A reset transition gets advantage 0 and return ``values[t]``: it never enters the loss.

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


def main(argv=None) -> dict:
    """Train; returns the last minibatch's losses and the per-iteration episode statistics."""
    args = parse_args(argv)
    args.batch_size = int(args.num_envs * args.num_steps)
    # whole iterations, rounded up as `python -m trackgen_env train` rounds to whole rollouts (a total
    # below one batch still trains, and logs, once)
    args.num_iterations = max(1, math.ceil(args.total_timesteps / args.batch_size))
    if args.num_iterations * args.batch_size != args.total_timesteps:
        print(f"training {args.num_iterations * args.batch_size} steps: --total-timesteps {args.total_timesteps} "
              f"rounded up to whole iterations of {args.batch_size} ({args.num_envs} envs x {args.num_steps} steps)")
    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    writer = None
    if args.track is not None:
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(os.path.join(args.track, run_name))
        writer.add_text(
            "hyperparameters",
            "|param|value|\n|-|-|\n%s" % ("\n".join([f"|{key}|{value}|" for key, value in vars(args).items()])),
        )

    # TRY NOT TO MODIFY: seeding
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic

    # env setup: the policy runs where the env runs
    envs = make_env(args)
    env_device = str(envs.unwrapped.device)
    device = torch.device(env_device if env_device.startswith("cuda") else "cpu")
    if device.type == "cpu":
        # a 64-64 MLP gains nothing from more threads, and idle OpenMP threads spinning
        # beside other busy processes slow every step down many times over
        torch.set_num_threads(1)
    assert isinstance(envs.single_action_space, gym.spaces.Box), "only continuous action space is supported"

    agent = Agent(envs, args.init_logstd).to(device)
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

    # TRY NOT TO MODIFY: start the game
    global_step = 0
    start_time = time.time()
    history = []  # per iteration: global_step, episodic returns and gates passed in the episodes that ended
    next_obs, _ = envs.reset()  # the courses are seeded by make_vec(seed=args.seed)
    next_obs = torch.Tensor(next_obs).to(device)
    # NEXT_STEP: an env done at the previous step resets during the next one
    next_reset = torch.zeros(args.num_envs).to(device)

    for iteration in range(1, args.num_iterations + 1):
        # Annealing the rate if instructed to do so.
        if args.anneal_lr:
            frac = 1.0 - (iteration - 1.0) / args.num_iterations
            optimizer.param_groups[0]["lr"] = frac * args.learning_rate

        iteration_returns, iteration_lengths, iteration_gates = [], [], []
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step] = next_obs
            reset_steps[step] = next_reset

            # ALGO LOGIC: action logic
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            # TRY NOT TO MODIFY: execute the game and log data.
            next_obs, reward, terminations, truncations, infos = envs.step(action.cpu().numpy())
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32, device=device)
            terminateds[step] = torch.as_tensor(terminations, dtype=torch.float32, device=device)
            truncateds[step] = torch.as_tensor(truncations, dtype=torch.float32, device=device)
            next_reset = torch.maximum(terminateds[step], truncateds[step])
            next_obs = torch.Tensor(next_obs).to(device)

            if "episode" in infos:
                episodes_over = np.nonzero(infos["_episode"])[0]
                iteration_gates += infos["gates_passed"][episodes_over].tolist()  # gates passed in order
                for episodic_return, episodic_length in zip(
                    infos["episode"]["r"][episodes_over], infos["episode"]["l"][episodes_over]
                ):
                    iteration_returns.append(float(episodic_return))
                    iteration_lengths.append(int(episodic_length))
                    if writer is not None:
                        writer.add_scalar("charts/episodic_return", episodic_return, global_step)
                        writer.add_scalar("charts/episodic_length", episodic_length, global_step)
        history.append(
            {
                "global_step": global_step,
                "episodic_returns": iteration_returns,
                "lengths": iteration_lengths,
                "gates": iteration_gates,
            }
        )

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

        # Optimizing the policy and value network
        b_inds = np.arange(len(keep))
        clipfracs = []
        for epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for mb_inds in np.array_split(b_inds, args.num_minibatches):
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    # calculate approx_kl http://joschu.net/blog/kl-approx.html
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > args.clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                if args.norm_adv:
                    mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                # Policy loss
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                # Value loss
                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                    v_clipped = b_values[mb_inds] + torch.clamp(
                        newvalue - b_values[mb_inds],
                        -args.clip_coef,
                        args.clip_coef,
                    )
                    v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                    v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                    v_loss = 0.5 * v_loss_max.mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb_inds]) ** 2).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - args.ent_coef * entropy_loss + v_loss * args.vf_coef

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

            if args.target_kl is not None and approx_kl > args.target_kl:
                break

        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y

        sps = int(global_step / (time.time() - start_time))
        mean_return = np.mean(iteration_returns) if iteration_returns else float("nan")
        mean_length = np.mean(iteration_lengths) if iteration_lengths else float("nan")
        mean_gates = np.mean(iteration_gates) if iteration_gates else float("nan")
        print(
            f"iteration={iteration}/{args.num_iterations} global_step={global_step} "
            f"episodes={len(iteration_returns)} mean_episodic_return={mean_return:.3f} mean_length={mean_length:.0f} "
            f"gates={mean_gates:.2f} "
            f"value_loss={v_loss.item():.4f} policy_loss={pg_loss.item():.4f} SPS={sps}",
            flush=True,
        )
        if writer is not None:
            writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
            writer.add_scalar("charts/reset_transitions_dropped", args.batch_size - len(keep), global_step)
            writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
            writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
            writer.add_scalar("losses/entropy", entropy_loss.item(), global_step)
            writer.add_scalar("losses/old_approx_kl", old_approx_kl.item(), global_step)
            writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
            writer.add_scalar("losses/clipfrac", np.mean(clipfracs), global_step)
            writer.add_scalar("losses/explained_variance", explained_var, global_step)
            writer.add_scalar("charts/SPS", sps, global_step)
            if iteration_gates:
                writer.add_scalar("charts/gates_per_episode", mean_gates, global_step)

    if args.save_model:
        model_path = os.path.join(args.track or "runs", run_name, f"{args.exp_name}.cleanrl_model")
        os.makedirs(os.path.dirname(model_path), exist_ok=True)
        torch.save(agent.state_dict(), model_path)
        print(f"model saved to {model_path}")

    envs.close()
    if writer is not None:
        writer.close()
    return {
        "value_loss": v_loss.item(),
        "policy_loss": pg_loss.item(),
        "entropy": entropy_loss.item(),
        "history": history,
    }


if __name__ == "__main__":
    main()
