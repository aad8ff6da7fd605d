"""Training smoke test, checkpoints and their errors, the shipped policy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import okgin_env  # noqa: E402
from training.policy import CheckpointError, load_checkpoint, load_policy, save_checkpoint  # noqa: E402
from training.train import main as train_main  # noqa: E402

SHIPPED = Path(__file__).resolve().parents[1] / "checkpoints" / "okgin_classic_ppo.pt"
TINY = ["--num-tables", "8", "--rollout-length", "8", "--bc-updates", "1", "--bc-epochs", "1",
        "--ppo-epochs", "1", "--minibatch-size", "32", "--eval-every", "1000", "--no-progress"]


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


def test_shipped_checkpoint_loads_and_plays_legal_moves():
    assert SHIPPED.is_file(), f"the shipped policy {SHIPPED} is missing"
    policy = load_policy(SHIPPED)
    assert play_short_match(policy, seed=1) > 0


def test_importing_okgin_env_does_not_import_torch():
    code = "import sys, okgin_env, okgin_env.bots, okgin_env.evaluate; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_policy_rejects_an_observation_of_another_layout(trained_run: Path):
    policy = load_policy(trained_run / "last.pt")
    with pytest.raises(ValueError, match="2-player layout"):
        policy.act({"observation": np.zeros(10, dtype=np.float32), "action_mask": np.ones(107, dtype=np.int8)})
