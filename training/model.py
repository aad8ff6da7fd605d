"""The masked-action policy/value networks.

Each legal action is scored by the same small network from (a) an embedding of the whole
observation plus a few context features and (b) that action's own features and a learned
embedding of its id. Illegal actions are never scored: the legal set is padded to
``MAX_LEGAL_ACTIONS``, only the legal slots go through the scorer, and padding gets a logit of
-inf. The value head predicts the learner's round reward from the observation embedding.

Two networks read the same inputs, named in a policy file's metadata (``network``; absent:
``"mlp"``): ``PolicyValueNet`` (``"mlp"``: the observation through two hidden layers, an action
scored with an embedding of its id; every shipped file), and ``SuitEquivariantNet`` (``"suits"``:
each suit's cards through one shared layer, an action scored with its kind, its card's rank and
its card's suit embedding), whose choices do not change when the suits are renamed, as the rules'.
"""

from __future__ import annotations

import torch
from torch import nn

from okgin_env.observation import layout_for
from okgin_env.rules.actions import DISCARD_BASE, KNOCK_BASE, NUM_ACTIONS
from okgin_env.rules.cards import NUM_CARDS, NUM_RANKS, NUM_SUITS, rank_of, suit_of
from okgin_env.rules.config import MAX_PLAYERS

from .features import NUM_ACTION_FEATURES, NUM_CONTEXT_FEATURES, NUM_OUTLOOK_FEATURES


