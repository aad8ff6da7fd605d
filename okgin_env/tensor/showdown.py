"""The showdown after a knock as batched torch code: ``rules.showdown.knock_outcome``'s points and
winner for two-player points scoring (``classic``, ``standard``), on the env's device.

The same definition as the rules core, computed for many knocks at once:

* gin (the knocker's least deadwood is 0), or no defender card that could ever join a knocker's
  meld: the knocker lays out its least deadwood, the defender keeps its own;
* otherwise every layout the knocker may put down (``layouts.layouts_of_mask``: any set of
  disjoint melds of its hand leaving at most the knock limit loose; at most three melds in 10
  cards), and for each the defender's best layoffs (``layouts.best_layoffs``: per meld nothing, a
  three-card set's missing card, or chains of its cards below and above a run; the options of the
  melds disjoint; its least deadwood of what is left). The knocker takes the layout it scores
  best with (its points minus the defender's, then the lower deadwood laid out); equal keys give
  equal points and winners, so the enumeration order does not matter.

Layouts are drawn from the 329 melds of the deck; the layoff choices of each (knock, layout) are
enumerated exactly (a mixed-radix count over the options of its melds), and every deadwood comes
from the batched solver. A knock whose hand holds more than ``MAX_CANDIDATES`` melds (a long run
in one suit) is scored by the rules core on the host, as are all knocks of other presets
(penalty scoring, 3-4 players). ``tests/test_tensor.py`` compares it with ``knock_outcome`` on
many random knocks.
"""

from __future__ import annotations

import itertools

import torch

from ..rules.cards import CARD_VALUES, NUM_CARDS, NUM_RANKS, NUM_SUITS, SUITS
from .solver import DeviceTables, MeldTables, deadwood
from .state import card_masks

#: Knocks whose hand holds more melds than this go to the host (the layouts grow as its cube).
MAX_CANDIDATES = 16
_SPADES = SUITS.index("S")


def _chain_tables() -> tuple[torch.Tensor, torch.Tensor]:
    """(8192, 13) each: how many ranks directly below (above) rank r are held in suit mask m."""
    size = 1 << NUM_RANKS
    below = torch.zeros(size, NUM_RANKS, dtype=torch.int64)
    above = torch.zeros(size, NUM_RANKS, dtype=torch.int64)
    masks = torch.arange(size)
    for r in range(NUM_RANKS):
        run = torch.ones(size, dtype=torch.bool)
        for step in range(1, NUM_RANKS):
            if r - step >= 0:
                run = run & ((masks >> (r - step)) & 1).bool()
                below[:, r] += run.long()
        run = torch.ones(size, dtype=torch.bool)
        for step in range(1, NUM_RANKS):
            if r + step < NUM_RANKS:
                run = run & ((masks >> (r + step)) & 1).bool()
                above[:, r] += run.long()
    return below, above


class ShowdownTables(DeviceTables):
    """Every meld of the deck and the layoff chain tables, on one device (built once per device)."""

    def __init__(self, device: torch.device):
        masks, is_set, missing, suit, low, high = [], [], [], [], [], []
        for rank in range(NUM_RANKS):
            four = sum(1 << (s * NUM_RANKS + rank) for s in range(NUM_SUITS))
            for left_out in (None, *range(NUM_SUITS)):
                out = 0 if left_out is None else 1 << (left_out * NUM_RANKS + rank)
                masks.append(four & ~out), is_set.append(True), missing.append(out)
                suit.append(0), low.append(rank), high.append(rank)
        for s in range(NUM_SUITS):
            for start in range(NUM_RANKS):
                for end in range(start + 2, NUM_RANKS):
                    masks.append(sum(1 << (s * NUM_RANKS + r) for r in range(start, end + 1)))
                    is_set.append(False), missing.append(0), suit.append(s), low.append(start), high.append(end)
        as_tensor = lambda values, dtype=torch.int64: torch.tensor(values, dtype=dtype, device=device)  # noqa: E731
        self.melds = as_tensor(masks + [0])  # the last: no meld (a layout's empty slot)
        self.is_set = as_tensor(is_set + [True], torch.bool)
        self.missing = as_tensor(missing + [0])
        self.suit, self.low, self.high = as_tensor(suit + [0]), as_tensor(low + [0]), as_tensor(high + [0])
        self.count = len(masks)
        below, above = _chain_tables()
        self.below, self.above = below.to(device), above.to(device)
        self.bits = 1 << torch.arange(NUM_CARDS, dtype=torch.int64, device=device)
        self.values = torch.tensor(CARD_VALUES, dtype=torch.int64, device=device)
        self.meld_values = _value(self.melds, self)
        self.subsets: dict[int, torch.Tensor] = {}

    def layouts(self, size: int) -> torch.Tensor:
        """(L, 3) every choice of at most three of ``size`` candidates (``size``: none), ascending."""
        if size not in self.subsets:
            rows = [(a, b, c) for k in range(4) for a, b, c in
                    (tuple(chosen) + (size,) * (3 - k) for chosen in itertools.combinations(range(size), k))]
            self.subsets[size] = torch.tensor(rows, dtype=torch.int64, device=self.melds.device)
        return self.subsets[size]


