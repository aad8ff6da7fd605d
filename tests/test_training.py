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

CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"
SHIPPED = CHECKPOINTS / "okgin_classic.pt"
STAGE_ONE = CHECKPOINTS / "okgin_classic_ppo.pt"  # the PPO policy that training.improve starts from
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


@pytest.mark.parametrize("path", [SHIPPED, STAGE_ONE], ids=["shipped", "stage_one"])
def test_shipped_checkpoints_load_and_play_legal_moves(path: Path):
    assert path.is_file(), f"the shipped policy {path} is missing"
    policy = load_policy(path)
    assert play_short_match(policy, seed=1) > 0
    assert load_checkpoint(path)["metadata"]["rules"] == "classic"


def test_importing_okgin_env_does_not_import_torch():
    code = "import sys, okgin_env, okgin_env.bots, okgin_env.evaluate; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_policy_rejects_an_observation_of_another_layout(trained_run: Path):
    policy = load_policy(trained_run / "last.pt")
    with pytest.raises(ValueError, match="2-player layout"):
        policy.act({"observation": np.zeros(10, dtype=np.float32), "action_mask": np.ones(107, dtype=np.int8)})


# ----------------------------------------------------------------------------- the privileged critic


def test_privileged_features_describe_the_hidden_cards():
    from helpers import mask, new_round

    from okgin_env.rules.cards import card_id
    from training.features import NUM_PRIVILEGED_FEATURES, PRIVILEGED_STOCK_CARDS, privileged_features

    state = new_round(["AS 2S 3S 4H 5H 6H 9C 9D KC KD", "2C 3C 4C 7D 8D 9H TH JH QS KS"], upcard="8S",
                      stock="5C 6D 7S AH")
    features = privileged_features(state, seat=0)
    assert features.shape == (NUM_PRIVILEGED_FEATURES,)
    cards = np.arange(52)
    assert (np.flatnonzero(features[:52]) == np.flatnonzero((state.hands[1] >> cards) & 1)).all()
    assert sorted(np.flatnonzero(features[52:104])) == sorted(state.stock)
    for k, card in enumerate(["5C", "6D", "7S", "AH"][:PRIVILEGED_STOCK_CARDS]):
        plane = features[(2 + k) * 52: (3 + k) * 52]
        assert np.flatnonzero(plane).tolist() == [card_id(card)]
    scalars = features[52 * (2 + PRIVILEGED_STOCK_CARDS):]
    # Seat 1: 2C3C4C and 9H TH JH melded; 7D 8D QS KS left = 7 + 8 + 10 + 10.
    assert scalars[0] == pytest.approx(35 / 50)
    assert scalars[1] == 0.0  # 35 is over the knock limit of 8
    # Seat 0 draws 5C: AS2S3S, 4H5H6H melded, best discard leaves 9C 9D KC KD... = 38 (5C kept or thrown).
    from okgin_env.rules.melds import best_discard_deadwood_of_mask

    assert scalars[2] == pytest.approx(best_discard_deadwood_of_mask(mask("AS 2S 3S 4H 5H 6H 9C 9D KC KD 5C")) / 50)


def test_init_from_starts_from_the_given_weights_and_warms_up_the_critic_alone(trained_run: Path, tmp_path: Path):
    start = load_checkpoint(trained_run / "last.pt")
    run_dir = tmp_path / "fine_tune"
    train_main([*TINY, "--total-decisions", "64", "--run-dir", str(run_dir), "--seed", "4",  # one update
                "--init-from", str(trained_run / "last.pt"), "--privileged-critic", "--critic-warmup-updates", "1"])
    after = load_checkpoint(run_dir / "last.pt")
    for key in start["model"]:  # the policy did not move during the critic's warm-up
        assert torch.equal(start["model"][key], after["model"][key]), key
    assert "critic" in after and "critic_optimizer" in after
    assert "critic" in (run_dir / "progress.csv").read_text()


def test_init_from_with_another_network_width_is_a_clear_error(trained_run: Path, tmp_path: Path):
    with pytest.raises(ValueError, match="pass --hidden 192"):
        train_main([*TINY, "--total-decisions", "128", "--run-dir", str(tmp_path / "x"), "--hidden", "64",
                    "--init-from", str(trained_run / "last.pt")])


# ----------------------------------------------------------------------------- improvement by rollouts


def test_improve_labels_every_legal_action_reproducibly_and_fits_a_playable_policy(trained_run: Path, tmp_path: Path):
    from training.improve import centred, label_decisions
    from training.improve import main as improve_main

    jobs = [(str(trained_run / "last.pt"), "classic", 5, 12, str(tmp_path / f"labels_{k}.npz")) for k in "ab"]
    first, second = (np.load(label_decisions(job)) for job in jobs)
    for key in first.files:  # same seed, same labels
        assert np.array_equal(first[key], second[key]), key
    legal, q = first["legal"], first["q"]
    assert legal.shape == (12, 24) and (legal.sum(1) >= 2).all()  # only decisions with a choice
    assert (q[~legal] == 0).all() and np.abs(q[legal]).max() <= 200
    row = torch.tensor([[1.0, 3.0, 8.0]])
    assert torch.allclose(centred(row, torch.tensor([[True, True, False]])), torch.tensor([[-1.0, 1.0, 0.0]]))

    summary = improve_main(["--init-from", str(trained_run / "last.pt"), "--decisions", "24", "--workers", "1",
                            "--epochs", "1", "--eval-matches", "0", "--run-dir", str(tmp_path / "improve"), "--no-progress"])
    assert summary["labelled_decisions"] == 24
    assert play_short_match(load_policy(tmp_path / "improve" / "fitted.pt")) > 0

    # A fit on the saved labels plus another run's (here the same run's, twice over).
    again = improve_main(["--init-from", str(trained_run / "last.pt"), "--reuse-labels", "--extra-labels",
                          str(tmp_path / "improve"), "--epochs", "1", "--eval-matches", "0",
                          "--run-dir", str(tmp_path / "improve"), "--no-progress"])
    assert again["labelled_decisions"] == 48
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no labels_"):
        improve_main(["--init-from", str(trained_run / "last.pt"), "--reuse-labels", "--extra-labels", str(tmp_path / "empty"),
                      "--eval-matches", "0", "--run-dir", str(tmp_path / "improve"), "--no-progress"])


@pytest.mark.parametrize("flag, value", [("--decisions", "0"), ("--workers", "0"), ("--q-scale", "0"),
                                         ("--validation-fraction", "1.5")])
def test_improve_rejects_bad_arguments_before_doing_anything(tmp_path: Path, flag: str, value: str):
    from training.improve import main as improve_main

    with pytest.raises(ValueError, match=flag.lstrip("-").split("-")[0]):
        improve_main([flag, value, "--run-dir", str(tmp_path / "never"), "--no-progress"])
    assert not (tmp_path / "never").exists()
