"""Training smoke test, checkpoints and their errors, the shipped policy."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import okgin_env  # noqa: E402
from training.policy import CheckpointError, load_checkpoint, load_policy, save_checkpoint  # noqa: E402
from training.train import Hyperparameters, TrainConfig, cli, parse_args, run  # noqa: E402

pytestmark = pytest.mark.long  # one of the default suite's long modules: -m "not slow and not long" skips it

CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"
SHIPPED = CHECKPOINTS / "okgin_classic.pt"
STAGE_ONE = CHECKPOINTS / "okgin_classic_ppo.pt"  # the PPO policy that training.improve starts from
# The tests' runs train the recipes' network (mlp); --network suits, the default, has its own test.
TINY = ["--num-tables", "8", "--bc-updates", "1", "--eval-every", "1000", "--eval-matches", "2", "--network", "mlp"]
TINY_HYPER = Hyperparameters(rollout_length=8, bc_epochs=1, ppo_epochs=1, minibatch_size=32, eval_max_rounds=2)


def train_main(argv: list[str], hyper: Hyperparameters = TINY_HYPER) -> dict:
    """``python -m training.train ARGV`` with tiny hyperparameters (8 decisions per table and update)."""
    import dataclasses

    config, options = parse_args(argv)
    return run(dataclasses.replace(config, hyper=hyper), options.run_dir, resume=options.resume,
               progress_bar=False)


def play_short_match(policy, seed: int = 0) -> int:
    """Policy (seat 0) against simple in a match to 30; every action must be legal. Returns decisions."""
    from okgin_env.bots import make_bot

    env = okgin_env.env(target_score=30)
    env.reset(seed=seed)
    opponent = make_bot("simple", seed=seed)
    decisions = 0
    for agent in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        actor = policy if agent == "player_0" else opponent
        action = actor.act(observation)
        assert observation["action_mask"][action] == 1
        env.step(action)
        decisions += 1
    return decisions


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("run")
    train_main([*TINY, "--total-decisions", "256", "--run-dir", str(run_dir), "--seed", "3"])
    return run_dir


def test_smoke_training_writes_a_checkpoint_that_plays_legal_moves(trained_run: Path):
    assert (trained_run / "last.pt").is_file()
    assert (trained_run / "progress.csv").read_text().count("\n") >= 3
    policy = load_policy(trained_run / "last.pt")
    assert play_short_match(policy) > 0


def test_resume_continues_from_the_last_checkpoint(trained_run: Path, tmp_path: Path):
    run_dir = tmp_path / "resumed"
    run_dir.mkdir()
    (run_dir / "last.pt").write_bytes((trained_run / "last.pt").read_bytes())
    train_main([*TINY, "--total-decisions", "384", "--run-dir", str(run_dir), "--seed", "3", "--resume"])
    meta = load_checkpoint(run_dir / "last.pt")["metadata"]
    assert meta["progress"]["decisions"] == 384  # 256 done before + one more update of 128


def test_the_tensor_engine_trains_reproducibly_and_its_checkpoint_plays(tmp_path: Path):
    weights = []
    for name in ("a", "b"):
        summary = train_main([*TINY, "--device", "cpu", "--total-decisions", "256", "--run-dir", str(tmp_path / name),
                              "--seed", "7", "--eval-every", "1"])
        weights.append(load_checkpoint(tmp_path / name / "last.pt")["model"])
    for key in weights[0]:
        assert torch.equal(weights[0][key], weights[1][key]), key
    assert summary["decisions"] == 256
    assert play_short_match(load_policy(tmp_path / "a" / "best.pt")) > 0


def test_same_seed_gives_the_same_first_updates(tmp_path: Path):
    weights = []
    for name in ("a", "b"):
        train_main([*TINY, "--total-decisions", "128", "--run-dir", str(tmp_path / name), "--seed", "7"])
        weights.append(load_checkpoint(tmp_path / name / "last.pt")["model"])
    for key in weights[0]:
        assert torch.equal(weights[0][key], weights[1][key]), key


def test_checkpoint_errors_name_the_file_and_the_problem(trained_run: Path, tmp_path: Path):
    missing = tmp_path / "nope.pt"
    with pytest.raises(CheckpointError, match="nope.pt does not exist"):
        load_policy(missing)
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="corrupt.pt cannot be read"):
        load_policy(corrupt)
    payload = load_checkpoint(trained_run / "last.pt")
    from training.policy import build_model

    model = build_model(payload["metadata"])
    model.load_state_dict(payload["model"])
    old_layout = tmp_path / "old_layout.pt"
    save_checkpoint(old_layout, model, {**payload["metadata"]})
    raw = torch.load(old_layout, weights_only=True)
    raw["metadata"]["observation_version"] = 0
    torch.save(raw, old_layout)
    with pytest.raises(CheckpointError, match="old_layout.pt uses observation layout version 0"):
        load_policy(old_layout)
    with pytest.raises(CheckpointError, match="rules='classic', not 'penalty'"):
        load_checkpoint(trained_run / "last.pt", rules="penalty")


@pytest.mark.parametrize("path", [SHIPPED, STAGE_ONE], ids=["shipped", "stage_one"])
def test_shipped_checkpoints_load_and_play_legal_moves(path: Path):
    assert path.is_file(), f"the shipped policy {path} is missing"
    policy = load_policy(path)
    assert play_short_match(policy, seed=1) > 0
    assert load_checkpoint(path)["metadata"]["rules"] == "classic"


def test_the_shipped_standard_policy_plays_standard_gin():
    from okgin_env.evaluate import evaluate

    path = CHECKPOINTS / "okgin_standard.pt"
    assert load_checkpoint(path)["metadata"]["rules"] == "standard"
    with pytest.raises(CheckpointError, match="rules='standard', not 'classic'"):
        load_policy(path)  # a classic table is not what it was made for
    pair = evaluate({"standard": str(path), "random": "random"}, matches=2, rules="standard", seed=5,
                    progress=False).pair("standard", "random")
    assert pair.games == 2 and pair.wins_a == 2


def test_policy_rejects_an_observation_of_another_layout(trained_run: Path):
    policy = load_policy(trained_run / "last.pt")
    with pytest.raises(ValueError, match="2-player layout"):
        policy.act({"observation": np.zeros(10, dtype=np.float32), "action_mask": np.ones(107, dtype=np.int8)})


# ----------------------------------------------------------------------------- the training loop's parts


def test_advantages_are_gae_within_a_round_with_gamma_one():
    from training.diagnostics import explained_variance
    from training.train import Rollout, compute_advantages

    rollout = Rollout.allocate(steps=3, tables=1, observation_size=4)
    rollout.rewards[:, 0] = torch.tensor([0.0, 1.0, 0.0])
    rollout.round_ends[:, 0] = torch.tensor([0.0, 1.0, 0.0])  # a round ends at step 1; step 2 starts the next
    rollout.values[:, 0] = torch.tensor([0.5, 0.2, 0.1])
    advantages, returns = compute_advantages(rollout, next_value=torch.tensor([0.3]), gae_lambda=1.0)
    # lambda = gamma = 1: the return is the round's reward; the open round bootstraps from the next value.
    assert torch.allclose(advantages[:, 0], torch.tensor([0.5, 0.8, 0.2]))
    assert torch.allclose(returns[:, 0], torch.tensor([1.0, 1.0, 0.3]))
    half, _ = compute_advantages(rollout, next_value=torch.tensor([0.3]), gae_lambda=0.5)
    assert half[0, 0] == pytest.approx(-0.3 + 0.5 * 0.8)
    target = torch.tensor([1.0, 2.0, 3.0])
    assert explained_variance(target, target) == 1.0
    assert explained_variance(torch.full((3,), 2.0), target) == pytest.approx(0.0)
    assert np.isnan(explained_variance(target, torch.ones(3)))


def test_the_network_scores_only_legal_slots_as_scoring_every_slot_and_masking_would():
    """The packed scorer (legal slots only) against the dense computation it replaced: same
    logits and gradients up to float rounding, -inf on the padding, rows of any legal count."""
    from training.features import MAX_LEGAL_ACTIONS, NUM_ACTION_FEATURES, NUM_CONTEXT_FEATURES
    from training.model import PolicyValueNet

    torch.manual_seed(3)
    model = PolicyValueNet(observation_size=40, hidden=32)
    batch = 9
    counts = torch.tensor([1, 2, 24, 7, 11, 2, 3, 13, 5])
    legal = torch.arange(MAX_LEGAL_ACTIONS).unsqueeze(0) < counts.unsqueeze(1)
    legal[3] = legal[3].flip(0)  # legal slots need not be a prefix
    inputs = (torch.randn(batch, 40), torch.randn(batch, NUM_CONTEXT_FEATURES),
              torch.randn(batch, MAX_LEGAL_ACTIONS, NUM_ACTION_FEATURES),
              torch.randint(0, model.action_embedding.num_embeddings, (batch, MAX_LEGAL_ACTIONS)), legal)

    def dense(observation, context, features, ids, legal):
        embedded = model.encoder(torch.cat([observation, context], dim=-1))
        per_action = model.scorer_action(torch.cat([features, model.action_embedding(ids)], dim=-1))
        scores = model.scorer_out(model.scorer_context(embedded).unsqueeze(1) + per_action).squeeze(-1)
        return scores.masked_fill(~legal, float("-inf")), model.value_head(embedded).squeeze(-1)

    def run(forward):
        model.zero_grad()
        logits, value = forward(*inputs)
        (torch.log_softmax(logits, dim=-1)[legal].sum() + value.sum()).backward()
        return logits.detach(), value.detach(), [p.grad.clone() for p in model.parameters()]

    packed_logits, packed_value, packed_grads = run(model)
    dense_logits, dense_value, dense_grads = run(dense)
    assert torch.isneginf(packed_logits[~legal]).all()
    assert torch.allclose(packed_logits[legal], dense_logits[legal], atol=1e-6)
    assert torch.equal(packed_value, dense_value)
    for packed_grad, dense_grad in zip(packed_grads, dense_grads):
        assert torch.allclose(packed_grad, dense_grad, atol=1e-5)


def test_rollout_buffers_are_preallocated_steps_by_tables():
    from training.features import MAX_LEGAL_ACTIONS, NUM_ACTION_FEATURES
    from training.train import Rollout

    rollout = Rollout.allocate(steps=5, tables=3, observation_size=378)
    assert rollout.observations.shape == (5, 3, 378)
    assert rollout.action_features.shape == (5, 3, MAX_LEGAL_ACTIONS, NUM_ACTION_FEATURES)
    assert rollout.actions.shape == rollout.values.shape == rollout.round_ends.shape == (5, 3)
    assert rollout.flat("legal").shape == (15, MAX_LEGAL_ACTIONS)


@pytest.mark.parametrize("engine", ["host", "tensor"])
@pytest.mark.parametrize("imitate", [False, True])
def test_one_collect_rollout_steps_both_engines_tables(engine: str, imitate: bool):
    """``collect_rollout`` over either tables: T decisions per table, each a legal choice (the
    policy's, or the teacher's while imitating), rewards only where rounds ended and the round points
    their unscaled sum; the tables wait at their learners' turns for the bootstrap value."""
    from okgin_env.rules.config import make_config
    from training.host_tables import HostTables, Teacher
    from training.model import PolicyValueNet
    from training.tensor_rollout import TensorTables
    from training.train import Rollout, bootstrap_value, collect_rollout

    rules = make_config("standard")
    if engine == "host":
        tables = HostTables(6, ["simple"] * 6, rules, "round", Teacher("simple", 6, 3, rules))
    else:
        tables = TensorTables(6, rules="standard", episode="round", reward="points")
    tables.reset(seed=3)
    torch.manual_seed(3)
    model = PolicyValueNet(378)
    rounds = 0
    for _ in range(3):
        rollout = Rollout.allocate(10, 6, 378)
        collect_rollout(model, tables, rollout, 25.0, imitate=imitate)
        assert tables.learner_to_act().all() and bootstrap_value(model, tables).shape == (6,)
        assert rollout.legal.gather(2, rollout.actions[:, :, None]).all()
        ends = rollout.round_ends.bool()
        assert not rollout.rewards[~ends].any() and rollout.rounds == int(ends.sum())
        assert rollout.round_points == pytest.approx(float(rollout.rewards[ends].double().sum()) * 25.0)
        rounds += rollout.rounds
    assert rounds >= 2


