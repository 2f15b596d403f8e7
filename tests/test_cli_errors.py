"""The demo command answers bad values with one line on stderr and exit status 2, before simulating."""

import pytest

from trackgen_env.__main__ import main


@pytest.mark.parametrize("args, message", [
    (["--device", "cuda:7"], "device must be one of"),
    (["--seed", "-1"], "seed must be"),
    (["--track-csv", "/nonexistent.csv"], "no centreline CSV"),
    (["--env", "gates", "--track-csv", "x.csv"], "does not apply to --env gates"),
    (["--num-envs", "0"], "--num-envs must be >= 1"),
])
def test_bad_demo_arguments_get_one_line_and_status_2(args, message, capsys, tmp_path):
    assert main(["demo", "--steps", "2", "--no-progress", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_output_folder_that_cannot_be_made_fails_before_the_simulation(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["demo", "--steps", "2", "--no-progress", "--out", str(blocker / "sub")]) == 2
    out = capsys.readouterr()
    assert "error:" in out.err and "env steps" not in out.out
