"""The network's inputs: per-action features computed from the observation alone.

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

from okgin_env.features import (
    ACTION_KINDS,
    GIN_COLUMN,
    MAX_LEGAL_ACTIONS,
    NUM_ACTION_FEATURES,
    NUM_CONTEXT_FEATURES,
    NUM_OUTLOOK_FEATURES,
    action_features,
    context_features,
    decision_features,
    decision_features_batch,
)

__all__ = [
    "ACTION_KINDS",
    "GIN_COLUMN",
    "MAX_LEGAL_ACTIONS",
    "NUM_ACTION_FEATURES",
    "NUM_CONTEXT_FEATURES",
    "NUM_OUTLOOK_FEATURES",
    "action_features",
    "context_features",
    "decision_features",
    "decision_features_batch",
]
