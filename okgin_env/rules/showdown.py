"""The end of a round: the knocker's best layout, layoffs, and scoring (docs/rules.md §6, §9).

Pure functions over card masks, so tests can call them on literal hands.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .cards import NUM_RANKS, SUIT_MASK, SUITS, from_mask, mask_value, to_mask
from .config import RulesConfig
from .layouts import best_layoffs, layouts_of_mask
from .melds import best_melds_of_mask, deadwood_of_mask
from .memo import new_memo, remember

KINDS = ("knock", "gin", "undercut", "draw")


@dataclass
class RoundOutcome:
    """What a round's end revealed and scored. Lists are indexed by seat."""

    kind: str  # "knock" | "gin" | "undercut" | "draw"
    knocker: int | None
    winner: int | None  # who scored (classic) or who deals next; None for a draw
    deadwood: list[int]  # knocker: laid-out deadwood; others: after layoffs; draw: minimum deadwood
    melds: list[list[list[int]]]  # melds each seat laid out (card ids)
    layoffs: list[list[int]]  # cards each seat laid off on the knocker's melds
    points: list[int]  # classic: points scored (only the winner's is non-zero); penalty: penalties charged
    rewards: list[float]  # zero-sum per-round reward (docs/api.md reward="points")
    knock_card: int | None = None
    hands: list[list[int]] = field(default_factory=list)  # the hands shown (after the knock discard)

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "knocker": self.knocker,
            "winner": self.winner,
            "deadwood": list(self.deadwood),
            "melds": [[list(m) for m in seat] for seat in self.melds],
            "layoffs": [list(cards) for cards in self.layoffs],
            "points": list(self.points),
            "rewards": list(self.rewards),
            "knock_card": self.knock_card,
            "hands": [list(h) for h in self.hands],
        }


def zero_sum_rewards(points: list[int], penalty_scoring: bool) -> list[float]:
    """Classic: the scorer gets ``+p`` and the others share ``-p``; penalty: ``mean(others' penalties) - own``."""
    n = len(points)
    if penalty_scoring:
        total = sum(points)
        return [(total - p) / (n - 1) - p for p in points]
    total = sum(points)
    return [p - (total - p) / (n - 1) for p in points]


def draw_outcome(config: RulesConfig, hands: list[int]) -> RoundOutcome:
    n = config.num_players
    return RoundOutcome(
        kind="draw",
        knocker=None,
        winner=None,
        deadwood=[deadwood_of_mask(h) for h in hands],
        melds=[best_melds_of_mask(h)[0] for h in hands],
        layoffs=[[] for _ in range(n)],
        points=[0] * n,
        rewards=[0.0] * n,
        hands=[from_mask(h) for h in hands],
    )


def _layoffs_possible(knocker_hand: int, other_hands: list[int]) -> bool:
    """Cheap test: could any other player's card ever join a meld of the knocker?"""
    suits = [(knocker_hand >> (13 * s)) & SUIT_MASK for s in range(4)]
    ranks = suits[0] | suits[1] | suits[2] | suits[3]
    touching = 0
    for s in range(4):
        neighbours = ((suits[s] << 1) | (suits[s] >> 1)) & SUIT_MASK
        touching |= (neighbours | ranks) << (13 * s)
    return any(hand & touching for hand in other_hands)


def _order_after(seat: int, n: int) -> list[int]:
    return [(seat + k) % n for k in range(1, n)]


def _lay_off_in_turn(config: RulesConfig, hands: list[int], knocker: int, melds: tuple[int, ...]):
    """Each other player in turn order lays off for their own least deadwood; used ends close."""
    open_ends = [(True, True)] * len(melds)
    deadwoods = {}
    laid_by = {}
    for seat in _order_after(knocker, config.num_players):
        value, laid = best_layoffs(hands[seat], list(melds), open_ends)
        deadwoods[seat] = value
        laid_by[seat] = laid
        new_ends = []
        for meld, (low_open, high_open), cards in zip(melds, open_ends, laid):
            if not cards:
                new_ends.append((low_open, high_open))
                continue
            if _is_set(meld):
                new_ends.append((False, False))
                continue
            low_card = (meld & -meld).bit_length() - 1
            high_card = meld.bit_length() - 1
            new_ends.append((low_open and not cards & ((1 << low_card) - 1), high_open and not cards >> high_card))
        open_ends = new_ends
    return deadwoods, laid_by


def _is_set(meld: int) -> bool:
    cards = from_mask(meld)
    return cards[0] % NUM_RANKS == cards[-1] % NUM_RANKS


