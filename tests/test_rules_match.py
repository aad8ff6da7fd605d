"""Matches (docs/rules.md §3, §7, §8, §9): the target score, who deals each round, drawn rounds."""

from __future__ import annotations

import numpy as np
import pytest

from okgin_env import MatchState, make_config
from okgin_env.rules.actions import DRAW_STOCK, PASS

from tests.helpers import build_deck, discard, greedy_action, knock

# Seat 1 draws 5S and goes gin against 49 deadwood: 25 + 49 = 74 points (see test_rules_showdown).
GIN_STORY = dict(
    hands=["6S TD 6D TC 2C 3C 4C AH 7H 9H", "2S 3S 4S 7D 8D 9D JC QC KC 5H"], upcard="8C", stock="5S"
)
# Seat 1 takes the 5H upcard and knocks with AC left against 39: 38 points.
KNOCK_STORY = dict(hands=["5C 6C 7C KS KH KD 9S TS QH JH", "2S 3S 4S 7D 8D 9D AC 2C 3H 4H"], upcard="5H")


def play_gin_story(match):
    assert match.apply(PASS) is None
    assert match.apply(PASS) is None
    assert match.apply(DRAW_STOCK) is None
    return match.apply(knock("5H"))


def test_match_ends_when_a_score_reaches_the_target():
    cfg = make_config("classic", target_score=50)
    match = MatchState(cfg, np.random.default_rng(0), deck=build_deck(**GIN_STORY), dealer=0)
    outcome = play_gin_story(match)
    assert outcome is not None and outcome.kind == "gin" and outcome.points == [0, 74]
    assert match.is_over and match.winner == 1 and match.scores == [0, 74]
    assert match.rounds_played == 1 and match.outcomes == [outcome]
    with pytest.raises(ValueError, match="over"):
        match.apply(DRAW_STOCK)
    with pytest.raises(ValueError, match="over"):
        match.deal_next_round()


def test_the_round_winner_deals_the_next_round():
    cfg = make_config("classic")
    match = MatchState(cfg, np.random.default_rng(1), deck=build_deck(**KNOCK_STORY), dealer=0)
    assert match.dealer == 0 and match.round.dealer == 0
    with pytest.raises(ValueError, match="not over"):
        match.deal_next_round()
    assert match.apply(1) is None  # seat 1 takes the upcard
    outcome = match.apply(knock("2C"))
    assert outcome.winner == 1 and outcome.points == [0, 38]
    assert not match.is_over and match.scores == [0, 38] and match.dealer == 1
    round_two = match.deal_next_round()
    assert round_two is match.round and round_two.dealer == 1 and round_two.current == 0
    assert round_two.cards_accounted() == 52


def test_after_a_drawn_round_the_same_dealer_deals_again():
    cfg = make_config("classic")
    match = MatchState(cfg, np.random.default_rng(2), deck=build_deck(**KNOCK_STORY), dealer=0)
    match.apply(PASS)
    match.apply(PASS)
    outcome = None
    while outcome is None:  # draw and throw the drawn card until the stock is down to two
        card = match.round.stock[-1]
        match.apply(DRAW_STOCK)
        outcome = match.apply(discard(card))
    assert outcome.kind == "draw" and outcome.winner is None and len(match.round.stock) == 2
    assert match.scores == [0, 0] and match.dealer == 0 and not match.is_over
    assert match.deal_next_round().dealer == 0


def test_the_first_dealer_is_drawn_from_the_rng():
    cfg = make_config("classic")
    dealers = {MatchState(cfg, np.random.default_rng(seed)).dealer for seed in range(20)}
    assert dealers == {0, 1}


def play_match(cfg, seed):
    """A whole match with the greedy policy; checks the dealer and the scores after every round."""
    rng = np.random.default_rng(seed)
    match = MatchState(cfg, rng)
    totals = [0] * cfg.num_players
    dealers = []
    while True:
        dealer = match.dealer
        assert match.round.dealer == dealer
        dealers.append(dealer)
        outcome = None
        while outcome is None:
            outcome = match.apply(greedy_action(match.round))
        totals = [t + p for t, p in zip(totals, outcome.points)]
        assert match.scores == totals
        # The winner of the round deals next; after a draw the same dealer.
        assert match.dealer == (dealer if outcome.winner is None else outcome.winner)
        if match.is_over:
            return match, dealers
        assert max(totals) < cfg.target_score
        match.deal_next_round()


@pytest.mark.parametrize("seed", range(4))
def test_classic_match_to_100(seed):
    cfg = make_config("classic")
    match, dealers = play_match(cfg, seed)
    assert max(match.scores) >= 100 and match.scores[match.winner] == max(match.scores)
    assert sorted(match.scores)[0] < 100  # only one player scores per round
    assert match.rounds_played == len(match.outcomes) == len(dealers)
    assert match.scores == [sum(o.points[s] for o in match.outcomes) for s in range(2)]


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("seed", range(2))
def test_penalty_match_to_the_target_fewest_points_wins(num_players, seed):
    cfg = make_config("penalty", num_players=num_players, target_score=60)
    match, _ = play_match(cfg, seed)
    assert max(match.scores) >= 60
    assert match.scores[match.winner] == min(match.scores)
    assert match.scores == [sum(o.points[s] for o in match.outcomes) for s in range(num_players)]
    lost = [sum(1 for o in match.outcomes if o.points[s] > 0) for s in range(num_players)]
    assert match.rounds_lost == lost


def test_penalty_match_tie_break_fewest_rounds_lost():
    cfg = make_config("penalty", num_players=3, target_score=10)
    match = MatchState(cfg, np.random.default_rng(0), dealer=0)
    # Seats 0 and 1 tie on points; seat 1 lost fewer rounds, so seat 1 wins.
    match.scores = [4, 4, 12]
    match.rounds_lost = [2, 1, 3]
    assert match._match_winner() == 1
    match.rounds_lost = [1, 1, 3]
    assert match._match_winner() == 0  # then the lower seat
