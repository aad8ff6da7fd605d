"""The network's inputs: per-action features computed from the observation alone, and the
training critic's privileged inputs.

The network scores each legal action from (a) the whole observation and (b) a short vector of
features of that action, computed with the exact meld solver: what the hand's deadwood becomes,
whether the card helps a known opponent card, how many unseen cards could still meld with it.
These are facts a player can work out from what it sees, so using them leaks nothing; they spare
the network from learning meld arithmetic from 52-card planes, which is what makes learning fast
enough on two CPU cores.

The computation lives in ``okgin_env.features`` (numpy only), the one implementation that the
env option ``observation="features"`` uses too; this module re-exports what training, labelling
and play use (``decision_features``, its batched form ``decision_features_batch``, ``action_features``, ``context_features`` and their sizes).
They are frozen: the shipped checkpoints were trained on these inputs bit for bit. A network
built with ``outlook=True`` also reads ``NUM_OUTLOOK_FEATURES`` next-draw columns per action.
"""

from __future__ import annotations

import numpy as np

from okgin_env.features import (
    ACTION_KINDS,
    MAX_LEGAL_ACTIONS,
    NUM_ACTION_FEATURES,
    NUM_CONTEXT_FEATURES,
    NUM_OUTLOOK_FEATURES,
    action_features,
    context_features,
    decision_features,
    decision_features_batch,
)
from okgin_env.rules.cards import NUM_CARDS, to_mask
from okgin_env.rules.melds import best_discard_deadwood_of_mask, deadwood_of_mask

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


__all__ = [
    "ACTION_KINDS",
    "MAX_LEGAL_ACTIONS",
    "NUM_ACTION_FEATURES",
    "NUM_CONTEXT_FEATURES",
    "NUM_OUTLOOK_FEATURES",
    "NUM_PRIVILEGED_FEATURES",
    "PRIVILEGED_STOCK_CARDS",
    "action_features",
    "context_features",
    "decision_features",
    "decision_features_batch",
    "privileged_features",
]
