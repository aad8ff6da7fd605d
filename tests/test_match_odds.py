"""The match-odds model (training.match_odds) and the round records that ``--fit-target match`` reads."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

pytest.importorskip("torch")

from okgin_env.rules.config import make_config  # noqa: E402
from okgin_env.rules.showdown import zero_sum_rewards  # noqa: E402
from training.labelling import label_decisions_batched, learner_first  # noqa: E402
from training.match_odds import MatchOdds, final_share  # noqa: E402


def test_final_share_follows_the_match_rules():
    totals = np.array([[40, 100, 70], [100, 40, 70], [50, 50, 100], [50, 60, 100]])
    # Penalty: the fewest points win; a tie for the fewest shares the win.
    np.testing.assert_allclose(final_share(totals, penalty_scoring=True), [1.0, 0.0, 0.5, 1.0])
    # Classic: the most points win.
    np.testing.assert_allclose(final_share(np.array([[104, 30], [30, 110]]), penalty_scoring=False), [1.0, 0.0])


def exact_chance(rounds: list[tuple[int, int]], target: int, penalty: bool):
    """Brute force for a 2-player table whose rounds are drawn uniformly from ``rounds``."""

    @functools.lru_cache(maxsize=None)
    def chance(mine: int, theirs: int) -> float:
        total = 0.0
        for a, b in rounds:
            line = np.array([[mine + a, theirs + b]])
            if line.max() >= target:
                total += float(final_share(line, penalty)[0])
            else:
                total += chance(mine + a, theirs + b)
        return total / len(rounds)

    return chance


@pytest.mark.parametrize("rules", ["penalty", "classic"])
def test_the_fitted_odds_agree_with_brute_force(rules):
    """Rounds drawn from a sample of varied points (at the penalty table the learner is charged a
    little less often and less than its opponent; at the classic one it scores a little more):
    the fitted chance at every score line of a grid is within 0.08 of the exact one (about 0.04
    with these settings; other seeds reach 0.053), and within 0.015 on average."""
    config = make_config(rules, num_players=2)
    if rules == "penalty":
        sample = [(0, b) for b in range(2, 40, 3)] + [(a, 0) for a in range(2, 34, 3)]
    else:
        sample = [(a, 0) for a in range(2, 40, 3)] + [(0, b) for b in range(2, 34, 3)]
    odds = MatchOdds.fit(config, np.array(sample * 10 + [(0, 0)] * 5), seed=3, matches=20_000, updates=1500)
    exact = exact_chance(sample, config.target_score, config.penalty_scoring)
    grid = [(a, b) for a in range(0, 100, 9) for b in range(0, 100, 9)]
    fitted = odds.win_chance(np.array(grid))
    errors = [abs(f - exact(a, b)) for f, (a, b) in zip(fitted, grid)]
    assert max(errors) < 0.08, max(errors)
    assert np.mean(errors) < 0.015, np.mean(errors)
    # The chance falls as the learner's own penalty rises, and rises with its own classic score.
    own = odds.win_chance(np.array([[0, 50], [50, 50], [90, 50]]))
    assert (own[0] > own[1] > own[2]) if rules == "penalty" else (own[0] < own[1] < own[2])


def test_a_finished_match_is_scored_by_the_rules_not_the_network():
    config = make_config("penalty", num_players=3)
    odds = MatchOdds.fit(config, np.array([[0, 10, 20], [15, 0, 5]] * 20), seed=1, matches=2000, updates=10)
    np.testing.assert_allclose(odds.win_chance(np.array([[20, 100, 30], [100, 20, 30], [30, 30, 104]])), [1, 0, 0.5])


def test_odds_refuse_a_sample_they_cannot_use():
    config = make_config("penalty", num_players=3)
    with pytest.raises(ValueError, match=r"\(rounds, 3\)"):
        MatchOdds.fit(config, np.zeros((5, 2)), seed=1)
    with pytest.raises(ValueError, match="no round"):
        MatchOdds.fit(config, np.zeros((5, 3)), seed=1)


@pytest.mark.parametrize("checkpoint, num_players", [("checkpoints/okgin_penalty_3p.pt", 3),
                                                     ("checkpoints/okgin_penalty_4p.pt", 4)])
def test_a_job_records_each_rollouts_round_and_the_rounds_its_matches_played(checkpoint, num_players):
    labels = label_decisions_batched((checkpoint, "penalty", 11, 120))
    legal, points, q = labels["legal"], labels["round_points"], labels["q"]
    assert points.shape == (*legal.shape, num_players) and labels["scores"].shape == (120, num_players)
    # Every legal action's rollout has its round's points (penalties are never negative); no other slot has.
    assert (points[legal] >= 0).all() and (points[~legal] == -1).all()
    # The label is the zero-sum reward of those points, the learner's being the first.
    for row, column in zip(*np.nonzero(legal)):
        assert q[row, column] == pytest.approx(zero_sum_rewards(list(points[row, column]), True)[0])
    # The matches' own rounds: penalties, a knock, gin or undercut charging someone in most of them.
    rounds = labels["rounds"]
    assert rounds.shape[1] == num_players and len(rounds) >= 4 and (rounds >= 0).all()
    assert (rounds.sum(axis=1) > 0).mean() > 0.5
    # The score lines seen are sums of earlier rounds' points: never negative, below the target.
    assert (labels["scores"] >= 0).all() and (labels["scores"] < 100).all()


def test_the_match_target_refuses_rollouts_cut_short_by_a_depth(tmp_path):
    """A rollout depth leaves no round's points (-1) in the labelled slots: the match target refuses them."""
    import torch

    from training.improve import match_labels

    labels = label_decisions_batched(("checkpoints/okgin_classic_ppo.pt", "classic", 7, 6, {"depth": 1}))
    assert (labels["round_points"][labels["legal"]] == -1).any()  # some rollouts did stop early
    path = tmp_path / "labels_0000.npz"
    np.savez_compressed(path, **labels)
    data = {"legal": torch.from_numpy(labels["legal"]), "q": torch.from_numpy(labels["q"])}
    with pytest.raises(ValueError, match="needs whole rounds"):
        match_labels([np.load(path)], [path], data, make_config("classic"), seed=1)


