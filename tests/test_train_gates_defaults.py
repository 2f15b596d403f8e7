"""``train`` / ``eval`` on TrackGen-Gates-v0: the gates defaults of ENV_DEFAULTS reach PPO and the env,
and ``eval`` flies from the standard start whatever the training started from."""

import json

import pytest

pytest.importorskip("stable_baselines3")

from trackgen_env.integrations import evaluation as evaluation_module  # noqa: E402
from trackgen_env.integrations.evaluation import evaluate  # noqa: E402
from trackgen_env.integrations.train import ENV_DEFAULTS, train  # noqa: E402


@pytest.fixture(scope="module")
def gates_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gates_run")
    path = train("TrackGen-Gates-v0", 256, seed=5, device="cpu", out=out, progress=False, num_envs=4,
                 ppo_kwargs={"n_steps": 64, "batch_size": 128})
    return path


def test_train_uses_the_gates_defaults(gates_run):
    record = json.loads(gates_run.with_name("train.json").read_text())
    defaults = ENV_DEFAULTS["TrackGen-Gates-v0"]
    assert record["env_kwargs"] == defaults["env"] == {"start": "random_gate", "random_start_prob": 0.5}
    assert record["policy"]["log_std_init"] == -1.0
    assert record["ppo"]["n_steps"] == 64 and record["ppo"]["gamma"] == defaults["ppo"]["gamma"]
    from stable_baselines3 import PPO

    model = PPO.load(gates_run, device="cpu")
    assert float(model.policy.log_std.detach().mean()) < -0.5  # started at -1, a few updates ago


def test_eval_flies_gates_from_the_standard_start(gates_run, monkeypatch):
    seen = []
    real = evaluation_module.make_sb3_vec_env

    def spy(env_id, num_envs, **kwargs):
        seen.append(kwargs)
        return real(env_id, num_envs, **kwargs)

    monkeypatch.setattr(evaluation_module, "make_sb3_vec_env", spy)
    trained, rnd = evaluate(gates_run, episodes=2, device="cpu")
    assert seen and all(k["start"] == "first_gate" for k in seen)
    assert trained.mean_gates_passed is not None and rnd.episodes == 2
