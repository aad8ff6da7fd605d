"""``simple``: Neller's SimpleGinRummyPlayer, adapted to the Oklahoma knock limit.

Todd Neller's simple player for the EAAI gin rummy challenge plays by three rules; here they are
with the knock limit of Oklahoma Gin in place of the fixed 10:

* **Draw**: take the face-up card (action 1, also when the upcard is offered) only if it would
  be part of some meld with the hand: a set (two more cards of its rank in hand) or a run (with
  hand cards of its suit, three or more consecutive ranks through it). Otherwise draw from the
  stock (0), or pass (2) while the upcard is offered.
* **Knock** as soon as a knock is legal (deadwood after the face-down discard within the knock
  limit; gin only under an Ace upcard), discarding the card that leaves the least deadwood.
* **Discard** otherwise the card, other than the one just taken from the pile, that leaves the
  least deadwood; ties at random.

The same policy runs on the engine state directly (``simple_action_for_state``) for the
rollouts of the ``search`` bot; both give the same action for the same random tie-break.
"""

from __future__ import annotations

import random

from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from ..rules.cards import NUM_RANKS, SUIT_MASK
from ..rules.melds import deadwood_of_mask
from ..rules.round import Phase, RoundState
from ._view import view


def in_some_meld(hand: int, card: int) -> bool:
    """True if ``card`` forms a set or a run with cards of ``hand`` (a mask that may hold it or not)."""
    rank = card % NUM_RANKS
    suit = card // NUM_RANKS
    same_rank = 0
    for s in range(4):
        if s != suit and hand >> (s * NUM_RANKS + rank) & 1:
            same_rank += 1
    if same_rank >= 2:
        return True
    suit_cards = ((hand >> (suit * NUM_RANKS)) & SUIT_MASK) | (1 << rank)
    low = rank
    while low > 0 and suit_cards >> (low - 1) & 1:
        low -= 1
    high = rank
    while high < NUM_RANKS - 1 and suit_cards >> (high + 1) & 1:
        high += 1
    return high - low >= 2


def least_deadwood_discards(hand: int, candidates: list[int]) -> tuple[int, list[int]]:
    """``(least deadwood left, the candidate cards reaching it)`` for discarding one card of ``hand``."""
    best = 1 << 30
    cards: list[int] = []
    for card in candidates:
        value = deadwood_of_mask(hand & ~(1 << card))
        if value < best:
            best, cards = value, [card]
        elif value == best:
            cards.append(card)
    return best, cards


def _pick(rng: random.Random, options: list[int]) -> int:
    return options[0] if len(options) == 1 else options[rng.randrange(len(options))]


class SimpleBot:
    """Neller's simple player for Oklahoma Gin (see the module docstring). ``act(observation) -> int``."""

    name = "simple"

    def __init__(self, seed: int | None = None, **_ignored):
        self.rng = random.Random(seed)

    def act(self, observation: dict) -> int:
        v = view(observation)
        legal = v.legal
        if not legal:
            raise ValueError("no legal action: this observation is not for the agent to act")
        if len(legal) == 1:
            return legal[0]
        if v.phase is Phase.OFFER or v.phase is Phase.DRAW:
            if TAKE_DISCARD in legal and v.discard_top >= 0 and in_some_meld(v.hand, v.discard_top):
                return TAKE_DISCARD
            return PASS if PASS in legal else DRAW_STOCK
        knocks = v.legal_knocks()
        if knocks:
            _, best = least_deadwood_discards(v.hand, knocks)
            return KNOCK_BASE + _pick(self.rng, best)
        _, best = least_deadwood_discards(v.hand, v.legal_discards())
        return DISCARD_BASE + _pick(self.rng, best)


def simple_action_for_state(state: RoundState, rng: random.Random) -> int:
    """The simple policy's action for the seat to act in an engine ``RoundState`` (full information
    is there, but only that seat's hand, the discard top and the knock limit are used)."""
    phase = state.phase
    hand = state.hands[state.current]
    if phase is Phase.DISCARD:
        taken = state.taken_card
        forbidden = 0 if taken < 0 or state.config.allow_discard_taken else 1 << taken
        candidates = []
        rest = hand & ~forbidden
        while rest:
            low = rest & -rest
            rest ^= low
            candidates.append(low.bit_length() - 1)
        best, cards = least_deadwood_discards(hand, candidates)
        base = KNOCK_BASE if best <= state.knock_limit else DISCARD_BASE
        return base + _pick(rng, cards)
    if phase is Phase.DRAW:
        if state.must_draw_stock:
            return DRAW_STOCK
        return TAKE_DISCARD if in_some_meld(hand, state.discard_pile[-1]) else DRAW_STOCK
    if phase is Phase.OFFER:
        return TAKE_DISCARD if in_some_meld(hand, state.discard_pile[-1]) else PASS
    raise ValueError("the round is over; no action to choose")
