"""The solver features of ``observation="features"`` (``okgin_env.features``) as batched torch code.

The same definitions as ``okgin_env.features.facts`` and ``planes`` (the table is in the docstring
of ``okgin_env.features``), computed from the same parts of each observation: the observer's hand,
the discard top and pile, the opponents' known and passed cards, the knock limit and the action
mask, so they can see no more than the observation holds. Card relations are shifts of (M, 4, 13)
boolean planes; deadwood comes from the batched solver. Numbers are computed in float64 and cast
once, as the numpy evaluator does; ``tests/test_tensor.py`` checks them against it.
"""

from __future__ import annotations

import torch

from ..features.planes import DEADWOOD_SCALE, FEATURE_SIZE, KNOCK_MARGIN_SCALE, PARTNER_SCALE, feature_slices
from ..rules.actions import DISCARD_BASE, KNOCK_BASE, TAKE_DISCARD
from ..rules.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS
from .solver import NO_CHOICE, MeldTables, deadwood_after_each

_AT = feature_slices()


def _planes(cards: torch.Tensor) -> torch.Tensor:
    return cards.view(-1, NUM_SUITS, NUM_RANKS)


def _same_rank(cards: torch.Tensor) -> torch.Tensor:
    """Every card of the same rank as some card of ``cards`` ((M, 52) bool)."""
    return _planes(cards).any(1, keepdim=True).expand(-1, NUM_SUITS, -1).reshape(-1, NUM_CARDS)


def _shift(planes: torch.Tensor, distance: int) -> torch.Tensor:
    """(M, 4, 13) planes moved ``distance`` ranks up (negative: down) within each suit, no wrap."""
    out = torch.zeros_like(planes)
    if distance > 0:
        out[:, :, distance:] = planes[:, :, :-distance]
    else:
        out[:, :, :distance] = planes[:, :, -distance:]
    return out


def _neighbours(cards: torch.Tensor, distance: int) -> torch.Tensor:
    """Cards ``distance`` ranks away from a card of ``cards`` in its suit (``facts._suit_neighbours``)."""
    planes = _planes(cards)
    return (_shift(planes, distance) | _shift(planes, -distance)).reshape(-1, NUM_CARDS)


def _partner_counts(cards: torch.Tensor) -> torch.Tensor:
    """(M, 52) int64: how many meld partners of each card are in ``cards`` (``facts._partner_offsets``
    summed): the other suits of its rank, one and two ranks away in its suit."""
    planes = _planes(cards).long()
    same = planes.sum(1, keepdim=True) - planes
    near = sum(_shift(planes, d) for d in (1, 2, -1, -2))
    return (same + near).reshape(-1, NUM_CARDS)


def solver_features(hand: torch.Tensor, top: torch.Tensor, pile: torch.Tensor, known: torch.Tensor,
                    passed: torch.Tensor, knock_limit: torch.Tensor, mask: torch.Tensor, tables: MeldTables,
                    solved: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """(M, FEATURE_SIZE) float32 features of M observations. Card sets are (M, 52) bool (``top``:
    the face-up card or none; ``known``/``passed``: over every opponent), ``knock_limit`` (M,),
    ``mask`` (M, 107) bool the observer's legal actions (zeros when it is not to act).
    ``solved``: ``(rows (M,) bool, hand deadwood (M,), deadwood after each card (M, 52))`` already
    computed for those rows' hands (the env's legality check solved the discard phase): not solved again."""
    m, dev = hand.shape[0], hand.device
    small = mask[:, :DISCARD_BASE]
    discards = mask[:, DISCARD_BASE:KNOCK_BASE]
    knocks = mask[:, KNOCK_BASE:]
    put_away = discards | knocks
    can_take = small[:, TAKE_DISCARD] & top.any(1)
    candidates = hand | (top & can_take[:, None])
    unseen = ~(hand | pile | known)
    wants = candidates & (_same_rank(known) | _neighbours(known, 1) | _neighbours(known, 2))
    avoids = candidates & (_same_rank(passed) | _neighbours(passed, 1))
    # Deadwood: the hand's, after each legal put-away, and after taking the face-up card.
    hand_deadwood = torch.zeros(m, dtype=torch.int64, device=dev)
    take_after = torch.zeros(m, dtype=torch.int64, device=dev)
    takers = can_take.nonzero().squeeze(1)
    if takers.numel():
        _, after_taking = deadwood_after_each(hand[takers] | top[takers], tables)
        take_after[takers] = after_taking.min(1).values
        hand_deadwood[takers] = after_taking.gather(1, top[takers].long().argmax(1, keepdim=True)).squeeze(1)
    after_put = torch.full((m, NUM_CARDS), NO_CHOICE, dtype=torch.int64, device=dev)  # (the put-away cards are in the hand)
    unsolved = ~can_take
    if solved is not None:
        rows, solved_deadwood, solved_after = solved
        hand_deadwood = torch.where(rows, solved_deadwood, hand_deadwood)
        after_put = torch.where(rows[:, None], solved_after, after_put)
        unsolved = unsolved & ~rows
    others = unsolved.nonzero().squeeze(1)
    if others.numel():
        hand_deadwood[others], after_put[others] = deadwood_after_each(hand[others], tables)
    after = torch.where(put_away, after_put, 0).double()
    limit = knock_limit.double()
    out = torch.zeros(m, FEATURE_SIZE, dtype=torch.float64, device=dev)
    out[:, _AT["discard_legal"]] = discards.double()
    out[:, _AT["knock_legal"]] = knocks.double()
    out[:, _AT["deadwood_after"]] = after / DEADWOOD_SCALE
    out[:, _AT["knock_margin"]] = torch.where(knocks, (limit[:, None] - after) / KNOCK_MARGIN_SCALE, 0.0)
    out[:, _AT["unseen_partners"]] = (_partner_counts(unseen) * candidates).double() / PARTNER_SCALE
    out[:, _AT["hand_partners"]] = (_partner_counts(hand) * candidates).double() / PARTNER_SCALE
    out[:, _AT["opponent_wants"]] = wants.double()
    out[:, _AT["opponent_avoids"]] = avoids.double()
    out[:, _AT["draw_take_pass_legal"]] = small.double()
    out[:, _AT["hand_deadwood"].start] = hand_deadwood.double() / DEADWOOD_SCALE
    out[:, _AT["take_deadwood_after"].start] = take_after.double() / DEADWOOD_SCALE
    out[:, _AT["take_within_limit"].start] = (can_take & (take_after <= knock_limit)).double()
    best_put = torch.where(put_away, after_put, NO_CHOICE).min(1).values
    out[:, _AT["best_deadwood_after"].start] = torch.where(put_away.any(1), best_put, 0).double() / DEADWOOD_SCALE
    out[:, _AT["can_knock"].start] = knocks.any(1).double()
    out[:, _AT["can_gin"].start] = (knocks & (after_put == 0)).any(1).double()
    return out.float()


__all__ = ["solver_features"]
