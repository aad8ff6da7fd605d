"""``simple`` (``okgin_env.bots.simple``) as a batched tensor policy over the games of a ``TensorState``.

The same three rules, for every game at once, on their device: take the face-up card only if it
would join a set or a run with the hand; knock as soon as a knock is legal; otherwise discard the
card (not the one just taken) that leaves the least deadwood. Ties are broken by ``tie_break``, one
uniform number in [0, 1) per game: of the tied cards in ascending order, the one at
``floor(u * count)``, which is what ``simple_action_for_state`` picks when its generator's
``randrange(count)`` gives that index. ``tests/test_tensor.py`` checks the two on thousands of
decisions. Like the bot, it reads only what the seat to act may know: its hand, the face-up
card, the card it may not throw and the knock limit.
"""

from __future__ import annotations

import torch

from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from ..rules.cards import NUM_RANKS, NUM_SUITS
from ..rules.round import Phase
from .solver import NO_CHOICE
from .state import TensorState

_RUN_THROUGH: dict[str, torch.Tensor] = {}


def _run_through(device: torch.device) -> torch.Tensor:
    """(8192, 13) int64: the length of the run of consecutive ranks through rank r in suit mask m
    (with r added)."""
    key = str(device)
    if key not in _RUN_THROUGH:
        table = torch.zeros(1 << NUM_RANKS, NUM_RANKS, dtype=torch.int64)
        for mask in range(1 << NUM_RANKS):
            for rank in range(NUM_RANKS):
                bits = mask | 1 << rank
                low = high = rank
                while low > 0 and bits >> (low - 1) & 1:
                    low -= 1
                while high < NUM_RANKS - 1 and bits >> (high + 1) & 1:
                    high += 1
                table[mask, rank] = high - low + 1
        _RUN_THROUGH[key] = table.to(device)
    return _RUN_THROUGH[key]


def melds_with_hand(hands: torch.Tensor, cards: torch.Tensor) -> torch.Tensor:
    """(M,) bool: card ``cards[j]`` forms a set or a run with hand ``hands[j]`` ((M, 52) bool), as
    ``rules.melds.in_some_meld``."""
    m = hands.shape[0]
    by_suit = hands.view(m, NUM_SUITS, NUM_RANKS)
    rank, suit = cards % NUM_RANKS, cards // NUM_RANKS
    rows = torch.arange(m, device=hands.device)
    same_rank = by_suit[rows, :, rank].sum(1) - by_suit[rows, suit, rank].long()
    suit_bits = (by_suit[rows, suit].long() << torch.arange(NUM_RANKS, device=hands.device)).sum(1)
    return (same_rank >= 2) | (_run_through(hands.device)[suit_bits, rank] >= 3)


def simple_actions(state: TensorState, tie_break: torch.Tensor | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """(N,) int64: simple's action for the seat to act in every game of ``state`` (a
    ``TensorState``). ``tie_break``: (N,) uniforms in [0, 1); default drawn from ``generator``."""
    n, dev = state.num_envs, state.device
    if tie_break is None:
        tie_break = torch.rand(n, generator=generator, device=dev)
    rows = torch.arange(n, device=dev)
    phase = state.phase
    hand = state.hands[rows, state.current]
    top = state.pile[rows, (state.pile_len - 1).clamp(min=0)]
    take = melds_with_hand(hand, top)
    draw_or_pass = torch.where(phase == int(Phase.OFFER), PASS, DRAW_STOCK)
    actions = torch.where(take & ~state.must_draw_stock, TAKE_DISCARD, draw_or_pass)
    # Discard phase: the throwable cards that leave the least deadwood, ascending; one by tie_break.
    throwable = state.legal_action_mask[:, DISCARD_BASE:KNOCK_BASE]
    after = torch.where(throwable, state.deadwood_after, NO_CHOICE)
    best = after.min(1).values
    tied = after == best[:, None]
    count = tied.sum(1)
    pick = torch.minimum((tie_break.double() * count).long(), (count - 1).clamp(min=0))  # in float64, as Python's
    order = tied.long().cumsum(1)  # the k-th tied card has order k + 1
    card = (tied & (order == (pick + 1)[:, None])).long().argmax(1)
    base = torch.where(best <= state.knock_limit, KNOCK_BASE, DISCARD_BASE)
    return torch.where(phase == int(Phase.DISCARD), base + card, actions)


__all__ = ["melds_with_hand", "simple_actions"]
