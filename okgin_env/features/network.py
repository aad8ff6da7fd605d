"""The training network's inputs (re-exported by ``training.features``), built on ``facts``.

One row of ``NUM_ACTION_FEATURES`` per legal action and ``NUM_CONTEXT_FEATURES`` per decision
(``decision_features``, ``action_features``, ``context_features``), read from one ``_Facts`` per
decision; ``decision_features_batch`` and ``decision_features_of_facts`` stack many decisions with
the same numbers. They are frozen: the shipped checkpoints were trained on them bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np

from ..observation import ObservationView
from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from ..rules.cards import CARD_VALUES
from .facts import _MELD_PARTNERS, _Facts, _popcount, _training_facts
from .outlook import NUM_OUTLOOK_FEATURES, _outlook_rows


ACTION_KINDS = 5  # draw stock, take discard, pass, discard, knock
NUM_ACTION_FEATURES = ACTION_KINDS + 12
NUM_CONTEXT_FEATURES = 6
MAX_LEGAL_ACTIONS = 24  # at most 11 discards + 11 knocks in a discard phase; 2 elsewhere
GIN_COLUMN = ACTION_KINDS + 8  # a discard or knock row's "leaves no deadwood" column (a knock there is gin)


def _card_features(facts: _Facts, card: int, hand_after: int) -> list[float]:
    bit = 1 << card
    partners = _MELD_PARTNERS[card]
    return [
        CARD_VALUES[card] / 10.0,
        (partners & facts.unseen).bit_count() / 6.0,  # unseen cards that could still meld with it
        (partners & hand_after).bit_count() / 4.0,  # hand cards it connects to
        1.0 if facts.opponent_wants & bit else 0.0,  # likely useful to the opponent
        1.0 if facts.opponent_avoids & bit else 0.0,  # the opponent threw or passed a neighbour
    ]


def _action_rows(facts: _Facts, actions: Sequence[int]) -> list[list[float]]:
    """Each action's ``NUM_ACTION_FEATURES`` features, as Python floats (converted to float32 by
    the caller in one go: the same rounding as writing them one by one)."""
    hand, knock_limit, stock = facts.hand, facts.knock_limit, facts.stock_fraction
    hand_deadwood = facts.hand_deadwood
    rows = []
    for action in actions:
        if action == DRAW_STOCK:
            rows.append([1.0] + [0.0] * 15 + [stock])
        elif action == TAKE_DISCARD or action == PASS:
            kind = [0.0, 1.0, 0.0, 0.0, 0.0] if action == TAKE_DISCARD else [0.0, 0.0, 1.0, 0.0, 0.0]
            top_card = facts.top_card
            if top_card < 0:
                rows.append(kind + [0.0] * 11 + [stock])
                continue
            after = facts.deadwood_after(-1)
            rows.append(kind + [
                after / 50.0,
                (hand_deadwood - after) / 20.0,
                1.0 if after <= knock_limit else 0.0,
                *_card_features(facts, top_card, hand),
                0.0, 0.0, 0.0,
                stock,
            ])
        else:
            knock = action >= KNOCK_BASE
            card = action - (KNOCK_BASE if knock else DISCARD_BASE)
            after = facts.deadwood_after(card)
            rows.append([
                0.0, 0.0, 0.0, 0.0 if knock else 1.0, 1.0 if knock else 0.0,
                after / 50.0,
                (hand_deadwood - after) / 20.0,
                1.0 if after <= knock_limit else 0.0,
                *_card_features(facts, card, hand & ~(1 << card)),
                1.0 if after == 0 else 0.0,
                (knock_limit - after) / 10.0 if knock else 0.0,
                1.0 if facts.taken >> card & 1 else 0.0,
                stock,
            ])
    return rows


def _context_row(facts: _Facts) -> list[float]:
    """The ``NUM_CONTEXT_FEATURES`` context features as Python floats (stored as float32 by the caller)."""
    return [
        facts.hand_deadwood / 50.0,
        facts.knock_limit / 10.0,
        facts.stock_fraction,
        facts.opponent_known.bit_count() / 5.0,
        facts.hand.bit_count() / 11.0,
        1.0 if facts.knock_limit == 0 else 0.0,
    ]


def _context(facts: _Facts) -> np.ndarray:
    return np.array(_context_row(facts), dtype=np.float32)


def action_features(view: ObservationView, actions: Sequence[int]) -> np.ndarray:
    """``(len(actions), NUM_ACTION_FEATURES)`` network features of each legal action."""
    rows = np.zeros((len(actions), NUM_ACTION_FEATURES), dtype=np.float32)
    if len(actions):
        rows[:] = _action_rows(_training_facts(view), actions)
    return rows


def context_features(view: ObservationView) -> np.ndarray:
    """``(NUM_CONTEXT_FEATURES,)`` network features of the decision as a whole."""
    return _context(_training_facts(view))


def decision_features(
    view: ObservationView, actions: Sequence[int], width: int = MAX_LEGAL_ACTIONS, outlook: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``(context_features(view), action_features(view, actions)`` padded with zero rows to ``width``
    rows), reading the view once: the per-decision path of training and play (``encode_decision``).
    ``outlook``: each row also gets the ``NUM_OUTLOOK_FEATURES`` columns of ``outlook_features``."""
    if len(actions) > width:
        raise ValueError(f"{len(actions)} actions do not fit in {width} rows")
    facts = _training_facts(view)
    rows = np.zeros((width, NUM_ACTION_FEATURES + (NUM_OUTLOOK_FEATURES if outlook else 0)), dtype=np.float32)
    if len(actions):
        rows[: len(actions), :NUM_ACTION_FEATURES] = _action_rows(facts, actions)
        if outlook:
            rows[: len(actions), NUM_ACTION_FEATURES:] = _outlook_rows([facts], [actions])
    return _context(facts), rows


