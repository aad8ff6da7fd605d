"""The learning-curve benchmark (training.curve) and the learner's behaviour statistics."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from okgin_env.rules.actions import DRAW_STOCK, KNOCK_BASE, TAKE_DISCARD  # noqa: E402
from training.curve import CurveConfig, cli, milestones_of, run_curve  # noqa: E402
from training.features import GIN_COLUMN, NUM_ACTION_FEATURES  # noqa: E402
from training.diagnostics import behaviour  # noqa: E402
from training.train import Hyperparameters, Rollout, parse_args, run  # noqa: E402

pytestmark = pytest.mark.long


def test_the_curve_trains_measures_each_milestone_plots_and_resumes(tmp_path: Path, capsys):
    config = CurveConfig(milestones="0.001 0.002", hands=20, num_tables=4, bc_updates=1, device="cpu")
    result = run_curve(config, tmp_path / "curve")
    rows = list(csv.DictReader(open(tmp_path / "curve" / "curve.csv")))
    assert [int(row["decisions"]) for row in rows] == [1024, 2048]  # whole updates of 4 tables x 64 steps
    for row in rows:
        assert int(row["hands"]) == 20 and 0 <= int(row["hands_won"]) <= 20
        assert float(row["ci_low"]) <= float(row["win_rate"]) <= float(row["ci_high"])
        assert float(row["train_wall_s"]) > 0 and (tmp_path / "curve" / row["policy"]).is_file()
    assert (tmp_path / "curve" / "curve.png").stat().st_size > 0 and result["stopped_by"] is None
    assert "warm start: 1 updates imitating simple" in capsys.readouterr().out
    # Extending the milestones resumes: the measured rows stay, training continues from last.pt.
    extended = CurveConfig(milestones="0.001 0.002 0.003", hands=20, num_tables=4, bc_updates=1, device="cpu")
    run_curve(extended, tmp_path / "curve", resume=True)
    again = list(csv.DictReader(open(tmp_path / "curve" / "curve.csv")))
    assert again[:2] == rows and int(again[2]["decisions"]) == 3072
    # Without --resume an existing curve is refused, with one line and exit 2.
    assert cli(["--run-dir", str(tmp_path / "curve"), "--milestones", "0.001"]) == 2
    assert "--resume" in capsys.readouterr().err


def test_minutes_end_the_curve_with_the_policy_reached_measured_as_its_last_row(tmp_path: Path, capsys):
    config = CurveConfig(milestones="0.001 1", hands=20, num_tables=4, bc_updates=1, device="cpu", minutes=0.05)
    run_curve(config, tmp_path / "curve")
    rows = list(csv.DictReader(open(tmp_path / "curve" / "curve.csv")))
    # The first milestone, unless the 3 seconds ran out before it; then the policy reached, short of 1M.
    assert int(rows[0]["decisions"]) <= 1024 and int(rows[-1]["decisions"]) < 1_000_000 and len(rows) <= 2
    assert (tmp_path / "curve" / rows[-1]["policy"]).is_file()
    assert "--minutes 0.05 reached before the " in capsys.readouterr().out
    run_curve(config, tmp_path / "curve", resume=True)  # out of time already: nothing trains, nothing is re-measured
    assert list(csv.DictReader(open(tmp_path / "curve" / "curve.csv"))) == rows


def test_a_resume_with_other_measurement_settings_is_refused_and_a_refused_start_writes_nothing(tmp_path: Path, capsys):
    """Rows of one curve come from one measurement: a resume with other ``--hands`` or
    ``--eval-seed`` is refused by name (``--milestones``, ``--minutes`` and ``--workers`` may
    change). A start that fails its checks (here ``--device cuda`` where torch has none, or a
    milestone under one decision) writes no ``curve.csv`` that would then refuse the corrected command."""
    root = tmp_path / "curve"
    if not torch.cuda.is_available():
        assert cli(["--run-dir", str(root), "--milestones", "0.001", "--device", "cuda"]) == 2
        assert "--device cuda" in capsys.readouterr().err and not root.exists()
    assert cli(["--run-dir", str(root), "--milestones", "0.0000001"]) == 2
    assert "--milestones" in capsys.readouterr().err and not root.exists()
    config = CurveConfig(milestones="0.001", hands=4, num_tables=4, bc_updates=0, device="cpu")
    run_curve(config, root)
    with pytest.raises(ValueError, match="eval_seed: 900001 -> 5; hands: 4 -> 6"):
        run_curve(dataclasses.replace(config, hands=6, eval_seed=5, milestones="0.001 0.002"), root, resume=True)
    assert len(list(csv.DictReader(open(root / "curve.csv")))) == 1
    with pytest.raises(ValueError, match="hyper.learning_rate: 0.0003 -> 0.0001"):
        run_curve(dataclasses.replace(config, milestones="0.001 0.002", hyper=Hyperparameters(learning_rate=1e-4)),
                  root, resume=True)
    run_curve(dataclasses.replace(config, milestones="0.001 0.002", workers=2), root, resume=True)
    assert [int(row["hands"]) for row in csv.DictReader(open(root / "curve.csv"))] == [4, 4]


def test_a_curve_trains_with_the_hyperparameters_it_is_given(tmp_path: Path):
    """PPO's constants come from Python, as training.train's (``CurveConfig.hyper``)."""
    import json

    hyper = Hyperparameters(learning_rate=1e-4, final_learning_rate_fraction=0.5)
    run_curve(CurveConfig(milestones="0.001", hands=4, num_tables=4, device="cpu", hyper=hyper), tmp_path / "curve")
    recorded = json.loads((tmp_path / "curve" / "train" / "config.json").read_text())["config"]["hyper"]
    assert recorded["learning_rate"] == 1e-4 and recorded["final_learning_rate_fraction"] == 0.5
    from training.curve import COMMAND

    assert "--hyper" not in COMMAND.parser().format_help()  # (not a flag: from Python only)


@pytest.mark.parametrize("milestones", ["", "1 0.5", "x", "0", "1 1", "0.0000001", "nan"])
def test_bad_milestones_are_refused_with_one_line(milestones: str, tmp_path: Path, capsys):
    with pytest.raises(ValueError):
        milestones_of(CurveConfig(milestones=milestones))
    assert cli(["--run-dir", str(tmp_path / "c"), "--milestones", milestones]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_behaviour_counts_knocks_gins_hands_and_upcards_taken():
    rollout = Rollout.allocate(2, 2, observation_size=8)
    rollout.legal[..., :2] = True
    rollout.action_ids[0, 0, :2] = torch.tensor([DRAW_STOCK, TAKE_DISCARD])  # took the upcard
    rollout.actions[0, 0] = 1
    rollout.action_ids[0, 1, :2] = torch.tensor([DRAW_STOCK, TAKE_DISCARD])  # drew from the stock
    rollout.action_ids[1, 0, :2] = torch.tensor([KNOCK_BASE + 5, KNOCK_BASE + 6])  # a gin knock
    rollout.action_features[1, 0, 1, GIN_COLUMN] = 1.0
    rollout.actions[1, 0] = 1
    rollout.action_ids[1, 1, :2] = torch.tensor([KNOCK_BASE + 5, KNOCK_BASE + 6])  # a knock, not gin
    rollout.action_features[1, 1, 1, GIN_COLUMN] = 1.0  # (the slot not chosen)
    rollout.round_ends[1] = 1.0
    rollout.rewards[1] = torch.tensor([1.0, -1.0])
    rollout.rounds = 2
    assert rollout.action_features.shape[-1] == NUM_ACTION_FEATURES
    assert behaviour(rollout) == {"hands_won": 0.5, "knock_rate": 1.0, "gin_rate": 0.5, "upcard_take_rate": 0.5}


def test_training_says_its_engine_and_rounds_the_budget_up_to_whole_updates(tmp_path: Path, capsys):
    hyper = Hyperparameters(rollout_length=8, bc_epochs=1, ppo_epochs=1, minibatch_size=32, eval_max_rounds=2)
    config, _ = parse_args(["--num-tables", "4", "--bc-updates", "0", "--total-decisions", "40", "--eval-matches", "2",
                            "--device", "cpu"])
    summary = run(dataclasses.replace(config, hyper=hyper), tmp_path / "r", progress_bar=False)
    out = capsys.readouterr().out
    assert "training on the tensor engine (okgin_env.tensor) on cpu, torch 1 thread(s)" in out
    assert "--total-decisions 40 runs to 64, whole updates" in out  # updates of 4 tables x 8 decisions
    assert summary["decisions"] == 64


def test_the_peer_environment_check_says_in_one_line_what_it_needs(tmp_path: Path):
    """benchmarks/peer_env_check.py plays the JAX peer's own env: without a clone of the peer (or
    without jax) it exits 2 with one line naming what is missing, before importing anything heavy."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "benchmarks/peer_env_check.py", "--peer-dir", str(tmp_path)],
                          cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "ppo_gin_rummy_v3_fused.py" in done.stderr and str(tmp_path) in done.stderr
    bad = subprocess.run([sys.executable, "benchmarks/peer_env_check.py", "--peer-dir", str(tmp_path), "--envs", "0"],
                         cwd=root, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "--envs" in bad.stderr.splitlines()[-1]


@pytest.mark.parametrize("flags, named", [(["--device", "meta"], "--device"), (["--device", "mps"], "--device"),
                                          (["--seconds", "nan"], "--seconds"), (["--seconds", "inf"], "--seconds")])
def test_bench_tensor_refuses_a_device_or_duration_it_cannot_run_with_one_line(flags, named):
    """A device the tensor engine does not run on, or cannot use here, and a duration that is no
    finite number: exit 2 with one line (they were tracebacks, a division by zero, or a run that never ended)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "benchmarks/bench_tensor.py", "--envs", "8", "--batch-envs", "8", *flags],
                          cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    last = done.stderr.splitlines()[-1]
    assert last.startswith("bench_tensor.py: error: " + named) and len(last) < 600


def test_bench_tensor_says_in_one_line_when_the_tables_do_not_fit_in_memory():
    """``--envs 1000000000000`` was torch's allocation traceback (exit 1)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "benchmarks/bench_tensor.py", "--envs", str(10**12), "--seconds", "0.1"],
                          cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("bench_tensor.py: error: tensor_env: device=cpu envs=1000000000000: the tables do "
                                  "not fit in memory")


def test_the_device_rows_script_refuses_a_device_before_writing_anything(tmp_path):
    """benchmarks/device_rows.sh on a machine without the device: exit 2 in one line, and no output
    folder or training folder left behind (it wrote device.txt and bench_tensor.txt, then failed)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(["bash", "benchmarks/device_rows.sh", str(tmp_path / "rows")], cwd=root, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHON": sys.executable, "DEVICE": "nonesuch",
                                                       "TRAIN_DIR": str(tmp_path / "train")})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "DEVICE=nonesuch" in done.stderr
    assert sorted(os.listdir(tmp_path)) == []


def test_bench_tensor_refuses_a_network_it_would_not_use():
    """``bench_tensor.py --network`` picks the learner of ``--rollout`` and ``--ppo``: alone (the
    engine rows use no network) it is refused, exit 2, rather than silently ignored."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "benchmarks/bench_tensor.py", "--network", "mlp"],
                          cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert "--network" in done.stderr.splitlines()[-1] and "--rollout" in done.stderr.splitlines()[-1]


def test_sigterm_during_a_measurement_stops_the_curve_with_143_and_the_resume_command(tmp_path: Path, monkeypatch, capsys):
    """The measurement runs outside the PPO loop's own signal handling: SIGTERM there stops the
    curve as Ctrl-C does (exit 143, the command that continues it), no traceback."""
    import os
    import signal

    import training.curve as curve

    def terminated(*_args, **_kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the measurement")

    def unhandled(*_args):  # what a SIGTERM meets if the command does not take it: a clean test failure
        raise RuntimeError("SIGTERM reached the handler outside the command")

    previous = signal.signal(signal.SIGTERM, unhandled)
    try:
        monkeypatch.setattr(curve, "measure", terminated)
        argv = ["--milestones", "0.001", "--hands", "20", "--num-tables", "4", "--bc-updates", "1", "--device", "cpu",
                "--run-dir", str(tmp_path / "c")]
        assert curve.cli(argv) == 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert f"stopped by SIGTERM; continue with: python -m training.curve {' '.join(argv)} --resume" in err
    assert "Traceback" not in err and not curve.read_rows(tmp_path / "c" / "curve.csv")  # nothing measured