def test_training_prints_where_its_outputs_go_and_a_summary(tmp_path: Path, capsys):
    run_dir = tmp_path / "printed"
    # PPO from the start (no imitation): the first update is evaluated, so a win rate shows at once.
    train_main([*TINY, "--bc-updates", "0", "--total-decisions", "64", "--run-dir", str(run_dir), "--seed", "2"])
    out = capsys.readouterr().out
    for text in (f"run directory: {run_dir}", str(run_dir / "last.pt"), str(run_dir / "progress.csv"),
                 f"tensorboard --logdir {run_dir / 'tensorboard'}", str(run_dir / "learning_curve.png"),
                 f"python -m training.plot {run_dir}", "finished: 1 updates, 64 decisions"):
        assert text in out, text
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["updates"] == 1 and summary["decisions"] == 64 and summary["stopped_by"] is None
    train_main([*TINY, "--bc-updates", "0", "--total-decisions", "128", "--run-dir", str(run_dir), "--seed", "2", "--resume"])
    out = capsys.readouterr().out
    assert f"resumed from {run_dir / 'last.pt'}: update 1, 64 decisions, best win rate vs simple " in out
    assert "finished: 2 updates, 128 decisions" in out
    rows = (run_dir / "progress.csv").read_text().splitlines()[1:]
    assert [row.split(",")[3] for row in rows if ",evaluation," not in row] == ["ppo", "ppo"]  # one row per update


def test_bad_training_arguments_exit_2_with_a_message_before_anything_is_written(tmp_path: Path, capsys):
    from training.train import cli

    for flag, value, message in (("--num-tables", "0", "--num-tables must be at least 1"),
                                 ("--num-players", "5", "--num-players must be at least 0 and at most 4"),
                                 ("--seed", "-1", "--seed must be at least 0"),
                                 ("--rules", "bogus", "--rules 'bogus'; allowed: classic, standard, penalty"),
                                 ("--eval-matches", "0", "--eval-matches must be at least 1")):
        assert cli([flag, value, "--run-dir", str(tmp_path / "never")]) == 2
        assert message in capsys.readouterr().err
        assert not (tmp_path / "never").exists()
    with pytest.raises(ValueError, match=r"hyper.gae_lambda must be at least 0 and at most 1, got 1.5"):
        run(TrainConfig(hyper=Hyperparameters(gae_lambda=1.5)), tmp_path / "never")
    with pytest.raises(ValueError, match="hyper.learning_rate must be a finite number, got nan"):
        run(TrainConfig(hyper=Hyperparameters(learning_rate=float("nan"))), tmp_path / "never")
    assert not (tmp_path / "never").exists()
    assert cli([*TINY, "--run-dir", str(tmp_path / "x"), "--init-from", str(tmp_path / "missing.pt")]) == 2
    assert "missing.pt does not exist" in capsys.readouterr().err


@pytest.fixture(scope="module")
def evaluated_run(tmp_path_factory) -> Path:
    """Two PPO updates after one of imitation, evaluated (4 mirrored matches) in the second process."""
    run_dir = tmp_path_factory.mktemp("evaluated")
    train_main([*TINY, "--total-decisions", "192", "--run-dir", str(run_dir), "--seed", "3",
                "--eval-every", "1", "--eval-matches", "4"])
    return run_dir


