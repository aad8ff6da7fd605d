"""Per-action features computed from the observation alone.

The network scores each legal action from (a) the whole observation and (b) a short vector of
features of that action, computed here with the exact meld solver: what the hand's deadwood
becomes, whether the card helps a known opponent card, how many unseen cards could still meld
with it. These are facts a player can work out from what they see, so using them leaks nothing;
they spare the network from learning meld arithmetic from 52-card planes, which is what makes
learning fast enough on two CPU cores.
"""

from __future__ import annotations

import numpy as np

from okgin_env.observation import KNOCK_LIMIT_SCALE, STOCK_SCALE, ObservationView
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from okgin_env.rules.cards import CARD_VALUES, NUM_CARDS, SUIT_MASK, to_mask
from okgin_env.rules.melds import best_discard_deadwood_of_mask, deadwood_of_mask

ACTION_KINDS = 5  # draw stock, take discard, pass, discard, knock
NUM_ACTION_FEATURES = ACTION_KINDS + 12
NUM_CONTEXT_FEATURES = 6
MAX_LEGAL_ACTIONS = 24  # at most 11 discards + 11 knocks in a discard phase; 2 elsewhere


def _same_rank(mask: int) -> int:
    """Every card of the same rank as some card of ``mask``."""
    ranks = (mask | mask >> 13 | mask >> 26 | mask >> 39) & SUIT_MASK
    return ranks | ranks << 13 | ranks << 26 | ranks << 39


def _suit_neighbours(mask: int, distance: int) -> int:
    """Cards ``distance`` ranks away in the same suit (no wrap between suits)."""
    result = 0
    for suit in range(4):
        part = (mask >> (13 * suit)) & SUIT_MASK
        result |= (((part << distance) | (part >> distance)) & SUIT_MASK) << (13 * suit)
    return result


def _stored(value: int, scale: float) -> float:
    """``value / scale`` as the observation stores it (float32). The features were trained on the
    stored numbers (a knock limit of 7 reads 6.99999988...), and the shipped network's inputs
    must stay bit for bit what they were."""
    return float(np.float32(value / scale))


class _Inputs:
    """What the features read from the one decoded view (``okgin_env.observation.view``), once."""

    def __init__(self, view: ObservationView):
        self.hand = view.hand
        self.taken = 1 << view.taken_card if view.taken_card >= 0 else 0
        self.top = 1 << view.discard_top if view.discard_top >= 0 else 0
        self.opponent_known = 0
        self.opponent_passed = 0
        for known, passed in zip(view.opponent_known, view.opponent_passed):
            self.opponent_known |= known
            self.opponent_passed |= passed
        self.knock_limit = _stored(view.knock_limit, KNOCK_LIMIT_SCALE) * KNOCK_LIMIT_SCALE
        self.stock_fraction = _stored(view.stock_size, STOCK_SCALE)
        self.unseen = ((1 << NUM_CARDS) - 1) & ~(view.hand | view.discard_pile | self.opponent_known)


def _card_features(view: _Inputs, card: int, hand_after: int) -> list[float]:
    bit = 1 << card
    live = view.unseen
    meld_partners = (_same_rank(bit) | _suit_neighbours(bit, 1) | _suit_neighbours(bit, 2)) & ~bit
    opponent_wants = _same_rank(view.opponent_known) | _suit_neighbours(view.opponent_known, 1) | _suit_neighbours(view.opponent_known, 2)
    opponent_avoids = _same_rank(view.opponent_passed) | _suit_neighbours(view.opponent_passed, 1)
    return [
        CARD_VALUES[card] / 10.0,
        (meld_partners & live).bit_count() / 6.0,  # unseen cards that could still meld with it
        (meld_partners & hand_after).bit_count() / 4.0,  # hand cards it connects to
        1.0 if opponent_wants & bit else 0.0,  # likely useful to the opponent
        1.0 if opponent_avoids & bit else 0.0,  # the opponent threw or passed a neighbour
    ]


def action_features(decoded: ObservationView, actions: list[int]) -> np.ndarray:
    """``(len(actions), NUM_ACTION_FEATURES)`` features of each legal action."""
    view = _Inputs(decoded)
    rows = np.zeros((len(actions), NUM_ACTION_FEATURES), dtype=np.float32)
    hand = view.hand
    hand_deadwood = deadwood_of_mask(hand)
    for row, action in enumerate(actions):
        out = rows[row]
        if action == DRAW_STOCK:
            out[0] = 1.0
        elif action == TAKE_DISCARD or action == PASS:
            out[1 if action == TAKE_DISCARD else 2] = 1.0
            top_card = view.top.bit_length() - 1
            if top_card >= 0:
                after = best_discard_deadwood_of_mask(hand | view.top)
                out[5] = after / 50.0
                out[6] = (hand_deadwood - after) / 20.0
                out[7] = 1.0 if after <= view.knock_limit else 0.0
                out[8:13] = _card_features(view, top_card, hand)
        else:
            knock = action >= KNOCK_BASE
            card = action - (KNOCK_BASE if knock else DISCARD_BASE)
            out[4 if knock else 3] = 1.0
            after_mask = hand & ~(1 << card)
            after = deadwood_of_mask(after_mask)
            out[5] = after / 50.0
            out[6] = (hand_deadwood - after) / 20.0
            out[7] = 1.0 if after <= view.knock_limit else 0.0
            out[8:13] = _card_features(view, card, after_mask)
            out[13] = 1.0 if after == 0 else 0.0
            out[14] = (view.knock_limit - after) / 10.0 if knock else 0.0
            out[15] = 1.0 if view.taken >> card & 1 else 0.0
        out[16] = view.stock_fraction
    return rows


def context_features(decoded: ObservationView) -> np.ndarray:
    view = _Inputs(decoded)
    hand_deadwood = deadwood_of_mask(view.hand)
    return np.array(
        [
            hand_deadwood / 50.0,
            view.knock_limit / 10.0,
            view.stock_fraction,
            view.opponent_known.bit_count() / 5.0,
            view.hand.bit_count() / 11.0,
            1.0 if view.knock_limit == 0 else 0.0,
        ],
        dtype=np.float32,
    )


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
