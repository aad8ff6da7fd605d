"""Exact meld solver: minimum deadwood, best arrangement, knock discards (with a cheap pre-check)
and meld membership (``in_some_meld``). The showdown's layouts and layoffs, which build on it,
are in ``layouts.py``.

Cards are handled as 52-bit masks (see ``cards.py``); the public functions also accept any
iterable of card ids.

How the minimum deadwood is found exactly, and fast:
runs live inside one suit, sets span suits. For every 13-bit suit mask we precompute the least
deadwood using runs only (``RUN_DEADWOOD``, 8,192 entries, built once at import). A hand then
only needs an enumeration of its *set* choices (for each rank held 3 or 4 times: no set, the
four, or one of the 3-card subsets); each choice costs four table lookups. Most hands hold no
rank three times and cost a handful of bit operations. The best 11-card knock discard uses a
second table (``RUN_DEADWOOD_AFTER_DROP``: the least run-only deadwood after removing the best
card of a suit) so it needs no loop over the 11 discards either.
"""

from __future__ import annotations

from collections.abc import Iterable

from .cards import NUM_RANKS, SUIT_MASK, checked_mask, from_mask, to_mask
from .memo import new_memo, remember

_NO_CARD = 10_000  # "infinite" deadwood for impossible choices (e.g. dropping from an empty suit)


def _rank_value(rank: int) -> int:
    return min(rank + 1, 10)


def _build_suit_tables() -> tuple[list[int], list[int], list[int]]:
    """Run-only deadwood per suit mask, the choice that reaches it, and the value after the best drop."""
    size = 1 << NUM_RANKS
    deadwood = [0] * size
    choice = [0] * size  # 0: lowest card is deadwood; k >= 3: lowest card starts a run of length k
    for mask in range(1, size):
        low_rank = (mask & -mask).bit_length() - 1
        best = _rank_value(low_rank) + deadwood[mask & (mask - 1)]
        best_choice = 0
        run_bits = 1 << low_rank
        length = 1
        while low_rank + length < NUM_RANKS and mask >> (low_rank + length) & 1:
            run_bits |= 1 << (low_rank + length)
            length += 1
            if length >= 3 and deadwood[mask & ~run_bits] < best:
                best = deadwood[mask & ~run_bits]
                best_choice = length
        deadwood[mask] = best
        choice[mask] = best_choice
    after_drop = [_NO_CARD] * size
    for mask in range(1, size):
        rest = mask
        best = _NO_CARD
        while rest:
            low = rest & -rest
            rest ^= low
            value = deadwood[mask ^ low]
            if value < best:
                best = value
        after_drop[mask] = best
    return deadwood, choice, after_drop


RUN_DEADWOOD, _RUN_CHOICE, RUN_DEADWOOD_AFTER_DROP = _build_suit_tables()
#: How much the best single drop changes a suit's run-only deadwood (huge for an empty suit).
_DROP_CHANGE = [after - before for after, before in zip(RUN_DEADWOOD_AFTER_DROP, RUN_DEADWOOD)]
#: Above this many ranks held three or more times, the set enumeration (up to 6 choices a rank)
#: costs more than a rank-by-rank dynamic programme; only hands far larger than a game's get there.
_MAX_SET_RANKS_FOR_ENUMERATION = 4


#: Memos of the solvers (least deadwood, after the best discard, after each discard, in the
#: order of the hand's cards) for hands holding a rank three or four times, the only hands that
#: need the set enumeration (a few microseconds; the other hands cost a few table lookups, less
#: than a dict lookup). Rollouts and searches meet the same hands again and again (measured: 70%
#: of the labelling's solver calls repeat a hand), so each set hand is solved once. Keyed by the
#: mask as an int; emptied when full (``memo.remember``), which bounds the memory: about 5, 5
#: and 13 MB when full (measured with labelling jobs).
_SET_HAND_DEADWOOD: dict[int, int] = new_memo()
_SET_HAND_BEST_DISCARD: dict[int, int] = new_memo()
_SET_HAND_AFTER_DISCARDS: dict[int, tuple[int, ...]] = new_memo()
_MEMO_LIMIT = 1 << 16
#: ``best_melds`` by hand, every hand (7-15 microseconds to arrange, under 1 to copy a remembered
#: arrangement into fresh lists; 61% of a labelling job's showdown hands repeat one seen before),
#: at most 16,384 hands (about 6 MB).
_BEST_MELDS: dict[int, tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]] = new_memo()
_BEST_MELDS_LIMIT = 1 << 14


