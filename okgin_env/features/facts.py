"""Card relations and solver facts: the definitions every feature is built on (``okgin_env.features``),
and the training network's inputs built from them (re-exported by ``training.features``).

Relations are bit tricks on 52-bit card masks (docs/rules.md §1: ``id = suit * 13 + rank``); each
function works on one Python int and, element by element, on a numpy int64 array of masks, so the
batch engine evaluates the very same definitions for all its games at once. The solver facts call
the exact meld solver (``okgin_env.rules.melds``).

The network's inputs (``decision_features``, ``action_features``, ``context_features``) are one
row of ``NUM_ACTION_FEATURES`` per legal action and ``NUM_CONTEXT_FEATURES`` per decision, read
from one ``_Facts`` per decision (the hand's deadwood and each card's deadwood after it is put away
computed at most once). They are frozen: the shipped checkpoints were trained on them bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from functools import lru_cache

import numpy as np

from ..observation import KNOCK_LIMIT_SCALE, STOCK_SCALE, ObservationView
from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from ..rules.cards import CARD_VALUES, NUM_CARDS, NUM_RANKS, NUM_SUITS, SUIT_MASK
from ..rules.melds import (
    RUN_DEADWOOD,
    RUN_DEADWOOD_AFTER_DROP,
    best_discard_deadwood_of_mask,
    deadwood_after_discards,
    deadwood_of_mask,
)
from ..rules.round import Phase, RoundState

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
                 "knock_limit", "stock_fraction", "hand_deadwood", "_after")

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

    def deadwood_after(self, card: int) -> int:
        """``_deadwood_after`` of ``card``, or with ``card = -1`` ``_deadwood_after_taking``; each once."""
        after = self._after.get(card)
        if after is None:
            if card < 0:
                after = _deadwood_after_taking(self.hand, 1 << self.top_card)
                self._after[card] = after
            else:
                # A discard decision asks about (nearly) every card: all of them in one solver pass.
                self._after.update(deadwood_after_discards(self.hand, self.hand))
                after = self._after[card]
        return after


# ----------------------------------------------------------------------------- the training network's inputs

ACTION_KINDS = 5  # draw stock, take discard, pass, discard, knock
NUM_ACTION_FEATURES = ACTION_KINDS + 12
NUM_CONTEXT_FEATURES = 6
MAX_LEGAL_ACTIONS = 24  # at most 11 discards + 11 knocks in a discard phase; 2 elsewhere


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


def facts_of_state(round_state: RoundState, observer: int, discard_pile: int) -> _Facts:
    """``_training_facts(view_of_state(round_state, ..., observer))`` read straight from the state,
    without building the view (labelling's rollouts hold the states); ``discard_pile`` is the pile
    as a card mask. Equal field by field (``tests/test_features.py``)."""
    st = round_state
    n = st.num_players
    over = st.phase is Phase.OVER
    opponents_known = st.hands if over else st.known
    known = passed = 0
    for k in range(1, n):
        seat = (observer + k) % n
        known |= opponents_known[seat]
        passed |= st.passed[seat]
    taken = 1 << st.taken_card if st.taken_card >= 0 and st.current == observer and not over else 0
    knock_limit = _stored(st.knock_limit, KNOCK_LIMIT_SCALE) * KNOCK_LIMIT_SCALE
    return _Facts(st.hands[observer], taken, st.discard_pile[-1] if st.discard_pile else -1, discard_pile, known,
                  passed, knock_limit, _stored(len(st.stock), STOCK_SCALE))


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


def _context(facts: _Facts) -> np.ndarray:
    return np.array(
        [
            facts.hand_deadwood / 50.0,
            facts.knock_limit / 10.0,
            facts.stock_fraction,
            facts.opponent_known.bit_count() / 5.0,
            facts.hand.bit_count() / 11.0,
            1.0 if facts.knock_limit == 0 else 0.0,
        ],
        dtype=np.float32,
    )


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

_POPCOUNT16 = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.int64)
_MELD_PARTNER_ARRAY = np.array(_MELD_PARTNERS, dtype=np.int64)
_CARD_VALUE_ARRAY = np.array(CARD_VALUES + (0,), dtype=np.float64)  # index -1: no card


def _popcount(masks: np.ndarray) -> np.ndarray:
    """Set bits of each 52-bit mask (int64), four 16-bit table lookups (numpy >= 1.24 has no bit count)."""
    return (_POPCOUNT16[masks & 0xFFFF] + _POPCOUNT16[masks >> 16 & 0xFFFF]
            + _POPCOUNT16[masks >> 32 & 0xFFFF] + _POPCOUNT16[masks >> 48 & 0xFFFF])


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
    contexts = np.stack([_context(f) for f in facts]) if count else np.zeros((0, NUM_CONTEXT_FEATURES), np.float32)
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


# ----------------------------------------------------------------------------- the next draw's outlook (opt-in)
# Three more columns per action row for networks built with them (``training``'s
# ``--outlook-features``): what the hand can expect from the next stock draw. A one-draw lookahead
# of this kind is what the held-out ``aggressor`` plays by (and it beats ``simple``); the 17 columns
# above say what a discard leaves now, not what it leaves room for. They read the observation alone:
# the unseen cards (the stock and the opponents' hidden cards) are averaged over uniformly.

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
_OUTLOOK_MEMO: dict[tuple[int, int, int], np.ndarray] = {}
_OUTLOOK_MEMO_LIMIT = 1 << 17


__all__ = [
    "ACTION_KINDS",
    "MAX_LEGAL_ACTIONS",
    "NUM_ACTION_FEATURES",
    "NUM_CONTEXT_FEATURES",
    "NUM_OUTLOOK_FEATURES",
    "best_discard_deadwood_array",
    "outlook_features",
    "action_features",
    "context_features",
    "decision_features",
    "decision_features_batch",
    "decision_features_of_facts",
    "facts_of_state",
]
