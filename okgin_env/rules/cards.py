"""Card ids, text and values (docs/rules.md §1).

A card id is ``suit * 13 + rank`` with rank 0 = Ace ... 12 = King and suits in the order
Spades, Hearts, Diamonds, Clubs. Sets of cards are handled as Python ``int`` bitmasks
(bit ``id`` set = card present): union, difference and membership are then single operations.
"""

from __future__ import annotations

from collections.abc import Iterable

from .config import is_int

NUM_CARDS = 52
NUM_RANKS = 13
NUM_SUITS = 4
RANKS = "A23456789TJQK"
SUITS = "SHDC"
SUIT_SYMBOLS = "♠♥♦♣"
FULL_DECK_MASK = (1 << NUM_CARDS) - 1
SUIT_MASK = (1 << NUM_RANKS) - 1

#: Point value of each card id: Ace 1, 2-10 face value, J Q K 10.
CARD_VALUES: tuple[int, ...] = tuple(min(rank + 1, 10) for _ in range(NUM_SUITS) for rank in range(NUM_RANKS))


def rank_of(card: int) -> int:
    return card % NUM_RANKS


def suit_of(card: int) -> int:
    return card // NUM_RANKS


def card_value(card: int) -> int:
    return CARD_VALUES[card]


def card_str(card: int) -> str:
    """``35 -> "TD"``."""
    if not is_int(card) or not 0 <= card < NUM_CARDS:
        raise ValueError(f"card id must be an int in 0..51, got {card!r}")
    return RANKS[card % NUM_RANKS] + SUITS[card // NUM_RANKS]


def card_symbol(card: int) -> str:
    """``35 -> "T♦"``: the text form with a suit symbol, for rendering."""
    return RANKS[card % NUM_RANKS] + SUIT_SYMBOLS[card // NUM_RANKS]


def card_id(text: str | int) -> int:
    """``"TD" -> 35``. Case-insensitive, accepts ``10`` for ten; an int id is checked and returned.

    Only integers (Python or numpy, not bools) and card texts are cards: a float such as
    ``3.7`` is refused rather than truncated.
    """
    if is_int(text):
        if 0 <= text < NUM_CARDS:
            return int(text)
        raise ValueError(f"card id must be in 0..51, got {text}")
    if not isinstance(text, str):
        raise ValueError(
            f"a card is an id 0..51 or a text like 'AS', 'TD', '10h' (ids are integers, not floats or bools); "
            f"got {text!r} ({type(text).__name__})"
        )
    cleaned = text.strip().upper()
    if cleaned.startswith("10"):
        cleaned = "T" + cleaned[2:]
    if len(cleaned) != 2 or cleaned[0] not in RANKS or cleaned[1] not in SUITS:
        raise ValueError(
            f"cannot parse card {text!r}: expected a rank in {RANKS} (or 10) followed by a suit in {SUITS}, e.g. 'TD'"
        )
    return SUITS.index(cleaned[1]) * NUM_RANKS + RANKS.index(cleaned[0])


def parse_cards(cards: Iterable[str | int] | str) -> list[int]:
    """Parse card ids or texts; a single string may hold several cards separated by spaces."""
    if isinstance(cards, str):
        cards = cards.replace(",", " ").split()
    elif not isinstance(cards, Iterable):
        raise ValueError(f"cards must be a text such as 'AS TD' or a collection of card ids or texts, "
                         f"got {type(cards).__name__}")
    return [card_id(c) for c in cards]


def to_mask(cards: Iterable[int]) -> int:
    mask = 0
    for card in cards:
        mask |= 1 << card
    return mask


def checked_mask(cards: Iterable[int]) -> int:
    """``to_mask`` of a collection of distinct card ids (ints 0..51, not bools or floats); a
    ValueError naming the first entry that is none, or a repeated card (the public solver
    functions' check: a card held twice or an id 60 has no deadwood)."""
    if isinstance(cards, (str, bytes)) or not isinstance(cards, Iterable):
        raise ValueError(f"cards must be a collection of card ids 0..51 (parse_cards reads a text such as 'AS TD'), "
                         f"got {type(cards).__name__}")
    mask = 0
    for card in cards:
        if not is_int(card) or not 0 <= card < NUM_CARDS:
            raise ValueError(f"cards must be card ids 0..51 (ints; card_id reads texts such as 'TD'), got {card!r}")
        bit = 1 << int(card)
        if mask & bit:
            raise ValueError(f"card {card_str(int(card))} ({int(card)}) is given twice; a hand holds each card once")
        mask |= bit
    return mask


#: The card ids of every 13-bit suit mask, per suit: ``from_mask`` joins four lookups instead of
#: a loop over the cards (4x faster on a 10-card hand; the engine's legality and showdown use it).
_SUIT_CARD_IDS = tuple(
    tuple(tuple(suit * NUM_RANKS + rank for rank in range(NUM_RANKS) if bits >> rank & 1) for bits in range(1 << NUM_RANKS))
    for suit in range(NUM_SUITS)
)


def from_mask(mask: int) -> list[int]:
    """Card ids of a bitmask, ascending."""
    if 0 <= mask <= FULL_DECK_MASK:
        spades, hearts, diamonds, clubs = _SUIT_CARD_IDS
        return [*spades[mask & SUIT_MASK], *hearts[mask >> 13 & SUIT_MASK], *diamonds[mask >> 26 & SUIT_MASK],
                *clubs[mask >> 39]]
    cards = []  # bits past the deck: ids from 52 up, as before (no caller passes them)
    while mask:
        low = mask & -mask
        cards.append(low.bit_length() - 1)
        mask ^= low
    return cards


def mask_value(mask: int) -> int:
    total = 0
    while mask:
        low = mask & -mask
        total += CARD_VALUES[low.bit_length() - 1]
        mask ^= low
    return total


def cards_str(cards: Iterable[int]) -> str:
    return " ".join(card_str(c) for c in cards)