def _remember(memo: dict, mask: int, value) -> None:
    remember(memo, int(mask), value, _MEMO_LIMIT)


def _split(mask: int) -> tuple[int, int, int, int]:
    return mask & SUIT_MASK, (mask >> 13) & SUIT_MASK, (mask >> 26) & SUIT_MASK, mask >> 39


def _ranks_held_three_times(s0: int, s1: int, s2: int, s3: int) -> int:
    """13-bit mask of the ranks present in at least three of the four suits."""
    return (s0 & s1 & (s2 | s3)) | (s2 & s3 & (s0 | s1))


def _set_choices(suits: tuple[int, int, int, int], rank_bit: int) -> list[tuple[int, int, int, int]]:
    """Suit masks left after each way of taking a set of ``rank_bit`` (not taking one excluded)."""
    holders = [i for i in range(4) if suits[i] & rank_bit]
    if len(holders) == 4:
        subsets = [holders] + [[h for h in holders if h != skip] for skip in holders]
    else:
        subsets = [holders]
    choices = []
    for subset in subsets:
        remaining = list(suits)
        for i in subset:
            remaining[i] &= ~rank_bit
        choices.append(tuple(remaining))
    return choices


def _min_over_sets(s0: int, s1: int, s2: int, s3: int, set_ranks: int, leaf) -> int:
    """Least ``leaf(suit masks)`` over every way of melding (or not) a set of each rank in ``set_ranks``.

    Taking a set of a rank clears its bit in every suit (the suits without it are unchanged); with
    all four suits there are also the four sets of three. Hot path of the solver: plain ints, no lists.
    """
    rank_bit = set_ranks & -set_ranks
    rest = set_ranks ^ rank_bit
    keep = ~rank_bit
    n0, n1, n2, n3 = s0 & keep, s1 & keep, s2 & keep, s3 & keep
    if rest:
        best = _min_over_sets(s0, s1, s2, s3, rest, leaf)
        value = _min_over_sets(n0, n1, n2, n3, rest, leaf)
        if value < best:
            best = value
        if s0 & s1 & s2 & s3 & rank_bit:
            for choice in ((s0, n1, n2, n3), (n0, s1, n2, n3), (n0, n1, s2, n3), (n0, n1, n2, s3)):
                value = _min_over_sets(*choice, rest, leaf)
                if value < best:
                    best = value
        return best
    # Last set rank: the leaves are called here directly (one call less per leaf; 17% faster on
    # hands holding a set than recursing to an empty ``set_ranks``).
    best = leaf(s0, s1, s2, s3)
    value = leaf(n0, n1, n2, n3)
    if value < best:
        best = value
    if s0 & s1 & s2 & s3 & rank_bit:
        for choice in ((s0, n1, n2, n3), (n0, s1, n2, n3), (n0, n1, s2, n3), (n0, n1, n2, s3)):
            value = leaf(*choice)
            if value < best:
                best = value
    return best


def _leaf_deadwood(s0: int, s1: int, s2: int, s3: int) -> int:
    table = RUN_DEADWOOD
    return table[s0] + table[s1] + table[s2] + table[s3]


def _leaf_deadwood_after_drop(s0: int, s1: int, s2: int, s3: int) -> int:
    table, change = RUN_DEADWOOD, _DROP_CHANGE
    return table[s0] + table[s1] + table[s2] + table[s3] + min(change[s0], change[s1], change[s2], change[s3])