def _cards(masks: torch.Tensor, tables: ShowdownTables) -> torch.Tensor:
    """52-bit int64 masks (...,) as (..., 52) bool."""
    return (masks[..., None] & tables.bits) != 0


def _value(masks: torch.Tensor, tables: ShowdownTables) -> torch.Tensor:
    return (_cards(masks, tables).long() * tables.values).sum(-1)


def layoffs_possible(knocker: torch.Tensor, defender: torch.Tensor) -> torch.Tensor:
    """``showdown._layoffs_possible`` of (M, 52) bool hands: a defender card of a rank the knocker
    holds, or next to a knocker card in its suit."""
    planes = knocker.view(-1, NUM_SUITS, NUM_RANKS)
    near = torch.zeros_like(planes)
    near[:, :, 1:] |= planes[:, :, :-1]
    near[:, :, :-1] |= planes[:, :, 1:]
    touching = near | planes.any(1, keepdim=True)
    return (defender.view(-1, NUM_SUITS, NUM_RANKS) & touching).flatten(1).any(1)


def _score(config, knocker_deadwood: torch.Tensor, defender_deadwood: torch.Tensor):
    """``showdown._score`` without gin: ``(knocker's points, defender's points, undercut)``."""
    undercut = defender_deadwood < knocker_deadwood
    if config.tie_is_undercut:
        undercut = undercut | (defender_deadwood == knocker_deadwood)
    knocker_points = torch.where(undercut, 0, defender_deadwood - knocker_deadwood)
    defender_points = torch.where(undercut, config.undercut_bonus + knocker_deadwood - defender_deadwood, 0)
    return knocker_points, defender_points, undercut


def _best_layout_points(config, held, kmask, dmask, dhand, limit, meld_tables: MeldTables, tables: ShowdownTables):
    """``(knocker's points, defender's points, undercut)`` of the knocker's best layout, for knocks
    with layoffs possible (not gin); all inputs indexed by knock (``held``: (M, 329) the melds in
    the knocker's hand)."""
    m, dev = kmask.numel(), kmask.device
    size = int(held.sum(1).max())
    order = torch.arange(tables.count, device=dev)
    candidates = torch.where(held, order, tables.count + order).sort(1).values[:, :size]  # (M, size)
    candidates = torch.where(candidates < tables.count, candidates, tables.count)  # padding: no meld
    candidates = torch.cat([candidates, torch.full((m, 1), tables.count, device=dev)], 1)  # column size: none
    chosen = candidates[:, tables.layouts(size)]  # (M, L, 3) meld indices
    # A layout: pairwise disjoint melds, loose value within the limit. (A hand with fewer melds
    # than ``size`` repeats its smaller layouts through the padding: the same values, harmless.)
    a, b, c = tables.melds[chosen].unbind(-1)
    ok = ((a & b) == 0) & ((a & c) == 0) & ((b & c) == 0)
    value = tables.meld_values[chosen].sum(-1)  # (the melds are disjoint where it matters)
    loose = _value(kmask, tables)[:, None] - value
    ok &= loose <= limit[:, None]
    knock, layout = ok.nonzero(as_tuple=True)  # the (knock, layout) pairs
    slots = chosen[knock, layout]  # (P, 3)
    kd = loose[knock, layout]
    # The defender's options per meld: i cards below and j above a run; a three-card set's missing card.
    dsuits = (dhand[knock].view(-1, NUM_SUITS, NUM_RANKS).long() << torch.arange(NUM_RANKS, device=dev)).sum(-1)
    suit, low, high = tables.suit[slots], tables.low[slots], tables.high[slots]
    suit_mask = dsuits.gather(1, suit)
    is_set = tables.is_set[slots]
    set_option = (dmask[knock, None] & tables.missing[slots]) != 0
    below = torch.where(is_set, set_option.long(), tables.below[suit_mask, low])
    above = torch.where(is_set, 0, tables.above[suit_mask, high])
    options = (below + 1) * (above + 1)  # (P, 3); empty slots: 1
    combos = options.prod(1)
    pair = torch.repeat_interleave(torch.arange(knock.numel(), device=dev), combos)
    start = torch.cumsum(combos, 0) - combos
    digit = torch.arange(pair.numel(), device=dev) - start[pair]
    laid = torch.zeros_like(pair)
    clash = torch.zeros(pair.numel(), dtype=torch.bool, device=dev)
    for slot in range(3):
        base = options[pair, slot]
        pick, digit = digit % base, digit // base
        i, j = pick // (above[pair, slot] + 1), pick % (above[pair, slot] + 1)
        offset = suit[pair, slot] * NUM_RANKS
        run_cards = ((((1 << i) - 1) << (offset + low[pair, slot] - i).clamp(min=0))
                     | (((1 << j) - 1) << (offset + high[pair, slot] + 1)))
        cards = torch.where(is_set[pair, slot], torch.where(i > 0, dmask[knock[pair]] & tables.missing[slots[pair, slot]], 0),
                            run_cards)
        clash |= (laid & cards) != 0
        laid = laid | cards
    best = torch.full((knock.numel(),), 10_000, dtype=torch.int64, device=dev)
    tried = (~clash & (laid != 0)).nonzero().squeeze(1)
    if tried.numel():
        left = _cards(dmask[knock[pair[tried]]] & ~laid[tried], tables)
        best.scatter_reduce_(0, pair[tried], deadwood(left, meld_tables), "amin")
    defender_deadwood = torch.minimum(best, deadwood(dhand[knock], meld_tables))
    kp, dp, undercut = _score(config, kd, defender_deadwood)
    # The knocker's preference: its points minus the defender's, then the lower deadwood laid out.
    key = (kp - dp) * 64 - kd
    top = torch.full((m,), torch.iinfo(torch.int64).min, dtype=torch.int64, device=dev)
    top.scatter_reduce_(0, knock, key, "amax")
    first = torch.full((m,), knock.numel(), dtype=torch.int64, device=dev)
    first.scatter_reduce_(0, knock, torch.where(key == top[knock], torch.arange(knock.numel(), device=dev), knock.numel()), "amin")
    return kp[first], dp[first], undercut[first]


