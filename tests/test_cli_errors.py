"""The demo command answers bad values with one line on stderr and exit status 2, before simulating."""

import pytest
import warp as wp

from trackgen_env.__main__ import main


@pytest.mark.parametrize("args, message", [
    (["--device", "cuda:7"], "error: --device must be one of ['cpu"),
    (["--seed", "-1"], "--seed must be an int in [0, 2**64), got -1"),
    (["--track-csv", "/nonexistent.csv"], "no centreline CSV"),
    (["--env", "gates", "--track-csv", "x.csv"], "does not apply to --env gates"),
    (["--num-envs", "0"], "--num-envs must be >= 1"),
    (["--num-envs", "100000000"], "needs an estimated"),
    (["--env", "gates", "--num-envs", "100000000"], "needs an estimated"),
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


def test_help_shows_plain_text_not_restructuredtext(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "``" not in out and ":mod:" not in out
    assert "demo drives an env" in out and 'pip install -e ".[rsl_rl,sb3]"' in out


def test_a_circuit_too_long_for_a_track_names_no_option_the_cli_lacks(tmp_path, capsys):
    import numpy as np

    n, r = 20000, 15000.0
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    rows = np.stack([r * np.cos(a), r * np.sin(a), np.full(n, 5.0), np.full(n, 5.0)], axis=1)
    csv = tmp_path / "huge.csv"
    np.savetxt(csv, rows, delimiter=",", header="x_m,y_m,w_tr_right_m,w_tr_left_m")
    assert main(["demo", "--track-csv", str(csv), "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "over the 65536 a track holds: expected a circuit up to" in err
    assert "max_loop_length" not in err and "raise point_spacing" not in err and "from_centerline" not in err
    assert "the env resamples every 0.9 m, a third of the car's wheelbase" in err


@pytest.mark.parametrize("command", [["train", "--steps", "64"], ["eval", "model.zip"]])
def test_a_bad_device_names_the_flag_for_train_and_eval(command, capsys):
    assert main([*command, "--device", "nope"]) == 2
    err = capsys.readouterr().err
    assert "error: --device must be one of [" in err and "got 'nope'" in err and "or None" not in err


@pytest.mark.skipif(wp.get_cuda_device_count() > 0, reason="a machine without a GPU")
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_a_cuda_device_without_a_gpu_is_refused_without_warps_driver_errors(device, capfd):
    """A bare "cuda" sent Warp to the driver first, which printed C-level errors before the refusal."""
    from trackgen_env.core.checks import resolve_device

    capfd.readouterr()
    with pytest.raises(ValueError, match=r"device must be one of \['cpu'\] or None \(Warp sees no CUDA device\)"):
        resolve_device(device)
    assert main(["demo", "--device", device, "--no-progress"]) == 2
    out, err = capfd.readouterr()
    assert "CUDA error" not in out + err and f"got {device!r}" in err


def test_num_agents_without_the_race_env_is_refused(capsys):
    """--num-agents sets the race's cars: with another env it would be ignored, so it is refused."""
    from trackgen_env.__main__ import main

    assert main(["demo", "--num-agents", "3", "--steps", "1", "--device", "cpu"]) == 2
    assert "--num-agents sets the cars per course of --env race" in capsys.readouterr().err
