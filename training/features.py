"""Per-action features computed from the observation alone.

The network scores each legal action from (a) the whole observation and (b) a short vector of
features of that action, computed here with the exact meld solver: what the hand's deadwood
becomes, whether the card helps a known opponent card, how many unseen cards could still meld
with it. These are facts a player can work out from what they see, so using them leaks nothing;
they spare the network from learning meld arithmetic from 52-card planes, which is what makes
learning fast enough on two CPU cores.

They are computed at every decision of training, labelling and play, so what all actions of a
decision share (the hand's deadwood, the opponents' neighbourhoods) is computed once per decision
(``decision_features``), and each discard's deadwood once for its plain discard and its knock.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from okgin_env.observation import KNOCK_LIMIT_SCALE, STOCK_SCALE, ObservationView
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from okgin_env.rules.cards import CARD_VALUES, NUM_CARDS, NUM_RANKS, NUM_SUITS, SUIT_MASK, to_mask
from okgin_env.rules.melds import best_discard_deadwood_of_mask, deadwood_of_mask

ACTION_KINDS = 5  # draw stock, take discard, pass, discard, knock
NUM_ACTION_FEATURES = ACTION_KINDS + 12
NUM_CONTEXT_FEATURES = 6
MAX_LEGAL_ACTIONS = 24  # at most 11 discards + 11 knocks in a discard phase; 2 elsewhere


def _in_every_suit(suit_bits: int) -> int:
    return sum(suit_bits << (NUM_RANKS * suit) for suit in range(NUM_SUITS))


# _RANKS_FROM[d]: the cards of rank >= d; _RANKS_UP_TO[d]: the cards of rank <= 12 - d (every suit).
_RANKS_FROM = tuple(_in_every_suit(SUIT_MASK & ~((1 << d) - 1)) for d in range(NUM_RANKS))
_RANKS_UP_TO = tuple(_in_every_suit(SUIT_MASK >> d) for d in range(NUM_RANKS))


def _same_rank(mask: int) -> int:
    """Every card of the same rank as some card of ``mask``."""
    ranks = (mask | mask >> 13 | mask >> 26 | mask >> 39) & SUIT_MASK
    return ranks | ranks << 13 | ranks << 26 | ranks << 39


def _suit_neighbours(mask: int, distance: int) -> int:
    """Cards ``distance`` ranks away in the same suit (no wrap between suits)."""
    return (mask << distance & _RANKS_FROM[distance]) | (mask >> distance & _RANKS_UP_TO[distance])


#: The cards that could meld with each card: its rank, and up to two ranks away in its suit.
_MELD_PARTNERS = tuple(
    (_same_rank(1 << card) | _suit_neighbours(1 << card, 1) | _suit_neighbours(1 << card, 2)) & ~(1 << card)
    for card in range(NUM_CARDS)
)
_ALL_CARDS = (1 << NUM_CARDS) - 1


@lru_cache(maxsize=None)
def _stored(value: int, scale: float) -> float:
    """``value / scale`` as the observation stores it (float32). The features were trained on the
    stored numbers (a knock limit of 7 reads 6.99999988...), and the shipped network's inputs
    must stay bit for bit what they were."""
    return float(np.float32(value / scale))


class _Inputs:
    """What the features read from the one decoded view (``okgin_env.observation.view``), and
    what every action's features share, computed once per decision."""

    __slots__ = ("hand", "taken", "top_card", "opponent_known", "unseen", "opponent_wants", "opponent_avoids",
                 "knock_limit", "stock_fraction", "hand_deadwood")

    def __init__(self, view: ObservationView):
        known = passed = 0
        for k_known, k_passed in zip(view.opponent_known, view.opponent_passed):
            known |= k_known
            passed |= k_passed
        self.hand = view.hand
        self.taken = 1 << view.taken_card if view.taken_card >= 0 else 0
        self.top_card = view.discard_top
        self.opponent_known = known
        self.unseen = _ALL_CARDS & ~(view.hand | view.discard_pile | known)
        self.opponent_wants = _same_rank(known) | _suit_neighbours(known, 1) | _suit_neighbours(known, 2)
        self.opponent_avoids = _same_rank(passed) | _suit_neighbours(passed, 1)
        self.knock_limit = _stored(view.knock_limit, KNOCK_LIMIT_SCALE) * KNOCK_LIMIT_SCALE
        self.stock_fraction = _stored(view.stock_size, STOCK_SCALE)
        self.hand_deadwood = deadwood_of_mask(view.hand)


def _card_features(inputs: _Inputs, card: int, hand_after: int) -> list[float]:
    bit = 1 << card
    partners = _MELD_PARTNERS[card]
    return [
        CARD_VALUES[card] / 10.0,
        (partners & inputs.unseen).bit_count() / 6.0,  # unseen cards that could still meld with it
        (partners & hand_after).bit_count() / 4.0,  # hand cards it connects to
        1.0 if inputs.opponent_wants & bit else 0.0,  # likely useful to the opponent
        1.0 if inputs.opponent_avoids & bit else 0.0,  # the opponent threw or passed a neighbour
    ]


