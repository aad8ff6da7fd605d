"""Card relations and solver facts: the definitions every feature is built on (``okgin_env.features``).

Relations are bit tricks on 52-bit card masks (docs/rules.md §1: ``id = suit * 13 + rank``); each
function works on one Python int and, element by element, on a numpy int64 array of masks, so the
batch engine evaluates the very same definitions for all its games at once. The solver facts call
the exact meld solver (``okgin_env.rules.melds``).

``_Facts`` gathers what one decision's network inputs share (the hand's deadwood, each card's
deadwood after it is put away, computed at most once), read from the seat's view
(``_training_facts``) or straight from the round state (``facts_of_state``). The env's slices are
built in ``planes``, the network's inputs in ``network``, the opt-in next-draw columns in ``outlook``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..observation import KNOCK_LIMIT_SCALE, STOCK_SCALE, ObservationView, seat_view
from ..rules.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS, SUIT_MASK
from ..rules.melds import best_discard_deadwood_of_mask, deadwood_after_discards, deadwood_of_mask
from ..rules.round import RoundState

# ----------------------------------------------------------------------------- card relations
# Every function here works on a Python int mask and, element by element, on a numpy int64 array of
# masks (52 bits fit): the training path asks about one decision, the batch path about all at once.


def _in_every_suit(suit_bits: int) -> int:
    return sum(suit_bits << (NUM_RANKS * suit) for suit in range(NUM_SUITS))


# _RANKS_FROM[d]: the cards of rank >= d; _RANKS_UP_TO[d]: the cards of rank <= 12 - d (every suit).
_RANKS_FROM = tuple(_in_every_suit(SUIT_MASK & ~((1 << d) - 1)) for d in range(NUM_RANKS))
_RANKS_UP_TO = tuple(_in_every_suit(SUIT_MASK >> d) for d in range(NUM_RANKS))
_ALL_CARDS = (1 << NUM_CARDS) - 1


def _same_rank(mask):
    """Every card of the same rank as some card of ``mask``."""
    ranks = (mask | mask >> 13 | mask >> 26 | mask >> 39) & SUIT_MASK
    return ranks | ranks << 13 | ranks << 26 | ranks << 39


def _suit_neighbours(mask, distance: int):
    """Cards ``distance`` ranks away in the same suit (no wrap between suits)."""
    return (mask << distance & _RANKS_FROM[distance]) | (mask >> distance & _RANKS_UP_TO[distance])


def _unseen(hand, discard_pile, known):
    """The cards a seat has not seen: in no known hand (its own, the opponents' known cards) and not in the pile."""
    return _ALL_CARDS & ~(hand | discard_pile | known)


def _opponent_wants(known):
    """Cards that could meld with a card an opponent is known to hold (and those cards themselves)."""
    return _same_rank(known) | _suit_neighbours(known, 1) | _suit_neighbours(known, 2)


def _opponent_avoids(passed):
    """Cards of the rank of a card an opponent passed or threw, or next to it in its suit."""
    return _same_rank(passed) | _suit_neighbours(passed, 1)


def _partner_offsets(mask):
    """The 7 masks whose bit ``c`` says that the partner of ``c`` at one offset is in ``mask``: the
    three other suits of its rank (rotations by 13, 26, 39 cards) and one and two ranks down and
    up in its suit. Summed per card they count ``c``'s meld partners in ``mask``."""
    rotations = [(mask >> shift | mask << (NUM_CARDS - shift)) & _ALL_CARDS for shift in (13, 26, 39)]
    return rotations + [mask << d & _RANKS_FROM[d] for d in (1, 2)] + [mask >> d & _RANKS_UP_TO[d] for d in (1, 2)]


#: The cards that could meld with each card: its rank, and up to two ranks away in its suit.
_MELD_PARTNERS = tuple(
    (_same_rank(1 << card) | _suit_neighbours(1 << card, 1) | _suit_neighbours(1 << card, 2)) & ~(1 << card)
    for card in range(NUM_CARDS)
)


def _deadwood_after(hand: int, card_bit: int) -> int:
    """The least deadwood once the card ``card_bit`` is put away (a discard and a knock leave the same hand)."""
    return deadwood_of_mask(hand & ~card_bit)


def _deadwood_after_taking(hand: int, top_bit: int) -> int:
    """The least deadwood of the hand plus the face-up card, less its best card (the taken card included)."""
    return best_discard_deadwood_of_mask(hand | top_bit)


class _Facts:
    """What one decision's network features share, from the seat's own observation: computed once."""

    __slots__ = ("hand", "taken", "top_card", "opponent_known", "unseen", "opponent_wants", "opponent_avoids",
                 "knock_limit", "stock_fraction", "hand_deadwood", "_after", "_discards_known")

    def __init__(self, hand: int, taken: int, top_card: int, discard_pile: int, known: int, passed: int,
                 knock_limit: float, stock_fraction: float):
        """Card sets are masks (``taken``: the card taken from the pile this turn, or 0; ``known`` /
        ``passed``: over every opponent); ``top_card`` is an id (-1: empty pile)."""
        self.hand = hand
        self.taken = taken
        self.top_card = top_card
        self.opponent_known = known
        self.unseen = _unseen(hand, discard_pile, known)
        self.opponent_wants = _opponent_wants(known)
        self.opponent_avoids = _opponent_avoids(passed)
        self.knock_limit = knock_limit
        self.stock_fraction = stock_fraction
        self.hand_deadwood = deadwood_of_mask(hand)
        self._after: dict[int, int] = {}
        self._discards_known = False

    def deadwood_after(self, card: int) -> int:
        """``_deadwood_after`` of ``card``, or with ``card = -1`` ``_deadwood_after_taking``; each once."""
        after = self._after.get(card)
        if after is None:
            if card < 0:
                after = _deadwood_after_taking(self.hand, 1 << self.top_card)
                self._after[card] = after
            else:
                after = self.discard_afters()[card]
        return after

    def discard_afters(self) -> dict[int, int]:
        """``{card: _deadwood_after(card)}`` for every card of the hand (and the ``-1`` entry once
        asked for): a discard decision asks about (nearly) every card, so all in one solver pass."""
        if not self._discards_known:
            self._after.update(deadwood_after_discards(self.hand, self.hand))
            self._discards_known = True
        return self._after


# ----------------------------------------------------------------------------- one decision's facts


@lru_cache(maxsize=None)
def _stored(value: int, scale: float) -> float:
    """``value / scale`` as the observation stores it (float32). The features were trained on the
    stored numbers (a knock limit of 7 reads 6.99999988...), and the shipped network's inputs
    must stay bit for bit what they were."""
    return float(np.float32(value / scale))


def _training_facts(view: ObservationView) -> _Facts:
    """The facts of a decision as the network reads them: knock limit and stock as stored."""
    known = passed = 0
    for k_known, k_passed in zip(view.opponent_known, view.opponent_passed):
        known |= k_known
        passed |= k_passed
    taken = 1 << view.taken_card if view.taken_card >= 0 else 0
    knock_limit = _stored(view.knock_limit, KNOCK_LIMIT_SCALE) * KNOCK_LIMIT_SCALE
    return _Facts(view.hand, taken, view.discard_top, view.discard_pile, known, passed, knock_limit,
                  _stored(view.stock_size, STOCK_SCALE))


def facts_of_state(round_state: RoundState, observer: int) -> _Facts:
    """``_training_facts(view_of_state(round_state, ..., observer))`` read straight from the state,
    without building the view (labelling's rollouts hold the states). Equal field by field
    (``tests/test_features.py``)."""
    st = round_state
    seen = seat_view(st, observer)
    known = passed = 0
    for k_known, k_passed in zip(seen.opponent_known, seen.opponent_passed):
        known |= k_known
        passed |= k_passed
    taken = seen.planes[1]  # a mask, as _Facts holds it
    knock_limit = _stored(st.knock_limit, KNOCK_LIMIT_SCALE) * KNOCK_LIMIT_SCALE
    return _Facts(seen.hand, taken, seen.discard_top, seen.discard_pile, known, passed, knock_limit,
                  _stored(len(st.stock), STOCK_SCALE))


# ----------------------------------------------------------------------------- bit counts of many masks

_POPCOUNT16 = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.int64)


def _popcount(masks: np.ndarray) -> np.ndarray:
    """Set bits of each 52-bit mask (int64), four 16-bit table lookups (numpy >= 1.24 has no bit count)."""
    return (_POPCOUNT16[masks & 0xFFFF] + _POPCOUNT16[masks >> 16 & 0xFFFF]
            + _POPCOUNT16[masks >> 32 & 0xFFFF] + _POPCOUNT16[masks >> 48 & 0xFFFF])


__all__ = ["facts_of_state"]