# ----------------------------------------------------------------------------- many decisions at once

_MELD_PARTNER_ARRAY = np.array(_MELD_PARTNERS, dtype=np.int64)
_CARD_VALUE_ARRAY = np.array(CARD_VALUES + (0,), dtype=np.float64)  # index -1: no card


def decision_features_batch(
    views: Sequence[ObservationView], actions: Sequence[Sequence[int]], width: int = MAX_LEGAL_ACTIONS,
    outlook: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """``decision_features`` of many decisions, stacked: ``(B, NUM_CONTEXT_FEATURES)`` contexts and
    ``(B, width, NUM_ACTION_FEATURES)`` action rows (``outlook``: ``NUM_ACTION_FEATURES +
    NUM_OUTLOOK_FEATURES`` columns), equal bit for bit to the one-decision path
    (``tests/test_features.py``). Only the solver facts are looked up decision by decision; the
    card arithmetic runs once over every action row of the batch, in float64 as Python's floats
    are and then stored as float32, so the rounding is the same."""
    return decision_features_of_facts([_training_facts(v) for v in views], actions, width, outlook)


def decision_features_of_facts(
    facts: Sequence[_Facts], actions: Sequence[Sequence[int]], width: int = MAX_LEGAL_ACTIONS, outlook: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """``decision_features_batch`` from each decision's facts (``facts_of_state``) instead of its view."""
    contexts, rows = _batch_rows(facts, actions, width)
    if outlook:
        wide = np.zeros((*rows.shape[:2], NUM_ACTION_FEATURES + NUM_OUTLOOK_FEATURES), dtype=np.float32)
        wide[:, :, :NUM_ACTION_FEATURES] = rows
        b_index = np.repeat(np.arange(len(actions)), [len(legal) for legal in actions])
        j_index = np.concatenate([np.arange(len(legal)) for legal in actions]) if len(actions) else b_index
        wide[b_index, j_index, NUM_ACTION_FEATURES:] = _outlook_rows(facts, actions)
        return contexts, wide
    return contexts, rows


def _batch_rows(facts: Sequence[_Facts], actions: Sequence[Sequence[int]], width: int) -> tuple[np.ndarray, np.ndarray]:
    """The 17 columns of ``decision_features_batch`` from each decision's facts."""
    count = len(facts)
    contexts = np.array([_context_row(f) for f in facts], dtype=np.float32).reshape(count, NUM_CONTEXT_FEATURES)
    lengths = [len(legal) for legal in actions]
    for length in lengths:
        if length > width:
            raise ValueError(f"{length} actions do not fit in {width} rows")
    total = sum(lengths)
    rows = np.zeros((count, width, NUM_ACTION_FEATURES), dtype=np.float32)
    if not total:
        return contexts, rows
    # One entry per action row: its decision and row, the action, and the solver's deadwood after it
    # (the one fact looked up row by row: each decision's ``_Facts`` computes it once per card).
    where_array = np.repeat(np.arange(count), lengths)
    slot_array = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    action = np.fromiter(chain.from_iterable(actions), dtype=np.int64, count=total)
    afters = []
    for f, legal in zip(facts, actions):
        if legal and min(legal) >= DISCARD_BASE:  # a discard decision: discards and knocks only
            table = f.discard_afters()
            afters += [table[a - (KNOCK_BASE if a >= KNOCK_BASE else DISCARD_BASE)] for a in legal]
            continue
        for a in legal:
            if a >= DISCARD_BASE:
                afters.append(f.deadwood_after(a - (KNOCK_BASE if a >= KNOCK_BASE else DISCARD_BASE)))
            elif a == DRAW_STOCK or f.top_card < 0:
                afters.append(0)
            else:
                afters.append(f.deadwood_after(-1))
    after = np.array(afters, dtype=np.float64)
    # Kinds 0-2 are the draw-phase action ids themselves (draw stock, take discard, pass).
    kind = np.where(action >= KNOCK_BASE, 4, np.where(action >= DISCARD_BASE, 3, action))
    top_card = np.array([f.top_card for f in facts], dtype=np.int64)[where_array]
    card = np.where(action >= KNOCK_BASE, action - KNOCK_BASE,
                    np.where(action >= DISCARD_BASE, action - DISCARD_BASE, np.where(action == DRAW_STOCK, -1, top_card)))
    per_decision = np.array([(f.hand_deadwood, f.knock_limit, f.stock_fraction) for f in facts], dtype=np.float64)[where_array]
    hand_deadwood, knock_limit, stock = per_decision[:, 0], per_decision[:, 1], per_decision[:, 2]
    masks = np.array([(f.unseen, f.opponent_wants, f.opponent_avoids, f.taken) for f in facts], dtype=np.int64)[where_array]
    unseen, wants, avoids, taken = masks[:, 0], masks[:, 1], masks[:, 2], masks[:, 3]
    has_card = card >= 0  # a draw, or a take / pass with no face-up card, has kind and stock only
    bit = np.where(has_card, np.left_shift(1, np.maximum(card, 0), dtype=np.int64), 0)
    # The hand a card's partners are counted in: what a throw leaves, the hand for a take or pass.
    hand = np.array([f.hand for f in facts], dtype=np.int64)[where_array]
    partner_hands = np.where(kind >= 3, hand & ~bit, hand)
    partners = np.where(has_card, _MELD_PARTNER_ARRAY[np.maximum(card, 0)], 0)
    out = np.zeros((total, NUM_ACTION_FEATURES), dtype=np.float64)
    out[np.arange(total), kind] = 1.0
    out[:, 5] = after / 50.0
    out[:, 6] = (hand_deadwood - after) / 20.0
    out[:, 7] = after <= knock_limit
    out[:, 8] = _CARD_VALUE_ARRAY[card] / 10.0
    out[:, 9] = _popcount(partners & unseen) / 6.0
    out[:, 10] = _popcount(partners & partner_hands) / 4.0
    out[:, 11] = (wants & bit) != 0
    out[:, 12] = (avoids & bit) != 0
    out[:, 5:13] *= has_card[:, None]
    throws = kind >= 3  # discards and knocks
    out[:, 13] = throws & (after == 0)
    out[:, 14] = np.where(kind == 4, (knock_limit - after) / 10.0, 0.0)
    out[:, 15] = throws & ((taken & bit) != 0)
    out[:, 16] = stock
    rows[where_array, slot_array] = out
    return contexts, rows


__all__ = [
    "ACTION_KINDS",
    "MAX_LEGAL_ACTIONS",
    "NUM_ACTION_FEATURES",
    "NUM_CONTEXT_FEATURES",
    "action_features",
    "context_features",
    "decision_features",
    "decision_features_batch",
    "decision_features_of_facts",
]
