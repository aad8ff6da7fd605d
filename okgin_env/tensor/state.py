"""``TensorState``: every game of a ``TensorEnv`` as one value, a row per game in each tensor.

The fields are those of the rules core's ``rules.round.RoundState`` and ``rules.match.MatchState``
(batched), what the seat to act may do (``legal_action_mask``, and the solver's results behind it,
which the features, the network's inputs and ``simple`` read instead of solving again), the last
observation, and the generator every deal and stock rebuild is drawn from. ``TensorEnv.init``
makes one, ``TensorEnv.step_state`` plays a step on a copy, ``TensorEnv.observe`` encodes it; the
helper modules (``encode``, ``round_end``, ``network``, ``simple``) take it as their argument.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from ..rules.actions import NUM_ACTIONS
from ..rules.cards import NUM_CARDS
from ..rules.config import RulesConfig


@dataclass
class TensorState:
    """``num_envs`` games on one device (shapes: N games, P seats, D observation values)."""

    # The round (rules.round.RoundState).
    deck: torch.Tensor  # (N, 52) int64: the deck dealt, top first (a stock rebuild rewrites its end)
    hands: torch.Tensor  # (N, P, 52) bool
    known: torch.Tensor  # (N, P, 52) bool: the cards each seat took face up and still holds
    passed: torch.Tensor  # (N, P, 52) bool: the cards each seat declined or threw
    pile: torch.Tensor  # (N, 52) int64: the discard pile, bottom first
    pile_len: torch.Tensor  # (N,) int64
    pile_mask: torch.Tensor  # (N, 52) bool
    stock_pos: torch.Tensor  # (N,) int64: deck index of the stock's top card
    upcard: torch.Tensor  # (N,) int64: the first face-up card
    knock_limit: torch.Tensor  # (N,) int64
    phase: torch.Tensor  # (N,) int64: a rules.round.Phase
    current: torch.Tensor  # (N,) int64: the seat to act
    dealer: torch.Tensor  # (N,) int64
    offers_declined: torch.Tensor  # (N,) int64
    must_draw_stock: torch.Tensor  # (N,) bool
    taken_card: torch.Tensor  # (N,) int64: the face-up card just taken (it may not be thrown), else -1
    discards: torch.Tensor  # (N,) int64
    reshuffles: torch.Tensor  # (N,) int64
    last_permutation: torch.Tensor  # (N, 52) int64: the order of each game's last stock rebuild
    # The match (rules.match.MatchState).
    totals: torch.Tensor  # (N, P) int64: points toward the target
    rounds_won: torch.Tensor  # (N, P) int64
    rounds_lost: torch.Tensor  # (N, P) int64: penalty tie-break, rounds in which a seat was charged
    rounds_played: torch.Tensor  # (N,) int64
    # The seat to act: its legal actions and the solver's results behind them.
    legal_action_mask: torch.Tensor  # (N, 107) bool
    deadwood_after: torch.Tensor  # (N, 52) int64: least deadwood after throwing each card (discard phase)
    hand_deadwood: torch.Tensor  # (N,) int64: least deadwood of the 11 cards (discard phase), else 0
    observation: torch.Tensor  # (N, D) float32: the last observed step's (stale after observe=False)
    generator: torch.Generator  # every deal, first dealer and stock rebuild
    rules: RulesConfig | None = None  # the rules it is played by: an env refuses a state of other rules

    @classmethod
    def empty(cls, num_envs: int, num_players: int, observation_size: int, generator: torch.Generator,
              rules: RulesConfig | None = None) -> TensorState:
        """All-zero games (no card dealt) on the generator's device, to be played by ``rules``."""
        n, p, dev = num_envs, num_players, generator.device
        i64 = dict(dtype=torch.int64, device=dev)
        cards = torch.zeros(n, p, NUM_CARDS, dtype=torch.bool, device=dev)
        return cls(
            deck=torch.zeros(n, NUM_CARDS, **i64), hands=cards, known=cards.clone(), passed=cards.clone(),
            pile=torch.zeros(n, NUM_CARDS, **i64), pile_len=torch.zeros(n, **i64),
            pile_mask=torch.zeros(n, NUM_CARDS, dtype=torch.bool, device=dev), stock_pos=torch.zeros(n, **i64),
            upcard=torch.zeros(n, **i64), knock_limit=torch.zeros(n, **i64), phase=torch.zeros(n, **i64),
            current=torch.zeros(n, **i64), dealer=torch.zeros(n, **i64), offers_declined=torch.zeros(n, **i64),
            must_draw_stock=torch.zeros(n, dtype=torch.bool, device=dev), taken_card=torch.full((n,), -1, **i64),
            discards=torch.zeros(n, **i64), reshuffles=torch.zeros(n, **i64),
            last_permutation=torch.zeros(n, NUM_CARDS, **i64),
            totals=torch.zeros(n, p, **i64), rounds_won=torch.zeros(n, p, **i64), rounds_lost=torch.zeros(n, p, **i64),
            rounds_played=torch.zeros(n, **i64),
            legal_action_mask=torch.zeros(n, NUM_ACTIONS, dtype=torch.bool, device=dev),
            deadwood_after=torch.zeros(n, NUM_CARDS, **i64), hand_deadwood=torch.zeros(n, **i64),
            observation=torch.zeros(n, observation_size, dtype=torch.float32, device=dev), generator=generator,
            rules=rules)

    @property
    def num_envs(self) -> int:
        return self.hands.shape[0]

    @property
    def num_players(self) -> int:
        return self.hands.shape[1]

    @property
    def device(self) -> torch.device:
        return self.hands.device

    def clone(self) -> TensorState:
        """A copy that shares nothing with this state, the generator's position included: both
        continue with the same draws."""
        generator = torch.Generator(device=self.device)
        generator.set_state(self.generator.get_state())
        tensors = {field.name: getattr(self, field.name).clone() for field in dataclasses.fields(self)
                   if field.name not in ("generator", "rules")}
        return TensorState(**tensors, generator=generator, rules=self.rules)  # (a RulesConfig is immutable)

    def hand_masks(self) -> torch.Tensor:
        """(N, P) int64: every seat's hand as a 52-bit card mask (hidden information: for tools,
        scripted opponents and tests, not agents)."""
        return card_masks(self.hands)


def card_masks(cards: torch.Tensor) -> torch.Tensor:
    """``(..., 52)`` bool card planes as ``(...)`` int64 52-bit masks (card id ``c`` is bit ``c``)."""
    bits = 1 << torch.arange(NUM_CARDS, dtype=torch.int64, device=cards.device)
    return (cards.long() * bits).sum(-1)


__all__ = ["TensorState", "card_masks"]
