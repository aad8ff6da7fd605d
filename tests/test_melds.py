"""The meld solver (okgin_env/rules/melds.py) against a plain brute-force reference.

The reference below works on lists and frozensets of card ids, not on bitmasks or suit tables:
it lists every meld a hand contains, then every family of pairwise disjoint melds, and takes the
least value of the cards left over. It is slow but obviously right, so it checks the table-driven
solver on thousands of random and "meld-dense" hands (many overlapping sets and runs, where a
wrong choice of melds costs points).
"""

from __future__ import annotations

import itertools
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import okgin_env
from okgin_env.rules.cards import from_mask, parse_cards, to_mask
from okgin_env.rules import melds as solver
from okgin_env.rules.layouts import best_layoffs, candidate_melds_of_mask, layouts_of_mask
from okgin_env.rules.melds import (
    best_discard,
    deadwood_after_discards,
    deadwood_of_mask,
    knock_discards_of_mask,
)

# ----------------------------------------------------------------------------- reference solver


def value(card: int) -> int:
    rank = card % 13
    return 10 if rank >= 9 else rank + 1


def total(cards) -> int:
    return sum(value(c) for c in cards)


def is_meld(cards) -> bool:
    """A set (3 or 4 of one rank) or a run (3+ consecutive ranks of one suit, Ace low, no wrap)."""
    cards = sorted(cards)
    if len(cards) < 3 or len(set(cards)) != len(cards):
        return False
    ranks = [c % 13 for c in cards]
    suits = [c // 13 for c in cards]
    if len(set(ranks)) == 1:
        return len(cards) <= 4
    if len(set(suits)) != 1:
        return False
    return ranks == list(range(ranks[0], ranks[0] + len(ranks)))


def all_melds(hand) -> list[frozenset[int]]:
    """Every meld contained in ``hand``: all 3- and 4-subsets of a rank, every run window of a suit."""
    hand = set(hand)
    melds = []
    for rank in range(13):
        same = [c for c in hand if c % 13 == rank]
        for size in (3, 4):
            for combo in itertools.combinations(same, size):
                melds.append(frozenset(combo))
    for suit in range(4):
        for low in range(13):
            for high in range(low + 2, 13):
                cards = [suit * 13 + r for r in range(low, high + 1)]
                if all(c in hand for c in cards):
                    melds.append(frozenset(cards))
    return melds


def disjoint_families(melds) -> list[tuple[frozenset[int], ...]]:
    """Every family (tuple) of pairwise disjoint melds, the empty family included."""
    families = []

    def extend(start: int, used: frozenset[int], chosen: tuple) -> None:
        families.append(chosen)
        for i in range(start, len(melds)):
            if not (melds[i] & used):
                extend(i + 1, used | melds[i], chosen + (melds[i],))

    extend(0, frozenset(), ())
    return families


def brute_deadwood(hand) -> int:
    hand = list(hand)
    best = total(hand)
    for family in disjoint_families(all_melds(hand)):
        melded = set().union(*family) if family else set()
        best = min(best, total(c for c in hand if c not in melded))
    return best


def brute_after_each_discard(hand) -> dict[int, int]:
    """Least deadwood of the hand without card d, for every d, from one enumeration of families."""
    hand = list(hand)
    after = {d: total(hand) - value(d) for d in hand}
    for family in disjoint_families(all_melds(hand)):
        melded = set().union(*family) if family else set()
        loose = total(c for c in hand if c not in melded)
        for d in hand:
            if d not in melded:
                after[d] = min(after[d], loose - value(d))
    return after


def brute_best_discard(hand) -> tuple[int, list[int]]:
    after = brute_after_each_discard(hand)
    best = min(after.values())
    return best, sorted(d for d, v in after.items() if v == best)


# ----------------------------------------------------------------------------- hand generators


def random_hand(rng: random.Random, size: int) -> list[int]:
    return rng.sample(range(52), size)


def dense_hand(rng: random.Random, size: int) -> list[int]:
    """A hand crowded with overlapping melds, built one of three ways."""
    kind = rng.randrange(3)
    if kind == 0:  # few suits, narrow window of ranks
        suits = rng.sample(range(4), rng.choice((2, 2, 3)))
        width = max(4, -(-size // len(suits)) + rng.randrange(0, 3))
        width = min(width, 13)
        low = rng.randrange(0, 14 - width)
        pool = [s * 13 + r for s in suits for r in range(low, low + width)]
        if len(pool) < size:
            pool = list(range(52))
        return rng.sample(pool, size)
    if kind == 1:  # all four suits, very narrow window (sets everywhere, short runs)
        low = rng.randrange(0, 10)
        width = max(3, -(-size // 4))
        pool = [s * 13 + r for s in range(4) for r in range(low, min(13, low + width))]
        if len(pool) < size:
            pool = list(range(52))
        return rng.sample(pool, size)
    # sets and runs (possibly sharing cards) plus noise
    cards: set[int] = set()
    while len(cards) < size:
        choice = rng.randrange(4)
        if choice == 0:
            rank = rng.randrange(13)
            cards.update(s * 13 + rank for s in rng.sample(range(4), rng.choice((3, 4))))
        elif choice in (1, 2):
            suit, length = rng.randrange(4), rng.choice((3, 3, 4, 5))
            low = rng.randrange(0, 14 - length)
            cards.update(suit * 13 + r for r in range(low, low + length))
        else:
            cards.add(rng.randrange(52))
    return rng.sample(sorted(cards), size)


def hands(seed: int, count: int, sizes, dense: bool):
    rng = random.Random(seed)
    make = dense_hand if dense else random_hand
    for i in range(count):
        yield make(rng, sizes[i % len(sizes)])


# ----------------------------------------------------------------------------- reference self-checks


def test_reference_solver_on_known_hands():
    assert brute_deadwood([]) == 0
    assert brute_deadwood(parse_cards("AS 2S 3S")) == 0
    assert brute_deadwood(parse_cards("QS KS AS")) == 21  # no wrap-around
    assert brute_deadwood(parse_cards("7S 7H 7D 7C 8C 9C")) == 0  # 7S7H7D + 7C8C9C
    assert brute_deadwood(parse_cards("7S 7H 7D 7C 8C")) == 8
    assert brute_deadwood(parse_cards("3S 3H 3D 4S 5S")) == 6  # either 345S or the set of 3s
    assert is_meld(parse_cards("TH JH QH KH")) and not is_meld(parse_cards("KH AH 2H"))


# ----------------------------------------------------------------------------- deadwood


def test_deadwood_trivial():
    assert okgin_env.deadwood([]) == 0
    assert okgin_env.deadwood(parse_cards("KS")) == 10
    assert okgin_env.deadwood(parse_cards("QS KS AS")) == 21
    assert okgin_env.deadwood(range(13)) == 0  # a whole suit is one run
    assert okgin_env.deadwood(range(13, 26)) == 0
    assert okgin_env.deadwood(parse_cards("AS AH AD AC 2S 2H 2D 2C 3S 3H 3D 3C")) == 0
    # (the whole deck is not tested: the set enumeration is exponential in the number of ranks
    # held three or four times, and 52 cards take far too long; game hands hold at most 3.)


@pytest.mark.parametrize("dense", [False, True], ids=["random", "dense"])
def test_deadwood_matches_brute_force(dense):
    sizes = list(range(12))  # 0..11 cards
    for hand in hands(seed=11 + dense, count=2000, sizes=sizes, dense=dense):
        expected = brute_deadwood(hand)
        assert okgin_env.deadwood(hand) == expected, hand


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 51), min_size=0, max_size=11, unique=True))
def test_deadwood_hypothesis_any_hand(hand):
    assert okgin_env.deadwood(hand) == brute_deadwood(hand)


# Two or three suits, ranks within a window of six: hypothesis explores the crowded corner.
_dense_cards = st.tuples(st.integers(0, 7), st.lists(st.integers(0, 3), min_size=2, max_size=3, unique=True)).flatmap(
    lambda args: st.lists(
        st.sampled_from([s * 13 + r for s in args[1] for r in range(args[0], args[0] + 6)]),
        min_size=0,
        max_size=11,
        unique=True,
    )
)


@settings(max_examples=300, deadline=None)
@given(_dense_cards)
def test_deadwood_hypothesis_dense(hand):
    assert okgin_env.deadwood(hand) == brute_deadwood(hand)


# ----------------------------------------------------------------------------- best_melds


def check_best_melds(hand):
    melds, loose = okgin_env.best_melds(hand)
    seen: list[int] = []
    for meld in melds:
        assert is_meld(meld), (hand, meld)
        seen.extend(meld)
    assert len(seen) == len(set(seen)), ("melds overlap", hand, melds)
    assert not set(seen) & set(loose)
    assert sorted(seen + list(loose)) == sorted(hand), (hand, melds, loose)
    assert total(loose) == brute_deadwood(hand), (hand, melds, loose)
    assert list(loose) == sorted(loose)


@pytest.mark.parametrize("dense", [False, True], ids=["random", "dense"])
def test_best_melds_is_a_valid_optimal_arrangement(dense):
    for hand in hands(seed=21 + dense, count=800, sizes=list(range(12)), dense=dense):
        check_best_melds(hand)


@settings(max_examples=150, deadline=None)
@given(_dense_cards)
def test_best_melds_hypothesis(hand):
    check_best_melds(hand)


@pytest.mark.parametrize("dense", [False, True], ids=["random", "dense"])
def test_best_melds_of_mask_is_best_melds(dense):
    """The showdown arranges hands from their masks: the same arrangement as from the card ids."""
    for hand in hands(seed=23 + dense, count=800, sizes=list(range(16)), dense=dense):
        assert solver.best_melds_of_mask(to_mask(hand)) == okgin_env.best_melds(hand), hand


def test_best_melds_examples():
    assert okgin_env.best_melds([]) == ([], [])
    melds, loose = okgin_env.best_melds(parse_cards("7S 7H 7D 7C 8C 9C"))
    assert loose == [] and sorted(map(sorted, melds)) == sorted(
        [sorted(parse_cards("7S 7H 7D")), sorted(parse_cards("7C 8C 9C"))]
    )


# ----------------------------------------------------------------------------- best_discard / knock


@pytest.mark.parametrize("dense", [False, True], ids=["random", "dense"])
def test_best_discard_matches_brute_force(dense):
    for hand in hands(seed=31 + dense, count=900, sizes=[11, 11, 11, 8, 5, 1], dense=dense):
        assert best_discard(hand) == brute_best_discard(hand), hand


@settings(max_examples=150, deadline=None)
@given(_dense_cards.filter(lambda h: len(h) >= 1))
def test_best_discard_hypothesis(hand):
    assert best_discard(hand) == brute_best_discard(hand)


def test_best_discard_empty_hand_raises():
    with pytest.raises(ValueError):
        best_discard([])


def shortcut_after_grouping(hand, family) -> int:
    """The shortcut: keep an 11-card grouping, then discard its highest loose card."""
    melded = set().union(*family) if family else set()
    loose = [c for c in hand if c not in melded]
    return total(loose) - max((value(c) for c in loose), default=0)


def optimal_groupings(hand):
    best = brute_deadwood(hand)
    out = []
    for family in disjoint_families(all_melds(hand)):
        melded = set().union(*family) if family else set()
        if total(c for c in hand if c not in melded) == best:
            out.append(family)
    return out


def test_best_discard_where_grouping_then_drop_shortcut_can_fail():
    hand = parse_cards("3S 4S 5S AC 2C 3C 5C 3D 3H 4H 5H")
    assert best_discard(hand) == (3, parse_cards("5C"))
    assert brute_best_discard(hand) == (3, parse_cards("5C"))
    # Two groupings of the 11 cards reach the least deadwood (8):
    #   3S4S5S 3H4H5H AC2C3C, loose 3D 5C  -> drop 5C -> 3
    #   3S3H3D 5S5H5C AC2C3C, loose 4S 4H  -> drop 4  -> 4
    # so "best grouping then drop the highest loose card" answers 4 with the second one.
    results = {shortcut_after_grouping(hand, fam) for fam in optimal_groupings(hand)}
    assert results == {3, 4}


def test_best_discard_where_every_optimal_grouping_shortcut_fails():
    # The only least-deadwood grouping of the 11 cards is 4S4H4D 5S5H5D, loose AS 2S 3H 2D 3D
    # (11); dropping its highest loose card leaves 8. Discarding 5S instead breaks the set of
    # fives: 3H4H5H 2D3D4D5D, loose AS 2S 4S = 7.
    hand = parse_cards("AS 2S 4S 5S 3H 4H 5H 2D 3D 4D 5D")
    exact, _ = brute_best_discard(hand)
    assert exact == 7
    assert best_discard(hand) == (7, parse_cards("5S"))
    shortcut = {shortcut_after_grouping(hand, fam) for fam in optimal_groupings(hand)}
    assert min(shortcut) > exact


@pytest.mark.parametrize("dense", [False, True], ids=["random", "dense"])
def test_knock_discards_match_brute_force(dense):
    rng = random.Random(41 + dense)
    for hand in hands(seed=43 + dense, count=400, sizes=[11], dense=dense):
        after = brute_after_each_discard(hand)
        mask = to_mask(hand)
        forbidden_card = rng.choice(hand)
        for limit in (0, 1, 5, 10, 20, 40):
            expected = sorted(d for d, v in after.items() if v <= limit)
            assert knock_discards_of_mask(mask, limit) == expected, (hand, limit)
            expected = [d for d in expected if d != forbidden_card]
            assert knock_discards_of_mask(mask, limit, 1 << forbidden_card) == expected, (hand, limit)


def test_knock_discards_example():
    hand = parse_cards("3S 4S 5S AC 2C 3C 5C 3D 3H 4H 5H")
    mask = to_mask(hand)
    assert knock_discards_of_mask(mask, 2) == []
    assert knock_discards_of_mask(mask, 3) == parse_cards("5C")
    assert knock_discards_of_mask(mask, 3, forbidden=to_mask(parse_cards("5C"))) == []
    # with limit 10: every discard that leaves <= 10
    after = brute_after_each_discard(hand)
    assert knock_discards_of_mask(mask, 10) == sorted(d for d, v in after.items() if v <= 10)


# ----------------------------------------------------------------------------- layouts


def brute_layouts(hand, limit) -> set[frozenset[int]]:
    out = set()
    for family in disjoint_families(all_melds(hand)):
        melded = set().union(*family) if family else set()
        if total(c for c in hand if c not in melded) <= limit:
            out.add(frozenset(to_mask(m) for m in family))
    return out


@pytest.mark.parametrize("dense", [False, True], ids=["random", "dense"])
def test_layouts_match_brute_force(dense):
    for hand in hands(seed=51 + dense, count=300, sizes=[10], dense=dense):
        mask = to_mask(hand)
        for limit in (0, 5, 10):
            got = list(layouts_of_mask(mask, limit))
            keys = [frozenset(melds) for melds, _ in got]
            assert len(keys) == len(set(keys)), ("layout yielded twice", hand, limit)
            assert set(keys) == brute_layouts(hand, limit), (hand, limit)
            for melds, dw in got:
                melded = 0
                for m in melds:
                    assert is_meld(from_mask(m)) and not m & melded
                    melded |= m
                assert dw == total(from_mask(mask & ~melded)) <= limit


def _meld_order(meld: frozenset[int]) -> tuple:
    """The order ``candidate_melds_of_mask`` promises (the showdown keeps the first of equal layouts,
    so the order decides which melds a record shows): sets by rank, the whole set before its
    threes, those by the suit they leave out; then runs by suit, lowest rank and length."""
    cards = sorted(meld)
    if len({c % 13 for c in cards}) == 1:
        missing = sorted({0, 1, 2, 3} - {c // 13 for c in cards})
        return (0, cards[0] % 13, -len(cards), missing)
    return (1, cards[0] // 13, cards[0] % 13, len(cards))


@pytest.mark.parametrize("dense", [False, True], ids=["random", "dense"])
def test_candidate_melds_are_every_meld_in_order(dense):
    for size in (3, 7, 10, 11, 20, 52):
        for hand in hands(seed=61 + dense + size, count=100 if size < 52 else 1, sizes=[size], dense=dense):
            expected = sorted(all_melds(hand), key=_meld_order)
            got = candidate_melds_of_mask(to_mask(hand))
            assert [frozenset(from_mask(m)) for m in got] == expected, hand


def test_layouts_example():
    # 4-card set: the four, each of its four 3-subsets (one 7 loose), nothing laid (28 > 10) ...
    mask = to_mask(parse_cards("7S 7H 7D 7C"))
    got = {frozenset(m): dw for m, dw in layouts_of_mask(mask, 10)}
    assert len(got) == 5 and got[frozenset([mask])] == 0
    assert sorted(got.values()) == [0, 7, 7, 7, 7]
    assert list(layouts_of_mask(mask, 6)) == [((mask,), 0)]


# ----------------------------------------------------------------------------- layoffs


def _attaches(card: int, meld: frozenset[int], ends: tuple[bool, bool]) -> bool:
    """Can ``card`` be added to ``meld`` (a growing meld on the table) at an open end?"""
    ranks = sorted(c % 13 for c in meld)
    rank, suit = card % 13, card // 13
    if len(set(ranks)) == 1:  # a set: the missing card(s) of that rank, while it has < 4 cards
        return ends[0] and rank == ranks[0] and len(meld) < 4
    if suit != next(iter(meld)) // 13:
        return False
    return (ends[0] and rank == ranks[0] - 1) or (ends[1] and rank == ranks[-1] + 1)


def brute_layoff_sets(hand, melds, open_ends) -> dict[frozenset[int], tuple[frozenset[int], ...]]:
    """Every set of hand cards that can be laid off one after another, with one final table state."""
    start = tuple(frozenset(m) for m in melds)
    reached = {frozenset(): start}
    seen = {start}
    stack = [(frozenset(), start)]
    while stack:
        laid, table = stack.pop()
        for card in hand:
            if card in laid:
                continue
            for i, meld in enumerate(table):
                if _attaches(card, meld, open_ends[i]):
                    new_table = table[:i] + (meld | {card},) + table[i + 1 :]
                    if new_table not in seen:
                        seen.add(new_table)
                        reached.setdefault(laid | {card}, new_table)
                        stack.append((laid | {card}, new_table))
    return reached


def legal_per_meld(laid_masks, hand, melds, open_ends) -> bool:
    """Lay each meld's assigned cards onto that meld only, one at a time; all must go."""
    for meld, laid_mask, ends in zip(melds, laid_masks, open_ends):
        todo = set(from_mask(laid_mask))
        if not todo <= set(hand):
            return False
        current = frozenset(meld)
        progress = True
        while todo and progress:
            progress = False
            for card in sorted(todo):
                if _attaches(card, current, ends):
                    current = current | {card}
                    todo.discard(card)
                    progress = True
        if todo:
            return False
    return True


def check_layoffs(hand, melds, open_ends=None):
    ends = open_ends or [(True, True)] * len(melds)
    reach = brute_layoff_sets(hand, melds, ends)
    options = {laid: brute_deadwood([c for c in hand if c not in laid]) for laid in reach}
    best = min(options.values())
    fewest = min(len(laid) for laid, dw in options.items() if dw == best)

    got_dw, got_laid = best_layoffs(to_mask(hand), [to_mask(m) for m in melds], open_ends)
    assert len(got_laid) == len(melds)
    assert got_dw == best, (hand, melds, ends)
    all_laid = 0
    for m in got_laid:
        assert not m & all_laid, "a card laid on two melds"
        all_laid |= m
    assert legal_per_meld(got_laid, hand, melds, ends), (hand, melds, ends, got_laid)
    assert frozenset(from_mask(all_laid)) in reach
    assert brute_deadwood([c for c in hand if not all_laid >> c & 1]) == got_dw
    assert all_laid.bit_count() == fewest, "documented tie-break: fewest cards laid off"
    return got_dw, got_laid


def random_knocker_melds(rng: random.Random) -> list[list[int]]:
    melds: list[list[int]] = []
    used: set[int] = set()
    for _ in range(rng.choice((1, 2, 2, 3))):
        for _attempt in range(20):
            if rng.random() < 0.4:
                rank = rng.randrange(13)
                meld = [s * 13 + rank for s in rng.sample(range(4), rng.choice((3, 3, 4)))]
            else:
                suit, length = rng.randrange(4), rng.choice((3, 3, 4, 5))
                low = rng.randrange(0, 14 - length)
                meld = [suit * 13 + r for r in range(low, low + length)]
            if not used & set(meld):
                melds.append(meld)
                used.update(meld)
                break
    return melds


def defender_hand(rng: random.Random, melds, size: int) -> list[int]:
    """Cards near the knocker's melds (their suits and ranks) plus random ones."""
    used = {c for m in melds for c in m}
    near = set()
    for meld in melds:
        for c in meld:
            suit, rank = c // 13, c % 13
            near.update(suit * 13 + r for r in range(max(0, rank - 3), min(13, rank + 4)))
            near.update(s * 13 + rank for s in range(4))
    near -= used
    rest = [c for c in range(52) if c not in used]
    hand = set(rng.sample(sorted(near), min(len(near), rng.randrange(3, size + 1))))
    while len(hand) < size:
        hand.add(rng.choice(rest))
    return sorted(hand)


def test_layoffs_match_brute_force():
    rng = random.Random(61)
    for _ in range(500):
        melds = random_knocker_melds(rng)
        hand = defender_hand(rng, melds, rng.choice((7, 10, 10)))
        check_layoffs(hand, melds)
        ends = []
        for meld in melds:
            if len({c % 13 for c in meld}) == 1:
                flag = rng.random() < 0.7
                ends.append((flag, flag))
            else:
                ends.append((rng.random() < 0.7, rng.random() < 0.7))
        check_layoffs(hand, melds, ends)


def _masks(*texts):
    return [to_mask(parse_cards(t)) for t in texts]


def test_layoff_chain_on_a_run():
    melds = _masks("5H 6H 7H")
    hand = parse_cards("8H 9H 4H KS QD JC 2S")
    dw, laid = check_layoffs(hand, [parse_cards("5H 6H 7H")])
    assert laid == _masks("4H 8H 9H")
    assert dw == 10 + 10 + 10 + 2
    # without 8H, 9H cannot be laid: the chain has a gap
    dw, laid = best_layoffs(to_mask(parse_cards("9H 4H KS")), melds)
    assert laid == _masks("4H") and dw == 19
    # 4H then 3H chain downward
    dw, laid = check_layoffs(parse_cards("3H 4H 9C"), [parse_cards("5H 6H 7H")])
    assert laid == _masks("3H 4H") and dw == 9
    # AH2H3H is already a meld of the hand: laying it all off gains nothing (fewest cards laid)
    dw, laid = check_layoffs(parse_cards("AH 2H 3H 9C"), [parse_cards("5H 6H 7H")])
    assert laid == [0] and dw == 9


def test_layoff_fourth_card_on_a_set():
    melds = [parse_cards("7S 7H 7D")]
    dw, laid = check_layoffs(parse_cards("7C KS 2D"), melds)
    assert laid == _masks("7C") and dw == 12
    # a set of four takes nothing
    dw, laid = best_layoffs(to_mask(parse_cards("KS 2D")), _masks("7S 7H 7D 7C"))
    assert laid == [0] and dw == 12
    # a set of 3 takes only its own rank
    dw, laid = best_layoffs(to_mask(parse_cards("6C 8C")), _masks("7S 7H 7D"))
    assert laid == [0] and dw == 14


def test_layoff_runs_do_not_wrap():
    # Q-K-A is not a run: nothing goes after a King, and a King does not go below an Ace.
    dw, laid = check_layoffs(parse_cards("AS 9C"), [parse_cards("JS QS KS")])
    assert laid == [0] and dw == 10
    dw, laid = check_layoffs(parse_cards("KS 9C"), [parse_cards("AS 2S 3S")])
    assert laid == [0] and dw == 19
    dw, laid = check_layoffs(parse_cards("TS 9S 4C"), [parse_cards("JS QS KS")])
    assert laid == _masks("9S TS") and dw == 4
    dw, laid = check_layoffs(parse_cards("4S 5S 9C"), [parse_cards("AS 2S 3S")])
    assert laid == _masks("4S 5S") and dw == 9


def test_layoff_closed_ends():
    meld = [parse_cards("5H 6H 7H")]
    hand = parse_cards("4H 3H 8H 9C")
    dw, laid = check_layoffs(hand, meld, [(False, True)])
    assert laid == _masks("8H") and dw == 4 + 3 + 9
    dw, laid = check_layoffs(hand, meld, [(True, False)])
    assert laid == _masks("3H 4H") and dw == 8 + 9
    dw, laid = check_layoffs(hand, meld, [(False, False)])
    assert laid == [0] and dw == 4 + 3 + 8 + 9
    dw, laid = check_layoffs(parse_cards("7C 2D"), [parse_cards("7S 7H 7D")], [(False, False)])
    assert laid == [0] and dw == 9


def test_layoff_two_runs_of_one_suit_and_a_set():
    melds = [parse_cards("AH 2H 3H"), parse_cards("7H 8H 9H"), parse_cards("5S 5D 5C")]
    # 4H goes up from 3H, 6H down from 7H, 5H onto either run (or the set of fives)
    dw, laid = check_layoffs(parse_cards("4H 5H 6H KC"), melds)
    assert dw == 10
    dw, laid = check_layoffs(parse_cards("4H 5H KC QC"), melds)
    assert dw == 20 and sum(m.bit_count() for m in laid) == 2


def test_layoff_tie_keeps_own_meld():
    # The defender's four 8s: laying 8H off or not leaves the same deadwood; nothing is laid.
    dw, laid = check_layoffs(parse_cards("8S 8H 8D 8C 2C"), [parse_cards("5H 6H 7H")])
    assert dw == 2 and laid == [0]


def test_large_hands_use_the_rank_programme_and_agree_with_set_enumeration():
    """Hands with many ranks held 3-4 times go through the rank-by-rank programme; both are exact."""
    from okgin_env.rules.melds import _deadwood_by_rank_dp, _leaf_deadwood, _min_over_sets, _ranks_held_three_times, _split

    rng = random.Random(11)
    for _ in range(300):
        mask = to_mask(rng.sample(range(52), rng.randint(12, 22)))
        suits = _split(mask)
        assert _deadwood_by_rank_dp(mask) == _min_over_sets(*suits, _ranks_held_three_times(*suits), _leaf_deadwood)
    assert okgin_env.deadwood(range(52)) == 0
    assert okgin_env.deadwood([c for c in range(52) if c % 13 != 6]) == 0  # no sevens: runs A-6 and 8-K


@pytest.mark.parametrize("dense", [False, True], ids=["random", "dense"])
def test_deadwood_after_discards_is_the_solver_after_each_discard(dense):
    """One pass over a hand (a table lookup per card for hands without a rank held three times)
    gives the brute-force deadwood of the hand less each card, for any subset of its cards."""
    rng = random.Random(5 + dense)
    for hand in hands(seed=31 + dense, count=600, sizes=list(range(1, 12)), dense=dense):
        mask = to_mask(hand)
        cards = to_mask(c for c in hand if rng.random() < 0.7)
        expected = [(c, brute_deadwood([x for x in hand if x != c])) for c in sorted(from_mask(cards))]
        assert deadwood_after_discards(mask, cards) == expected, hand


def test_the_solver_memo_is_bounded_and_changes_no_answer(monkeypatch):
    """Set hands are memoised; a full memo is emptied, and answers stay the solver's."""
    monkeypatch.setattr(solver, "_MEMO_LIMIT", 8)
    monkeypatch.setattr(solver, "_SET_HAND_DEADWOOD", {})
    set_hands = [h for h in hands(seed=41, count=400, sizes=[10, 11], dense=True)
                 if solver._ranks_held_three_times(*solver._split(to_mask(h)))]
    assert len(set_hands) > 20
    for hand in set_hands + set_hands:  # the second time round, some answers come from the memo
        assert deadwood_of_mask(to_mask(hand)) == brute_deadwood(hand)
        assert len(solver._SET_HAND_DEADWOOD) <= 8


def test_set_hands_after_each_discard_in_one_pass_agree_with_the_rank_programme():
    """A hand holding ranks three or four times gets every card's deadwood-after-discard from one
    pass over its set choices (``_set_hand_after_discards``): the rank programme on the hand less
    that card agrees, for game-sized and larger hands, up to the many-set hands that fall back."""
    from okgin_env.rules.melds import _deadwood_by_rank_dp, _ranks_held_three_times, _set_hand_after_discards, _split

    rng = random.Random(17)
    checked = 0
    for hand in list(hands(seed=51, count=400, sizes=list(range(3, 14)), dense=True)) + [
            rng.sample(range(52), rng.randint(12, 24)) for _ in range(100)]:
        mask = to_mask(hand)
        suits = _split(mask)
        if not _ranks_held_three_times(*suits):
            continue
        checked += 1
        expected = [(card, _deadwood_by_rank_dp(mask ^ 1 << card)) for card in sorted(hand)]
        values = _set_hand_after_discards(mask, suits)
        assert len(values) == len(hand) and list(zip(sorted(hand), values)) == expected, hand
    assert checked > 200


def test_remembered_arrangements_are_handed_out_as_fresh_lists():
    """``best_melds`` remembers each hand's arrangement: a caller changing what it got changes no
    later answer."""
    hand = parse_cards("7S 7H 7D 7C 8C 9C 2H 3H 4H KD")
    melds, loose = okgin_env.best_melds(hand)
    expected = ([list(m) for m in melds], list(loose))
    melds[0].append(99)
    melds.append([1, 2, 3])
    loose.clear()
    assert okgin_env.best_melds(hand) == expected
    check_best_melds(hand)
    # numpy integer ids, remembered or not, get the same answer.
    import numpy as np

    from okgin_env.rules.memo import clear_memos

    clear_memos()
    assert okgin_env.best_melds(np.array(hand, dtype=np.int64)) == expected
    assert okgin_env.best_melds(np.array(hand, dtype=np.int64)) == expected


def test_the_public_solver_functions_refuse_what_is_no_hand():
    """Probe 6: ids out of range or of other types leaked IndexError, TypeError or 'negative shift
    count'; a bool was read as a card and a repeated card silently collapsed."""
    import numpy as np

    import okgin_env

    for function in (okgin_env.deadwood, okgin_env.best_melds):
        for bad, words in (([60], "got 60"), ([-1], "got -1"), (["AS"], "got 'AS'"), ([1.0], "got 1.0"),
                           ([True], "got True"), ([0, 0], "AS (0) is given twice"), (5, "got int"),
                           ("AS 2S", "got str")):
            with pytest.raises(ValueError, match=re.escape(words)):
                function(bad)
    assert okgin_env.deadwood(np.array([0, 1, 2, 12])) == 10 and okgin_env.best_melds((0, 1, 2)) == ([[0, 1, 2]], [])
    with pytest.raises(ValueError, match="got True"):
        okgin_env.action_str(True)
