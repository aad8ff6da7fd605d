"""A match: rounds until a player's total reaches ``target_score`` (docs/rules.md §3, §8, §9),
then the house-rule bonuses, if any are on (§11: ``box_bonus``, ``game_bonus``,
``shutout_multiplier``; ``match_bonus`` computes them, ``MatchBonus`` reports them).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from .config import RulesConfig, is_int
from .round import RoundState
from .round_parts import check_deck
from .showdown import RoundOutcome, zero_sum_rewards


@dataclass(frozen=True)
class MatchBonus:
    """The bonuses added to the totals when a match ended (docs/rules.md §11). Lists by seat."""

    rounds_won: list[int]  # rounds each seat won (drawn rounds count for nobody)
    box: list[int]  # box_bonus for every round won
    game: list[int]  # game_bonus to the match winner, 0 to the others
    shutout: bool  # every other seat's total before bonuses was 0
    multiplier: int  # what the winner's total was multiplied by: shutout_multiplier on a shutout, else 1
    scores_before: list[int]  # the round totals (what counted toward target_score)
    scores: list[int]  # the final totals, bonuses included (what ``scores`` reports)
    points: list[int]  # scores - scores_before: each seat's whole bonus
    rewards: list[float]  # the zero-sum reward of ``points``, paid with reward="points" (as round rewards are)

    def to_dict(self) -> dict:
        return {
            "rounds_won": list(self.rounds_won),
            "box": list(self.box),
            "game": list(self.game),
            "shutout": self.shutout,
            "multiplier": self.multiplier,
            "scores_before": list(self.scores_before),
            "scores": list(self.scores),
            "points": list(self.points),
            "rewards": list(self.rewards),
        }


def match_bonus(config: RulesConfig, round_totals: list[int], rounds_won: list[int], winner: int) -> MatchBonus:
    """The bonuses of a match that ``winner`` won with these round totals and rounds won (§11):
    ``box_bonus`` per round won to everybody, then ``game_bonus`` to the winner, then the winner's
    total times ``shutout_multiplier`` if every other total (before bonuses) is 0."""
    n = len(round_totals)
    box = [config.box_bonus * won for won in rounds_won]
    game = [config.game_bonus if seat == winner else 0 for seat in range(n)]
    scores = [round_totals[seat] + box[seat] + game[seat] for seat in range(n)]
    shutout = all(round_totals[seat] == 0 for seat in range(n) if seat != winner)
    multiplier = config.shutout_multiplier if shutout else 1
    scores[winner] *= multiplier
    points = [scores[seat] - round_totals[seat] for seat in range(n)]
    return MatchBonus(
        rounds_won=list(rounds_won),
        box=box,
        game=game,
        shutout=shutout,
        multiplier=multiplier,
        scores_before=list(round_totals),
        scores=scores,
        points=points,
        rewards=zero_sum_rewards(points, config.penalty_scoring),
    )


class MatchState:
    """Scores, dealer rotation and the current round.

    The caller owns the pace: after a round ends (``round.is_over``) call ``deal_next_round()``
    unless ``is_over``. Later rounds are shuffled with ``rng``; the first may be injected.

    ``round_totals``: each seat's sum of round points, what counts toward ``target_score`` (and
    what observations show). ``scores``: the totals reported, the same until the match ends; then,
    with a house rule of §11 on, ``round_totals`` plus the bonuses of ``bonus`` (a
    ``MatchBonus``; None while the match runs and when no house rule is on).
    """

    def __init__(self, config: RulesConfig, rng: np.random.Generator, deck: Any = None, dealer: Any = None):
        n = config.num_players
        if dealer is not None and (
            not is_int(dealer) or not 0 <= dealer < n
        ):
            raise ValueError(f"dealer must be a seat in 0..{n - 1}, got {dealer!r}")
        first_deck = check_deck(deck) if deck is not None else None
        self.config = config
        self.rng = rng
        self.num_players = n
        self.scores = [0] * n  # classic: points won; penalty: penalty points charged; + bonuses at the end
        self.round_totals = [0] * n  # the same without the match-end bonuses: what counts toward the target
        self.rounds_won = [0] * n  # box bonus: rounds a seat won
        self.rounds_lost = [0] * n  # penalty tie-break: rounds in which a seat was charged
        self.bonus: MatchBonus | None = None
        self.rounds_played = 0
        self.outcomes: list[RoundOutcome] = []
        self.winner: int | None = None
        self.dealer = int(dealer) if dealer is not None else int(rng.integers(n))
        self.round = self._deal(first_deck)

    @property
    def is_over(self) -> bool:
        return self.winner is not None

    def _deal(self, deck: list[int] | None) -> RoundState:
        if deck is None:
            deck = self.rng.permutation(52).tolist()
        return RoundState(self.config, deck, self.dealer, self.rng)

    def apply(self, action: int) -> RoundOutcome | None:
        """Play an action in the current round; returns the outcome if that ended the round."""
        if self.is_over:
            raise ValueError("the match is over; no action is legal")
        return self.apply_unchecked(self.round.checked(action))

    def apply_unchecked(self, action: int) -> RoundOutcome | None:
        """``apply`` without the legality checks, for callers that already checked (batched engines)."""
        # ``BatchEnv`` calls this for every game at every step: one call deep into the round.
        round_state = self.round
        round_state.apply_unchecked(action)
        outcome = round_state.outcome  # set exactly when the round ends (``RoundState._finish``)
        if outcome is not None:
            self._record(outcome)
        return outcome

    def _record(self, outcome: RoundOutcome) -> None:
        self.rounds_played += 1
        self.outcomes.append(outcome)
        totals = self.round_totals
        for seat, points in enumerate(outcome.points):
            self.scores[seat] += points
            totals[seat] += points
            if self.config.penalty_scoring and points > 0:
                self.rounds_lost[seat] += 1
        if outcome.winner is not None:
            self.rounds_won[outcome.winner] += 1
            self.dealer = outcome.winner  # the winner deals next; after a draw the same dealer deals
        if max(totals) >= self.config.target_score:
            self.winner = self._match_winner()
            if self.config.has_match_bonuses:  # added once, after the target was reached without them
                self.bonus = match_bonus(self.config, totals, self.rounds_won, self.winner)
                self.scores = list(self.bonus.scores)

    def _match_winner(self) -> int:
        seats = range(self.num_players)
        totals = self.round_totals
        if self.config.penalty_scoring:
            # Fewest penalty points, then fewest rounds lost, then the lowest seat.
            return min(seats, key=lambda s: (totals[s], self.rounds_lost[s], s))
        return max(seats, key=lambda s: (totals[s], -s))

    def deal_next_round(self) -> RoundState:
        if self.is_over:
            raise ValueError("the match is over; no round to deal")
        if not self.round.is_over:
            raise ValueError("the current round is not over yet")
        self.round = self._deal(None)
        return self.round

    def clone(self) -> "MatchState":
        other = copy.copy(self)
        other.rng = copy.deepcopy(self.rng)
        other.round = self.round.clone()
        other.round.rng = other.rng
        other.scores = list(self.scores)
        other.round_totals = list(self.round_totals)
        other.rounds_won = list(self.rounds_won)
        other.rounds_lost = list(self.rounds_lost)
        other.outcomes = list(self.outcomes)
        return other
