"""What the observation-reading bots work out from one seat's view: the unseen cards and the
one-draw outlook of a hand (``draw_outlook``), with the exact meld solver.

"Unseen" cards are those the seat has not seen where they are: the stock and the opponents' hidden
cards (not its hand, not the discard pile, not the cards an opponent is known to hold). The
outlook averages over them as if each were equally likely to be drawn next. The held-out bots
(``okgin_env.bots.heldout``) and ``lookahead`` share these definitions and the turn structure of
``UnseenCardsPlayer``; the network's outlook inputs (``okgin_env.features.outlook_features``)
compute the same three numbers in numpy.
"""

from __future__ import annotations

import random
from typing import NamedTuple

from ..observation import ObservationView, view
from ..rules.actions import DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from ..rules.cards import FULL_DECK_MASK, from_mask
from ..rules.melds import best_discard_deadwood_of_mask, deadwood_of_mask
from ..rules.round import Phase


class Outlook(NamedTuple):
    """A hand's next stock draw, over the unseen cards (then discarding its best card)."""

    knock: float  # share of the draws after which a knock is legal (deadwood within the limit)
    gin: float  # share of the draws after which the hand is gin (no deadwood)
    mean_deadwood: float  # mean least deadwood left


def unseen_cards(v: ObservationView) -> int:
    """Cards the observer has not seen where they are: the stock and the opponents' hidden cards."""
    known = 0
    for cards in v.opponent_known:
        known |= cards
    return FULL_DECK_MASK & ~v.hand & ~v.discard_pile & ~known


def card_bits(mask: int) -> list[int]:
    """Each card of ``mask`` as its own one-bit mask, ascending."""
    return [1 << card for card in from_mask(mask)]


def draw_outlook(hand: int, unseen_bits: list[int], knock_limit: int) -> Outlook:
    """The ``Outlook`` of ``hand`` (a mask) drawing one of ``unseen_bits`` (one-bit masks) next;
    with no unseen card: no knock, no gin, the hand's own deadwood."""
    if not unseen_bits:
        return Outlook(0.0, 0.0, float(deadwood_of_mask(hand)))
    knocks = gins = total = 0
    for bit in unseen_bits:
        best = best_discard_deadwood_of_mask(hand | bit)
        total += best
        knocks += best <= knock_limit
        gins += best == 0
    count = len(unseen_bits)
    return Outlook(knocks / count, gins / count, total / count)


def least_deadwood_after_take(hand: int, top: int) -> int:
    """Least deadwood left after taking ``top`` and discarding a hand card (never ``top`` itself)."""
    with_top = hand | 1 << top
    return min(deadwood_of_mask(with_top ^ 1 << card) for card in from_mask(hand))


TIE = 1e-9  # scores closer than this are ties (broken by the bot's seeded generator)


def best_scored(rng: random.Random, scored: list[tuple[float, int]]) -> int:
    """The item (an action or a card) of the highest score, ties at random."""
    top = max(score for score, _ in scored)
    options = [item for score, item in scored if score >= top - TIE]
    return options[0] if len(options) == 1 else options[rng.randrange(len(options))]


def least_deadwood_knock(rng: random.Random, v: ObservationView) -> tuple[int, int]:
    """``(deadwood, knock action)`` of the legal knock leaving the least deadwood, ties at random."""
    scored = [(-deadwood_of_mask(v.hand ^ 1 << card), KNOCK_BASE + card) for card in v.legal_knocks()]
    action = best_scored(rng, scored)
    return -max(score for score, _ in scored), action


class UnseenCardsPlayer:
    """``act(observation) -> int`` for a bot that decides from its view and the unseen cards: a
    forced action is played at once; otherwise ``takes(v, unseen)`` decides whether to take the
    face-up card (else draw from the stock, or pass the upcard) and ``discard_or_knock(v, unseen)``
    returns the discard-phase action. ``unseen`` holds one-bit masks (``card_bits``)."""

    def act(self, observation: dict) -> int:
        v = view(observation)
        legal = v.legal
        if not legal:
            raise ValueError("no legal action: this observation is not for the agent to act")
        if len(legal) == 1:
            return legal[0]
        unseen = card_bits(unseen_cards(v))
        if v.phase is Phase.OFFER or v.phase is Phase.DRAW:
            if TAKE_DISCARD in legal and v.discard_top >= 0 and self.takes(v, unseen):
                return TAKE_DISCARD
            return PASS if PASS in legal else DRAW_STOCK
        return self.discard_or_knock(v, unseen)

    def takes(self, v: ObservationView, unseen: list[int]) -> bool:
        raise NotImplementedError

    def discard_or_knock(self, v: ObservationView, unseen: list[int]) -> int:
        raise NotImplementedError
