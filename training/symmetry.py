"""Suit-symmetric play: a network's decision averaged over the relabellings of the suits.

The rules treat the four suits alike (runs stay within a suit, sets take one card of each), so a
game and the same game with its suits renamed are played the same way by a perfect player. A
trained network is not exactly so: it learnt each suit's planes separately, and its choices carry
a little noise from that. ``SuitSymmetricNet`` removes it at play time: it feeds the network the
decision under each of the 24 renamings of the suits (the card planes of the observation and the
card of each discard or knock action renamed together; the context and the per-action features
are the same in every renaming) and plays the normalised geometric mean of the 24 policies (the
mean of each legal action's log-probabilities), with the mean of the 24 values. Under
``spade_double`` a spade upcard doubles the round, so only the 6 renamings that keep spades are
used.

Measured (docs/standard_policy.md, the hand player): about one point more of single hands won
against ``simple`` than the same weights played directly, at about twice the time a decision.
A policy file asks for it with ``suit_symmetric: true`` in its metadata; ``load_policy(...,
suit_symmetric=True)`` asks for it for any file.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

from okgin_env.observation import layout_for
from okgin_env.rules.actions import DISCARD_BASE, KNOCK_BASE, NUM_ACTIONS
from okgin_env.rules.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS, rank_of, suit_of

SPADES = 0  # docs/rules.md §1: suit 0 of the card ids


def suit_renamings(keep_spades: bool = False) -> list[tuple[int, ...]]:
    """Every permutation of the suits (old suit -> new suit), the identity first; with
    ``keep_spades``, those that leave spades in place."""
    return [perm for perm in itertools.permutations(range(NUM_SUITS)) if not keep_spades or perm[SPADES] == SPADES]


def renaming_indices(num_players: int, renamings: list[tuple[int, ...]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(observation gather (R, size), action id map (R, NUM_ACTIONS + 1))`` for each renaming:
    ``observation[:, gather[r]]`` is the observation with its suits renamed, ``ids_map[r][ids]``
    the renamed action ids (padding, id ``NUM_ACTIONS``, stays padding)."""
    layout = layout_for(num_players)
    gathers, id_maps = [], []
    for perm in renamings:
        renamed = [perm[suit_of(card)] * NUM_RANKS + rank_of(card) for card in range(NUM_CARDS)]
        gather = list(range(layout.size))
        for plane in layout.card_planes:
            start = layout.slices[plane].start
            for card in range(NUM_CARDS):
                gather[start + renamed[card]] = start + card
        ids = list(range(NUM_ACTIONS + 1))
        for card in range(NUM_CARDS):
            ids[DISCARD_BASE + card] = DISCARD_BASE + renamed[card]
            ids[KNOCK_BASE + card] = KNOCK_BASE + renamed[card]
        gathers.append(gather)
        id_maps.append(ids)
    return torch.tensor(gathers), torch.tensor(id_maps)


class SuitSymmetricNet(nn.Module):
    """``network``'s forward pass averaged over suit renamings: ``(log-probabilities (B, A) with
    -inf on padding, value (B,))``; the same inputs and outputs as ``PolicyValueNet`` (its logits
    are log-probabilities here, which every caller's softmax and argmax read alike)."""

    def __init__(self, network: nn.Module, num_players: int, keep_spades: bool = False):
        super().__init__()
        self.network = network
        self.outlook = network.outlook
        self.renamings = suit_renamings(keep_spades)
        gathers, id_maps = renaming_indices(num_players, self.renamings)
        self.register_buffer("gathers", gathers, persistent=False)
        self.register_buffer("id_maps", id_maps, persistent=False)

    def forward(self, observation, context, action_features, action_ids, legal):
        count, batch = len(self.renamings), observation.shape[0]

        def repeated(x: torch.Tensor) -> torch.Tensor:  # the same rows under every renaming
            return x.unsqueeze(0).expand(count, *x.shape).reshape(count * batch, *x.shape[1:])

        observations = observation[:, self.gathers].transpose(0, 1).reshape(count * batch, -1)
        ids = self.id_maps[:, action_ids].reshape(count * batch, *action_ids.shape[1:])
        logits, value = self.network(observations, repeated(context), repeated(action_features), ids, repeated(legal))
        # The geometric mean of the renamings' probabilities, normalised again.
        averaged = logits.log_softmax(-1).reshape(count, batch, -1).mean(0).masked_fill(~legal, float("-inf"))
        return averaged.log_softmax(-1), value.reshape(count, batch).mean(0)