def _action_rows(inputs: _Inputs, actions: Sequence[int]) -> list[list[float]]:
    """Each action's ``NUM_ACTION_FEATURES`` features, as Python floats (converted to float32 by
    the caller in one go: the same rounding as writing them one by one)."""
    hand, knock_limit, stock = inputs.hand, inputs.knock_limit, inputs.stock_fraction
    hand_deadwood = inputs.hand_deadwood
    deadwood_after: dict[int, int] = {}  # a card's plain discard and knock leave the same hand
    rows = []
    for action in actions:
        if action == DRAW_STOCK:
            rows.append([1.0] + [0.0] * 15 + [stock])
        elif action == TAKE_DISCARD or action == PASS:
            kind = [0.0, 1.0, 0.0, 0.0, 0.0] if action == TAKE_DISCARD else [0.0, 0.0, 1.0, 0.0, 0.0]
            top_card = inputs.top_card
            if top_card < 0:
                rows.append(kind + [0.0] * 11 + [stock])
                continue
            after = deadwood_after.get(-1)
            if after is None:
                after = deadwood_after[-1] = best_discard_deadwood_of_mask(hand | 1 << top_card)
            rows.append(kind + [
                after / 50.0,
                (hand_deadwood - after) / 20.0,
                1.0 if after <= knock_limit else 0.0,
                *_card_features(inputs, top_card, hand),
                0.0, 0.0, 0.0,
                stock,
            ])
        else:
            knock = action >= KNOCK_BASE
            card = action - (KNOCK_BASE if knock else DISCARD_BASE)
            after_mask = hand & ~(1 << card)
            after = deadwood_after.get(card)
            if after is None:
                after = deadwood_after[card] = deadwood_of_mask(after_mask)
            rows.append([
                0.0, 0.0, 0.0, 0.0 if knock else 1.0, 1.0 if knock else 0.0,
                after / 50.0,
                (hand_deadwood - after) / 20.0,
                1.0 if after <= knock_limit else 0.0,
                *_card_features(inputs, card, after_mask),
                1.0 if after == 0 else 0.0,
                (knock_limit - after) / 10.0 if knock else 0.0,
                1.0 if inputs.taken >> card & 1 else 0.0,
                stock,
            ])
    return rows


def _context(inputs: _Inputs) -> np.ndarray:
    return np.array(
        [
            inputs.hand_deadwood / 50.0,
            inputs.knock_limit / 10.0,
            inputs.stock_fraction,
            inputs.opponent_known.bit_count() / 5.0,
            inputs.hand.bit_count() / 11.0,
            1.0 if inputs.knock_limit == 0 else 0.0,
        ],
        dtype=np.float32,
    )


def action_features(view: ObservationView, actions: Sequence[int]) -> np.ndarray:
    """``(len(actions), NUM_ACTION_FEATURES)`` features of each legal action."""
    rows = np.zeros((len(actions), NUM_ACTION_FEATURES), dtype=np.float32)
    if len(actions):
        rows[:] = _action_rows(_Inputs(view), actions)
    return rows


def context_features(view: ObservationView) -> np.ndarray:
    """``(NUM_CONTEXT_FEATURES,)`` features of the decision as a whole."""
    return _context(_Inputs(view))


def decision_features(
    view: ObservationView, actions: Sequence[int], width: int = MAX_LEGAL_ACTIONS
) -> tuple[np.ndarray, np.ndarray]:
    """``(context_features(view), action_features(view, actions)`` padded with zero rows to ``width``
    rows), reading the view once: the per-decision path of training and play (``encode_decision``)."""
    if len(actions) > width:
        raise ValueError(f"{len(actions)} actions do not fit in {width} rows")
    inputs = _Inputs(view)
    rows = np.zeros((width, NUM_ACTION_FEATURES), dtype=np.float32)
    if len(actions):
        rows[: len(actions)] = _action_rows(inputs, actions)
    return _context(inputs), rows


# ----------------------------------------------------------------------------- training-time critic inputs

PRIVILEGED_STOCK_CARDS = 4  # the next stock cards, in drawing order, each one-hot
NUM_PRIVILEGED_FEATURES = NUM_CARDS * (2 + PRIVILEGED_STOCK_CARDS) + 3


def privileged_features(state, seat: int) -> np.ndarray:
    """Hidden facts of a round, for the training critic only (never a policy input).

    ``state`` is the engine's ``RoundState`` at ``seat``'s decision: the opponents' hands, the
    stock as a set, the next stock cards in order, and three solver facts (opponents' deadwood,
    whether an opponent is within the knock limit, ``seat``'s deadwood after drawing the stock's
    top card). A critic that knows them predicts the round's points far better than one that sees
    the observation alone, so the advantages it gives the policy are much less noisy.
    """
    out = np.zeros(NUM_PRIVILEGED_FEATURES, dtype=np.float32)
    opponents = 0
    deadwoods = []
    for other in range(state.num_players):
        if other != seat:
            opponents |= state.hands[other]
            deadwoods.append(deadwood_of_mask(state.hands[other]))
    stock = state.stock  # top card last
    cards = np.arange(NUM_CARDS)
    out[:NUM_CARDS] = (opponents >> cards) & 1
    out[NUM_CARDS: 2 * NUM_CARDS] = (to_mask(stock) >> cards) & 1
    for k in range(min(PRIVILEGED_STOCK_CARDS, len(stock))):
        out[(2 + k) * NUM_CARDS + stock[-1 - k]] = 1.0
    scalars = NUM_CARDS * (2 + PRIVILEGED_STOCK_CARDS)
    out[scalars] = min(deadwoods) / 50.0
    out[scalars + 1] = 1.0 if min(deadwoods) <= state.knock_limit else 0.0
    hand = state.hands[seat]
    if stock and hand.bit_count() == state.config.hand_size:
        out[scalars + 2] = best_discard_deadwood_of_mask(hand | 1 << stock[-1]) / 50.0
    else:
        out[scalars + 2] = deadwood_of_mask(hand) / 50.0
    return out
