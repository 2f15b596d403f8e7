"""PettingZoo's face of ``TrackGen-Race-v0``: one generated course, ``num_agents`` cars, a ``ParallelEnv``.

``parallel_env(num_agents=N, ...)`` is a :class:`pettingzoo.ParallelEnv` over a
:class:`~trackgen_env.envs.race.RaceVectorEnv` of one course (``num_envs=1``, no auto-reset):
the agents ``car_0 ... car_{N-1}`` are its cars, in order; every step of the agents is one step
of the race. Spaces, rewards and ``info`` entries are the race env's, per car::

    from trackgen_env.integrations.pettingzoo import parallel_env

    env = parallel_env(num_agents=4, seed=0)
    observations, infos = env.reset(seed=0)
    while env.agents:
        actions = {agent: env.action_space(agent).sample() for agent in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)

An agent is terminated when its car is out (off the band, or a contact with another car) or
has finished, and when the race ends (``grace_steps`` after the first car finished); every
agent is truncated at ``max_episode_steps``. A terminated or truncated agent leaves
``env.agents`` (PettingZoo's rule: no agent is revived before the next ``reset()``). Every
``reset()`` generates a new course (``reset(seed=s)``: the course of seed ``s``, as the vector
env's course 0 of ``seed=s``).

Needs the ``pettingzoo`` extra (``pip install trackgen_env[pettingzoo]``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from ..envs.io import check_action
from ..envs.race import RaceVectorEnv, check_num_agents

try:
    from pettingzoo import ParallelEnv
except ImportError as exc:  # pragma: no cover - the extra is installed in the test environment
    raise ImportError("trackgen_env.integrations.pettingzoo needs PettingZoo: pip install "
                      "'trackgen_env[pettingzoo]'") from exc

__all__ = ["parallel_env", "RaceParallelEnv"]


class RaceParallelEnv(ParallelEnv):
    """``num_agents`` cars racing on one generated course (see the module docstring).

    Args:
        num_agents: cars on the course, an int in [1, 16] (``agents`` ``car_0`` ... ``car_{N-1}``).
        seed: the first course's seed (None: drawn).
        render_mode: None (the race has no on-device frames; the demo draws traces).
        **kwargs: :class:`~trackgen_env.envs.race.RaceVectorEnv`'s arguments (``device``, ``car``,
            ``laps``, ``max_episode_steps``, ``num_opponents``, ...) but ``num_envs``,
            ``autoreset_mode`` and ``output``, which this face sets.

    Raises:
        TypeError / ValueError: as the race env's; ``num_envs``, ``autoreset_mode`` or ``output`` passed.
    """

    metadata = {"name": "trackgen_race_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, num_agents: int = 2, *, seed: int | None = None, render_mode: str | None = None, **kwargs):
        taken = sorted({"num_envs", "autoreset_mode", "output"} & set(kwargs))
        if taken:
            raise TypeError(f"parallel_env sets {taken} itself (one course, reset by reset(), NumPy outputs); "
                            "do not pass them")
        if render_mode is not None:
            raise ValueError(f"render_mode must be None (the race env draws no frames), got {render_mode!r}")
        self.render_mode = None
        n = check_num_agents(num_agents)
        self.race = RaceVectorEnv(1, num_agents=n, seed=seed, autoreset_mode=AutoresetMode.DISABLED,
                                  output="numpy", **kwargs)
        self.possible_agents = [f"car_{i}" for i in range(n)]
        self.agents: list[str] = []
        self._index = {agent: i for i, agent in enumerate(self.possible_agents)}

    # PettingZoo asks for the same space object at every call for an agent
    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str):
        self._check_agent(agent)
        return self.race.single_observation_space

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str):
        self._check_agent(agent)
        # a copy per agent: each agent's sampler is seeded on its own
        space = self.race.single_action_space
        return type(space)(space.low, space.high, space.shape, space.dtype)

    def _check_agent(self, agent: str) -> None:
        if agent not in self._index:
            raise KeyError(f"unknown agent {agent!r}: this env's agents are {self.possible_agents}")

    def _infos(self, info: dict[str, Any], agents) -> dict[str, dict[str, Any]]:
        names = [k for k in info if not k.startswith("_") and k not in ("final_obs", "final_info")]
        return {a: {k: info[k][self._index[a]].item() for k in names} for a in agents}

    def reset(self, seed: int | None = None, options: dict | None = None):
        """A new course (``seed``: the course of that seed), every car on the grid.

        ``options`` are accepted and unused (no option applies to one course).

        Returns:
            ``(observations, infos)``: a dict per agent each.
        """
        obs, info = self.race.reset(seed=seed)
        self.agents = list(self.possible_agents)
        return ({a: obs[i].copy() for a, i in self._index.items()}, self._infos(info, self.agents))

    def step(self, actions: dict[str, Any]):
        """One step of the race; the cars of agents without an action (and the ended ones) brake.

        Returns:
            ``(observations, rewards, terminations, truncations, infos)`` for the agents live
            before the step.

        Raises:
            RuntimeError: no live agent (call ``reset()``).
            KeyError: an action for an unknown or ended agent.
            TypeError / ValueError: an action not of a real floating dtype, of a shape other than ``(2,)``,
                or holding NaN (the message names the agent; the race is unchanged).
        """
        if not self.agents:
            raise RuntimeError("no live agents: call reset()")
        batch = np.tile(np.array([0.0, -1.0], np.float32), (len(self.possible_agents), 1))
        for agent, action in actions.items():
            if agent not in self.agents:
                raise KeyError(f"an action for {agent!r}, which is not live (live agents: {self.agents})")
            try:  # checked as the single env checks its action (dtype, shape, NaN), naming the agent
                batch[self._index[agent]] = check_action(action, batch.shape[1], "(steering, throttle)")
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{agent}: {exc}") from None
        obs, reward, term, trunc, info = self.race.step(batch)
        live = self.agents
        ended = term | info["out"] | info["finished"]
        observations = {a: obs[self._index[a]].copy() for a in live}
        rewards = {a: float(reward[self._index[a]]) for a in live}
        terminations = {a: bool(ended[self._index[a]]) for a in live}
        truncations = {a: bool(trunc[self._index[a]]) for a in live}
        infos = self._infos(info, live)
        self.agents = [a for a in live if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def render(self):
        """None: the race draws no frames (``python -m trackgen_env demo --env race`` plots traces)."""
        return None

    def close(self) -> None:
        self.race.close()


def parallel_env(num_agents: int = 2, **kwargs) -> RaceParallelEnv:
    """A :class:`RaceParallelEnv` (PettingZoo's usual constructor name)."""
    return RaceParallelEnv(num_agents, **kwargs)
