"""The env's feature slices (``observation="features"``): layout, bounds, evaluation, decoding.

``okgin_env.features`` documents the table. Every value comes from the parts of an observation
(``PART_COLUMNS``: the observer's hand, the discard pile and its top, the opponents' known and
passed cards, the knock limit, the legal actions), through the card relations and solver facts
of ``okgin_env.features.facts``; the AEC env reads the parts from its observation dict
(``observation_features``, ``with_features``), the batch engine from its packed observation words
(``parts_of_words``), so neither can see more than the observation holds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..observation import ObservationView, PackedEncoder, register_observation
from ..observation.encode import _MASK_BIT
from ..observation import view as _observation_view
from ..rules.actions import DISCARD_BASE, KNOCK_BASE, TAKE_DISCARD, action_str
from ..rules.cards import NUM_CARDS, card_str
from ..rules.config import RulesConfig
from ..rules.melds import deadwood_of_mask
from .facts import (
    _MELD_PARTNERS,
    _deadwood_after,
    _deadwood_after_taking,
    _opponent_avoids,
    _opponent_wants,
    _partner_offsets,
    _unseen,
)

# ----------------------------------------------------------------------------- the env's feature slices

DEADWOOD_SCALE = 100.0
KNOCK_MARGIN_SCALE = 10.0
PARTNER_SCALE = 7.0  # the most cards that can meld with one: 3 of its rank, 2 on either side in its suit
#: Per-card planes, 52 entries each, in layout order.
FEATURE_PLANES = ("discard_legal", "knock_legal", "deadwood_after", "knock_margin",
                  "unseen_partners", "hand_partners", "opponent_wants", "opponent_avoids")
#: Per-decision numbers, after the planes.
FEATURE_NUMBERS = (("draw_take_pass_legal", 3), ("hand_deadwood", 1), ("take_deadwood_after", 1),
                   ("take_within_limit", 1), ("best_deadwood_after", 1), ("can_knock", 1), ("can_gin", 1))
#: Every feature slice as ``(name, width)``, in layout order (appended to the card layout).
FEATURE_PARTS = tuple((name, NUM_CARDS) for name in FEATURE_PLANES) + FEATURE_NUMBERS
FEATURE_SIZE = sum(width for _, width in FEATURE_PARTS)
#: What each counted slice is divided by (the rest are 0/1 flags).
FEATURE_SCALES = {
    "deadwood_after": DEADWOOD_SCALE, "knock_margin": KNOCK_MARGIN_SCALE, "unseen_partners": PARTNER_SCALE,
    "hand_partners": PARTNER_SCALE, "hand_deadwood": DEADWOOD_SCALE, "take_deadwood_after": DEADWOOD_SCALE,
    "best_deadwood_after": DEADWOOD_SCALE,
}
#: The columns of ``fill_features``'s ``parts`` (card sets as masks).
PART_COLUMNS = ("hand", "discard_top", "discard_pile", "known", "passed", "knock_limit", "small", "discards", "knocks")


def feature_slices() -> dict[str, slice]:
    """Each feature slice, relative to the start of the features (the end of the card layout)."""
    out, start = {}, 0
    for name, width in FEATURE_PARTS:
        out[name] = slice(start, start + width)
        start += width
    return out


_AT = feature_slices()


def feature_bounds(config: RulesConfig) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` float32 of the feature slices under ``config``: flags 0/1; a deadwood at
    most 10 per card (the hand has at most ``hand_size + 1`` cards, ``hand_size`` once a card is put
    away); a knock margin at most the knock limit (10); a partner count at most 7."""
    high = np.ones(FEATURE_SIZE, dtype=np.float32)
    cards = config.hand_size
    for name in ("deadwood_after", "take_deadwood_after", "best_deadwood_after"):
        high[_AT[name]] = 10 * cards / DEADWOOD_SCALE
    high[_AT["hand_deadwood"]] = 10 * (cards + 1) / DEADWOOD_SCALE
    return np.zeros_like(high), high


