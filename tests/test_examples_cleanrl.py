"""The CleanRL-style PPO examples: NEXT_STEP reset transitions left out, truncation bootstrapped, runs end to end."""

import math

import numpy as np
import pytest
from examples_import import load_example

torch = pytest.importorskip("torch")

SCRIPTS = ("cleanrl_ppo_track", "cleanrl_ppo_gates", "ppo_multigpu")
# 2 iterations of 64 steps
TINY = "--device cpu --num-envs 4 --num-steps 16 --total-timesteps 128 --num-minibatches 2 --update-epochs 2".split()


@pytest.fixture(autouse=True)
def _keep_torch_threads():
    """``main()`` sets torch to one CPU thread (as a script would): restore it for the other tests."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)




# A scripted rollout of one env, T = 7 (rows are steps; "reset" rows are NEXT_STEP reset transitions):
#   t:          0     1     2      3     4      5      6
#   event:            term  reset        trunc  reset
REWARDS = [1.0, 2.0, 0.0, 0.5, 0.25, 0.0, 3.0]
VALUES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]  # values[2] is V(final obs of episode 1), values[5] of episode 2
TERMINATED = [0, 1, 0, 0, 0, 0, 0]
TRUNCATED = [0, 0, 0, 0, 1, 0, 0]
RESET_STEP = [0, 0, 1, 0, 0, 1, 0]
NEXT_VALUE = 0.8
GAMMA, LAMBDA = 0.9, 0.5


def as_column(xs):
    """``[T]`` numbers -> a ``[T, E=1]`` float32 tensor."""
    return torch.tensor(xs, dtype=torch.float32)[:, None]


def scripted_gae(module):
    return module.compute_gae(
        as_column(REWARDS),
        as_column(VALUES),
        as_column(TERMINATED),
        as_column(TRUNCATED),
        as_column(RESET_STEP),
        torch.tensor([NEXT_VALUE]),
        GAMMA,
        LAMBDA,
    )


@pytest.mark.parametrize("name", SCRIPTS)
def test_gae_gives_reset_transitions_no_advantage(name):
    advantages, returns = scripted_gae(load_example(name))
    assert advantages[2, 0] == 0.0 and advantages[5, 0] == 0.0
    assert returns[2, 0] == pytest.approx(VALUES[2]) and returns[5, 0] == pytest.approx(VALUES[5])


@pytest.mark.parametrize("name", SCRIPTS)
def test_gae_does_not_bootstrap_a_terminated_step_and_stops_there(name):
    advantages, _ = scripted_gae(load_example(name))
    a1 = REWARDS[1] - VALUES[1]  # no V(next), no later advantage
    a0 = REWARDS[0] + GAMMA * VALUES[1] - VALUES[0] + GAMMA * LAMBDA * a1
    assert advantages[1, 0].item() == pytest.approx(a1)
    assert advantages[0, 0].item() == pytest.approx(a0)


@pytest.mark.parametrize("name", SCRIPTS)
def test_gae_bootstraps_a_truncated_step_from_the_final_observation(name):
    advantages, _ = scripted_gae(load_example(name))
    a4 = REWARDS[4] + GAMMA * VALUES[5] - VALUES[4]  # values[5] = V(final obs); the next episode does not leak in
    a3 = REWARDS[3] + GAMMA * VALUES[4] - VALUES[3] + GAMMA * LAMBDA * a4
    a6 = REWARDS[6] + GAMMA * NEXT_VALUE - VALUES[6]
    assert advantages[4, 0].item() == pytest.approx(a4)
    assert advantages[3, 0].item() == pytest.approx(a3)
    assert advantages[6, 0].item() == pytest.approx(a6)


@pytest.mark.parametrize("name", SCRIPTS)
def test_ppo_batch_leaves_out_reset_transitions(name):
    module = load_example(name)
    reset_step = torch.tensor([[0, 1], [1, 0], [0, 0], [0, 1]], dtype=torch.float32)  # [T=4, E=2]
    # flat index = t * E + e
    assert module.real_transitions(reset_step).tolist() == [0, 3, 4, 5, 6]


def finite_losses(result):
    return all(math.isfinite(result[key]) for key in ("value_loss", "policy_loss", "entropy"))


def test_cleanrl_ppo_track_runs_with_finite_losses():
    result = load_example("cleanrl_ppo_track").main(TINY)
    assert finite_losses(result)
    assert [h["global_step"] for h in result["history"]] == [64, 128]


def test_cleanrl_ppo_gates_runs_with_finite_losses():
    result = load_example("cleanrl_ppo_gates").main(TINY)
    assert finite_losses(result)
    assert [h["global_step"] for h in result["history"]] == [64, 128]


def test_cleanrl_ppo_track_writes_tensorboard_logs_and_the_model(tmp_path):
    pytest.importorskip("tensorboard")
    load_example("cleanrl_ppo_track").main(TINY + ["--track", str(tmp_path), "--save-model"])
    (run,) = tmp_path.iterdir()
    assert list(run.glob("events.out.tfevents.*"))
    state = torch.load(run / "cleanrl_ppo_track.cleanrl_model")
    assert "actor_logstd" in state and np.isfinite(state["actor_logstd"].numpy()).all()


def test_cleanrl_ppo_track_refuses_an_env_without_next_step_autoreset(monkeypatch):
    import gymnasium
    from gymnasium.vector import AutoresetMode

    module = load_example("cleanrl_ppo_track")
    make_vec = gymnasium.make_vec
    monkeypatch.setattr(
        gymnasium, "make_vec", lambda *args, **kwargs: make_vec(*args, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    )
    with pytest.raises(AssertionError, match="SAME_STEP|SameStep"):
        module.main(TINY)


@pytest.mark.parametrize("example", ["cleanrl_ppo_track", "cleanrl_ppo_gates"])
def test_a_total_below_one_batch_trains_one_iteration(example):
    """``--total-timesteps`` smaller than one batch (num_envs x num_steps) still runs one iteration."""
    argv = [a if a != "128" else "10" for a in TINY]
    result = load_example(example).main(argv)
    assert finite_losses(result)
    assert [h["global_step"] for h in result["history"]] == [64]


@pytest.mark.parametrize("example", ["cleanrl_ppo_track", "cleanrl_ppo_gates"])
def test_a_total_between_batches_rounds_up_to_whole_iterations_and_says_so(example, capsys):
    """As ``train`` does: 100 steps of batches of 64 train 128 (not 64), with a line that says so."""
    argv = [a if a != "128" else "100" for a in TINY]
    result = load_example(example).main(argv)
    assert [h["global_step"] for h in result["history"]] == [64, 128]
    assert "--total-timesteps 100 rounded up to whole iterations of 64 (4 envs x 16 steps)" in capsys.readouterr().out


@pytest.mark.parametrize("example", ["cleanrl_ppo_track", "cleanrl_ppo_gates"])
@pytest.mark.parametrize("argv, message", [
    (["--num-envs", "0"], "--num-envs must be >= 1, got 0"),
    (["--num-steps", "0"], "--num-steps must be >= 1, got 0"),
    (["--num-minibatches", "0"], "--num-minibatches must be >= 1, got 0"),
    (["--total-timesteps", "-5"], "--total-timesteps must be >= 1, got -5"),
    (["--num-envs", "2", "--num-steps", "4", "--num-minibatches", "16"], "--num-minibatches 16 is more than the 8"),
])
def test_the_examples_refuse_counts_that_cannot_train(example, argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        load_example(example).parse_args(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err