def _score(config: RulesConfig, knocker: int, knocker_deadwood: int, others: dict[int, int], gin: bool):
    """``(kind, winner, points per seat)`` for a knock given every player's final deadwood."""
    n = config.num_players
    points = [0] * n
    order = _order_after(knocker, n)
    if config.penalty_scoring:
        if gin:
            kind, winner = "gin", knocker
            for seat in order:
                points[seat] = others[seat] + config.gin_bonus
        else:
            undercutters = [s for s in order if others[s] < knocker_deadwood]
            if undercutters:
                winner = min(undercutters, key=lambda s: (others[s], order.index(s)))
                kind = "undercut"
                low = others[winner]
                for seat in range(n):
                    if seat != winner:
                        own = knocker_deadwood if seat == knocker else others[seat]
                        points[seat] = own - low
                points[knocker] += config.undercut_bonus
            else:
                kind, winner = "knock", knocker
                for seat in order:
                    points[seat] = others[seat] - knocker_deadwood
    else:
        defender = order[0]
        defender_deadwood = others[defender]
        if gin:
            kind, winner = "gin", knocker
            points[knocker] = config.gin_bonus + defender_deadwood
        elif defender_deadwood < knocker_deadwood or (config.tie_is_undercut and defender_deadwood == knocker_deadwood):
            kind, winner = "undercut", defender
            points[defender] = config.undercut_bonus + knocker_deadwood - defender_deadwood
        else:
            kind, winner = "knock", knocker
            points[knocker] = defender_deadwood - knocker_deadwood
    return kind, winner, points


def _knocker_preference(config: RulesConfig, knocker: int, points: list[int]) -> tuple:
    """Larger is better for the knocker."""
    if config.penalty_scoring:
        return (-points[knocker], sum(points) - points[knocker])
    return (points[knocker] - (sum(points) - points[knocker]),)


#: ``_knock_scoring`` by (rules, hands, knocker, knock limit): the knocker's layout search and the
#: layoffs are most of a showdown's cost, and rollouts and searches end in the same position again
#: and again (measured: 47% of a labelling job's knocks). Emptied when full (``memo.remember``):
#: at most 8,192 knocks, about 9 MB.
_KNOCK_SCORING: dict[tuple, tuple] = new_memo()
_KNOCK_SCORING_LIMIT = 1 << 13


def _knock_scoring(config: RulesConfig, hands: tuple[int, ...], knocker: int, knock_limit: int) -> tuple:
    """``(layout meld masks, knocker deadwood, {seat: deadwood}, {seat: laid masks per meld}, kind,
    winner, points)`` of a knock, before the spade double: the knocker's best layout for the
    knocker, each other player laying off in turn for their own least deadwood."""
    n = config.num_players
    knocker_hand = hands[knocker]
    others_hands = [hands[s] for s in _order_after(knocker, n)]
    gin = deadwood_of_mask(knocker_hand) == 0
    if gin or not _layoffs_possible(knocker_hand, others_hands):
        # Without layoffs the least deadwood is best for the knocker (and gin forbids layoffs).
        melds, loose = best_melds_of_mask(knocker_hand)
        layout, knocker_deadwood = tuple(to_mask(m) for m in melds), mask_value(to_mask(loose))
        others = {s: deadwood_of_mask(hands[s]) for s in _order_after(knocker, n)}
        laid_by = {s: [0] * len(layout) for s in others}
        kind, winner, points = _score(config, knocker, knocker_deadwood, others, gin)
        return layout, knocker_deadwood, others, laid_by, kind, winner, tuple(points)
    best = None
    for layout, knocker_deadwood in layouts_of_mask(knocker_hand, knock_limit):
        others, laid = _lay_off_in_turn(config, hands, knocker, layout)
        kind, winner, points = _score(config, knocker, knocker_deadwood, others, False)
        key = _knocker_preference(config, knocker, points) + (-knocker_deadwood,)
        if best is None or key > best[0]:
            best = (key, layout, knocker_deadwood, others, laid, kind, winner, tuple(points))
    assert best is not None, "a legal knock always has a layout within the limit"
    return best[1:]


def knock_outcome(
    config: RulesConfig, hands: list[int], knocker: int, knock_limit: int, upcard: int, knock_card: int
) -> RoundOutcome:
    """Score a knock. ``hands`` are masks after the knock discard (the knocker holds 10 or 7 cards)."""
    n = config.num_players
    key = (config, tuple(hands), knocker, knock_limit)
    scoring = _KNOCK_SCORING.get(key)
    if scoring is None:
        scoring = _knock_scoring(config, key[1], knocker, knock_limit)
        remember(_KNOCK_SCORING, key, scoring, _KNOCK_SCORING_LIMIT)
    layout_masks, knocker_deadwood, others, laid_by, kind, winner, points = scoring
    points = list(points)
    if config.spade_double and upcard // NUM_RANKS == SUITS.index("S"):
        points = [2 * p for p in points]
    deadwood = [0] * n
    melds_out: list[list[list[int]]] = [[] for _ in range(n)]
    layoffs_out: list[list[int]] = [[] for _ in range(n)]
    deadwood[knocker] = knocker_deadwood
    melds_out[knocker] = sorted(from_mask(m) for m in layout_masks)
    for seat, value in others.items():
        deadwood[seat] = value
        laid_mask = 0
        for cards in laid_by[seat]:
            laid_mask |= cards
        layoffs_out[seat] = from_mask(laid_mask)
        melds_out[seat] = best_melds_of_mask(hands[seat] & ~laid_mask)[0]
    return RoundOutcome(
        kind=kind,
        knocker=knocker,
        winner=winner,
        deadwood=deadwood,
        melds=melds_out,
        layoffs=layoffs_out,
        points=points,
        rewards=zero_sum_rewards(points, config.penalty_scoring),
        knock_card=knock_card,
        hands=[from_mask(h) for h in hands],
    )