def test_evaluations_keep_the_best_checkpoint_and_reach_last_pt_csv_and_tensorboard(evaluated_run: Path):
    summary = json.loads((evaluated_run / "summary.json").read_text())
    best = summary["best_win_rate_vs_simple"]
    assert 0 <= best <= 1 and summary["last_evaluation"]["matches_vs_simple"] == 4
    assert summary["last_evaluation"]["matches_vs_random"] == 10
    # An evaluation that finished after the last update still reaches last.pt (for --resume).
    assert load_checkpoint(evaluated_run / "last.pt")["metadata"]["progress"]["best_win_rate"] == best
    assert load_checkpoint(evaluated_run / "best.pt")["metadata"]["evaluation"]["win_rate_vs_simple"] == best
    assert (evaluated_run / "learning_curve.png").is_file()
    assert not list(evaluated_run.glob("candidate_*.pt"))
    import csv

    rows = list(csv.DictReader(open(evaluated_run / "progress.csv")))
    # The last evaluations came after the last update: update 2's (unless it finished during update
    # 3) and the final policy's (update 3 was due, but the second process was busy with update 2).
    assert [row["phase"] for row in rows][:3] == ["bc", "ppo", "ppo"]
    assert [row["phase"] for row in rows][3:] in (["evaluation"], ["evaluation", "evaluation"])
    assert float(rows[-1]["win_rate_vs_simple"]) == summary["last_evaluation"]["win_rate_vs_simple"]
    for key in ("approx_kl", "clipfrac", "explained_variance", "policy_loss", "value_loss", "entropy"):
        assert all(np.isfinite(float(row[key])) for row in rows[:3]), key
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(evaluated_run / "tensorboard")).Reload()
    tags = set(events.Tags()["scalars"])
    for tag in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance"):
        assert f"losses/{tag}" in tags, tag
    assert {"charts/win_rate_vs_simple", "charts/decisions_per_second", "charts/learning_rate"} <= tags


def test_the_learning_rate_falls_linearly_over_the_budget_to_its_final_fraction(tmp_path: Path):
    """One imitation update, then three PPO updates of 64 decisions in a budget of 256: PPO's rate
    is the base rate times 1 - (1 - fraction) x the share of the budget spent before the update
    (a quarter, a half, three quarters), logged in progress.csv; a fraction of 1 keeps it constant."""
    import csv

    from training.train import ppo_learning_rate

    hyper = dataclasses.replace(TINY_HYPER, learning_rate=1e-3, final_learning_rate_fraction=0.2)
    assert ppo_learning_rate(hyper, 0.0) == 1e-3 and ppo_learning_rate(hyper, 1.0) == pytest.approx(2e-4)
    assert ppo_learning_rate(Hyperparameters(), 0.7) == Hyperparameters().learning_rate
    train_main([*TINY, "--total-decisions", "256", "--run-dir", str(tmp_path / "run"), "--seed", "3"], hyper)
    rows = [row for row in csv.DictReader(open(tmp_path / "run" / "progress.csv")) if row["phase"] != "evaluation"]
    assert [row["phase"] for row in rows] == ["bc", "ppo", "ppo", "ppo"]
    assert float(rows[0]["learning_rate"]) == hyper.bc_learning_rate
    assert [float(row["learning_rate"]) for row in rows[1:]] == pytest.approx([1e-3 * (1 - 0.8 * used)
                                                                              for used in (0.25, 0.5, 0.75)])
    with pytest.raises(ValueError, match="hyper.final_learning_rate_fraction must be"):
        run(TrainConfig(hyper=Hyperparameters(final_learning_rate_fraction=1.5)), tmp_path / "never")


