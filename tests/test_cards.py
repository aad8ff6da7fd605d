"""Card ids and decks: only integers (Python or numpy) and card texts are cards; a deck is ordered."""

from __future__ import annotations

import numpy as np
import pytest

from okgin_env import card_id, card_str
from okgin_env.rules.cards import from_mask, to_mask
from okgin_env.rules.match import MatchState
from okgin_env.rules.config import make_config
from okgin_env.rules.round import check_deck


@pytest.mark.parametrize("value", [np.float64(3.7), 3.0, np.float32(5), True, np.True_, None, [3]])
def test_non_integer_card_ids_are_refused(value):
    with pytest.raises(ValueError, match=r"ids are integers"):
        card_id(value)


@pytest.mark.parametrize("value, expected", [(5, 5), (np.int64(51), 51), (np.uint8(0), 0), ("td", 35), ("10h", 22)])
def test_integers_and_texts_are_cards(value, expected):
    assert card_id(value) == expected


def test_card_str_takes_numpy_integers():
    assert card_str(np.int64(35)) == "TD"
    with pytest.raises(ValueError):
        card_str(np.True_)


@pytest.mark.parametrize(
    "deck",
    [set(range(52)), frozenset(range(52)), (c for c in range(52)), {c: c for c in range(52)}, "AS" * 26],
    ids=["set", "frozenset", "generator", "dict", "str"],
)
def test_unordered_decks_are_refused(deck):
    with pytest.raises(ValueError, match="dealt in order"):
        check_deck(deck)


def test_float_deck_is_refused_and_nothing_is_dealt():
    with pytest.raises(ValueError, match="ids are integers"):
        MatchState(make_config(), np.random.default_rng(0), deck=np.arange(52) + 0.9)
    with pytest.raises(ValueError, match="must be 1-d"):
        check_deck(np.arange(52).reshape(4, 13))


def test_ordered_decks_are_accepted():
    assert check_deck(np.arange(52)[::-1]) == list(range(51, -1, -1))
    assert check_deck(tuple(range(52))) == list(range(52))
    assert check_deck(range(52)) == list(range(52))


def test_list_decks_take_the_quick_check_and_are_still_checked():
    """A list of 52 distinct Python ints skips the per-card check; anything else in a list does not."""
    deck = list(range(52))
    checked = check_deck(deck)
    assert checked == deck and checked is not deck  # a copy, as for every other deck
    with_bool = [True if c == 1 else c for c in deck]  # True == 1 and hashes alike: a set would not see it
    with pytest.raises(ValueError, match="bool"):
        check_deck(with_bool)
    with pytest.raises(ValueError, match="permutation"):
        check_deck(deck[:51] + [0])
    assert check_deck([np.int64(c) for c in deck]) == deck  # numpy ints: the per-card path
    assert check_deck(["AS", *deck[1:]]) == deck


def test_from_mask_lists_the_cards_of_any_mask_ascending():
    """``from_mask`` (four table lookups for a deck's masks) is the ascending list of set bits,
    for the empty hand, the full deck, random masks and bits past the deck."""
    rng = np.random.default_rng(3)
    masks = [0, (1 << 52) - 1, 1, 1 << 51, 1 << 52 | 1, 1 << 60 | 1 << 13]
    masks += [int(sum(1 << int(c) for c in rng.choice(52, size=k, replace=False))) for k in rng.integers(0, 53, 500)]
    for mask in masks:
        expected = [bit for bit in range(mask.bit_length()) if mask >> bit & 1]
        assert from_mask(mask) == expected
        assert to_mask(from_mask(mask)) == mask
