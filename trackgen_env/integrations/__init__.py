"""Trainer integrations, outside the library core (DESIGN layer 7).

* :mod:`trackgen_env.integrations.sb3`: :class:`~trackgen_env.integrations.sb3.SB3VecEnv`,
  a native vector env seen as a Stable-Baselines3 ``VecEnv``, and ``make_sb3_vec_env``;
* :mod:`trackgen_env.integrations.rsl_rl`: :class:`~trackgen_env.integrations.rsl_rl.RslRlVecEnv`, a
  native vector env seen as an rsl_rl ``VecEnv`` (SAME_STEP, torch outputs), and rsl_rl's runner
  with gloo under ``torchrun`` on CPU processes;
* :mod:`trackgen_env.integrations.skrl`: an skrl wrapper (SAME_STEP, torch outputs, copies);
* :mod:`trackgen_env.integrations.train_rsl_rl`: ``python -m trackgen_env train`` (rsl_rl PPO, the default);
* :mod:`trackgen_env.integrations.train`: ``train --trainer sb3`` (SB3 PPO);
* :mod:`trackgen_env.integrations.runs`: a run's files read back (``train.json``, either trainer's policy);
* :mod:`trackgen_env.integrations.evaluation`: ``eval`` of either trainer's policy on held-out courses.

Stable-Baselines3, rsl_rl and skrl are imported only here, and only when an adapter is first used
(``pip install -e ".[rsl_rl,sb3]"`` in a source checkout).
"""