def test_a_run_ending_between_evaluations_evaluates_its_final_policy(tmp_path: Path):
    """Update 2 (the first after imitation) is evaluated and update 3 is not due (``--eval-every
    1000``): the run still evaluates the policy it ends with, so that its summary and ``best.pt``
    are not those of an older policy. A resume that trains nothing evaluates nothing more."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = tmp_path / "run"
    summary = train_main([*TINY, "--total-decisions", "192", "--run-dir", str(run_dir), "--seed", "3"])
    steps = [event.step for event in EventAccumulator(str(run_dir / "tensorboard")).Reload().Scalars("charts/win_rate_vs_simple")]
    assert steps == [128, 192]  # decisions when each evaluated policy was saved: the first PPO update's, the final's
    assert summary["updates"] == 3 and summary["last_evaluation"]["matches_vs_simple"] == 2
    rows = (run_dir / "progress.csv").read_text().splitlines()
    again = train_main([*TINY, "--total-decisions", "192", "--run-dir", str(run_dir), "--seed", "3", "--resume"])
    assert (run_dir / "progress.csv").read_text().splitlines() == rows and again["updates"] == 3


def test_plot_redraws_the_learning_curve_and_explains_what_is_missing(evaluated_run: Path, trained_run: Path,
                                                                       tmp_path: Path, capsys):
    from training.plot import main as plot_main

    assert plot_main([str(evaluated_run), "--out", str(tmp_path / "curve.png")]) == 0
    assert (tmp_path / "curve.png").stat().st_size > 0
    unevaluated = tmp_path / "unevaluated"  # a run whose evaluations never finished
    unevaluated.mkdir()
    rows = (trained_run / "progress.csv").read_text().splitlines()
    header = rows[0].split(",")
    blank = [",".join("" if header[i].startswith(("win_rate", "points_per_round_vs")) else value
                      for i, value in enumerate(row.split(","))) for row in rows[1:] if ",evaluation," not in row]
    (unevaluated / "progress.csv").write_text("\n".join([rows[0], *blank]) + "\n")
    assert plot_main([str(unevaluated)]) == 1
    assert "no evaluation" in capsys.readouterr().err
    assert plot_main([str(tmp_path / "nowhere")]) == 2
    assert "progress.csv does not exist" in capsys.readouterr().err
    # A damaged progress.csv or an --out it cannot write: one line, exit 2 (they were tracebacks), nothing written.
    for out in ("curve", str(tmp_path / "missing" / "c.png"), str(tmp_path / "c.txt"), str(tmp_path)):
        assert plot_main([str(evaluated_run), "--out", out]) == 2
        assert "give a file ending in .png in a folder that exists" in capsys.readouterr().err
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "progress.csv").write_text("update,elapsed_s,win_rate_vs_simple,win_rate_vs_random\n1,abc,0.5,0.9\n")
    assert plot_main([str(damaged)]) == 2
    assert "progress.csv line 2: expected numbers in elapsed_s" in capsys.readouterr().err
    (damaged / "progress.csv").write_bytes(b"\xff\xfe\x00")
    assert plot_main([str(damaged)]) == 2
    assert "is not a readable CSV file" in capsys.readouterr().err
    assert not (damaged / "learning_curve.png").exists()


def test_the_evaluation_is_okgin_env_evaluate_over_mirrored_matches(evaluated_run: Path):
    from okgin_env.evaluate import evaluate
    from training.run import evaluate_checkpoint

    from okgin_env.rules.config import make_config

    config = make_config("classic")
    result = evaluate_checkpoint(str(evaluated_run / "best.pt"), 4, 3, config, max_rounds=2)
    pair = evaluate({"policy": str(evaluated_run / "best.pt"), "simple": "simple"}, matches=4, seed=3,
                    progress=False, max_rounds=2).pairs[0]
    assert result["win_rate_vs_simple"] == pair.win_rate_a and result["matches_vs_simple"] == pair.games == 4
    assert result["points_per_round_vs_simple"] == pair.points_per_round_a
    assert result["draws_vs_simple"] == pair.draws


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _start_training(run_dir: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "training.train", *TINY, "--total-decisions", "100000000", "--run-dir", str(run_dir),
               "--eval-every", "1", "--eval-matches", "2", *extra]
    return subprocess.Popen(command, cwd=Path(__file__).resolve().parents[1], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(condition, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.time() + seconds
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"training ended early: {process.communicate()}")
        if time.time() > deadline:
            process.kill()
            raise AssertionError("timed out waiting for the training run")
        time.sleep(0.1)


def _rows(run_dir: Path) -> list[dict]:
    import csv

    try:
        return list(csv.DictReader(open(run_dir / "progress.csv")))
    except FileNotFoundError:
        return []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to find child processes")
def test_ctrl_c_stops_cleanly_keeps_last_pt_writes_the_plot_and_says_how_to_resume(tmp_path: Path):
    run_dir = tmp_path / "interrupted"
    process = _start_training(run_dir)
    _wait_for(lambda: any(row["win_rate_vs_simple"] for row in _rows(run_dir)), process)  # one evaluation done
    children = _children(process.pid)
    assert children, "the evaluator process should be running"
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    out, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGINT
    assert "Traceback" not in err and "leaked" not in err, err
    assert "stopped by SIGINT" in err and "--resume" in err and f"--run-dir {run_dir}" in err
    assert "stopped:" in out
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stopped_by"] == "SIGINT"
    meta = load_checkpoint(run_dir / "last.pt")["metadata"]
    assert meta["progress"]["update"] == summary["updates"] == len([r for r in _rows(run_dir) if r["phase"] != "evaluation"])
    assert (run_dir / "learning_curve.png").is_file() and (run_dir / "best.pt").is_file()
    assert not list(run_dir.glob("candidate_*.pt"))
    time.sleep(1)
    assert not [pid for pid in children if _alive(pid)], "a child process outlived the trainer"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc to find child processes")
def test_sigterm_twice_stops_at_once_without_leaks(tmp_path: Path):
    run_dir = tmp_path / "terminated"
    process = _start_training(run_dir, "--bc-updates", "0")
    _wait_for(lambda: len(_rows(run_dir)) >= 1 and list(run_dir.glob("candidate_*.pt")), process)
    children = _children(process.pid)
    process.send_signal(signal.SIGTERM)  # only the trainer, as `kill PID` does
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM
    assert "Traceback" not in err and "leaked" not in err, err
    assert "stopped by SIGTERM" in err and "--resume" in err
    assert json.loads((run_dir / "summary.json").read_text())["stopped_by"] == "SIGTERM"
    load_checkpoint(run_dir / "last.pt")  # intact
    assert not list(run_dir.glob("candidate_*.pt"))
    time.sleep(1)
    assert not [pid for pid in children if _alive(pid)], "a child process outlived the trainer"


def test_init_from_starts_from_the_given_weights_without_imitation(trained_run: Path, tmp_path: Path):
    run_dir = tmp_path / "fine_tune"
    summary = train_main([*TINY, "--total-decisions", "64", "--run-dir", str(run_dir), "--seed", "4",  # one update
                          "--init-from", str(trained_run / "last.pt")])
    assert summary["updates"] == 1
    assert "ppo" in (run_dir / "progress.csv").read_text().splitlines()[1]  # no imitation update


def test_init_from_carries_weights_to_another_preset_with_the_same_seats(trained_run: Path, tmp_path: Path, capsys):
    run_dir = tmp_path / "standard"
    summary = train_main([*TINY, "--total-decisions", "64", "--run-dir", str(run_dir), "--seed", "4",
                          "--rules", "standard", "--init-from", str(trained_run / "last.pt")])
    assert summary["updates"] == 1
    assert "(trained for classic; fine-tuned for standard)" in capsys.readouterr().out
    assert load_checkpoint(run_dir / "last.pt", rules="standard")["metadata"]["rules"] == "standard"
    with pytest.raises(CheckpointError, match="num_players=2, not 3"):  # other seats: another observation
        train_main([*TINY, "--total-decisions", "64", "--run-dir", str(tmp_path / "p3"), "--rules", "penalty",
                    "--num-players", "3", "--init-from", str(trained_run / "last.pt")])


@pytest.mark.parametrize("device", ["", "cpu"])
def test_round_reward_win_pays_the_sign_of_each_rounds_points(device: str, monkeypatch, tmp_path: Path):
    import training.train as train_module

    seen = []
    real = train_module.compute_advantages

    def spy(rollout, next_value, gae_lambda):
        seen.append((rollout.rewards.clone(), rollout.round_ends.clone()))
        return real(rollout, next_value, gae_lambda)

    monkeypatch.setattr(train_module, "compute_advantages", spy)
    device_flags = ["--device", device] if device else []
    train_main([*TINY, "--total-decisions", "640", "--run-dir", str(tmp_path / "w"), "--round-reward", "win",
                "--bc-updates", "0", *device_flags])
    rewards = torch.cat([r.flatten() for r, _ in seen])
    ends = torch.cat([e.flatten() for _, e in seen]).bool()
    assert set(rewards[ends].tolist()) <= {-1.0, 0.0, 1.0} and (rewards[ends] != 0).any()
    assert not rewards[~ends].any()


def test_a_missing_init_from_file_is_refused_before_the_run_folder_is_made(tmp_path: Path, capsys):
    from training.train import cli as train_cli

    assert train_cli(["--init-from", str(tmp_path / "missing.pt"), "--run-dir", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "missing.pt does not exist" in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_init_from_with_another_network_width_is_a_clear_error(trained_run: Path, tmp_path: Path):
    with pytest.raises(ValueError, match="the checkpoint has hidden=192; this run's network has Hyperparameters.hidden=64"):
        train_main([*TINY, "--total-decisions", "128", "--run-dir", str(tmp_path / "x"),
                    "--init-from", str(trained_run / "last.pt")], dataclasses.replace(TINY_HYPER, hidden=64))


@pytest.mark.parametrize("device", ["", "cpu"])
def test_the_suit_equivariant_network_trains_saves_resumes_and_plays(device: str, tmp_path: Path):
    """``--network suits`` (the default; TINY asks for mlp) on either engine: its files say so, a resume continues it,
    ``load_policy`` plays it, and another network's file cannot start it."""
    from training.model import SuitEquivariantNet

    hyper = dataclasses.replace(TINY_HYPER, hidden=48)
    run_dir = tmp_path / "suits"
    device_flags = ["--device", device] if device else []
    args = [*TINY, "--network", "suits", "--rules", "standard", "--episode", "round", "--bc-updates", "1",
            "--run-dir", str(run_dir), *device_flags]
    assert train_main([*args, "--total-decisions", "128"], hyper)["updates"] == 2
    assert load_checkpoint(run_dir / "last.pt", rules="standard")["metadata"]["network"] == "suits"
    assert train_main([*args, "--total-decisions", "192", "--resume"], hyper)["updates"] == 3
    policy = load_policy(run_dir / "last.pt", rules="standard")
    assert isinstance(policy.model, SuitEquivariantNet)
    from okgin_env.evaluate import evaluate
    assert evaluate({"suits": policy, "simple": "simple"}, matches=4, episode="round", rules="standard", seed=1,
                    progress=False).pairs[0].rounds == 4
    with pytest.raises(ValueError, match="the checkpoint's network is 'suits'; this run's is 'mlp': pass --network suits"):
        train_main([*TINY, "--rules", "standard", "--total-decisions", "128", "--run-dir", str(tmp_path / "x"),
                    "--network", "mlp", "--init-from", str(run_dir / "last.pt")], hyper)


# ----------------------------------------------------------------------------- improvement by rollouts


