"""The named parts of a round and their checks: the phases, the wall, the knock limit an upcard sets,
a deck, and the parts ``RoundState.from_parts`` takes (docs/rules.md §3, §7).

``rules.round`` builds its state machine on these; ``rules.infoset`` and ``rules.match`` check
their inputs with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Any

import numpy as np

from .cards import NUM_CARDS, card_id, card_str, card_value, from_mask
from .config import RulesConfig, is_int


class Phase(IntEnum):
    OFFER = 0  # the upcard is offered in turn: take it (1) or pass (2)
    DRAW = 1  # take the stock top (0) or the discard top (1)
    DISCARD = 2  # discard (3 + c) or knock (55 + c)
    OVER = 3


_ALL_CARDS = frozenset(range(NUM_CARDS))  # check_deck's quick test of a list of ints

STOCK_LEFT_AT_WALL = 2  # docs/rules.md §7: the round draws (classic) or reshuffles (penalty) at two stock cards


def knock_limit_for(upcard: int, config: RulesConfig) -> int:
    """docs/rules.md §3: the upcard's value (an Ace means gin only when ``ace_upcard_gin_only``),
    or the config's fixed ``knock_limit`` when it has one."""
    if config.knock_limit is not None:
        return config.knock_limit
    value = card_value(upcard)
    if value == 1 and config.ace_upcard_gin_only:
        return 0
    return value


def check_deck(deck: Any) -> list[int]:
    """A deck as 52 card ids (texts accepted), top first; ValueError if it is not a permutation."""
    # The engines' own shuffles (lists of 52 distinct Python ints in 0..51) pass without a call per card.
    if type(deck) is list and len(deck) == NUM_CARDS and all(type(c) is int for c in deck) and set(deck) == _ALL_CARDS:
        return deck[:]  # (a copy, as the slow path gives)
    # A deck is dealt in order, so only ordered sequences are decks (a set's or a generator's order means nothing).
    if isinstance(deck, (str, bytes)) or not isinstance(deck, (Sequence, np.ndarray)):
        raise ValueError(
            f"deck must be a sequence of 52 card ids or texts, got {type(deck).__name__}; "
            "a deck is dealt in order, so it must be a list, tuple or 1-d array"
        )
    if isinstance(deck, np.ndarray) and deck.ndim != 1:
        raise ValueError(f"deck must be a sequence of 52 card ids or texts, got an array of shape {deck.shape}; it must be 1-d")
    cards = [card_id(c) for c in deck]
    if len(cards) != NUM_CARDS or len(set(cards)) != NUM_CARDS:
        missing = sorted(set(range(NUM_CARDS)) - set(cards))
        raise ValueError(
            f"deck must be a permutation of the 52 cards; got {len(cards)} cards"
            + (f", missing {[card_str(c) for c in missing]}" if missing else "")
        )
    return cards


# ---------------------------------------------------------------------- checks of RoundState.from_parts
def int_in(name: str, value: Any, low: int, high: int) -> int:
    if not is_int(value) or not low <= value <= high:
        raise ValueError(f"{name} must be an int in {low}..{high}, got {value!r}")
    return int(value)


