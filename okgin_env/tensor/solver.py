"""The exact meld solver as batched torch code: least deadwood of many hands, and after each discard.

The same method as ``okgin_env.rules.melds`` (and its tables): runs live inside one suit, sets span
suits. ``RUN_DEADWOOD`` gives the least run-only deadwood of every 13-bit suit mask; a hand then
needs only an enumeration of its *set* choices: for each rank held three or four times, no set,
the four, or one of the four 3-card subsets (six choices, those not held being invalid). A hand of
at most 11 cards holds at most three such ranks, so at most 6**3 = 216 choices; each costs four
table lookups. ``DROP[m, r]`` (the run-only deadwood of suit mask ``m`` without rank ``r``) gives
the deadwood after every discard from the same enumeration: a hand without card ``c`` can use
exactly the set choices of the whole hand that do not use ``c``.

Games are grouped by how many set ranks their hand holds (most hold none: one choice), so the
work follows the hands, not the worst case. Everything is exact integer arithmetic;
``tests/test_tensor.py`` checks it against the rules core.
"""

from __future__ import annotations

import itertools

import torch

from ..rules.cards import NUM_RANKS, NUM_SUITS
from ..rules.melds import RUN_DEADWOOD

#: Deadwood of an impossible choice (a card not in the hand, a set that is not held).
NO_CHOICE = 10_000
#: Set choices of one rank as masks of suits taken into the set: none, the four, or three of them.
_SET_OPTIONS = (0b0000, 0b1111, 0b1110, 0b1101, 0b1011, 0b0111)
#: Hands of at most this many cards hold at most three ranks three times or more.
MAX_SET_RANKS = 3


class DeviceTables:
    """Tables built once per device and reused: ``Tables.on(device)``."""

    _cache: dict[str, "DeviceTables"]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._cache = {}

    @classmethod
    def on(cls, device: torch.device):
        key = str(device)
        if key not in cls._cache:
            cls._cache[key] = cls(device)
        return cls._cache[key]


class MeldTables(DeviceTables):
    """The solver's tables on one device (built once per device and reused)."""

    def __init__(self, device: torch.device):
        size = 1 << NUM_RANKS
        run = torch.tensor(RUN_DEADWOOD, dtype=torch.int64)
        masks = torch.arange(size, dtype=torch.int64)
        rank_bits = 1 << torch.arange(NUM_RANKS, dtype=torch.int64)
        held = (masks[:, None] & rank_bits) != 0
        drop = torch.where(held, run[masks[:, None] & ~rank_bits], torch.full((), NO_CHOICE, dtype=torch.int64))
        # int32 (values up to 4 * NO_CHOICE): half the memory traffic of int64 in the (G, C, 4, 13) sums.
        self.run = run.to(device=device, dtype=torch.int32)
        self.drop = drop.to(device=device, dtype=torch.int32)  # (8192, 13)
        self.rank_bits = rank_bits.to(device)
        self.suit_bits = (1 << torch.arange(NUM_SUITS, dtype=torch.int64)).to(device)
        options = torch.tensor(_SET_OPTIONS, dtype=torch.int64)
        # For k set ranks: every combination of one option per rank, as (C, k) suit masks.
        self.combos = {
            k: options[torch.tensor(list(itertools.product(range(len(_SET_OPTIONS)), repeat=k)), dtype=torch.int64)].to(device)
            for k in range(1, MAX_SET_RANKS + 1)
        }


def suit_masks(hands: torch.Tensor, tables: MeldTables) -> torch.Tensor:
    """(M, 52) bool hands as (M, 4) int64 13-bit suit masks (bit r: rank r)."""
    return (hands.view(-1, NUM_SUITS, NUM_RANKS).to(torch.int64) * tables.rank_bits).sum(-1)


def deadwood_after_each(hands: torch.Tensor, tables: MeldTables) -> tuple[torch.Tensor, torch.Tensor]:
    """For (M, 52) bool hands of at most 11 cards: ``(least deadwood (M,), least deadwood after
    putting away each card (M, 52))``, both int64; ``NO_CHOICE`` for cards not in the hand."""
    m = hands.shape[0]
    device = hands.device
    suits = suit_masks(hands, tables)  # (M, 4)
    counts = hands.view(m, NUM_SUITS, NUM_RANKS).sum(1)  # (M, 13)
    is_set_rank = counts >= 3
    set_ranks = is_set_rank.sum(1)
    best = torch.empty(m, dtype=torch.int32, device=device)
    after = torch.empty(m, NUM_SUITS, NUM_RANKS, dtype=torch.int32, device=device)

    plain = set_ranks == 0
    rows = plain.nonzero().squeeze(1)
    if rows.numel():
        s = suits[rows]
        run = tables.run[s]  # (G, 4)
        total = run.sum(1, dtype=torch.int32)
        best[rows] = total
        after[rows] = total[:, None, None] - run[:, :, None] + tables.drop[s]
    for k in range(1, MAX_SET_RANKS + 1):
        rows = (set_ranks == k).nonzero().squeeze(1)
        if not rows.numel():
            continue
        g = rows.numel()
        s = suits[rows]  # (G, 4)
        ranks = is_set_rank[rows].nonzero()[:, 1].view(g, k)  # (G, k), ascending
        # Suits held of each set rank, as a 4-bit mask.
        present = ((s[:, :, None] >> ranks[:, None, :]) & 1)  # (G, 4, k)
        present = (present * tables.suit_bits[None, :, None]).sum(1)  # (G, k)
        combos = tables.combos[k]  # (C, k)
        valid = ((combos[None, :, :] & ~present[:, None, :]) == 0).all(-1)  # (G, C)
        # removed[g, c, suit]: the rank bits that choice c puts into sets, per suit.
        in_suit = (combos[:, :, None] >> torch.arange(NUM_SUITS, device=device)) & 1  # (C, k, 4)
        removed = (in_suit[None] * (1 << ranks)[:, None, :, None]).sum(2)  # (G, C, 4)
        rest = s[:, None, :] & ~removed
        run = tables.run[rest]  # (G, C, 4)
        total = run.sum(-1, dtype=torch.int32) + (~valid).int() * NO_CHOICE  # (G, C)
        best[rows] = total.min(1).values
        each = total[:, :, None, None] - run[:, :, :, None] + tables.drop[rest]  # (G, C, 4, 13)
        after[rows] = each.min(1).values
    after = after.view(m, NUM_SUITS * NUM_RANKS).long()
    after = torch.where(hands, after.clamp(max=NO_CHOICE), NO_CHOICE)
    return best.long(), after


def deadwood(hands: torch.Tensor, tables: MeldTables) -> torch.Tensor:
    """Least deadwood (M,) int64 of (M, 52) bool hands of at most 11 cards."""
    return deadwood_after_each(hands, tables)[0]