def test_learner_first_rotates_by_turn_order():
    assert learner_first([10, 20, 30, 40], 2) == [30, 40, 10, 20]
    assert learner_first([10, 20, 30], 0) == [10, 20, 30]


def test_improve_fits_the_match_target_and_refuses_labels_without_rounds(tmp_path, capsys):
    from training.improve import cli, main

    run = tmp_path / "run"
    args = ["--init-from", "checkpoints/okgin_penalty_3p.pt", "--run-dir", str(run), "--seed", "5",
            "--decisions", "120", "--chunk", "60", "--workers", "1", "--eval-matches", "0", "--no-progress",
            "--objective", "policy", "--epochs", "1"]
    summary = main([*args, "--fit-target", "match"])
    assert summary["fit_target"] == "match" and summary["match_odds_rounds"] > 0
    assert 0 < summary["match_odds_start_mean"] < 100 and summary["match_label_change_mean_abs"] > 0
    assert json.loads((run / "summary.json").read_text())["fit_target"] == "match"
    # Chunks written before the rounds were recorded cannot be refitted by the match.
    chunk = run / "labels_0000.npz"
    with np.load(chunk) as data:
        old = {key: data[key] for key in data.files if key not in ("scores", "round_points", "rounds")}
    np.savez_compressed(chunk, **old)
    assert cli([*args, "--reuse-labels", "--fit-target", "match"]) == 2
    assert "does not record" in capsys.readouterr().err


def test_recorded_score_lines_and_rounds_follow_the_matches_seat_by_seat():
    """The job's ``scores`` and ``rounds`` against the matches themselves, replayed here with the
    job's generator: each labelled decision's score line and each finished round's points, with
    the seats rotated by explicit indices from the seat that was last choosing (not through
    ``learner_first`` or the job's round hook)."""
    import random

    from okgin_env.bots.simple import SimpleBot
    from training.improve import _Player
    from training.labelling import play_learner_matches

    checkpoint, n, seed, count = "checkpoints/okgin_penalty_3p.pt", 3, 12, 150
    labels = label_decisions_batched((checkpoint, "penalty", seed, count))
    player = _Player(checkpoint, "penalty")
    rng = random.Random(seed)
    opponent = SimpleBot()
    opponent.rng = rng
    lines, rounds, last = [], [], {}

    def on_choice(match, learner, observation, encoded):
        rng.getrandbits(32)  # the job's tie seed for this decision, drawn at the same moment
        last["seat"] = learner
        lines.append([match.scores[(learner + k) % n] for k in range(n)])

    def on_round(_seat, outcome):
        rounds.append([outcome.points[(last["seat"] + k) % n] for k in range(n)])

    play_learner_matches(player.config, player.policy, opponent, seed, count, on_choice, on_round)
    np.testing.assert_array_equal(labels["scores"], np.array(lines))
    np.testing.assert_array_equal(labels["rounds"], np.array(rounds))
    assert len({tuple(line) for line in lines}) > 3  # the score lines did move