def deadwood_of_mask(mask: int) -> int:
    """Minimum deadwood of the cards in ``mask`` (any number of cards)."""
    s0, s1, s2, s3 = mask & SUIT_MASK, (mask >> 13) & SUIT_MASK, (mask >> 26) & SUIT_MASK, mask >> 39
    set_ranks = (s0 & s1 & (s2 | s3)) | (s2 & s3 & (s0 | s1))
    if not set_ranks:
        table = RUN_DEADWOOD
        return table[s0] + table[s1] + table[s2] + table[s3]
    value = _SET_HAND_DEADWOOD.get(mask)
    if value is None:
        if set_ranks.bit_count() > _MAX_SET_RANKS_FOR_ENUMERATION:
            value = _deadwood_by_rank_dp(mask)
        else:
            value = _min_over_sets(s0, s1, s2, s3, set_ranks, _leaf_deadwood)
        _remember(_SET_HAND_DEADWOOD, mask, value)
    return value


def deadwood_after_discards(mask: int, cards: int) -> list[tuple[int, int]]:
    """``[(card, deadwood_of_mask(mask minus card))]`` for each card of the mask ``cards`` (cards of
    ``mask``), ascending. A hand with no rank held three times (most hands) needs no solver call:
    removing a card changes only its own suit's run-only deadwood, one table lookup per card."""
    suits = _split(mask)
    if _ranks_held_three_times(*suits):
        values = _SET_HAND_AFTER_DISCARDS.get(mask)
        if values is None:
            values = _set_hand_after_discards(mask, suits)
            _remember(_SET_HAND_AFTER_DISCARDS, mask, values)
        result = list(zip(from_mask(mask), values))
    else:
        table = RUN_DEADWOOD
        base = table[suits[0]] + table[suits[1]] + table[suits[2]] + table[suits[3]]
        result = []
        for offset, bits in zip(_SUIT_OFFSETS, suits):
            if bits:
                result += [(offset + rank, base + change) for rank, change in _drop_changes(bits)]
    if cards != mask:
        return [entry for entry in result if cards >> entry[0] & 1]
    return result


_SUIT_OFFSETS = (0, NUM_RANKS, 2 * NUM_RANKS, 3 * NUM_RANKS)
#: For a suit mask, ``(rank, change of its run-only deadwood when that card leaves)`` for each of
#: its cards, filled as suit masks are met (at most 8,192 entries).
_DROP_CHANGES: dict[int, tuple[tuple[int, int], ...]] = {}


def _drop_changes(bits: int) -> tuple[tuple[int, int], ...]:
    changes = _DROP_CHANGES.get(bits)
    if changes is None:
        table = RUN_DEADWOOD
        changes = _DROP_CHANGES[bits] = tuple(
            (rank, table[bits ^ 1 << rank] - table[bits]) for rank in range(NUM_RANKS) if bits >> rank & 1)
    return changes


def _set_hand_after_discards(mask: int, suits: tuple[int, int, int, int]) -> tuple[int, ...]:
    """The deadwood of the hand less each of its cards, in the order of ``from_mask(mask)``, for a
    hand holding a rank three or four times, in one pass over its set choices. The hand less a card ``c`` has exactly the set choices of the hand
    that leave ``c`` out of every set (a four with ``c`` becomes the three without it, which is
    one of them); under each, removing ``c`` changes only its suit's run-only deadwood."""
    set_ranks = _ranks_held_three_times(*suits)
    if set_ranks.bit_count() > _MAX_SET_RANKS_FOR_ENUMERATION:
        return tuple(deadwood_of_mask(mask ^ 1 << card) for card in from_mask(mask))
    table = RUN_DEADWOOD
    # Leaves share most of their suits: for each suit's cards left for runs, the least deadwood of
    # any leaf leaving exactly those, before the removal.
    least_by_suit: tuple[dict[int, int], ...] = ({}, {}, {}, {})
    for leaf in _set_choice_leaves(suits, set_ranks):
        base = table[leaf[0]] + table[leaf[1]] + table[leaf[2]] + table[leaf[3]]
        for least, bits in zip(least_by_suit, leaf):
            if base < least.get(bits, _NO_CARD):
                least[bits] = base
    best: dict[int, int] = {}
    for offset, least in zip(_SUIT_OFFSETS, least_by_suit):
        for bits, base in least.items():
            for rank, change in _drop_changes(bits):
                card, value = offset + rank, base + change
                if value < best.get(card, _NO_CARD):
                    best[card] = value
    return tuple(best[card] for card in from_mask(mask))