#: Up to this many rows, ``fill_features`` works row by row in Python (numpy's per-call cost would
#: dominate: about 80 us against 460 us for one row); above it, on all rows at once.
ROW_BY_ROW = 12


def fill_features(parts: np.ndarray, out: np.ndarray) -> None:
    """Write the feature slices of M decisions into ``out`` ((M, FEATURE_SIZE), any float dtype;
    e.g. the feature columns of an observation buffer).

    ``parts`` is (M, 9) int64, its columns ``PART_COLUMNS``: the observer's hand, the discard top
    (a mask of at most one card), the discard pile, the cards the opponents are known to hold and
    those they passed or threw (unions over the opponents), the knock limit, and the legal actions
    as the action mask gives them (bits of the actions 0-2; the cards of the legal discards; of the
    legal knocks). Two evaluators of the one table, equal bit for bit (tests/test_feature_observation.py):
    row by row for a few rows (the AEC env's one observation), vectorized for batches. Both use
    the same card relations and solver calls (the solver once per hand asked about) and compute
    in float64, cast once into ``out``."""
    parts = np.asarray(parts, dtype=np.int64).reshape(-1, len(PART_COLUMNS))
    if parts.shape[0] == 0:
        return
    if parts.shape[0] <= ROW_BY_ROW:
        _fill_row_by_row(parts, out)
    else:
        _fill_vectorized(parts, out)


_START = {name: part.start for name, part in _AT.items()}


def _fill_row_by_row(parts: np.ndarray, out: np.ndarray) -> None:
    at = _START
    index: list[int] = []  # the nonzero entries of all rows, flat, and their values
    value: list[float] = []
    put_index, put_value = index.append, value.append
    for row, (hand, top, pile, known, passed, limit, small, discards, knocks) in enumerate(parts.tolist()):
        base = row * FEATURE_SIZE
        can_take = small >> TAKE_DISCARD & 1 and top
        candidates = hand | top if can_take else hand
        unseen = _unseen(hand, pile, known)
        wants, avoids = candidates & _opponent_wants(known), candidates & _opponent_avoids(passed)
        rest = candidates
        while rest:
            low = rest & -rest
            rest ^= low
            card = low.bit_length() - 1
            partners = _MELD_PARTNERS[card]
            for name, count in (("unseen_partners", (partners & unseen).bit_count()),
                                ("hand_partners", (partners & hand).bit_count())):
                if count:
                    put_index(base + at[name] + card)
                    put_value(count / PARTNER_SCALE)
            for name, flags in (("opponent_wants", wants), ("opponent_avoids", avoids)):
                if flags & low:
                    put_index(base + at[name] + card)
                    put_value(1.0)
        best, gin = -1, False
        rest = discards | knocks
        while rest:
            low = rest & -rest
            rest ^= low
            card = low.bit_length() - 1
            after = _deadwood_after(hand, low)
            entries = [("deadwood_after", after / DEADWOOD_SCALE)]
            if discards & low:
                entries.append(("discard_legal", 1.0))
            if knocks & low:
                entries += [("knock_legal", 1.0), ("knock_margin", (limit - after) / KNOCK_MARGIN_SCALE)]
                gin = gin or after == 0
            for name, number in entries:
                if number:
                    put_index(base + at[name] + card)
                    put_value(number)
            if best < 0 or after < best:
                best = after
        take = _deadwood_after_taking(hand, top) if can_take else 0
        numbers = [
            ("hand_deadwood", deadwood_of_mask(hand) / DEADWOOD_SCALE),
            ("take_deadwood_after", take / DEADWOOD_SCALE),
            ("take_within_limit", 1.0 if can_take and take <= limit else 0.0),
            ("best_deadwood_after", max(best, 0) / DEADWOOD_SCALE),
            ("can_knock", 1.0 if knocks else 0.0),
            ("can_gin", 1.0 if gin else 0.0),
        ]
        legal_small = [(at["draw_take_pass_legal"] + a, 1.0) for a in range(3) if small >> a & 1]
        for position, number in legal_small + [(at[name], number) for name, number in numbers]:
            if number:
                put_index(base + position)
                put_value(number)
    dense = np.zeros(parts.shape[0] * FEATURE_SIZE, dtype=np.float64)
    dense[index] = value
    out[:] = dense.reshape(parts.shape[0], FEATURE_SIZE)