def knock_points(config, hands: torch.Tensor, knocker: torch.Tensor, limit: torch.Tensor, upcard: torch.Tensor,
                 meld_tables: MeldTables) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(points (K, 2), winner (K,), on_host (K,) bool)`` of K two-player knocks (``hands`` (K, 2,
    52) bool after the knock's discard, ``knocker``, ``limit`` and ``upcard`` (K,)): the points and
    winner of ``knock_outcome``; rows flagged ``on_host`` (more than ``MAX_CANDIDATES`` melds in
    the knocker's hand) are not scored, left for the rules core."""
    dev = hands.device
    tables = ShowdownTables.on(dev)
    rows = torch.arange(knocker.numel(), device=dev)
    defender = 1 - knocker
    khand = hands[rows, knocker]
    dhand = hands[rows, defender]
    kmask, dmask = card_masks(khand), card_masks(dhand)
    least = deadwood(khand, meld_tables)
    defender_least = deadwood(dhand, meld_tables)
    gin = least == 0
    kp, dp, undercut = _score(config, least, defender_least)
    kp = torch.where(gin, config.gin_bonus + defender_least, kp)
    dp = torch.where(gin, 0, dp)
    undercut = undercut & ~gin
    search = ~gin & layoffs_possible(khand, dhand)
    held = (kmask[:, None] & tables.melds[: tables.count]) == tables.melds[: tables.count]  # (K, 329)
    on_host = search & (held.sum(1) > MAX_CANDIDATES)
    search = search & ~on_host
    # By how many melds the knocker's hand holds: the layouts to try grow as its cube.
    counts = held.sum(1)
    for low, high in ((0, 5), (6, 9), (10, MAX_CANDIDATES)):
        group = (search & (counts >= low) & (counts <= high)).nonzero().squeeze(1)
        if group.numel():
            kp[group], dp[group], undercut[group] = _best_layout_points(
                config, held[group], kmask[group], dmask[group], dhand[group], limit[group], meld_tables, tables)
    if config.spade_double:
        double = torch.where(upcard // NUM_RANKS == _SPADES, 2, 1)
        kp, dp = kp * double, dp * double
    winner = torch.where(undercut, defender, knocker)
    points = torch.zeros(knocker.numel(), 2, dtype=torch.int64, device=dev)
    points[rows, knocker] = kp
    points[rows, defender] = dp
    return points, winner, on_host


__all__ = ["MAX_CANDIDATES", "ShowdownTables", "knock_points", "layoffs_possible"]
