"""The next draw's outlook (opt-in): three more network input columns per action row.

For networks built with them (``training``'s ``--outlook-features``): what the hand can expect
from the next stock draw. A one-draw lookahead of this kind is what the held-out ``aggressor`` plays
by (and it beats ``simple``); the 17 columns of ``network`` say what a discard leaves now, not what
it leaves room for. They read the observation alone: the unseen cards (the stock and the opponents'
hidden cards) are averaged over uniformly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS
from ..rules.cards import NUM_CARDS, SUIT_MASK
from ..rules.melds import RUN_DEADWOOD, RUN_DEADWOOD_AFTER_DROP, best_discard_deadwood_of_mask
from ..rules.memo import new_memo
from .facts import _Facts, _popcount

NUM_OUTLOOK_FEATURES = 3

_RUN_DEADWOOD_ARRAY = np.array(RUN_DEADWOOD, dtype=np.int64)
_DROP_CHANGE_ARRAY = np.array(RUN_DEADWOOD_AFTER_DROP, dtype=np.int64) - _RUN_DEADWOOD_ARRAY
_CARD_BIT_ARRAY = np.left_shift(np.int64(1), np.arange(NUM_CARDS, dtype=np.int64))


def best_discard_deadwood_array(masks: np.ndarray) -> np.ndarray:
    """``best_discard_deadwood_of_mask`` of every mask of an int64 array, element for element, by the
    solver's own method as whole-array operations: the run-only tables per suit, and for every rank
    held three or four times each way of melding a set of it or not (``melds._min_over_sets``),
    enumerated for all masks at once. Kept hands are meld-rich: in labelling rollouts most of the
    hands asked about hold such a rank, a third of them two."""
    masks = np.asarray(masks, dtype=np.int64)
    suit = int(SUIT_MASK)
    s0, s1, s2, s3 = masks & suit, masks >> 13 & suit, masks >> 26 & suit, masks >> 39 & suit
    set_ranks = (s0 & s1 & (s2 | s3)) | (s2 & s3 & (s0 | s1))
    result = _leaf_after_drop(s0, s1, s2, s3)
    # Hands with more set ranks than the solver enumerates (none of a game's sizes) go to the solver.
    many = np.flatnonzero(_popcount(set_ranks) > _MAX_SET_RANKS_ENUMERATED)
    set_ranks[many] = 0
    # Branches still to expand: (mask index, four suit masks, set ranks not yet decided).
    rows = np.flatnonzero(set_ranks)
    branch = (rows, s0[rows], s1[rows], s2[rows], s3[rows], set_ranks[rows])
    while len(branch[0]):
        rows, a, b, c, d, pending = branch
        rank_bit = pending & -pending
        pending = pending ^ rank_bit
        keep = ~rank_bit
        na, nb, nc, nd = a & keep, b & keep, c & keep, d & keep
        four = (a & b & c & d & rank_bit) != 0
        # No set of this rank (the cards stay for runs), the set of every holder, and with four
        # holders each set of three (the fourth card stays).
        children = [(rows, a, b, c, d, pending), (rows, na, nb, nc, nd, pending)]
        f = np.flatnonzero(four)
        for choice in ((a, nb, nc, nd), (na, b, nc, nd), (na, nb, c, nd), (na, nb, nc, d)):
            children.append((rows[f], *(part[f] for part in choice), pending[f]))
        merged = [np.concatenate(parts) for parts in zip(*children)]
        done = merged[5] == 0
        np.minimum.at(result, merged[0][done], _leaf_after_drop(*(part[done] for part in merged[1:5])))
        branch = tuple(part[~done] for part in merged)
    for i in many.tolist():
        result.flat[i] = best_discard_deadwood_of_mask(int(masks.flat[i]))
    return result


_MAX_SET_RANKS_ENUMERATED = 4  # as the solver (melds._MAX_SET_RANKS_FOR_ENUMERATION)


def _leaf_after_drop(s0: np.ndarray, s1: np.ndarray, s2: np.ndarray, s3: np.ndarray) -> np.ndarray:
    """Run-only deadwood of four suit masks after the best single drop (``melds._leaf_deadwood_after_drop``)."""
    table, change = _RUN_DEADWOOD_ARRAY, _DROP_CHANGE_ARRAY
    return (table[s0] + table[s1] + table[s2] + table[s3]
            + np.minimum(np.minimum(change[s0], change[s1]), np.minimum(change[s2], change[s3])))


def outlook_features(hands: np.ndarray, unseen: np.ndarray, knock_limits: np.ndarray) -> np.ndarray:
    """``(R, NUM_OUTLOOK_FEATURES)`` float32: for each hand (mask), over every unseen card it could
    draw next (then discarding its best card), the share of those cards that allow a knock within
    ``knock_limits`` (ints; 0 = gin only), the share that allow gin, and the mean least deadwood / 50.
    Zeros for a row with no unseen card."""
    hands = np.asarray(hands, dtype=np.int64)
    unseen = np.asarray(unseen, dtype=np.int64)
    drawable = (unseen[:, None] & _CARD_BIT_ARRAY[None, :]) != 0  # (R, 52)
    rows, cards = np.nonzero(drawable)
    after = best_discard_deadwood_array(hands[rows] | _CARD_BIT_ARRAY[cards])
    counts = drawable.sum(axis=1)
    knocks = np.bincount(rows, weights=after <= np.asarray(knock_limits)[rows], minlength=len(hands))
    gins = np.bincount(rows, weights=after == 0, minlength=len(hands))
    total = np.bincount(rows, weights=after, minlength=len(hands))  # integer sums: exact in float64
    safe = np.maximum(counts, 1)
    out = np.stack([knocks / safe, gins / safe, total / safe / 50.0], axis=1)
    return out.astype(np.float32)


def _outlook_rows(facts: Sequence[_Facts], actions: Sequence[Sequence[int]]) -> np.ndarray:
    """The outlook columns of every legal action row, decisions in order: a stock draw (and a pass of
    the upcard, which leads to one) looks at the hand as it is, a discard at the hand without its
    card; the other actions (take, knock) get zeros."""
    keys, targets, known, known_targets = [], [], [], []
    row = 0
    memo = _OUTLOOK_MEMO
    for f, legal in zip(facts, actions):
        limit = int(round(f.knock_limit))  # the stored float reads 6.99999988 for 7
        for action in legal:
            if action == DRAW_STOCK or action == PASS:
                key = (f.hand, f.unseen, limit)
            elif DISCARD_BASE <= action < KNOCK_BASE:
                key = (f.hand & ~(1 << (action - DISCARD_BASE)), f.unseen, limit)
            else:
                row += 1
                continue
            value = memo.get(key)
            if value is None:
                keys.append(key)
                targets.append(row)
            else:
                known.append(value)
                known_targets.append(row)
            row += 1
    out = np.zeros((row, NUM_OUTLOOK_FEATURES), dtype=np.float32)
    if known:
        out[known_targets] = known
    if keys:
        fresh = outlook_features(*np.array(keys, dtype=np.int64).T)
        out[targets] = fresh
        if len(memo) + len(keys) > _OUTLOOK_MEMO_LIMIT:
            memo.clear()
        memo.update(zip(keys, fresh))
    return out


#: Outlook rows already computed, by (hand, unseen cards, knock limit): rollouts and batches meet
#: the same positions again (about half the rows of a labelling job). Emptied when full.
_OUTLOOK_MEMO: dict[tuple[int, int, int], np.ndarray] = new_memo()
_OUTLOOK_MEMO_LIMIT = 1 << 17


__all__ = ["NUM_OUTLOOK_FEATURES", "best_discard_deadwood_array", "outlook_features"]
