"""Self-play on TrackGen-Race-v0: ``train --preset race`` (rsl_rl, one policy for every car) and
``eval MODEL --race`` (the policy in car 0 against pure-pursuit cars on held-out tracks)."""

import contextlib
import io
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("rsl_rl")

from trackgen_env.__main__ import main  # noqa: E402
from trackgen_env.demos.race import RacePursuit  # noqa: E402
from trackgen_env.envs.race import RaceVectorEnv  # noqa: E402
from trackgen_env.integrations.race_eval import evaluate_race, race_against_pursuit  # noqa: E402
from trackgen_env.integrations.train_rsl_rl import resolve_trainer  # noqa: E402


def _quiet(argv):
    before = torch.get_num_threads()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        rc = main(argv)
    torch.set_num_threads(before)
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def race_run(tmp_path_factory):
    """The race preset at a test budget: 32 courses x 2 cars x 32 steps = 2048 car-steps an iteration, 4 iterations."""
    out = tmp_path_factory.mktemp("race") / "run"
    rc, text = _quiet(["train", "--preset", "race", "--steps", "8000", "--num-envs", "32", "--seed", "1",
                       "--device", "cpu", "--out", str(out), "--no-progress"])
    assert rc == 0, text
    return out, text


def test_the_race_preset_trains_one_policy_over_every_car(race_run):
    out, text = race_run
    record = json.loads((out / "train.json").read_text())
    assert record["trainer"] == "rsl_rl" and record["preset"] == "race" and record["env_id"] == "TrackGen-Race-v0"
    assert record["num_envs"] == 32 and record["env_kwargs"]["num_agents"] == 2
    # the batch is the cars: 4 iterations of 32 courses x 2 cars x 32 steps
    assert record["rollout_steps"] == 2048 and record["steps"] == 4 * 2048 and record["steps_requested"] == 8000
    assert "(32 courses x 2 cars x 32 steps)" in text
    header = (out / "monitor.csv").read_text().splitlines()[1]
    assert header == "r,l,t,laps,rank,finished"
    assert resolve_trainer(None, "race") == "rsl_rl"


def test_the_race_env_trains_without_the_preset(tmp_path):
    out = tmp_path / "run"
    rc, text = _quiet(["train", "--env", "TrackGen-Race-v0", "--trainer", "rsl_rl", "--steps", "512", "--num-envs",
                       "8", "--device", "cpu", "--out", str(out), "--no-progress"])
    assert rc == 0, text
    record = json.loads((out / "train.json").read_text())
    assert record["env_kwargs"] == {"num_agents": 2} and record["steps"] == 8 * 2 * 32 and record["preset"] is None


def test_the_race_preset_has_no_sb3_recipe(tmp_path, capsys):
    assert main(["train", "--preset", "race", "--trainer", "sb3", "--out", str(tmp_path / "run")]) == 2
    assert "the preset 'race' has a recipe for rsl_rl only" in capsys.readouterr().err


def test_eval_race_writes_the_table_and_json(race_run, tmp_path):
    out, _ = race_run
    md, js = tmp_path / "race.md", tmp_path / "race.json"
    rc, text = _quiet(["eval", str(out), "--race", "--episodes", "4", "--device", "cpu", "--md", str(md),
                       "--json", str(js), "--no-progress"])
    assert rc == 0, text
    rows = json.loads(js.read_text())
    assert [r["policy"] for r in rows] == ["trained policy", "pure pursuit"]
    for r in rows:
        assert r["races"] == 4 and r["opponents"] == "1 x pure pursuit (margin 0.6)"
        assert 0.0 <= r["win_rate"] <= 1.0 and 1.0 <= r["mean_position"] <= 2.0
    assert md.read_text().strip() in text


class _Recorder:
    """The race env, keeping a copy of every step's outputs (for the recount)."""

    def __init__(self, env):
        self.env, self.steps = env, []

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.obs = obs
        self.first = {k: np.array(v) for k, v in info.items()}
        self.loop_length = self.env.course.result.loop_length.numpy()[::self.env.num_agents].astype(np.float64)
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.obs = obs
        self.steps.append((terminated.copy(), truncated.copy(), {k: np.array(v) for k, v in info.items()}))
        return obs, reward, terminated, truncated, info


def _recount(rec: _Recorder):
    """The metrics of car 0, race by race, from the recorded per-step info, in plain loops."""
    E, N = rec.num_courses, rec.num_agents
    wins = positions = laps = overtakes = caused = driven = 0.0
    for e in range(E):
        cars = range(e * N, (e + 1) * N)
        before = [int(rec.first["rank"][i]) for i in cars]
        for terminated, truncated, info in rec.steps:
            now = [int(info["rank"][i]) for i in cars]
            for b in range(1, N):
                if before[0] > before[b] and now[0] < now[b] and not info["out"][e * N + b]:
                    overtakes += 1
            if info["car_contact"][e * N]:
                other = e * N + int(info["opponent"][e * N])
                caused += float(info["race_progress"][e * N] <= info["race_progress"][other])
            before = now
            if terminated[e * N] or truncated[e * N]:
                wins += float(bool(info["finished"][e * N]) and now[0] == 1)
                positions += now[0]
                laps += int(info["laps"][e * N])
                driven += max(float(info["race_progress"][e * N]), 0.0) / rec.loop_length[e]
                break
    return wins / E, positions / E, overtakes / driven, caused / driven, laps / E, driven


def test_the_race_table_equals_a_recount_of_the_per_step_info():
    # a scripted car 0: the demo's overtaking pure pursuit at 0.75 of the limits, against opponents at 0.45
    env = RaceVectorEnv(8, "cpu", num_agents=3, seed=5)
    rec = _Recorder(env)
    pilot = RacePursuit(env, np.full(3, 0.75))
    try:
        result = race_against_pursuit(rec, lambda obs: pilot(rec.obs)[::3], 5, opponent_margin=0.45)
    finally:
        env.close()
    win, position, overtakes, caused, laps, driven = _recount(rec)
    assert result.races == 8 and result.opponents == "2 x pure pursuit (margin 0.45)"
    assert result.win_rate == pytest.approx(win) and result.mean_position == pytest.approx(position)
    assert result.overtakes_per_lap == pytest.approx(overtakes)
    assert result.contacts_caused_per_lap == pytest.approx(caused)
    assert result.mean_laps == pytest.approx(laps) and result.laps_driven == pytest.approx(driven)
    assert overtakes > 0 and caused > 0  # the case exercises both counts


def test_eval_race_refuses_a_run_of_another_env(tmp_path, capsys):
    (tmp_path / "train.json").write_text(json.dumps({"trainer": "rsl_rl", "env_id": "TrackGen-Track-v0"}))
    (tmp_path / "policy.pt").write_text("")
    assert main(["eval", str(tmp_path), "--race", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "MODEL must be a TrackGen-Race-v0 run (train --preset race), got a TrackGen-Track-v0 run" in err
    with pytest.raises(ValueError, match="MODEL must be a TrackGen-Race-v0 run"):
        evaluate_race(tmp_path / "policy.pt")


def test_eval_race_refuses_training_seeds_and_other_modes(race_run, capsys):
    out, _ = race_run
    assert main(["eval", str(out), "--race", "--seed", "1", "--device", "cpu"]) == 2
    assert "shares per-env course seeds with the training run" in capsys.readouterr().err
    assert main(["eval", str(out), "--race", "--circuits", "somewhere"]) == 2
    assert "--circuits does not apply to --race" in capsys.readouterr().err
