"""What the seat to act knows of a round, and full round states consistent with it.

A seat sees its own hand, the discard pile (which cards lie there and which one is on top; the
order below the top is not shown), the upcard and the knock limit, the phase, the stock's size,
the reshuffle count and, for each opponent, the cards known to be in their hand (taken from the
pile and not thrown since) and the cards they passed or threw. ``InfoSet`` holds exactly that for
the seat to act, from its point of view: it is seat 0 and opponent ``k`` sits ``k`` seats after
it, as in the observation (docs/api.md). Hidden are the opponents' other cards and the stock.

A *determinization* is a full round state that agrees with an information set.
``InfoSet.state(opponent_hands, stock, rng)`` builds one from a guess of the hidden cards (how
likely a guess is, is the guesser's model of the opponents), and ``InfoSet.sample_state(rng)``
deals the hidden cards uniformly at random (OpenSpiel's ``ResampleFromInfostate`` for this game).
In both, the seat to act is seat 0 of the state, the order of the pile below its top is drawn
with ``rng``, and the count of discards (read only by the ``max_turns`` guard) is estimated from
the pile. ``RoundState.from_parts`` builds a state from explicit parts; its checks live here.

Plain Python, no RL imports, like the rest of ``okgin_env.rules``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .actions import TAKE_DISCARD
from .cards import FULL_DECK_MASK, NUM_CARDS, from_mask
from .config import RulesConfig, is_int
from .round import RoundState
from .round_parts import Phase, int_in, knock_limit_for


@dataclass(frozen=True)
class InfoSet:
    """What the seat to act knows (see the module docstring); card sets are 52-bit masks.

    Build one with ``InfoSet.of_state(state)`` (the seat to act of an engine state) or
    ``InfoSet.from_view(view, config)`` (an ``okgin_env.observation.ObservationView`` of the seat
    to act); the fields are checked for consistency (ValueError).
    """

    config: RulesConfig
    hand: int
    #: Per opponent ``k`` (index ``k - 1``): cards known to be in their hand, cards they passed or threw.
    opponent_known: tuple[int, ...]
    opponent_passed: tuple[int, ...]
    discard_pile: int
    discard_top: int  # -1 if the pile is empty
    upcard: int
    knock_limit: int
    phase: Phase
    seat_from_dealer: int  # 0: this seat deals; 1: first after the dealer, ...
    stock_size: int
    taken_card: int  # the card taken from the pile this turn (phase DISCARD), else -1
    must_draw_stock: bool  # every seat passed the upcard: this first draw is from the stock
    reshuffles: int

    @classmethod
    def of_state(cls, state: RoundState) -> InfoSet:
        """What the seat to act of ``state`` knows."""
        n, seat = state.num_players, state.current
        if state.phase is Phase.OVER:
            raise ValueError("the round is over: no seat is to act")
        others = [(seat + k) % n for k in range(1, n)]
        pile = 0
        for card in state.discard_pile:
            pile |= 1 << card
        return cls(
            config=state.config,
            hand=state.hands[seat],
            opponent_known=tuple(state.known[s] for s in others),
            opponent_passed=tuple(state.passed[s] for s in others),
            discard_pile=pile,
            discard_top=state.discard_top,
            upcard=state.upcard,
            knock_limit=state.knock_limit,
            phase=state.phase,
            seat_from_dealer=(seat - state.dealer) % n,
            stock_size=len(state.stock),
            taken_card=state.taken_card if state.phase is Phase.DISCARD else -1,
            must_draw_stock=state.phase is Phase.DRAW and state.must_draw_stock,
            reshuffles=state.reshuffles,
        )

    @classmethod
    def from_view(cls, view: Any, config: RulesConfig) -> InfoSet:
        """What an observation shows, from its decoded view (``okgin_env.observation.view``; read by
        attribute, so the rules do not import the codec); ``config`` gives the rules it does not show."""
        if not view.legal:
            raise ValueError("the observation is not for the seat to act (no legal action)")
        if view.num_players != config.num_players:
            raise ValueError(f"the observation is for {view.num_players} players, the rules for {config.num_players}")
        phase = view.phase
        return cls(
            config=config,
            hand=view.hand,
            opponent_known=tuple(view.opponent_known),
            opponent_passed=tuple(view.opponent_passed),
            discard_pile=view.discard_pile,
            discard_top=view.discard_top,
            upcard=view.upcard,
            knock_limit=view.knock_limit,
            phase=phase,
            seat_from_dealer=view.seat_from_dealer,
            stock_size=view.stock_size,
            taken_card=view.taken_card if phase is Phase.DISCARD else -1,
            must_draw_stock=phase is Phase.DRAW and TAKE_DISCARD not in view.legal,
            reshuffles=view.reshuffles,
        )

    def __post_init__(self) -> None:
        config = self.config
        if not isinstance(config, RulesConfig):
            raise ValueError(f"config must be a RulesConfig, got {type(config).__name__}")
        if self.phase not in (Phase.OFFER, Phase.DRAW, Phase.DISCARD):
            raise ValueError(f"phase must be OFFER, DRAW or DISCARD (a seat is to act), got {self.phase!r}")
        n, size = config.num_players, config.hand_size
        if len(self.opponent_known) != n - 1 or len(self.opponent_passed) != n - 1:
            raise ValueError(f"opponent_known and opponent_passed must hold one mask per opponent ({n - 1})")
        masks = {"hand": self.hand, "discard_pile": self.discard_pile}
        masks.update({f"opponent_known[{i}]": m for i, m in enumerate(self.opponent_known)})
        masks.update({f"opponent_passed[{i}]": m for i, m in enumerate(self.opponent_passed)})
        for name, mask in masks.items():
            if not is_int(mask) or not 0 <= mask <= FULL_DECK_MASK:
                raise ValueError(f"{name} must be a 52-bit card mask (an int in 0..2**52-1), got {mask!r}")
        ranges = {
            "discard_top": (-1, NUM_CARDS - 1),
            "upcard": (0, NUM_CARDS - 1),
            "seat_from_dealer": (0, n - 1),
            "stock_size": (0, NUM_CARDS),
            "taken_card": (-1, NUM_CARDS - 1),
            "reshuffles": (0, config.max_reshuffles),
        }
        for name, (low, high) in ranges.items():
            int_in(name, getattr(self, name), low, high)
        limit = knock_limit_for(self.upcard, config)
        if self.knock_limit != limit:
            raise ValueError(f"knock_limit={self.knock_limit!r} does not match the upcard's ({limit})")
        if self.taken_card >= 0 and (self.phase is not Phase.DISCARD or not self.hand >> self.taken_card & 1):
            raise ValueError("taken_card must be a card of the hand, in phase DISCARD only")
        if self.must_draw_stock not in (True, False) or (self.must_draw_stock and self.phase is not Phase.DRAW):
            raise ValueError("must_draw_stock must be True or False, and True in phase DRAW only")
        seen = self.hand | self.discard_pile
        if self.hand & self.discard_pile:
            raise ValueError("a card is both in the hand and in the discard pile")
        expected = size + (self.phase is Phase.DISCARD)
        if self.hand.bit_count() != expected:
            held = self.hand.bit_count()
            raise ValueError(f"the hand holds {held} cards; expected {expected} in phase {self.phase.name}")
        for k, known in enumerate(self.opponent_known, start=1):
            if known & seen:
                raise ValueError(f"opponent {k} is shown holding a card of the hand, the pile or another opponent")
            if known.bit_count() > size:
                raise ValueError(f"opponent {k} is shown holding more than {size} cards")
            seen |= known
        if self.discard_top >= 0 and not self.discard_pile >> self.discard_top & 1:
            raise ValueError("the discard top is not in the discard pile")
        hidden = sum(size - known.bit_count() for known in self.opponent_known)
        if (FULL_DECK_MASK & ~seen).bit_count() != hidden + self.stock_size:
            raise ValueError(
                f"the information set is inconsistent: {(FULL_DECK_MASK & ~seen).bit_count()} unseen cards "
                f"for {hidden} hidden opponent cards and a stock of {self.stock_size}"
            )

    @property
    def unseen(self) -> int:
        """The cards this seat has not seen (opponents' hidden cards and the stock), as a mask."""
        seen = self.hand | self.discard_pile
        for known in self.opponent_known:
            seen |= known
        return FULL_DECK_MASK & ~seen

    def state(
        self,
        opponent_hands: Sequence[int],
        stock: Sequence[int],
        rng: random.Random,
        *,
        engine_rng: np.random.Generator | None = None,
        validate: bool = True,
    ) -> RoundState:
        """The round state with this seat as seat 0 and the guessed hidden cards: ``opponent_hands``
        (masks, opponent ``k`` at index ``k - 1``) and ``stock`` (top last). ``rng`` orders the pile
        below its top; ``engine_rng`` is the state's generator for stock reshuffles. With
        ``validate`` a guess that contradicts what the seat knows raises ValueError;
        ``validate=False`` skips every check (a sampler's hot loop whose guesses are right by construction)."""
        config = self.config
        n = config.num_players
        if validate:
            if len(opponent_hands) != n - 1:
                raise ValueError(f"opponent_hands must hold one mask per opponent ({n - 1}), got {len(opponent_hands)}")
            for k, (hand, known) in enumerate(zip(opponent_hands, self.opponent_known), start=1):
                if known & ~hand:
                    raise ValueError(f"the guessed hand of opponent {k} lacks cards they are known to hold")
            if len(stock) != self.stock_size:
                raise ValueError(f"the guessed stock holds {len(stock)} cards; the seat sees {self.stock_size}")
        top = self.discard_top
        below_top = from_mask(self.discard_pile & ~(1 << top)) if top >= 0 else []
        rng.shuffle(below_top)
        pile = below_top + ([top] if top >= 0 else [])
        phase = self.phase
        taken = self.taken_card
        return RoundState.from_parts(
            config,
            hands=[self.hand, *opponent_hands],
            stock=stock,
            discard_pile=pile,
            upcard=self.upcard,
            knock_limit=self.knock_limit,
            dealer=(-self.seat_from_dealer) % n,
            current=0,
            phase=phase,
            taken_card=taken,
            known=[1 << taken if taken >= 0 else 0, *self.opponent_known],
            passed=[0, *self.opponent_passed],
            offers_declined=(self.seat_from_dealer - 1) % n if phase is Phase.OFFER else 0,
            must_draw_stock=self.must_draw_stock,
            discards=max(0, self.discard_pile.bit_count() - 1),
            reshuffles=self.reshuffles,
            rng=engine_rng,
            validate=validate,
        )

    def sample_state(self, rng: random.Random, *, engine_rng: np.random.Generator | None = None) -> RoundState:
        """A determinization with the hidden cards dealt uniformly at random (each opponent gets its
        known cards plus unseen ones up to a full hand; the rest, shuffled, is the stock)."""
        unseen = from_mask(self.unseen)
        rng.shuffle(unseen)
        hands = []
        for known in self.opponent_known:
            hand = known
            for _ in range(self.config.hand_size - known.bit_count()):
                hand |= 1 << unseen.pop()
            hands.append(hand)
        return self.state(hands, unseen, rng, engine_rng=engine_rng)


__all__ = ["InfoSet"]
