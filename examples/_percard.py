"""A network shared by the 52 cards, for the framework examples (torch and okgin_env only).

Every 52-entry slice of the observation layout (the card planes, and with
``observation="features"`` the per-card solver features of ``okgin_env.features``) gives each
card a column of numbers. ``PerCardNet`` runs one small network, shared by all 52 cards, over
each card's column (with a learned embedding of the card itself and a summary of the rest of the
observation) and reads that card's discard and knock scores (actions ``DISCARD_BASE + c`` and
``KNOCK_BASE + c``) off it; draw / take / pass, or a state value, come from the pooled cards and
the rest. What is learnt about one card (say, a discard that leaves less deadwood is better)
therefore holds for every card, where a plain MLP over the flat array has to learn it 52 times
(with two layers of 256 over the flat array, the examples learned next to nothing in their
budgets).

The examples plug it into their framework the framework's way: SB3 as the policy's
``mlp_extractor`` (``examples/sb3_maskable_ppo.py``), Tianshou as the actor and critic nets
(``examples/tianshou_multiagent.py``), RLlib inside the masking ``RLModule``
(``examples/rllib_selfplay.py``). No learning framework is imported here.

``as_model_input`` turns the observation a policy is handed into the array the network was
trained on: ``okgin_env.evaluate`` and the bots' envs hand out card-layout observations, and a
network trained with ``observation="features"`` needs the features appended
(``okgin_env.features.with_features``, computed from that seat's own observation and mask).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from okgin_env.observation import layout_for, layout_of
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, NUM_ACTIONS, PASS, TAKE_DISCARD
from okgin_env.rules.cards import NUM_CARDS

OUTPUTS = ("logits", "value")
NETWORKS = ("percard", "mlp")
OBSERVATION_DEFAULT = "features"  # what every example trains on unless told otherwise (--observation)


class PerCardNet(nn.Module):
    """Scores for the ``NUM_ACTIONS`` actions (``out="logits"``) or one state value (``"value"``).

    ``observation`` is the env option the network reads (``"cards"`` or ``"features"``);
    ``num_players`` picks the layout. Input ``[..., layout size]``, output ``[..., 107]`` or
    ``[..., 1]``.
    """

    def __init__(self, observation: str, out: str = "logits", hidden: int = 64, card_embedding: int = 8, num_players: int = 2):
        super().__init__()
        if out not in OUTPUTS:
            raise ValueError(f"out={out!r}; allowed: {', '.join(map(repr, OUTPUTS))}")
        slices = layout_for(num_players, observation).slices.values()
        planes = [list(range(s.start, s.stop)) for s in slices if s.stop - s.start == NUM_CARDS]
        rest = [i for s in slices if s.stop - s.start != NUM_CARDS for i in range(s.start, s.stop)]
        self.observation = observation
        self.input_size = layout_for(num_players, observation).size
        self.register_buffer("plane_index", torch.tensor(planes).T.contiguous(), persistent=False)  # [52, planes]
        self.register_buffer("rest_index", torch.tensor(rest), persistent=False)
        self.card_embedding = nn.Parameter(0.1 * torch.randn(NUM_CARDS, card_embedding))
        self.rest_net = nn.Sequential(nn.Linear(len(rest), hidden), nn.ReLU())
        self.card_net = nn.Sequential(
            nn.Linear(len(planes) + card_embedding + hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.out = out
        self.card_head = nn.Linear(hidden, 2) if out == "logits" else None  # discard c, knock with c
        self.summary_head = nn.Sequential(
            nn.Linear(3 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3 if out == "logits" else 1)
        )
        # output = cat([draw, take, pass], discard scores, knock scores)[..., order]
        sources = [DRAW_STOCK, TAKE_DISCARD, PASS, *range(DISCARD_BASE, DISCARD_BASE + NUM_CARDS),
                   *range(KNOCK_BASE, KNOCK_BASE + NUM_CARDS)]
        if sorted(sources) != list(range(NUM_ACTIONS)):
            raise AssertionError("the action ids are no longer draw/take/pass, 52 discards, 52 knocks")
        self.register_buffer("order", torch.tensor(sources).argsort(), persistent=False)

    @property
    def output_size(self) -> int:
        return NUM_ACTIONS if self.out == "logits" else 1

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        observation = observation.float()
        cards = observation[..., self.plane_index]  # [..., 52, planes]
        rest = self.rest_net(observation[..., self.rest_index])  # [..., hidden]
        embedding = self.card_embedding.expand(*cards.shape[:-1], -1)
        per_card = self.card_net(torch.cat([cards, embedding, rest.unsqueeze(-2).expand(*cards.shape[:-1], -1)], dim=-1))
        pooled = torch.cat([per_card.mean(dim=-2), per_card.amax(dim=-2), rest], dim=-1)
        summary = self.summary_head(pooled)
        if self.card_head is None:
            return summary
        card_scores = self.card_head(per_card)  # [..., 52, 2]
        return torch.cat([summary, card_scores[..., 0], card_scores[..., 1]], dim=-1)[..., self.order]


def mlp(input_size: int, output_size: int, hidden: int = 256) -> nn.Module:
    """The baseline: two hidden layers of ``hidden`` over the flat array (``--network mlp``)."""
    return nn.Sequential(nn.Linear(input_size, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, output_size))


def make_network(network: str, observation: str, out: str = "logits", hidden: int = 64) -> nn.Module:
    """``PerCardNet`` (``network="percard"``) or ``mlp`` over the flat array (``"mlp"``)."""
    if network not in NETWORKS:
        raise ValueError(f"network={network!r}; allowed: {', '.join(map(repr, NETWORKS))}")
    if out not in OUTPUTS:
        raise ValueError(f"out={out!r}; allowed: {', '.join(map(repr, OUTPUTS))}")
    if network == "percard":
        return PerCardNet(observation, out, hidden)
    return mlp(layout_for(2, observation).size, NUM_ACTIONS if out == "logits" else 1, hidden)


def as_model_input(observation: dict[str, np.ndarray], trained_on: str) -> np.ndarray:
    """The flat float32 array a network trained on ``trained_on`` reads, for this observation dict.

    Card-layout observations get the solver features appended when ``trained_on="features"``
    (from the seat's own observation and mask: nothing hidden); anything else is passed through.
    """
    values = np.asarray(observation["observation"], dtype=np.float32)
    if trained_on == "features" and layout_of(values).observation == "cards":
        from okgin_env.features import with_features

        values = with_features(values, np.asarray(observation["action_mask"])).astype(np.float32)
    return values


class ActorCriticNets(nn.Module):
    """A policy network and a value network (no shared weights) over the same flat observation.

    ``forward(x) -> (logits [..., 107], value [..., 1])``; ``forward_actor`` / ``forward_critic``
    give one of them. ``latent_dim_pi`` / ``latent_dim_vf`` name the output sizes (what SB3's
    policies ask of an ``mlp_extractor``).
    """

    def __init__(self, network: str = "percard", observation: str = "features", hidden: int = 64):
        super().__init__()
        self.policy_net = make_network(network, observation, "logits", hidden)
        self.value_net = make_network(network, observation, "value", hidden)
        self.latent_dim_pi = NUM_ACTIONS
        self.latent_dim_vf = 1

    def forward(self, observation: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(observation), self.forward_critic(observation)

    def forward_actor(self, observation: torch.Tensor) -> torch.Tensor:
        return self.policy_net(observation)

    def forward_critic(self, observation: torch.Tensor) -> torch.Tensor:
        return self.value_net(observation)


def add_network_arguments(parser) -> None:
    """The examples' ``--network``, ``--hidden`` and ``--observation`` options (argparse)."""
    from okgin_env.observation import OBSERVATIONS

    parser.add_argument("--network", default="percard", choices=NETWORKS,
                        help="percard: one small network shared by the 52 cards (PerCardNet); mlp: two layers over the flat array")
    parser.add_argument("--hidden", type=int, default=64, help="units per hidden layer")
    parser.add_argument("--observation", default=OBSERVATION_DEFAULT, choices=OBSERVATIONS,
                        help="card planes alone, or with the solver features appended")