def _fill_vectorized(parts: np.ndarray, out: np.ndarray) -> None:
    m = parts.shape[0]
    hand, top, pile, known, passed, limit, small, discards, knocks = parts.T
    can_take = (small >> 1 & 1).astype(bool) & (top != 0)
    candidates = hand | np.where(can_take, top, 0)
    unseen = _unseen(hand, pile, known)
    masks = np.stack([
        candidates & _opponent_wants(known), candidates & _opponent_avoids(passed), discards, knocks, candidates,
        *_partner_offsets(unseen), *_partner_offsets(hand),
    ], axis=1).astype("<i8", copy=False)
    bits = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little").reshape(m, -1, 64)[:, :, :NUM_CARDS]
    wants, avoids, discard_bits, knock_bits, candidate_bits = (bits[:, i].astype(np.float64) for i in range(5))
    unseen_partners = bits[:, 5:12].sum(axis=1) * candidate_bits
    hand_partners = bits[:, 12:19].sum(axis=1) * candidate_bits
    # The solver, in Python: the hand, each legal put-away card, the face-up card if it may be taken.
    hands, puts, takes = hand.tolist(), (discards | knocks).tolist(), np.where(can_take, top, 0).tolist()
    hand_deadwood, take_after, after_at, after_value = [], [], [], []
    for row in range(m):
        held = hands[row]
        hand_deadwood.append(deadwood_of_mask(held))
        rest = puts[row]
        while rest:
            low = rest & -rest
            rest ^= low
            after_at.append(row * NUM_CARDS + low.bit_length() - 1)
            after_value.append(_deadwood_after(held, low))
        take_after.append(_deadwood_after_taking(held, takes[row]) if takes[row] else 0)
    after = np.zeros(m * NUM_CARDS, dtype=np.float64)
    after[after_at] = after_value
    after = after.reshape(m, NUM_CARDS)
    limits = limit.astype(np.float64)
    put_away = (discard_bits + knock_bits) > 0
    best = np.where(put_away, after, np.inf).min(axis=1)
    take_after_array = np.array(take_after, dtype=np.float64)
    at = _AT
    out[:, at["discard_legal"]] = discard_bits
    out[:, at["knock_legal"]] = knock_bits
    out[:, at["deadwood_after"]] = after / DEADWOOD_SCALE
    out[:, at["knock_margin"]] = (limits[:, None] - after) * knock_bits / KNOCK_MARGIN_SCALE
    out[:, at["unseen_partners"]] = unseen_partners / PARTNER_SCALE
    out[:, at["hand_partners"]] = hand_partners / PARTNER_SCALE
    out[:, at["opponent_wants"]] = wants
    out[:, at["opponent_avoids"]] = avoids
    out[:, at["draw_take_pass_legal"]] = (small[:, None] >> np.arange(3) & 1).astype(np.float64)
    out[:, at["hand_deadwood"].start] = np.array(hand_deadwood, dtype=np.float64) / DEADWOOD_SCALE
    out[:, at["take_deadwood_after"].start] = take_after_array / DEADWOOD_SCALE
    out[:, at["take_within_limit"].start] = can_take & (take_after_array <= limits)
    out[:, at["best_deadwood_after"].start] = np.where(put_away.any(axis=1), best, 0.0) / DEADWOOD_SCALE
    out[:, at["can_knock"].start] = knocks != 0
    out[:, at["can_gin"].start] = ((knock_bits > 0) & (after == 0)).any(axis=1)


