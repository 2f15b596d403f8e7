"""Trainer integrations, outside the library core (DESIGN layer 7).

* :mod:`trackgen_env.integrations.sb3`: :class:`~trackgen_env.integrations.sb3.SB3VecEnv`,
  a native vector env seen as a Stable-Baselines3 ``VecEnv``, and ``make_sb3_vec_env``;
* :mod:`trackgen_env.integrations.train`: ``python -m trackgen_env train|eval`` (SB3 PPO).

Stable-Baselines3 is imported only here, and only when an adapter is first used
(``pip install -e ".[sb3]"`` in a source checkout).
"""
