"""python -m trackgen_env demo --env race: cars of different speed limits, overtakes and contacts, the picture."""

import re

from trackgen_env.__main__ import main


def test_the_race_demo_prints_overtakes_and_contacts_and_writes_the_picture(tmp_path, capsys):
    assert main(["demo", "--env", "race", "--seed", "3", "--device", "cpu", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    limits = [float(v) for v in re.findall(r"car \d: speed limit ([\d.]+) m/s", out)]
    assert len(limits) == 4 and len(set(limits)) == 4
    assert re.search(r"overtake: car \d passes car \d for P\d", out)
    assert re.search(r"contact: car \d and car \d", out)
    assert re.search(r"overtakes: [1-9]\d*, contacts: [1-9]\d*", out)
    assert (tmp_path / "race.png").stat().st_size > 10_000


def test_the_race_demo_refuses_bad_options(tmp_path, capsys):
    assert main(["demo", "--env", "race", "--num-agents", "0", "--device", "cpu", "--out", str(tmp_path)]) == 2
    assert "num_agents must be an int in [1, 16]" in capsys.readouterr().err
    assert main(["demo", "--env", "race", "--track-csv", "x.csv", "--out", str(tmp_path)]) == 2
    assert "--track-csv and --gates-file do not apply" in capsys.readouterr().err
