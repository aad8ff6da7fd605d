"""The training network's inputs (``okgin_env.features.network``) as batched torch code over a
``TensorState``, so that a policy network reads every game's decision without leaving the device.

``decision_inputs(state) -> (context, action_features, action_ids, legal)``: for the seat to act in
every game, the ``NUM_CONTEXT_FEATURES`` context numbers (N, 6), and one row of
``NUM_ACTION_FEATURES`` per legal action in ascending action order, padded to
``MAX_LEGAL_ACTIONS`` slots ((N, 24, 17); padding rows zero, id ``NUM_ACTIONS``, flag False): the
inputs of ``training.model.PolicyValueNet`` with the env's ``cards`` observation. Equal bit for bit
to ``decision_features_batch`` and ``training.policy.encode_views`` on the same decisions
(``tests/test_tensor.py``); the same float64 arithmetic on the same stored (float32) knock limit
and stock fraction, cast once. The opt-in ``outlook`` columns are not computed here.
"""

from __future__ import annotations

import torch

from ..features.network import MAX_LEGAL_ACTIONS, NUM_ACTION_FEATURES, NUM_CONTEXT_FEATURES
from ..observation import KNOCK_LIMIT_SCALE, STOCK_SCALE
from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, NUM_ACTIONS
from ..rules.cards import CARD_VALUES, NUM_CARDS
from ..rules.round import Phase
from .features import _neighbours, _partner_counts, _same_rank
from .solver import MeldTables, deadwood_after_each
from .state import TensorState


def _stored(values: torch.Tensor, scale: float) -> torch.Tensor:
    """``value / scale`` as the observation stores it (float32), back in float64 (``facts._stored``)."""
    return (values.double() / scale).float().double()


def decision_inputs(state: TensorState, width: int = MAX_LEGAL_ACTIONS, rows: torch.Tensor | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(context (M, 6), action features (M, width, 17), action ids (M, width), legal (M, width))``
    of the seat to act in the games ``rows`` of ``state`` (default: every game; see the module docstring)."""
    p, dev = state.num_players, state.device
    tables = MeldTables.on(dev)
    if rows is None:
        rows = torch.arange(state.num_envs, device=dev)
    n = rows.numel()
    mask = state.legal_action_mask[rows]
    current = state.current[rows]
    hand = state.hands[rows, current]
    opponents = [(current + k) % p for k in range(1, p)]
    known = torch.stack([state.known[rows, seat] for seat in opponents]).any(0)
    passed = torch.stack([state.passed[rows, seat] for seat in opponents]).any(0)
    taken_card = state.taken_card[rows]
    taken = torch.nn.functional.one_hot(taken_card.clamp(min=0), NUM_CARDS).bool() & (taken_card >= 0)[:, None]
    pile_len = state.pile_len[rows]
    has_top = pile_len > 0
    top_card = torch.where(has_top, state.pile[rows, (pile_len - 1).clamp(min=0)], -1)
    unseen = ~(hand | state.pile_mask[rows] | known)
    wants = _same_rank(known) | _neighbours(known, 1) | _neighbours(known, 2)
    avoids = _same_rank(passed) | _neighbours(passed, 1)
    knock_limit = _stored(state.knock_limit[rows], KNOCK_LIMIT_SCALE) * KNOCK_LIMIT_SCALE
    stock = _stored(NUM_CARDS - state.stock_pos[rows], STOCK_SCALE)
    # Deadwood: of the hand, after each throw, after taking the face-up card. The legality
    # check solved the discard phase's hands already; a face-up card to take or pass gives the
    # hand's own deadwood too (the hand plus that card, less that card); the rest are solved here.
    discarding = state.phase[rows] == int(Phase.DISCARD)
    hand_deadwood = torch.where(discarding, state.hand_deadwood[rows], 0)
    after_throw = state.deadwood_after[rows]
    take_after = torch.zeros(n, dtype=torch.int64, device=dev)
    offered_mask = has_top & mask[:, 1:DISCARD_BASE].any(1)
    offered = offered_mask.nonzero().squeeze(1)
    if offered.numel():
        top_planes = torch.nn.functional.one_hot(top_card[offered], NUM_CARDS).bool()
        after_taking = deadwood_after_each(hand[offered] | top_planes, tables)[1]
        take_after[offered] = after_taking.min(1).values
        hand_deadwood[offered] = after_taking.gather(1, top_card[offered, None]).squeeze(1)
    rest = (~discarding & ~offered_mask).nonzero().squeeze(1)
    if rest.numel():
        hand_deadwood[rest] = deadwood_after_each(hand[rest], tables)[0]
    context = torch.stack([
        hand_deadwood.double() / 50.0,
        knock_limit / 10.0,
        stock,
        known.sum(1).double() / 5.0,
        hand.sum(1).double() / 11.0,
        (knock_limit == 0).double(),
    ], 1).float()

    # The legal actions in ascending order, then padding.
    # (Each legal action goes to its rank among the legal ones: a scatter, cheaper than a sort;
    # the illegal ones, and any past ``width``, to a last column that is dropped.)
    order = torch.arange(NUM_ACTIONS, device=dev).expand(n, -1)
    slot = mask.long().cumsum(1) - 1
    slot = torch.where(mask & (slot < width), slot, width)
    ids = torch.full((n, width + 1), NUM_ACTIONS, dtype=torch.int64, device=dev).scatter_(1, slot, order)[:, :width]
    legal = ids < NUM_ACTIONS
    throw = legal & (ids >= DISCARD_BASE)
    knock = legal & (ids >= KNOCK_BASE)
    kind = torch.where(ids >= KNOCK_BASE, 4, torch.where(ids >= DISCARD_BASE, 3, ids)).clamp(max=4)
    thrown = torch.where(knock, ids - KNOCK_BASE, ids - DISCARD_BASE).clamp(0, NUM_CARDS - 1)
    card = torch.where(throw, thrown, top_card[:, None].expand(-1, width))
    has_card = legal & (throw | ((ids != DRAW_STOCK) & has_top[:, None]))
    card = torch.where(has_card, card, 0)
    after = torch.where(throw, after_throw.gather(1, thrown), torch.where(has_card, take_after[:, None], 0)).double()
    values = torch.tensor(CARD_VALUES, dtype=torch.float64, device=dev)
    unseen_partners = _partner_counts(unseen).gather(1, card).double()
    hand_partners = _partner_counts(hand).gather(1, card).double()
    limit = knock_limit[:, None]
    columns = torch.zeros(n, width, NUM_ACTION_FEATURES, dtype=torch.float64, device=dev)
    columns.scatter_(2, kind[:, :, None], 1.0)
    card_columns = torch.stack([
        after / 50.0,
        (hand_deadwood.double()[:, None] - after) / 20.0,
        (after <= limit).double(),
        values[card] / 10.0,
        unseen_partners / 6.0,
        hand_partners / 4.0,
        wants.gather(1, card).double(),
        avoids.gather(1, card).double(),
    ], 2)
    columns[:, :, 5:13] = torch.where(has_card[:, :, None], card_columns, 0.0)
    columns[:, :, 13] = (throw & (after == 0)).double()
    columns[:, :, 14] = torch.where(knock, (limit - after) / 10.0, 0.0)
    columns[:, :, 15] = (throw & taken.gather(1, thrown)).double()
    columns[:, :, 16] = stock[:, None].expand(-1, width)
    columns = torch.where(legal[:, :, None], columns, 0.0)
    return context, columns.float(), ids, legal


__all__ = ["NUM_CONTEXT_FEATURES", "decision_inputs"]
