"""Solver features: what a player can work out from its own observation with the exact meld solver.

Card planes say which cards a seat holds; a learner would still have to discover meld arithmetic
from them (which discard leaves the least deadwood, whether a knock is possible, which cards can
still meld). This module computes those facts once, from the observation alone (own hand, the
public discard pile, the cards opponents are known to hold or declined, the knock limit and the
legal actions), so they reveal nothing the seat does not know. numpy only. Two users:

* **The env option ``observation="features"``** (AEC, Gymnasium, batch and vector envs): the
  observation is the card layout of ``okgin_env.observation`` followed by the fixed-size slices
  below (``FEATURE_PARTS``, ``FEATURE_SIZE`` = 425 entries for every player count), named in
  ``layout_for(n, "features").slices`` and decoded by ``okgin_env.observation.decode``. Per-card
  planes have 52 entries, one per card id, so entry ``c`` lines up with the actions ``3 + c``
  (discard ``c``) and ``55 + c`` (knock with ``c``): what an MLP learner can use directly. They
  also carry the whole action mask, for learners that get no mask.

  | slice | size | meaning (0 where it does not apply) |
  |---|---|---|
  | ``discard_legal`` | 52 | 1 where discarding ``c`` (action ``3 + c``) is legal |
  | ``knock_legal`` | 52 | 1 where knocking with ``c`` (action ``55 + c``) is legal |
  | ``deadwood_after`` | 52 | least deadwood of the hand without ``c`` / 100, where discarding or knocking with ``c`` is legal |
  | ``knock_margin`` | 52 | (knock limit - that deadwood) / 10, where knocking with ``c`` is legal |
  | ``unseen_partners`` | 52 | unseen cards that could meld with ``c`` / 7 (of its rank, or up to two ranks away in its suit), for the candidate cards |
  | ``hand_partners`` | 52 | cards of the hand that could meld with ``c`` / 7, for the candidate cards |
  | ``opponent_wants`` | 52 | 1 where a candidate card could meld with a card an opponent is known to hold |
  | ``opponent_avoids`` | 52 | 1 where an opponent passed or threw a card of the candidate's rank or next to it in its suit |
  | ``draw_take_pass_legal`` | 3 | 1 where action 0 (draw stock), 1 (take the discard / the upcard), 2 (pass) is legal |
  | ``hand_deadwood`` | 1 | least deadwood of the hand / 100 |
  | ``take_deadwood_after`` | 1 | least deadwood of the hand plus the face-up card, less its best card / 100, where taking is legal |
  | ``take_within_limit`` | 1 | 1 where taking is legal and that deadwood is within the knock limit |
  | ``best_deadwood_after`` | 1 | the least ``deadwood_after`` of the legal discards / 100 (discard phase) |
  | ``can_knock`` | 1 | 1 when some knock is legal |
  | ``can_gin`` | 1 | 1 when some legal knock leaves no deadwood (gin) |

  The candidate cards are the hand, plus the face-up card when taking it is legal. "Unseen"
  cards are those in no seat's known hand and not in the discard pile (the stock and the
  opponents' hidden cards). A seat that is not to act gets zeros in every legality-based slice
  (its action mask is all zeros). ``FEATURE_SCALES`` holds the divisors; ``feature_bounds``
  the finite bounds of the spaces.
* **The training network's inputs** (``training.features`` re-exports them): one row of
  ``NUM_ACTION_FEATURES`` per legal action and ``NUM_CONTEXT_FEATURES`` per decision
  (``decision_features``). Frozen: the shipped checkpoints were trained on them bit for bit.
  Networks built with ``outlook=True`` get ``NUM_OUTLOOK_FEATURES`` more columns per action
  (``outlook_features``: the chance to knock and to go gin after the next stock draw, and the
  mean deadwood it leaves), an opt-in the older checkpoints do not use. Code that holds the
  round states (labelling's rollouts) reads the facts straight from them (``facts_of_state``,
  ``decision_features_of_facts``): the same numbers without building the seat's view first.

Both are built on the same definitions, in ``okgin_env.features.facts``: the card relations (a
card's meld partners, the unseen cards, the opponents' neighbourhoods; each one function that works
on one mask or on a numpy array of masks) and the solver facts (the deadwood after putting a card
away, after taking the face-up card). ``okgin_env.features.planes`` builds the env's slices from
them, ``okgin_env.features.network`` the network's inputs and ``okgin_env.features.outlook`` the
opt-in next-draw columns.
"""

from __future__ import annotations

from .facts import facts_of_state
from .network import (
    ACTION_KINDS,
    GIN_COLUMN,
    MAX_LEGAL_ACTIONS,
    NUM_ACTION_FEATURES,
    NUM_CONTEXT_FEATURES,
    action_features,
    context_features,
    decision_features,
    decision_features_batch,
    decision_features_of_facts,
)
from .outlook import NUM_OUTLOOK_FEATURES, best_discard_deadwood_array, outlook_features
from .planes import (
    DEADWOOD_SCALE,
    FEATURE_NUMBERS,
    FEATURE_PARTS,
    FEATURE_PLANES,
    FEATURE_SCALES,
    FEATURE_SIZE,
    KNOCK_MARGIN_SCALE,
    PART_COLUMNS,
    PARTNER_SCALE,
    ROW_BY_ROW,
    decode_features,
    feature_bounds,
    feature_slices,
    fill_features,
    observation_features,
    parts_of_words,
    with_features,
)

__all__ = [
    "ACTION_KINDS",
    "GIN_COLUMN",
    "DEADWOOD_SCALE",
    "FEATURE_NUMBERS",
    "FEATURE_PARTS",
    "FEATURE_PLANES",
    "FEATURE_SCALES",
    "FEATURE_SIZE",
    "KNOCK_MARGIN_SCALE",
    "MAX_LEGAL_ACTIONS",
    "NUM_ACTION_FEATURES",
    "NUM_CONTEXT_FEATURES",
    "NUM_OUTLOOK_FEATURES",
    "PARTNER_SCALE",
    "PART_COLUMNS",
    "ROW_BY_ROW",
    "action_features",
    "best_discard_deadwood_array",
    "context_features",
    "decision_features",
    "decision_features_batch",
    "decision_features_of_facts",
    "decode_features",
    "facts_of_state",
    "feature_bounds",
    "feature_slices",
    "fill_features",
    "outlook_features",
    "observation_features",
    "parts_of_words",
    "with_features",
]