class PolicyValueNet(nn.Module):
    network = "mlp"

    def __init__(self, observation_size: int, hidden: int = 192, action_embedding: int = 16, outlook: bool = False):
        """``outlook``: each action row has the ``NUM_OUTLOOK_FEATURES`` next-draw columns too
        (``okgin_env.features.outlook_features``); the inputs must then be encoded with them."""
        super().__init__()
        self.observation_size = observation_size
        self.outlook = outlook
        self.num_action_features = NUM_ACTION_FEATURES + (NUM_OUTLOOK_FEATURES if outlook else 0)
        self.encoder = nn.Sequential(
            nn.Linear(observation_size + NUM_CONTEXT_FEATURES, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.action_embedding = nn.Embedding(NUM_ACTIONS + 1, action_embedding)  # last id = padding
        # The scorer's first layer on [embedding, action features] is split in two so the
        # embedding part is computed once per decision rather than once per legal action.
        self.scorer_context = nn.Linear(hidden, hidden)
        self.scorer_action = nn.Linear(self.num_action_features + action_embedding, hidden, bias=False)
        self.scorer_out = nn.Sequential(nn.ReLU(), nn.Linear(hidden, 1))
        self.value_head = nn.Sequential(nn.Linear(hidden, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(
        self,
        observation: torch.Tensor,  # (B, observation_size)
        context: torch.Tensor,  # (B, NUM_CONTEXT_FEATURES)
        action_features: torch.Tensor,  # (B, A, num_action_features)
        action_ids: torch.Tensor,  # (B, A) long, NUM_ACTIONS for padding
        legal: torch.Tensor,  # (B, A) bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(logits (B, A) with -inf on padding, value (B,))``."""
        embedded = self.encoder(torch.cat([observation, context], dim=-1))
        # Only the legal slots are scored: about 6 of the 24 on average, so scoring the padding
        # too would spend three quarters of the scorer's work (forward and backward) on slots
        # whose logit is -inf anyway.
        rows, slots = legal.nonzero(as_tuple=True)
        # Gathered by index_select on flattened rows: the same values as [rows, slots], faster on a CPU.
        flat = rows * legal.shape[1] + slots
        per_action = self.scorer_action(torch.cat([
            action_features.reshape(-1, action_features.shape[-1]).index_select(0, flat),
            self.action_embedding(action_ids.reshape(-1).index_select(0, flat))], dim=-1))
        scores = self.scorer_out(self.scorer_context(embedded).index_select(0, rows) + per_action).squeeze(-1)
        padding = torch.full(legal.shape, float("-inf"), dtype=scores.dtype, device=scores.device)
        logits = padding.index_put((rows, slots), scores)
        return logits, self.value_head(embedded).squeeze(-1)


class SuitEquivariantNet(nn.Module):
    """``PolicyValueNet``'s inputs and outputs, exactly equivariant under renamings of the suits.

    The card planes (the first ``planes x 52`` observation entries, card id = suit * 13 + rank)
    are read a suit at a time: each suit's ``planes x 13`` entries go through one shared encoder,
    whose outputs are summed and maxed over the suits; with the counts of each rank over the suits
    (sets), the other observation entries and the context they feed the same two hidden layers.
    An action is scored from that embedding, its own features, an embedding of its kind and card
    rank (draw, take, pass; discard or knock of a rank) and its card's suit encoding. A renaming
    of the suits permutes the suit encodings and changes nothing else (``tests/test_symmetry.py``)."""

    network = "suits"

    def __init__(self, observation_size: int, hidden: int = 192, suit_width: int = 96, outlook: bool = False):
        super().__init__()
        self.observation_size = observation_size
        self.outlook = outlook
        self.num_action_features = NUM_ACTION_FEATURES + (NUM_OUTLOOK_FEATURES if outlook else 0)
        self.planes = _card_planes(observation_size)
        card_inputs = self.planes * NUM_CARDS
        self.suit_encoder = nn.Sequential(nn.Linear(self.planes * NUM_RANKS, suit_width), nn.ReLU(),
                                          nn.Linear(suit_width, suit_width), nn.ReLU())
        self.encoder = nn.Sequential(
            nn.Linear(2 * suit_width + self.planes * NUM_RANKS + observation_size - card_inputs
                      + NUM_CONTEXT_FEATURES, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
        )
        self.kind_rank_embedding = nn.Embedding(_KIND_RANK_IDS[-1] + 1, 16)
        self.register_buffer("kind_rank_ids", _KIND_RANK_IDS.clone(), persistent=False)
        self.register_buffer("suit_ids", _SUIT_IDS.clone(), persistent=False)
        self.scorer_context = nn.Linear(hidden, hidden)
        self.scorer_action = nn.Linear(self.num_action_features + 16, hidden, bias=False)
        self.scorer_suit = nn.Linear(suit_width, hidden, bias=False)
        self.scorer_out = nn.Sequential(nn.ReLU(), nn.Linear(hidden, 1))
        self.value_head = nn.Sequential(nn.Linear(hidden, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, observation, context, action_features, action_ids, legal):
        """``(logits (B, A) with -inf on padding, value (B,))``, as ``PolicyValueNet.forward``."""
        batch, card_inputs = observation.shape[0], self.planes * NUM_CARDS
        cards = observation[:, :card_inputs].reshape(batch, self.planes, NUM_SUITS, NUM_RANKS)
        suits = self.suit_encoder(cards.transpose(1, 2).reshape(batch, NUM_SUITS, self.planes * NUM_RANKS))
        embedded = self.encoder(torch.cat([suits.sum(1), suits.amax(1), cards.sum(2).reshape(batch, -1),
                                           observation[:, card_inputs:], context], dim=-1))
        rows, slots = legal.nonzero(as_tuple=True)
        flat = rows * legal.shape[1] + slots  # (index_select: the rows of advanced indexing, faster on a CPU)
        ids = action_ids.reshape(-1).index_select(0, flat)
        no_card = suits.new_zeros(batch, 1, suits.shape[-1])  # the suit encoding of draw, take and pass
        suit_of_action = torch.cat([suits, no_card], dim=1).reshape(batch * (NUM_SUITS + 1), -1).index_select(
            0, rows * (NUM_SUITS + 1) + self.suit_ids.index_select(0, ids))
        per_action = self.scorer_action(torch.cat([
            action_features.reshape(-1, action_features.shape[-1]).index_select(0, flat),
            self.kind_rank_embedding(self.kind_rank_ids.index_select(0, ids))], dim=-1))
        scores = self.scorer_out(self.scorer_context(embedded).index_select(0, rows) + per_action
                                 + self.scorer_suit(suit_of_action)).squeeze(-1)
        padding = torch.full(legal.shape, float("-inf"), dtype=scores.dtype, device=scores.device)
        return padding.index_put((rows, slots), scores), self.value_head(embedded).squeeze(-1)


def _card_planes(observation_size: int) -> int:
    """The card planes of the observation layout of this size (its player count's)."""
    for players in range(2, MAX_PLAYERS + 1):
        layout = layout_for(players)
        if layout.size == observation_size:
            return len(layout.card_planes)
    raise ValueError(f"observation_size={observation_size} is no player count's observation layout")


def _kind_rank_table() -> torch.Tensor:
    """Action id -> 0-2 (draw, take, pass), 3 + rank (a discard), 16 + rank (a knock), 29 (padding)."""
    ids = torch.full((NUM_ACTIONS + 1,), 3 + 2 * NUM_RANKS, dtype=torch.long)
    ids[:DISCARD_BASE] = torch.arange(DISCARD_BASE)
    for card in range(NUM_CARDS):
        ids[DISCARD_BASE + card] = DISCARD_BASE + rank_of(card)
        ids[KNOCK_BASE + card] = DISCARD_BASE + NUM_RANKS + rank_of(card)
    return ids


def _suit_table() -> torch.Tensor:
    """Action id -> its card's suit; ``NUM_SUITS`` (no card) for draw, take, pass and padding."""
    ids = torch.full((NUM_ACTIONS + 1,), NUM_SUITS, dtype=torch.long)
    for card in range(NUM_CARDS):
        ids[DISCARD_BASE + card] = ids[KNOCK_BASE + card] = suit_of(card)
    return ids


_KIND_RANK_IDS, _SUIT_IDS = _kind_rank_table(), _suit_table()

#: ``network`` in a policy file's metadata -> its class (absent: ``"mlp"``).
NETWORKS: dict[str, type[nn.Module]] = {"mlp": PolicyValueNet, "suits": SuitEquivariantNet}


def make_network(network: str, observation_size: int, hidden: int = 192, outlook: bool = False) -> nn.Module:
    """A freshly initialised network of kind ``network`` (``NETWORKS``); a ValueError names the kinds."""
    if network not in NETWORKS:
        raise ValueError(f"network={network!r}; allowed: {', '.join(map(repr, NETWORKS))}")
    return NETWORKS[network](observation_size, hidden=hidden, outlook=outlook)


def parameter_shapes(observation_size: int, hidden: int, outlook: bool = False,
                     network: str = "mlp") -> dict[str, tuple[int, ...]]:
    """The shape of every tensor in ``make_network(network, observation_size, hidden, outlook).state_dict()``,
    computed on the meta device: nothing is allocated and no random number is drawn."""
    with torch.device("meta"):
        model = make_network(network, observation_size, hidden=hidden, outlook=outlook)
    return {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}