def _set_choice_leaves(suits: tuple[int, int, int, int], set_ranks: int) -> list[tuple[int, int, int, int]]:
    """The suit masks left for runs under every way of melding (or not) a set of each rank in ``set_ranks``."""
    leaves = [suits]
    rest = set_ranks
    while rest:
        rank_bit = rest & -rest
        rest ^= rank_bit
        leaves += [choice for leaf in leaves for choice in _set_choices(leaf, rank_bit)]
    return leaves


def _deadwood_by_rank_dp(mask: int) -> int:
    """Exact minimum deadwood for any hand, scanning ranks upwards.

    State: for each suit, the length of the run being built (0, 1, 2, or 3 = "3 or more").
    Each held card is deadwood, part of a set of its rank (3 or 4 such cards), or extends its
    suit's run; a run may only stop once it has 3 cards.
    """
    costs = {(0, 0, 0, 0): 0}
    for rank in range(NUM_RANKS):
        held = [suit for suit in range(4) if mask >> (suit * NUM_RANKS + rank) & 1]
        value = _rank_value(rank)
        next_costs: dict[tuple[int, int, int, int], int] = {}
        for roles in _role_choices(len(held)):
            if 0 < roles.count("set") < 3:
                continue
            role_of = dict(zip(held, roles))
            added = value * roles.count("loose")
            for state, cost in costs.items():
                new_state = []
                for suit in range(4):
                    if role_of.get(suit) == "run":
                        new_state.append(min(state[suit] + 1, 3))
                    elif state[suit] in (1, 2):
                        break  # a run of one or two cards cannot stop here
                    else:
                        new_state.append(0)
                else:
                    key = tuple(new_state)
                    if cost + added < next_costs.get(key, _NO_CARD):
                        next_costs[key] = cost + added
        costs = next_costs
    return min(cost for state, cost in costs.items() if all(length in (0, 3) for length in state))


def _role_choices(count: int) -> list[tuple[str, ...]]:
    choices: list[tuple[str, ...]] = [()]
    for _ in range(count):
        choices = [c + (role,) for c in choices for role in ("loose", "set", "run")]
    return choices


def best_discard_deadwood_of_mask(mask: int) -> int:
    """Least deadwood left after discarding the best single card of ``mask`` (e.g. 11 -> 10 cards)."""
    s0, s1, s2, s3 = mask & SUIT_MASK, (mask >> 13) & SUIT_MASK, (mask >> 26) & SUIT_MASK, mask >> 39
    set_ranks = (s0 & s1 & (s2 | s3)) | (s2 & s3 & (s0 | s1))
    if not set_ranks:
        if not mask:
            raise ValueError("cannot discard from an empty hand")
        table, change = RUN_DEADWOOD, _DROP_CHANGE
        return table[s0] + table[s1] + table[s2] + table[s3] + min(change[s0], change[s1], change[s2], change[s3])
    value = _SET_HAND_BEST_DISCARD.get(mask)
    if value is None:
        if set_ranks.bit_count() > _MAX_SET_RANKS_FOR_ENUMERATION:
            value = min(_deadwood_by_rank_dp(mask ^ (1 << card)) for card in from_mask(mask))
        else:
            value = _min_over_sets(s0, s1, s2, s3, set_ranks, _leaf_deadwood_after_drop)
        _remember(_SET_HAND_BEST_DISCARD, mask, value)
    return value