def _parts_of_view(v: ObservationView) -> list[int]:
    """``fill_features``'s part columns of a decoded observation (``okgin_env.observation.view``)."""
    known = passed = 0
    for k_known, k_passed in zip(v.opponent_known, v.opponent_passed):
        known |= k_known
        passed |= k_passed
    small = discards = knocks = 0
    for action in v.legal:
        if action < DISCARD_BASE:
            small |= 1 << action
        elif action < KNOCK_BASE:
            discards |= 1 << (action - DISCARD_BASE)
        else:
            knocks |= 1 << (action - KNOCK_BASE)
    top = 1 << v.discard_top if v.discard_top >= 0 else 0
    return [v.hand, top, v.discard_pile, known, passed, v.knock_limit, small, discards, knocks]


def observation_features(observation: dict) -> np.ndarray:
    """The ``FEATURE_SIZE`` float32 feature entries of an env observation dict (``{"observation",
    "action_mask"}``, cards or features layout): computed from what it holds, nothing else."""
    out = np.zeros((1, FEATURE_SIZE), dtype=np.float32)
    fill_features(np.array([_parts_of_view(_observation_view(observation))], dtype=np.int64), out)
    return out[0]


def with_features(observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
    """A card-layout observation followed by its features: the ``observation="features"`` array."""
    features = observation_features({"observation": observation, "action_mask": action_mask})
    return np.concatenate([observation, features])


def parts_of_words(words: Sequence[int], encoder: PackedEncoder) -> np.ndarray:
    """``fill_features``'s parts from a ``PackedEncoder``'s words (the packed observations; its
    docstring has their layout), column by column: the batch engine's path, with no decoding."""
    w, planes = encoder.words, encoder.planes
    packed = np.fromiter(words, dtype=np.int64, count=len(words)).reshape(-1, w)
    known = np.bitwise_or.reduce(packed[:, 5:planes:2], axis=1)
    passed = np.bitwise_or.reduce(packed[:, 6:planes:2], axis=1)
    flags, extras = packed[:, planes], packed[:, w - 1]
    return np.stack([
        packed[:, 0], packed[:, 2], packed[:, 3], known, passed, extras >> 8 & 255,
        flags >> _MASK_BIT & (1 << DISCARD_BASE) - 1, packed[:, planes + 1], packed[:, planes + 2],
    ], axis=1)


def decode_features(values: np.ndarray) -> dict[str, object]:
    """The feature slices of one observation (its last ``FEATURE_SIZE`` entries) by name, in their
    units: flag planes as card texts, counted planes as ``{card text: count}``, the legal actions
    0-2 as their names, numbers as ints (deadwood points) or bools."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (FEATURE_SIZE,):
        raise ValueError(f"features have {FEATURE_SIZE} entries, got shape {values.shape}")
    parts: dict[str, object] = {}
    for name, part in _AT.items():
        entries = values[part]
        scale = FEATURE_SCALES.get(name)
        if name == "draw_take_pass_legal":
            parts[name] = [action_str(a) for a in np.flatnonzero(entries > 0.5).tolist()]
        elif len(entries) == NUM_CARDS and scale is None:
            parts[name] = [card_str(c) for c in np.flatnonzero(entries > 0.5).tolist()]
        elif len(entries) == NUM_CARDS:
            parts[name] = {card_str(c): round(entries[c] * scale) for c in np.flatnonzero(entries).tolist()}
        elif scale is None:
            parts[name] = bool(entries[0] > 0.5)
        else:
            parts[name] = round(float(entries[0]) * scale)
    return parts


# The env option observation="features": these slices follow the card layout (the codec learns
# them here, so that it imports nothing above it).
register_observation("features", FEATURE_PARTS, decode_features)


__all__ = [
    "DEADWOOD_SCALE",
    "FEATURE_NUMBERS",
    "FEATURE_PARTS",
    "FEATURE_PLANES",
    "FEATURE_SCALES",
    "FEATURE_SIZE",
    "KNOCK_MARGIN_SCALE",
    "PARTNER_SCALE",
    "PART_COLUMNS",
    "ROW_BY_ROW",
    "decode_features",
    "feature_bounds",
    "feature_slices",
    "fill_features",
    "observation_features",
    "parts_of_words",
    "with_features",
]
