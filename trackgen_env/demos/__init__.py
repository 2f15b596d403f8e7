"""Demos of ``python -m trackgen_env demo --env <name>``: each module has ``run(args) -> exit code``."""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode

__all__ = ["count_reset_steps", "progress_disabled", "shown_envs", "RESET_STEPS_NOTE", "CIRCUIT_LAPS", "CIRCUIT_SPEED"]

#: ``demo --track-csv``'s default steps: the time of ``CIRCUIT_LAPS`` laps at an average of
#: ``CIRCUIT_SPEED`` [m/s] (one lap plus a margin for a slower car; pure pursuit on the
#: full-size car averages more, so it may drive a second lap).
CIRCUIT_LAPS, CIRCUIT_SPEED = 1.2, 20.0

RESET_STEPS_NOTE = "NEXT_STEP autoreset: the step after an env's episode ends only resets it, its action ignored"


def shown_envs(shown: int, num_envs: int) -> str:
    """Which envs a picture of the first ``shown`` of ``num_envs`` envs shows: ``"envs 0-15 of 64"``."""
    return f"all {num_envs} envs" if shown == num_envs else f"envs 0-{shown - 1} of {num_envs}"


def progress_disabled(progress: bool) -> bool | None:
    """tqdm's ``disable`` for a progress bar that ``progress`` asks for: off when not asked for, and
    (None: tqdm's own test) where the output is not a terminal, so that output written to a file
    or a pipe carries no carriage-return redraws."""
    return None if progress else True


def count_reset_steps(env, ended_before: np.ndarray) -> int:
    """Env steps of the coming ``env.step`` that are reset steps, not transitions.

    Under ``AutoresetMode.NEXT_STEP`` (the envs' default) an env whose episode ended on the
    previous step (``ended_before``, ``[E]`` bool: terminated or truncated) spends the next
    step being reset: its action is ignored and nothing moves. Other modes have none.
    """
    if env.metadata.get("autoreset_mode") != AutoresetMode.NEXT_STEP:
        return 0
    return int(np.count_nonzero(ended_before))
