"""The showdown's arrangements: every layout a knocker may put down (``layouts_of_mask``) and a
defender's best layoffs onto the knocker's melds (``best_layoffs``), with the meld helpers they
share. Deadwood itself comes from the exact solver in ``melds.py``.

Cards are 52-bit masks (see ``cards.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

from .cards import NUM_RANKS, from_mask, mask_value, to_mask
from .melds import _ranks_held_three_times, _split, deadwood_of_mask


def _set_melds(rank: int, suits_held: int) -> tuple[int, ...]:
    """The sets of ``rank`` among the suits in ``suits_held`` (4 bits): the whole set, then (with all
    four) each set of three, leaving out the suits in order."""
    cards = [s * NUM_RANKS + rank for s in range(4) if suits_held >> s & 1]
    if len(cards) < 3:
        return ()
    whole = to_mask(cards)
    if len(cards) == 3:
        return (whole,)
    return (whole, *(whole & ~(1 << skip) for skip in cards))


def _run_melds(suit: int, ranks: int) -> tuple[int, ...]:
    """The runs (length >= 3) in ``suit`` among the 13-bit ``ranks``: by lowest rank, then length."""
    runs = []
    for start in range(NUM_RANKS - 2):
        end = start
        while end < NUM_RANKS and ranks >> end & 1:
            if end - start >= 2:
                runs.append(sum(1 << (suit * NUM_RANKS + r) for r in range(start, end + 1)))
            end += 1
    return tuple(runs)


# Memos of the two tables above: the showdown asks for a hand's melds at every knock, and the
# same suit patterns come back again and again.
_SETS = [[_set_melds(rank, held) for held in range(16)] for rank in range(NUM_RANKS)]
_RUNS: list[dict[int, tuple[int, ...]]] = [{} for _ in range(4)]


def candidate_melds_of_mask(mask: int) -> list[int]:
    """Every meld (as a mask) that can be formed from ``mask``: sets of 3 and 4 (by rank), then runs
    of length >= 3 (by suit, lowest rank, length)."""
    melds: list[int] = []
    suits = _split(mask)
    s0, s1, s2, s3 = suits
    three = _ranks_held_three_times(s0, s1, s2, s3)
    while three:
        rank = (three & -three).bit_length() - 1
        three &= three - 1
        held = (s0 >> rank & 1) | (s1 >> rank & 1) << 1 | (s2 >> rank & 1) << 2 | (s3 >> rank & 1) << 3
        melds.extend(_SETS[rank][held])
    for suit, ranks in enumerate(suits):
        if ranks & ranks >> 1 & ranks >> 2:  # some three ranks in a row
            runs = _RUNS[suit].get(ranks)
            if runs is None:
                runs = _RUNS[suit][ranks] = _run_melds(suit, ranks)
            melds.extend(runs)
    return melds


def layouts_of_mask(mask: int, max_deadwood: int) -> Iterator[tuple[tuple[int, ...], int]]:
    """Every arrangement ``(meld masks, deadwood)`` of ``mask`` with deadwood <= ``max_deadwood``.

    Arrangements need not be minimal nor use every meld: a knocker may lay out any of them.
    """
    candidates = candidate_melds_of_mask(mask)

    def search(start: int, used: int, chosen: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], int]]:
        unused = mask & ~used
        if deadwood_of_mask(unused) > max_deadwood:
            return  # no arrangement below this node can get within the limit
        loose_value = mask_value(unused)
        if loose_value <= max_deadwood:
            yield chosen, loose_value
        for index in range(start, len(candidates)):
            meld = candidates[index]
            if not meld & used:
                yield from search(index + 1, used | meld, chosen + (meld,))

    yield from search(0, 0, ())


def meld_attachments(meld: int) -> tuple[int, int, int, int]:
    """How a meld on the table can grow: ``(suit_or_-1, low_rank, high_rank, set_missing_mask)``.

    A run gives its suit and end ranks; a set gives suit -1 and the mask of its missing card(s).
    """
    cards = from_mask(meld)
    ranks = {c % NUM_RANKS for c in cards}
    if len(ranks) == 1:
        rank = cards[0] % NUM_RANKS
        all_four = sum(1 << (s * NUM_RANKS + rank) for s in range(4))
        return -1, rank, rank, all_four & ~meld
    suit = cards[0] // NUM_RANKS
    return suit, cards[0] % NUM_RANKS, cards[-1] % NUM_RANKS, 0


def _layoff_options(hand: int, meld: int, low_open: bool, high_open: bool) -> list[int]:
    """Masks of hand cards that could be laid off on one meld (including laying off nothing)."""
    suit, low, high, missing = meld_attachments(meld)
    if suit < 0:
        options = [0]
        if low_open and missing & hand:
            options.append(missing & hand)  # a set of 3 takes at most its one missing card
        return options
    base = suit * NUM_RANKS
    lows = [0]
    if low_open:
        rank, laid = low - 1, 0
        while rank >= 0 and hand >> (base + rank) & 1:
            laid |= 1 << (base + rank)
            lows.append(laid)
            rank -= 1
    highs = [0]
    if high_open:
        rank, laid = high + 1, 0
        while rank < NUM_RANKS and hand >> (base + rank) & 1:
            laid |= 1 << (base + rank)
            highs.append(laid)
            rank += 1
    return [lo | hi for lo in lows for hi in highs]


def best_layoffs(
    hand: int, melds: list[int], open_ends: list[tuple[bool, bool]] | None = None
) -> tuple[int, list[int]]:
    """A player's best layoffs onto the knocker's ``melds`` (masks): ``(deadwood, laid mask per meld)``.

    ``open_ends[i] = (low_open, high_open)`` says which ends of meld ``i`` still accept cards (in
    the multi-player game an end closes once another player has laid off there; for a set both
    flags are the same). The player minimises their own deadwood; among equal results they lay
    off as few cards as possible. Chains on runs are allowed (6, then 5, then 4 ...).
    """
    if open_ends is None:
        open_ends = [(True, True)] * len(melds)
    per_meld = [_layoff_options(hand, meld, *ends) for meld, ends in zip(melds, open_ends)]
    best_deadwood = deadwood_of_mask(hand)
    best_laid = [0] * len(melds)
    best_count = 0

    def search(index: int, used: int, laid: list[int]) -> None:
        nonlocal best_deadwood, best_laid, best_count
        if index == len(per_meld):
            if not used:
                return
            value = deadwood_of_mask(hand & ~used)
            count = used.bit_count()
            if value < best_deadwood or (value == best_deadwood and count < best_count):
                best_deadwood, best_laid, best_count = value, list(laid), count
            return
        for option in per_meld[index]:
            if not option & used:
                laid.append(option)
                search(index + 1, used | option, laid)
                laid.pop()

    if any(len(options) > 1 for options in per_meld):
        search(0, 0, [])
    return best_deadwood, best_laid