def knock_discards_of_mask(mask: int, knock_limit: int, forbidden: int = 0) -> list[int]:
    """Cards whose discard leaves deadwood <= ``knock_limit``, ascending; ``forbidden`` is a mask excluded."""
    if best_discard_deadwood_of_mask(mask) > knock_limit:
        return []
    return [card for card, left in deadwood_after_discards(mask, mask & ~forbidden) if left <= knock_limit]


# ----------------------------------------------------------------------------- knock pre-check, meld membership

# Cards in no possible meld of a hand (their rank held fewer than three times, no three-card run
# through them in their suit) stay deadwood whatever is discarded, except the discarded card
# itself (worth at most 10). So when their value exceeds ``knock_limit + 10`` no discard leaves a
# knock, and the exact solver need not be called: random play rules out nearly every discard
# decision this way.
_VALUE_SUM = [0] * 8192  # the value of the cards of a 13-bit suit mask
_OUTSIDE_RUNS = [0] * 8192  # the cards of a 13-bit suit mask in no 3-card run of that mask
for _m in range(1, 8192):
    _r3 = _m & _m >> 1 & _m >> 2
    _OUTSIDE_RUNS[_m] = _m & ~(_r3 | _r3 << 1 | _r3 << 2)
    _VALUE_SUM[_m] = _VALUE_SUM[_m & (_m - 1)] + min((_m & -_m).bit_length(), 10)
del _m, _r3
_VALUE_OUTSIDE_RUNS = [_VALUE_SUM[m] for m in _OUTSIDE_RUNS]


def knock_ruled_out(mask: int, knock_limit: int) -> bool:
    """True if no discard from ``mask`` can leave deadwood <= ``knock_limit`` (a cheap bound, see above).

    False does not mean a knock exists: then ``knock_discards_of_mask`` decides. Both together are
    the knock rule of ``RoundState.legal_parts``."""
    # Two 26-bit halves: ints below 2**30 are one machine digit, and their operations the fastest.
    low, high = mask & 0x3FFFFFF, mask >> 26
    s0, s1, s2, s3 = low & SUIT_MASK, low >> 13, high & SUIT_MASK, high >> 13
    sets = (s0 & s1 & (s2 | s3)) | (s2 & s3 & (s0 | s1))  # ranks held three or four times
    if not sets:
        free = _VALUE_OUTSIDE_RUNS
        return free[s0] + free[s1] + free[s2] + free[s3] > knock_limit + 10
    outside, value, keep = _OUTSIDE_RUNS, _VALUE_SUM, ~sets
    dead = value[outside[s0] & keep] + value[outside[s1] & keep] + value[outside[s2] & keep]
    return dead + value[outside[s3] & keep] > knock_limit + 10


def in_some_meld(hand: int, card: int) -> bool:
    """True if ``card`` forms a set or a run with cards of ``hand`` (a mask that may hold it or not)."""
    rank = card % NUM_RANKS
    suit = card // NUM_RANKS
    same_rank = 0
    for s in range(4):
        if s != suit and hand >> (s * NUM_RANKS + rank) & 1:
            same_rank += 1
    if same_rank >= 2:
        return True
    suit_cards = ((hand >> (suit * NUM_RANKS)) & SUIT_MASK) | (1 << rank)
    low = rank
    while low > 0 and suit_cards >> (low - 1) & 1:
        low -= 1
    high = rank
    while high < NUM_RANKS - 1 and suit_cards >> (high + 1) & 1:
        high += 1
    return high - low >= 2


# ----------------------------------------------------------------------------- public, id-based


def deadwood(cards: Iterable[int]) -> int:
    """Minimum deadwood of any collection of distinct card ids (a ValueError names a bad one)."""
    return deadwood_of_mask(checked_mask(cards))


def best_discard(cards: Iterable[int]) -> tuple[int, list[int]]:
    """``(least deadwood after one discard, every discard that reaches it)``."""
    mask = checked_mask(cards)
    best = best_discard_deadwood_of_mask(mask)
    return best, [c for c, left in deadwood_after_discards(mask, mask) if left == best]


