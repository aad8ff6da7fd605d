"""A match: rounds until a player's total reaches ``target_score`` (docs/rules.md §3, §8, §9)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from .config import RulesConfig
from .round import RoundState, check_deck
from .showdown import RoundOutcome


class MatchState:
    """Scores, dealer rotation and the current round.

    The caller owns the pace: after a round ends (``round.is_over``) call ``deal_next_round()``
    unless ``is_over``. Later rounds are shuffled with ``rng``; the first may be injected.
    """

    def __init__(self, config: RulesConfig, rng: np.random.Generator, deck: Any = None, dealer: Any = None):
        n = config.num_players
        if dealer is not None and (
            not isinstance(dealer, (int, np.integer)) or isinstance(dealer, bool) or not 0 <= dealer < n
        ):
            raise ValueError(f"dealer must be a seat in 0..{n - 1}, got {dealer!r}")
        first_deck = check_deck(deck) if deck is not None else None
        self.config = config
        self.rng = rng
        self.num_players = n
        self.scores = [0] * n  # classic: points won; penalty: penalty points charged
        self.rounds_lost = [0] * n  # penalty tie-break: rounds in which a seat was charged
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
        self.round.apply(action)
        return self._after_action()

    def apply_unchecked(self, action: int) -> RoundOutcome | None:
        """``apply`` without the legality checks, for callers that already checked (batched engines)."""
        self.round.apply_unchecked(action)
        return self._after_action()

    def _after_action(self) -> RoundOutcome | None:
        if not self.round.is_over:
            return None
        outcome = self.round.outcome
        assert outcome is not None
        self._record(outcome)
        return outcome

    def _record(self, outcome: RoundOutcome) -> None:
        self.rounds_played += 1
        self.outcomes.append(outcome)
        for seat, points in enumerate(outcome.points):
            self.scores[seat] += points
            if self.config.penalty_scoring and points > 0:
                self.rounds_lost[seat] += 1
        if outcome.winner is not None:
            self.dealer = outcome.winner  # the winner deals next; after a draw the same dealer deals
        if max(self.scores) >= self.config.target_score:
            self.winner = self._match_winner()

    def _match_winner(self) -> int:
        seats = range(self.num_players)
        if self.config.penalty_scoring:
            # Fewest penalty points, then fewest rounds lost, then the lowest seat.
            return min(seats, key=lambda s: (self.scores[s], self.rounds_lost[s], s))
        return max(seats, key=lambda s: (self.scores[s], -s))

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
        other.rounds_lost = list(self.rounds_lost)
        other.outcomes = list(self.outcomes)
        return other