def test_improve_labels_every_legal_action_reproducibly_and_fits_a_playable_policy(trained_run: Path, tmp_path: Path):
    from training.improve import FitSettings, ImproveConfig, centred, run
    from training.labelling import label_decisions

    job = (str(trained_run / "last.pt"), "classic", 5, 12)
    first, second = label_decisions(job), label_decisions(job)  # the arrays come back (the driver saves them)
    assert first.keys() == {"obs", "ctx", "feat", "ids", "legal", "q"}
    for key in first:  # same seed, same labels
        assert np.array_equal(first[key], second[key]), key
    legal, q = first["legal"], first["q"]
    assert legal.shape == (12, 24) and (legal.sum(1) >= 2).all()  # only decisions with a choice
    assert (q[~legal] == 0).all() and np.abs(q[legal]).max() <= 200
    row = torch.tensor([[1.0, 3.0, 8.0]])
    assert torch.allclose(centred(row, torch.tensor([[True, True, False]])), torch.tensor([[-1.0, 1.0, 0.0]]))

    config = ImproveConfig(init_from=str(trained_run / "last.pt"), decisions=24, workers=1, eval_matches=0,
                           fit=FitSettings(epochs=1))
    summary = run(config, tmp_path / "improve", progress_bar=False)
    assert summary["labelled_decisions"] == 24
    assert play_short_match(load_policy(tmp_path / "improve" / "fitted.pt")) > 0
    # A fit on new labels plus another run's.
    again = run(dataclasses.replace(config, seed=2, extra_labels=str(tmp_path / "improve")), tmp_path / "again",
                progress_bar=False)
    assert again["labelled_decisions"] == 48
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no labels_"):
        run(dataclasses.replace(config, extra_labels=str(tmp_path / "empty")), tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_improve_from_a_suit_symmetric_file_writes_one_that_plays_so(trained_run: Path, tmp_path: Path):
    """The start's labels come from its symmetric play; the fitted file dropped the flag and played
    plainly, so its evaluation compared two different players."""
    from training.improve import FitSettings, ImproveConfig, run
    from training.policy import write_checkpoint
    from training.symmetry import SuitSymmetricNet

    payload = load_checkpoint(trained_run / "last.pt")
    start = tmp_path / "symmetric.pt"
    write_checkpoint(start, {**payload, "metadata": {**payload["metadata"], "suit_symmetric": True}})
    config = ImproveConfig(init_from=str(start), decisions=12, workers=1, eval_matches=0, fit=FitSettings(epochs=1))
    run(config, tmp_path / "improve", progress_bar=False)
    assert load_checkpoint(tmp_path / "improve" / "fitted.pt")["metadata"]["suit_symmetric"] is True
    assert isinstance(load_policy(tmp_path / "improve" / "fitted.pt").model, SuitSymmetricNet)
    # A shipped policy by name, as load_policy takes it (its bytes were read from a path of that name).
    named = dataclasses.replace(config, init_from="pretrained:standard-hands", decisions=4)
    run(named, tmp_path / "named", progress_bar=False)
    assert load_checkpoint(tmp_path / "named" / "fitted.pt")["metadata"]["suit_symmetric"] is True


def test_imitation_targets_ignore_the_padding_even_when_every_label_is_negative():
    from training.improve import fit_loss

    class Fixed(torch.nn.Module):
        def forward(self, obs, ctx, feat, ids, legal):
            return torch.tensor([[0.0, 1.0, float("-inf")]]), None

    batch = {"obs": None, "ctx": None, "feat": None, "ids": None,
             "legal": torch.tensor([[True, True, False]]), "q": torch.tensor([[-20.0, -25.0, 0.0]])}
    loss = fit_loss(Fixed(), batch, q_scale=2.0, objective="imitate")
    assert torch.isfinite(loss) and torch.isclose(loss, torch.log1p(torch.exp(torch.tensor(1.0))))


@pytest.mark.parametrize("flag, value", [("--decisions", "0"), ("--workers", "0"), ("--objective", "imitate")])
def test_improve_rejects_bad_arguments_before_doing_anything(tmp_path: Path, flag: str, value: str):
    from training.improve import FitSettings, ImproveConfig, run
    from training.improve import main as improve_main

    with pytest.raises(ValueError, match=flag):
        improve_main([flag, value, "--run-dir", str(tmp_path / "never")])
    for fit, message in (({"q_scale": 0.0}, "fit.q_scale must be above 0"),
                         ({"validation_fraction": 1.5}, "fit.validation_fraction must be above 0 and at most 0.5")):
        with pytest.raises(ValueError, match=message):
            run(ImproveConfig(fit=FitSettings(**fit)), tmp_path / "never")
    assert not (tmp_path / "never").exists()


# ----------------------------------------------------------------------------- distilling a teacher bot


def test_improve_with_a_teacher_labels_its_choice_reproducibly_and_fits_towards_it(trained_run: Path, tmp_path: Path):
    from training.improve import FitSettings, ImproveConfig
    from training.improve import run as improve_run
    from training.labelling import label_with_teacher
    from training.policy import build_model

    job = (str(trained_run / "last.pt"), "classic", "search:rollouts=16", 7, 10)
    first, second = label_with_teacher(job), label_with_teacher(job)
    for key in first:  # same seed, same labels
        assert np.array_equal(first[key], second[key]), key
    legal, q = first["legal"], first["q"]
    assert legal.shape == (10, 24) and (legal.sum(1) >= 2).all()  # only decisions with a choice
    assert (q.sum(1) == 1).all() and (q[~legal] == 0).all()  # one teacher action, a legal one

    run_dir = tmp_path / "distil"
    config = ImproveConfig(init_from=str(trained_run / "last.pt"), teacher="search:rollouts=16", decisions=60,
                           workers=1, eval_matches=0, fit=FitSettings(chunk=30, epochs=30, learning_rate=3e-3))
    summary = improve_run(config, run_dir, progress_bar=False)
    assert summary["labelled_decisions"] == 60 and summary["teacher"] == "search:rollouts=16"
    assert json.loads((run_dir / "summary.json").read_text()) == json.loads(json.dumps(summary, default=str))
    assert summary["labelling_seconds"] >= 0
    assert json.loads((run_dir / "labels.json").read_text())["teacher"] == "search:rollouts=16"
    # Fitting towards the teacher raises the agreement with it on the decisions it was fitted on.
    assert summary["validation_decisions"] == 3
    payload = torch.load(run_dir / "fitted.pt", weights_only=True)
    assert payload["metadata"]["fit_objective"] == "imitate" and payload["metadata"]["improve_args"]["teacher"]
    labels = [np.load(path) for path in sorted(run_dir.glob("labels_*.npz"))]
    data = {k: torch.from_numpy(np.concatenate([part[k] for part in labels])) for k in labels[0].files}
    start = load_checkpoint(trained_run / "last.pt")
    agreement = []
    for weights in (start["model"], payload["model"]):
        model = build_model(start["metadata"])
        model.load_state_dict(weights)
        with torch.no_grad():
            logits, _ = model(data["obs"], data["ctx"], data["feat"], data["ids"], data["legal"])
        agreement.append(float((logits.argmax(-1) == data["q"].argmax(-1)).float().mean()))
    assert agreement[1] > agreement[0] and agreement[1] >= 0.8, agreement
    assert play_short_match(load_policy(run_dir / "fitted.pt")) > 0


@pytest.mark.parametrize("options, message", [
    (["--teacher", "aggressor"], "held-out"), (["--teacher", "search:time_limit=0.05"], "rollouts"),
    (["--teacher", "search:rollouts=-1"], "rollouts"), (["--teacher", "nobody"], "unknown"),
    (["--teacher", "simple", "--objective", "policy"], "--objective, --rollout-player and --extra-labels are for"),
    (["--teacher", "simple", "--rollout-player", "simple"], "leave them at their defaults"),
    (["--teacher", "simple", "--extra-labels", "runs/x"], "--teacher labels each decision with the teacher's move"),
    (["--teacher", "simple", "--decisions", "1"], "--decisions must be at least 2"),
] + ([] if importlib.util.find_spec("ray") else [(["--teacher", "simple"], "ray_address='local' (on a command line: OKGIN_RAY_ADDRESS) needs Ray")]))
def test_improve_with_a_teacher_refuses_bad_arguments_before_writing_anything(trained_run: Path, tmp_path: Path, options,
                                                                               message, capsys, monkeypatch):
    from training.improve import cli as improve_cli

    if "ray_address" in message:  # the cluster's address comes from the environment
        monkeypatch.setenv("OKGIN_RAY_ADDRESS", "local")
    assert improve_cli(["--init-from", str(trained_run / "last.pt"), *options, "--run-dir", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "never").exists()


def play_penalty_match_in_every_seat(policy, num_players: int, seed: int = 0) -> int:
    """``policy`` in each seat in turn against simple, in penalty matches to 40; every action must be legal."""
    from okgin_env.bots import make_bot

    decisions = 0
    for seat in range(num_players):
        env = okgin_env.env(rules="penalty", num_players=num_players, target_score=40)
        env.reset(seed=seed + seat)
        opponent = make_bot("simple", seed=seed, rules="penalty")
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            mine = agent == f"player_{seat}"
            action = (policy if mine else opponent).act(observation)
            assert observation["action_mask"][action] == 1
            env.step(action)
            decisions += mine
    return decisions


@pytest.mark.parametrize("num_players", [3, 4])
def test_penalty_training_with_self_play_smoke(tmp_path: Path, num_players: int):
    # Two updates of imitation then PPO with a quarter of the tables on self-play snapshots.
    run_dir = tmp_path / f"penalty{num_players}"
    train_main([*TINY, "--rules", "penalty", "--num-players", str(num_players), "--opponent-pool", "simple@3 self@1",
                "--total-decisions", "256", "--run-dir", str(run_dir), "--seed", "5"])
    payload = load_checkpoint(run_dir / "last.pt", rules="penalty", num_players=num_players)
    assert payload["metadata"]["num_players"] == num_players
    assert payload["metadata"]["args"]["opponent_pool"] == "simple@3 self@1"
    policy = load_policy(run_dir / "last.pt", rules="penalty", num_players=num_players)
    assert play_penalty_match_in_every_seat(policy, num_players) > 0
    with pytest.raises(CheckpointError, match=f"num_players={num_players}, not 2"):
        load_policy(run_dir / "last.pt", rules="penalty", num_players=2)
    with pytest.raises(CheckpointError, match="rules='penalty', not 'classic'"):
        load_policy(run_dir / "last.pt")


@pytest.mark.parametrize("argv, message", [
    (["--rules", "classic", "--num-players", "3"], "--num-players 3"),
    (["--rules", "penalty", "--num-players", "5"], "--num-players must be at least 0 and at most 4, got 5"),
    (["--opponent-pool", "simple@2 nobody@1"], "unknown player 'nobody'"),
    (["--opponent-pool", "simple=2,self=1"], "write each entry as SPEC@WEIGHT"),
    (["--opponent-pool", "simple@0"], "must be a positive number"),
    (["--opponent-pool", "simple@x"], "not a number"),
    (["--opponent-pool", " "], "is empty"),
    (["--opponent-pool", "simple@1 aggressor@1"], "'aggressor': the held-out bots (aggressor, defender) are for evaluation only"),
    (["--opponent-pool", "defender"], "'defender': the held-out bots"),
    (["--bc-teacher", "aggressor"], "--bc-teacher 'aggressor': the held-out bots"),
    (["--bc-teacher", "nobody"], "unknown player 'nobody'"),
    (["--bc-teacher", "lookahead:hold_for_gin=-1"], "hold_for_gin=-1 is not allowed"),
    (["--bc-teacher", "search:time_limit=0.1"], "a time_limit makes play depend"),
    (["--device", "cpu", "--opponent-pool", "simple@1 self@1"], "the tensor engine does not take --opponent-pool"),
    (["--device", "cpu", "--bc-teacher", "lookahead"], "the tensor engine does not take --bc-teacher 'lookahead'"),
    (["--device", "cpu", "--rules", "penalty"], "the tensor engine does not take --rules penalty"),
    (["--device", "tpu"], "--device 'tpu'"),
])
def test_bad_player_counts_and_pools_exit_2_before_anything_is_written(tmp_path: Path, capsys, argv, message):
    assert cli([*TINY, *argv, "--run-dir", str(tmp_path / "x")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_warm_start_imitates_the_bc_teacher_on_each_tables_observation(tmp_path: Path):
    from okgin_env.bots import LookaheadBot
    from okgin_env.rules.config import make_config
    from okgin_env.vector import VectorGymEnv
    from training.host_tables import Teacher

    config = make_config("penalty", num_players=3)
    tables = VectorGymEnv(4, opponents="simple", learner_seat="alternate", rules="penalty", num_players=3,
                          episode="match", reward="points")
    observations, infos = tables.reset(seed=2)
    teacher = Teacher("lookahead:hold_for_gin=0.1", 4, seed=9, config=config)
    copies = [LookaheadBot(seed=int(np.random.SeedSequence([9, t]).generate_state(1)[0]), hold_for_gin=0.1) for t in range(4)]
    for _ in range(30):
        masks = infos["action_mask"]
        chosen = teacher.actions(tables, observations, masks)
        assert chosen == [bot.act({"observation": o, "action_mask": m}) for bot, o, m in zip(copies, observations, masks)]
        observations, _, _, _, infos = tables.step(np.array(chosen))
    # A run whose warm start imitates lookahead writes a playable checkpoint that names its teacher.
    run_dir = tmp_path / "bc_lookahead"
    train_main([*TINY, "--rules", "penalty", "--num-players", "3", "--bc-teacher", "lookahead", "--outlook-features",
                "--total-decisions", "256", "--run-dir", str(run_dir), "--seed", "5"])
    payload = load_checkpoint(run_dir / "last.pt", rules="penalty", num_players=3)
    assert payload["metadata"]["args"]["bc_teacher"] == "lookahead"
    assert play_penalty_match_in_every_seat(load_policy(run_dir / "last.pt", rules="penalty", num_players=3), 3) > 0


def test_a_run_of_imitation_alone_evaluates_its_final_policy_into_best_pt(tmp_path: Path):
    run_dir = tmp_path / "bc_only"
    summary = train_main([*TINY, "--bc-updates", "2", "--total-decisions", "128", "--eval-matches", "2",
                          "--run-dir", str(run_dir), "--seed", "4"])
    assert summary["updates"] == 2 and summary["files"]["best"] is not None
    assert (run_dir / "best.pt").read_bytes() != b""
    assert load_checkpoint(run_dir / "best.pt")["metadata"]["progress"]["update"] == 2


def test_league_splits_tables_by_weight_and_interleaves_them():
    from training.league import parse_pool, split_tables

    tables = split_tables(parse_pool("simple@3 self@1"), 8)
    assert tables.count("simple") == 6 and tables.count("self") == 2
    assert set(tables[:4]) == {"simple", "self"}  # interleaved: every slice sees both
    assert split_tables(parse_pool("simple"), 5) == ["simple"] * 5
    tables = split_tables(parse_pool("simple@2 self@1 random@1"), 10)
    assert [tables.count(n) for n in ("simple", "self", "random")] in ([5, 3, 2], [5, 2, 3])


def test_snapshot_opponents_play_legal_moves_from_the_learners_weights():
    from okgin_env.bots.random_bot import random_legal_actions
    from okgin_env.vector import VectorGymEnv
    from training.league import SnapshotPool
    from training.policy import build_model

    model = build_model({"observation_size": okgin_env.observation.layout_for(3).size, "hidden": 16})
    tables = VectorGymEnv(4, opponents="simple", rules="penalty", num_players=3, learner_seat="alternate")
    pool = SnapshotPool([1, 3], seed=1, capacity=2, players=2)
    pool.seat(model, 3, tables, [1, 3])
    pool.add(model)
    pool.refresh()
    assert tables.opponents[1] is pool.opponents[0] and tables.opponents[3] is pool.opponents[1]
    assert all(torch.equal(a, b) for a, b in zip(pool.opponents[0].model.state_dict().values(), model.state_dict().values()))
    with torch.no_grad():  # the learner moves on; the snapshot keeps the old weights
        next(model.parameters()).add_(1.0)
    assert not torch.equal(next(pool.opponents[0].model.parameters()), next(model.parameters()))
    _, infos = tables.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(100):  # an illegal opponent move would raise inside step
        _, _, _, _, infos = tables.step(random_legal_actions(infos["action_mask"], rng))


@pytest.mark.parametrize("num_players", [3, 4])
def test_shipped_penalty_checkpoints_load_and_play_legal_moves_in_every_seat(num_players: int):
    path = CHECKPOINTS / f"okgin_penalty_{num_players}p.pt"
    assert path.is_file(), f"the shipped policy {path} is missing"
    policy = load_policy(path, rules="penalty", num_players=num_players)
    assert play_penalty_match_in_every_seat(policy, num_players, seed=11) > 0
    meta = load_checkpoint(path, rules="penalty", num_players=num_players)["metadata"]
    assert (meta["rules"], meta["num_players"]) == ("penalty", num_players)
    # Its starts are kept too, in checkpoints/history/ by the file names the metadata gives (their
    # paths of the time): the first step, then the imitation.
    first_step = load_checkpoint(CHECKPOINTS / "history" / Path(meta["improved_from"]).name, rules="penalty",
                                 num_players=num_players)
    assert meta["improved_from"] == meta["improvement_steps"][0]["file"]
    imitation = CHECKPOINTS / "history" / Path(first_step["metadata"]["improved_from"]).name
    assert imitation.name == f"okgin_penalty_{num_players}p_imitation.pt" and imitation.is_file()
    # A wrong preset or player count is refused.
    with pytest.raises(CheckpointError, match="rules='penalty', not 'classic'"):
        load_policy(path)
    other = 4 if num_players == 3 else 3
    with pytest.raises(CheckpointError, match=f"num_players={num_players}, not {other}"):
        load_policy(path, rules="penalty", num_players=other)


@pytest.mark.parametrize("field, value", [("elapsed", "x"), ("update", float("nan")), ("update", "abc"),
                                          ("decisions", -1e9), ("best_win_rate", 7.0)])
def test_a_damaged_progress_in_last_pt_is_refused_on_resume(trained_run: Path, tmp_path: Path, field, value):
    """Issue 42: ``--resume`` validates the state it continues from like a checkpoint."""
    from training.policy import write_checkpoint

    run_dir = tmp_path / "damaged"
    run_dir.mkdir()
    payload = load_checkpoint(trained_run / "last.pt")
    payload["metadata"]["progress"][field] = value
    write_checkpoint(run_dir / "last.pt", payload)
    with pytest.raises(CheckpointError, match=f"progress {field} is"):
        train_main([*TINY, "--total-decisions", "384", "--run-dir", str(run_dir), "--seed", "3", "--resume"])


@pytest.mark.parametrize("damage", ["shape", "nan"])
def test_a_damaged_optimizer_state_is_refused_on_resume(trained_run: Path, tmp_path: Path, damage):
    from training.policy import write_checkpoint

    run_dir = tmp_path / "damaged"
    run_dir.mkdir()
    payload = load_checkpoint(trained_run / "last.pt")
    state = payload["optimizer"]["state"][0]
    state["exp_avg"] = torch.zeros(3) if damage == "shape" else torch.full_like(state["exp_avg"], float("nan"))
    write_checkpoint(run_dir / "last.pt", payload)
    with pytest.raises(CheckpointError, match="optimizer state does not fit"):
        train_main([*TINY, "--total-decisions", "384", "--run-dir", str(run_dir), "--seed", "3", "--resume"])


def test_a_resume_with_other_settings_than_last_pt_was_trained_with_is_refused(trained_run: Path, tmp_path: Path):
    """The settings recorded in last.pt decide (a later fresh start that failed may have rewritten
    config.json); a budget may grow."""
    run_dir = tmp_path / "other"
    run_dir.mkdir()
    (run_dir / "last.pt").write_bytes((trained_run / "last.pt").read_bytes())
    (run_dir / "config.json").write_bytes((trained_run / "config.json").read_bytes())
    with pytest.raises(ValueError, match="seed: 3 -> 7"):
        train_main([*TINY, "--total-decisions", "384", "--run-dir", str(run_dir), "--seed", "7", "--resume"])
    # A refused resume changes nothing: config.json still holds the run's settings.
    assert (run_dir / "config.json").read_bytes() == (trained_run / "config.json").read_bytes()
    with pytest.raises(ValueError, match="bc_teacher: 'simple' -> 'lookahead'"):
        train_main([*TINY, "--total-decisions", "384", "--run-dir", str(run_dir), "--seed", "3", "--resume",
                    "--bc-teacher", "lookahead"])


def test_a_run_recorded_before_the_network_setting_resumes_as_the_mlp_it_trained(trained_run: Path, tmp_path: Path):
    """Runs started before ``--network`` existed trained the mlp and record no network. A missing
    setting counts as its default, which is now suits: such a resume built a SuitEquivariantNet and
    loading the mlp weights was a RuntimeError traceback. ``setting(absent="mlp")`` says what they ran."""
    from training.manifest import MANIFEST
    from training.policy import write_checkpoint

    run_dir = tmp_path / "old"
    run_dir.mkdir()
    payload = load_checkpoint(trained_run / "last.pt")
    del payload["metadata"]["args"]["network"]
    write_checkpoint(run_dir / "last.pt", payload)
    manifest = json.loads((trained_run / MANIFEST).read_text())
    del manifest["config"]["network"]
    (run_dir / MANIFEST).write_text(json.dumps(manifest))
    untouched = [arg for arg in TINY if arg not in ("--network", "mlp")]
    with pytest.raises(ValueError, match="network: 'mlp' -> 'suits'"):  # today's default: refused by name
        train_main([*untouched, "--total-decisions", "384", "--run-dir", str(run_dir), "--seed", "3", "--resume"])
    train_main([*TINY, "--total-decisions", "384", "--run-dir", str(run_dir), "--seed", "3", "--resume"])
    assert load_checkpoint(run_dir / "last.pt")["metadata"]["progress"]["decisions"] == 384


# ----------------------------------------------------------------------------- exploitability


def test_exploit_trains_a_best_response_and_measures_it_on_fresh_mirrored_deals(tmp_path: Path, capsys):
    import json

    from training.exploit import ExploitConfig, run as exploit

    config = ExploitConfig(policy="simple", decisions=10**6, minutes=0.001, num_tables=8, matches=6, seed=2,
                           hyper=TINY_HYPER)
    report = exploit(config, tmp_path / "ex", progress_bar=False)
    assert report == json.loads((tmp_path / "ex" / "exploit.json").read_text())
    assert 0 < report["decisions_trained"] < 10**6  # the minutes budget stopped it
    assert report["matches"] == 6 and sum(report["wins_draws_losses"]) == 6
    low, high = report["interval_95"]
    assert low - 1e-9 <= report["best_response_win_rate"] <= high + 1e-9
    assert "best response to simple after" in capsys.readouterr().out


def test_an_exploit_best_response_has_the_network_of_its_init_from_file(tmp_path: Path):
    """The recipes' network (mlp) by default; a suit-equivariant --init-from file starts a suits run."""
    from training.exploit import ExploitConfig, training_config
    from training.train import check_config
    from training.model import make_network

    path = tmp_path / "suits.pt"
    save_checkpoint(path, make_network("suits", 378, hidden=32), {"rules": "classic", "num_players": 2})
    plain = training_config(ExploitConfig(policy="simple"))
    assert (plain.network, plain.outlook_features, plain.hyper.hidden) == ("mlp", False, 192)
    assert training_config(ExploitConfig(policy="simple", init_from=str(path))).network == "suits"
    # Its inputs and width too: the shipped penalty files read the outlook columns, which okgin-exploit
    # has no flag for ("pass --outlook-features" was the error), and a width is the file's.
    assert training_config(ExploitConfig(policy="simple", init_from=str(path))).hyper.hidden == 32
    penalty = training_config(ExploitConfig(policy="simple", rules="penalty", num_players=3,
                                            init_from="checkpoints/okgin_penalty_3p.pt"))
    assert (penalty.network, penalty.outlook_features, penalty.hyper.hidden) == ("mlp", True, 192)
    check_config(penalty)  # the file's seats, width and inputs agree with the settings


@pytest.mark.parametrize("argv, message", [
    ([], "--policy is required"),
    (["--policy", "aggressor"], "--policy 'aggressor': the held-out bots"),
    (["--policy", "search:time_limit=0.1"], "a time_limit makes play depend"),
    (["--policy", "missing.pt"], "missing.pt"),
    (["--policy", "simple", "--matches", "1"], "--matches"),
    (["--policy", "simple", "--init-from", "missing_start.pt"], "missing_start.pt"),
    (["--policy", "simple", "--init-from", "."], "checkpoint . is not a regular file"),
    (["--policy", "simple", "--seed", str(2**32)], "--seed must be at least 0 and at most 4294967295"),
])
def test_exploit_refuses_bad_arguments_with_one_line(tmp_path: Path, capsys, argv, message):
    from training.exploit import cli as exploit_cli

    assert exploit_cli([*argv, "--run-dir", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_an_exploit_resume_against_another_policy_is_refused_in_its_own_words(tmp_path: Path, capsys):
    from training.exploit import ExploitConfig, cli as exploit_cli, run as exploit

    config = ExploitConfig(policy="simple", decisions=10**6, minutes=0.001, num_tables=8, matches=2, seed=2,
                           hyper=TINY_HYPER)
    exploit(config, tmp_path / "ex", progress_bar=False)
    recorded = (tmp_path / "ex" / "best_response" / "config.json").read_bytes()
    capsys.readouterr()
    assert exploit_cli(["--policy", "random", "--run-dir", str(tmp_path / "ex"), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "another --policy" in err and "'simple' -> 'random'" in err and err.count("\n") == 1
    assert (tmp_path / "ex" / "best_response" / "config.json").read_bytes() == recorded


@pytest.mark.parametrize("name", ["train", "improve", "exploit", "pipeline", "curve"])
def test_every_training_command_has_one_shape_of_exit_codes_and_stop_messages(name: str, tmp_path: Path, capsys):
    """training.cli.Command is each stage's command line: a setting out of range exits 2 with one
    line naming its flag; a stop before the run's own loop exits 130 with the command that continues."""
    import dataclasses
    import importlib

    module = importlib.import_module(f"training.{name}")
    command = module.command() if name == "exploit" else module.COMMAND
    extra = ["--policy", "simple"] if name == "exploit" else []
    for seed in ("-1", str(2**32)):  # (numpy's and torch's seeding take seeds below 2**32)
        assert module.cli([*extra, "--seed", seed, "--run-dir", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"{command.prog}: error: --seed") and not (tmp_path / "x").exists()

    def stopped(*_args, **_kwargs):
        raise KeyboardInterrupt

    argv = [*extra, "--run-dir", str(tmp_path / "y")]
    assert dataclasses.replace(command, run=stopped).cli(argv) == 130
    err = capsys.readouterr().err
    assert err == f"{command.prog}: stopped by SIGINT; continue with: {command.prog} {' '.join(argv)} --resume\n"


def test_an_imitation_teacher_that_plays_an_illegal_action_is_refused_by_name():
    """The host tables take the teacher's action ids: one that is not legal stops the rollout with
    the table it came from (it must never be taken for slot 0 silently)."""
    from okgin_env.rules.config import make_config
    from training.host_tables import HostTables
    from training.model import PolicyValueNet
    from training.train import Rollout, collect_rollout

    class Illegal:
        def actions(self, tables, observations, masks):
            return [106] * len(observations)  # knocking with the King of clubs: never legal at the offer

    tables = HostTables(3, ["simple"] * 3, make_config("standard"), "round", Illegal())
    tables.reset(seed=1)
    with pytest.raises(ValueError, match="imitation teacher chose an illegal action in table 0"):
        collect_rollout(PolicyValueNet(378), tables, Rollout.allocate(2, 3, 378), 25.0, imitate=True)


def test_the_training_commands_import_and_describe_themselves_under_python_oo():
    """``python -OO`` drops docstrings: the commands still import and print their --help."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    names = ["train", "improve", "exploit", "pipeline", "curve"]
    code = "; ".join(f"import training.{name}" for name in names) + "; import training.train as t; t.parse_args(['--help'])"
    done = subprocess.run([sys.executable, "-OO", "-c", code], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "--total-decisions" in done.stdout, done.stderr[-500:]


STAGE_COMMANDS = ("train", "improve", "exploit", "pipeline")


def _flags(module: str) -> list[str]:
    """The flags a training command takes (``--help`` aside; ``--x/--no-x`` once)."""
    stage = importlib.import_module(f"training.{module}")
    command = stage.COMMAND if hasattr(stage, "COMMAND") else stage.command()
    return sorted(flag for action in command.parser()._actions for flag in action.option_strings
                  if flag.startswith("--") and not flag.startswith("--no-") and flag != "--help")


def test_the_stage_commands_keep_their_flag_budget():
    """The stage commands' flags, counted once per command (issue 54 counted 64 over five commands;
    its bar is 50). The progress bars follow the terminal, the cluster's address the environment,
    and distilling a teacher is ``training.improve --teacher``."""
    counts = {module: _flags(module) for module in STAGE_COMMANDS}
    assert sum(map(len, counts.values())) <= 50, counts
    assert not any("--progress" in flags or "--ray-address" in flags for flags in counts.values())


def test_the_ray_address_comes_from_the_environment(monkeypatch, capsys):
    from training.improve import COMMAND

    monkeypatch.setenv("OKGIN_RAY_ADDRESS", "10.0.0.1:6379")
    config, _ = COMMAND.parse_args(["--decisions", "8"])
    assert config.ray_address == "10.0.0.1:6379" and config.decisions == 8
    monkeypatch.delenv("OKGIN_RAY_ADDRESS")
    assert COMMAND.parse_args([])[0].ray_address == ""
    with pytest.raises(SystemExit):
        COMMAND.parse_args(["--ray-address", "auto"])
    assert "unrecognized arguments: --ray-address auto" in capsys.readouterr().err


def test_the_resume_line_carries_the_environment_settings(monkeypatch):
    from training.cli import command_line
    from training.improve import COMMAND

    assert command_line("python -m training.improve", ["--decisions", "8", "--resume"], {"OKGIN_RAY_ADDRESS": "auto"}) == \
        "OKGIN_RAY_ADDRESS=auto python -m training.improve --decisions 8"
    monkeypatch.delenv("OKGIN_RAY_ADDRESS", raising=False)
    assert COMMAND.environment() == {}
    monkeypatch.setenv("OKGIN_RAY_ADDRESS", "10.0.0.1:6379")
    assert COMMAND.environment() == {"OKGIN_RAY_ADDRESS": "10.0.0.1:6379"}