def _int_list(name: str, value: Any, what: str, high: int, length: int | None = None) -> list[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise ValueError(f"{name} must be a list of {what}, got {type(value).__name__}")
    if length is not None and len(value) != length:
        raise ValueError(f"{name} must hold {length} {what} (one per seat), got {len(value)}")
    items = []
    for i, item in enumerate(value):
        if not is_int(item) or not 0 <= item <= high:
            expected = "a 52-bit card mask (an int in 0..2**52-1)" if high > NUM_CARDS else f"a card id in 0..{high}"
            raise ValueError(f"{name}[{i}] must be {expected}, got {item!r}")
        items.append(int(item))
    return items


def checked_round_parts(
    config, hands, stock, pile, known, passed, upcard, dealer, current, phase, knock_limit,
    taken_card, offers_declined, must_draw_stock, discards, reshuffles,
) -> tuple:  # fmt: skip
    """The parts of ``RoundState.from_parts`` checked, as plain ints and lists (same order);
    ValueError naming the first wrong part. Only states that play can reach pass."""
    if not isinstance(config, RulesConfig):
        raise ValueError(f"config must be a RulesConfig, got {type(config).__name__}")
    n, size, full = config.num_players, config.hand_size, (1 << NUM_CARDS) - 1
    if not (isinstance(phase, Phase) or is_int(phase)) or phase not in (Phase.OFFER, Phase.DRAW, Phase.DISCARD):
        raise ValueError(f"phase must be Phase.OFFER, DRAW or DISCARD (a round in progress), got {phase!r}")
    phase = Phase(phase)
    hands = _int_list("hands", hands, "card masks", full, n)
    known = _int_list("known", known, "card masks", full, n) if known is not None else [0] * n
    passed = _int_list("passed", passed, "card masks", full, n) if passed is not None else [0] * n
    stock = _int_list("stock", stock, "card ids", NUM_CARDS - 1)
    pile = _int_list("discard_pile", pile, "card ids", NUM_CARDS - 1)
    upcard = int_in("upcard", upcard, 0, NUM_CARDS - 1)
    dealer = int_in("dealer", dealer, 0, n - 1)
    current = int_in("current", current, 0, n - 1)
    taken_card = int_in("taken_card", taken_card, -1, NUM_CARDS - 1)
    discards = int_in("discards", discards, 0, config.max_turns - 1)
    reshuffles = int_in("reshuffles", reshuffles, 0, config.max_reshuffles if config.reshuffle_stock else 0)
    if not isinstance(must_draw_stock, (bool, np.bool_)):
        raise ValueError(f"must_draw_stock must be True or False, got {must_draw_stock!r}")
    must_draw_stock = bool(must_draw_stock)
    # Every card exactly once across the hands, the stock and the pile.
    counts = [0] * NUM_CARDS
    for card in [c for mask in hands for c in from_mask(mask)] + stock + pile:
        counts[card] += 1
    if counts != [1] * NUM_CARDS:
        missing = [card_str(c) for c in range(NUM_CARDS) if counts[c] == 0]
        repeated = [card_str(c) for c in range(NUM_CARDS) if counts[c] > 1]
        raise ValueError(
            "every card must be exactly once in the hands, the stock or the discard pile; "
            f"missing {missing}, repeated {repeated}"
        )
    for seat, mask in enumerate(hands):
        expected = size + (phase is Phase.DISCARD and seat == current)
        if mask.bit_count() != expected:
            raise ValueError(
                f"hands[{seat}] holds {mask.bit_count()} cards; expected {expected} in phase {phase.name} "
                f"({size} a hand, one more for the seat to discard)"
            )
        if known[seat] & ~mask:
            raise ValueError(f"known[{seat}] holds cards that are not in hands[{seat}]")
    expected_limit = knock_limit_for(upcard, config)
    if knock_limit is not None and knock_limit != expected_limit:
        raise ValueError(f"knock_limit={knock_limit!r} does not match the upcard's ({expected_limit})")
    # Phase, seat to act and pile: only what play can reach.
    first = (dealer + 1) % n
    if phase is Phase.OFFER:
        declined = (current - first) % n
        if offers_declined is not None and offers_declined != declined:
            why = f"seat {current} is offered the upcard after {declined} passes"
            raise ValueError(f"offers_declined={offers_declined!r} does not fit: {why}")
        offers_declined = declined
        if pile != [upcard]:
            raise ValueError("while the upcard is offered, the discard pile holds the upcard only")
    else:
        offers_declined = int_in("offers_declined", 0 if offers_declined is None else offers_declined, 0, n)
    if must_draw_stock and (phase is not Phase.DRAW or pile != [upcard] or current != first):
        raise ValueError("must_draw_stock is for the first draw after every seat passed the upcard (phase DRAW)")
    if phase is Phase.DISCARD:
        if taken_card >= 0 and not hands[current] >> taken_card & 1:
            raise ValueError(f"taken_card {card_str(taken_card)} is not in the hand of seat {current}, to act")
        if not pile and taken_card < 0:
            raise ValueError("the discard pile is empty although no card was taken from it this turn")
        if len(stock) < STOCK_LEFT_AT_WALL:
            raise ValueError(f"the stock holds {len(stock)} cards; no discard is made with under {STOCK_LEFT_AT_WALL}")
    else:
        if taken_card >= 0:
            raise ValueError(f"taken_card is for phase DISCARD only, got {taken_card} in phase {phase.name}")
        if not pile:
            raise ValueError(f"the discard pile is empty in phase {phase.name}; a face-up card is to take or pass")
        if len(stock) <= STOCK_LEFT_AT_WALL:
            raise ValueError(f"the stock holds {len(stock)} cards; no draw is made with {STOCK_LEFT_AT_WALL} or fewer")
    return (hands, stock, pile, known, passed, upcard, dealer, current, phase, expected_limit, taken_card,
            offers_declined, must_draw_stock, discards, reshuffles)  # fmt: skip
