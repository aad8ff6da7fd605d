"""The masked-action policy/value network.

Each legal action is scored by the same small network from (a) an embedding of the whole
observation plus a few context features and (b) that action's own features and a learned
embedding of its id. Illegal actions are never scored: the legal set is padded to
``MAX_LEGAL_ACTIONS``, only the legal slots go through the scorer, and padding gets a logit of
-inf. The value head predicts the learner's round reward from the observation embedding.
"""

from __future__ import annotations

import torch
from torch import nn

from okgin_env.rules.actions import NUM_ACTIONS

from .features import NUM_ACTION_FEATURES, NUM_CONTEXT_FEATURES, NUM_OUTLOOK_FEATURES


class PolicyValueNet(nn.Module):
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


def parameter_shapes(observation_size: int, hidden: int, outlook: bool = False) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor in ``PolicyValueNet(observation_size, hidden, outlook=outlook).state_dict()``,
    computed on the meta device: nothing is allocated and no random number is drawn."""
    with torch.device("meta"):
        model = PolicyValueNet(observation_size, hidden=hidden, outlook=outlook)
    return {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}
