"""``training.train --reward own_penalty``: the learner's own penalty points as its reward."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from okgin_env.bots import make_bot  # noqa: E402
from okgin_env.vector import VectorGymEnv  # noqa: E402
from training.train import check_args, own_penalty_rewards, parse_args  # noqa: E402


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_own_penalty_is_the_learners_own_points_of_the_round(num_players):
    """Checked against the outcome's own ``points`` of the learner's seat (the seat whose zero-sum
    reward the env paid) on every round of simple-vs-simple tables, both learner seats."""
    tables = 8
    env = VectorGymEnv(tables, opponents=["simple"] * tables, learner_seat="alternate", rules="penalty",
                       num_players=num_players, episode="match", reward="points")
    observations, infos = env.reset(seed=num_players)
    bots = [make_bot("simple", seed=i) for i in range(tables)]
    checked = kept = 0
    for _ in range(1200):
        actions = np.array([bot.act({"observation": o, "action_mask": m})
                            for bot, o, m in zip(bots, observations, infos["action_mask"])])
        observations, rewards, _, _, infos = env.step(actions)
        own = own_penalty_rewards(rewards, infos)
        ended = infos.get("_round_outcome", np.zeros(tables, dtype=bool))
        assert np.array_equal(own[~ended], rewards[~ended])  # no round ended: nothing to change (0)
        for j in np.flatnonzero(ended).tolist():
            outcome = infos["round_outcome"][j]
            seats = [s for s in range(num_players) if abs(outcome["rewards"][s] - rewards[j]) < 1e-3]
            if seats:
                assert {outcome["points"][s] for s in seats} == {-own[j]}
                checked += 1
            else:  # two rounds in one step: the zero-sum reward is kept
                assert own[j] == rewards[j]
                kept += 1
    assert checked > 300 and kept < checked / 50


def test_own_penalty_is_refused_for_classic_rules():
    with pytest.raises(ValueError, match="--reward own_penalty needs --rules penalty"):
        check_args(parse_args(["--reward", "own_penalty"]))
    check_args(parse_args(["--reward", "own_penalty", "--rules", "penalty", "--num-players", "3"]))


@pytest.mark.parametrize("num_players", [3, 4])
def test_own_penalty_labels_are_the_same_batched_and_single_and_differ_from_points(num_players):
    from training.improve import label_decisions
    from training.labelling import label_decisions_batched

    checkpoint = f"checkpoints/okgin_penalty_{num_players}p.pt"
    own = (checkpoint, "penalty", 4, 8, "own_penalty")
    single, batched = label_decisions(own), label_decisions_batched(own)
    for key in single:
        np.testing.assert_array_equal(batched[key], single[key], err_msg=key)
    points = label_decisions_batched(own[:4])  # the four-entry job of before: zero-sum points
    np.testing.assert_array_equal(points["obs"], batched["obs"])  # the same decisions ...
    legal = batched["legal"]
    assert (batched["q"][legal] <= 0).all()  # ... valued by the learner's own penalty alone
    assert not np.array_equal(points["q"][legal], batched["q"][legal])


def test_a_label_reward_the_labelling_does_not_know_is_refused():
    from training.labelling import label_decisions_batched

    with pytest.raises(ValueError, match="label reward 'win'; allowed: points, own_penalty"):
        label_decisions_batched(("checkpoints/okgin_penalty_3p.pt", "penalty", 4, 2, "win"))


def test_improve_refuses_own_penalty_labels_for_a_classic_checkpoint(tmp_path):
    from training.improve import main as improve_main

    with pytest.raises(ValueError, match="--label-reward own_penalty needs a penalty checkpoint"):
        improve_main(["--init-from", "checkpoints/okgin_classic.pt", "--label-reward", "own_penalty",
                      "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert not (tmp_path / "run").exists()  # refused before anything is written