def _suit_runs(suit: int, suit_mask: int) -> list[list[int]]:
    runs = []
    while suit_mask:
        low_rank = (suit_mask & -suit_mask).bit_length() - 1
        length = _RUN_CHOICE[suit_mask]
        if length:
            runs.append([suit * NUM_RANKS + low_rank + k for k in range(length)])
            suit_mask &= ~(((1 << length) - 1) << low_rank)
        else:
            suit_mask &= suit_mask - 1
    return runs


#: For a suit and the cards of it left for runs (``suit << 13 | bits``): the runs ``_suit_runs``
#: makes of them, as tuples, and their cards as a mask (at most 4 x 8,192 entries). Every showdown
#: arranges two hands or more, most of them without a set.
_SUIT_RUN_MELDS: dict[int, tuple[tuple[tuple[int, ...], ...], int]] = new_memo()
_SUIT_RUN_MELDS_LIMIT = 4 << NUM_RANKS


def _suit_run_melds(suit: int, bits: int) -> tuple[tuple[tuple[int, ...], ...], int]:
    key = suit << NUM_RANKS | bits
    known = _SUIT_RUN_MELDS.get(key)
    if known is None:
        runs = tuple(map(tuple, _suit_runs(suit, bits)))
        known = runs, to_mask(card for run in runs for card in run)
        remember(_SUIT_RUN_MELDS, key, known, _SUIT_RUN_MELDS_LIMIT)
    return known


def best_melds(cards: Iterable[int]) -> tuple[list[list[int]], list[int]]:
    """One arrangement with the minimum deadwood: ``(melds, deadwood_cards)``, each sorted by id.

    The set choices are tried in a fixed order (for each rank held three or four times, from the
    Ace up: first no set of that rank, then each of its sets), and the first choice that reaches
    the minimum deadwood is taken; the solver gives the minimum beforehand, so the search stops
    there."""
    return best_melds_of_mask(checked_mask(cards))


def best_melds_of_mask(mask: int) -> tuple[list[list[int]], list[int]]:
    """``best_melds`` of the cards of ``mask``."""
    known = _BEST_MELDS.get(mask)
    if known is None:
        known = _best_melds_of_mask(mask)
        remember(_BEST_MELDS, mask, known, _BEST_MELDS_LIMIT)
    melds, loose = known
    return [list(meld) for meld in melds], list(loose)


def _best_melds_of_mask(mask: int) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    suits = _split(mask)
    set_ranks = _ranks_held_three_times(*suits)
    melds: list[tuple[int, ...]] = []
    melded = 0
    remaining = suits
    if set_ranks:
        found = _first_arrangement(suits, set_ranks, (), deadwood_of_mask(mask))
        assert found is not None, "the solver's minimum is reached by some set choice"
        set_masks, remaining = found
        for set_mask in set_masks:
            melds.append(tuple(from_mask(set_mask)))
            melded |= set_mask
    for suit, bits in enumerate(remaining):
        if bits:
            runs, run_mask = _suit_run_melds(suit, bits)
            melds += runs
            melded |= run_mask
    melds.sort()
    return tuple(melds), tuple(from_mask(mask & ~melded))


def _first_arrangement(suits: tuple[int, int, int, int], set_ranks: int, taken_sets: tuple[int, ...],
                       target: int) -> tuple[tuple[int, ...], tuple[int, int, int, int]] | None:
    """``(set masks, suit masks left for runs)`` of the first set choice over ``set_ranks`` whose
    run-only deadwood is ``target``, or None."""
    if not set_ranks:
        return (taken_sets, suits) if _leaf_deadwood(*suits) == target else None
    rank_bit = set_ranks & -set_ranks
    rest = set_ranks ^ rank_bit
    found = _first_arrangement(suits, rest, taken_sets, target)
    if found is not None:
        return found
    for remaining in _set_choices(suits, rank_bit):
        taken = 0
        for i in range(4):
            taken |= (suits[i] & ~remaining[i]) << (13 * i)
        found = _first_arrangement(remaining, rest, taken_sets + (taken,), target)
        if found is not None:
            return found
    return None
