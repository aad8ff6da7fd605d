"""Who the learner plays during training: a pool of bots and past snapshots of itself.

``--opponent-pool "simple@3 self@1"`` splits the tables by weight: here three quarters play the
``simple`` bot in every other seat, one quarter play *snapshots* of the learner (self-play). A
table's opponent fills all its non-learner seats, so with 3 or 4 players a self-play table seats
two or three copies of one snapshot. Entries are separated by spaces, each a player spec of
``okgin_env.players`` that may teach (``simple``, ``search:rollouts=8``, a policy file; no
held-out bot, no ``time_limit``) or ``self``, with ``@WEIGHT`` after it (default 1).

Snapshots: after the first update of PPO and then every ``SNAPSHOT_EVERY`` (10) updates the
learner's weights join a pool of the last ``SNAPSHOT_CAPACITY`` (8) snapshots, and each self-play table is handed one of them, drawn at random,
until the next refresh (so the learner meets a spread of its past selves, not just the latest).
Until the first snapshot (during imitation) self-play tables play ``simple``. Snapshots sample
their moves from the policy (not greedy), so that they do not repeat one line of play. They are
not saved in ``last.pt``: a resumed run starts its pool again from the resumed weights.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import torch

from okgin_env.players import check_player
from okgin_env.policy_loaders import shown
from okgin_env.rules.config import make_config

from .model import PolicyValueNet
from .policy import encode_batch

SELF = "self"
# Self-play: the snapshots kept, those in play at once, and the updates between two snapshots.
SNAPSHOT_CAPACITY = 8
SNAPSHOT_PLAYERS = 4
SNAPSHOT_EVERY = 10


def check_training_player(spec: str, flag: str, config, purpose: str = "teach") -> None:
    """A ValueError naming ``flag`` unless ``spec`` (a player spec of ``okgin_env.players``) may
    serve a training stage for ``purpose`` (``"teach"``: a pool entry or a teacher; ``"label"``: a
    labelling player) at ``config``'s table: no held-out bot, reproducible for its seed."""
    try:
        check_player(spec, config, purpose=purpose)
    except (ValueError, OSError) as error:  # (the flag names the spec: not twice)
        raise ValueError(f"{flag} {shown(spec)}: {str(error).removeprefix(f'player {shown(spec)}: ')}") from None


def parse_pool(text: str, config=None) -> dict[str, float]:
    """``"simple@3 search:rollouts=8@1 self"`` -> ``{"simple": 3.0, "search:rollouts=8": 1.0, "self": 1.0}``.

    Entries are separated by spaces; ``@WEIGHT`` ends an entry (a positive number; without it the
    weight is 1). Every spec is checked as a teaching player for ``config``'s table (default
    classic), so the held-out bots (``okgin_env.bots.HELD_OUT_BOTS``) are refused: they exist to
    measure an agent against play it has never met, so no training stage may play them."""
    pool: dict[str, float] = {}
    for entry in text.split():
        spec, at, weight = entry.rpartition("@")
        if not at:
            spec, weight = entry, "1"
        if "=" in entry and ":" not in entry and not at:  # (a bot's settings follow a ':')
            raise ValueError(f"--opponent-pool {text!r}: write each entry as SPEC@WEIGHT separated by spaces "
                             "(e.g. 'simple@3 self@1'); NAME=WEIGHT,... is no longer read")
        try:
            value = float(weight)
        except ValueError:
            raise ValueError(f"--opponent-pool: weight of {spec!r} is {weight!r}, not a number") from None
        if not (value > 0 and np.isfinite(value)):
            raise ValueError(f"--opponent-pool: weight of {spec!r} must be a positive number, got {weight!r}")
        if spec in pool:
            raise ValueError(f"--opponent-pool: {spec!r} is named twice")
        if spec != SELF:
            check_training_player(spec, "--opponent-pool:", config if config is not None else make_config("classic"))
        pool[spec] = value
    if not pool:
        raise ValueError("--opponent-pool is empty; give SPEC@WEIGHT entries separated by spaces, e.g. 'simple@3 self@1'")
    return pool


def split_tables(pool: dict[str, float], num_tables: int) -> list[str]:
    """Each table's opponent name: the weights' shares of ``num_tables`` (largest remainders),
    interleaved so that any slice of tables sees every opponent."""
    total = sum(pool.values())
    exact = {name: num_tables * w / total for name, w in pool.items()}
    counts = {name: int(x) for name, x in exact.items()}
    for name in sorted(exact, key=lambda n: counts[n] - exact[n])[: num_tables - sum(counts.values())]:
        counts[name] += 1
    # Interleave: table i goes to the name furthest behind its share so far.
    given = dict.fromkeys(counts, 0)
    tables = []
    for i in range(num_tables):
        name = max(counts, key=lambda n: (counts[n] * (i + 1) / num_tables - given[n], -list(counts).index(n)))
        given[name] += 1
        tables.append(name)
    return tables


class SnapshotOpponent:
    """A frozen copy of the learner's network as a batch opponent (``act_batch``), sampling its moves."""

    name = SELF

    def __init__(self, model: PolicyValueNet, num_players: int, seed: int):
        self.model = copy.deepcopy(model).eval()
        self.num_players = num_players
        self.generator = torch.Generator().manual_seed(seed)

    def load(self, state: dict[str, torch.Tensor]) -> None:
        self.model.load_state_dict(state)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        inputs, legal_actions = encode_batch(observations, masks, self.num_players, self.model.outlook)
        with torch.no_grad():
            logits, _ = self.model(*inputs)
            chosen = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=self.generator)[:, 0]
        return np.array([actions[i] for actions, i in zip(legal_actions, chosen.tolist())], dtype=np.int64)


class SnapshotPool:
    """The last ``capacity`` snapshots of the learner's weights, played at the self-play ``tables``
    by ``players`` opponents at a time (each shared by a share of those tables, so that each makes
    one batched forward pass per opponent move rather than one per table). A snapshot is taken
    after the first update of PPO and then every ``every`` updates."""

    def __init__(self, tables: list[int], seed: int, capacity: int = SNAPSHOT_CAPACITY,
                 players: int = SNAPSHOT_PLAYERS, every: int = SNAPSHOT_EVERY):
        self.tables = list(tables)
        self.capacity, self.players, self.every = capacity, players, every
        self.states: list[dict[str, torch.Tensor]] = []
        self.opponents: list[SnapshotOpponent] = []
        self.seed = seed
        self.rng = random.Random(seed)

    def after_update(self, model: PolicyValueNet, num_players: int, vector_env, update: int) -> None:
        """After a PPO update: the first snapshot seats the opponents at the self-play tables, and
        every ``every`` updates a new snapshot joins the pool and the opponents draw again."""
        if not self.tables or (self.states and update % self.every != 0):
            return
        if not self.states:
            self.seat(model, num_players, vector_env, self.tables)
        self.add(model)
        self.refresh()

    def seat(self, model: PolicyValueNet, num_players: int, tables, games: list[int]) -> None:
        """Create the opponents (from ``model``'s shape) and give them ``games`` of ``tables``, in turn."""
        self.opponents = [SnapshotOpponent(model, num_players, self.seed * 1000 + k) for k in range(self.players)]
        for j, game in enumerate(games):
            tables.set_opponent(game, self.opponents[j % self.players])

    def add(self, model: PolicyValueNet) -> None:
        self.states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        del self.states[: -self.capacity]

    def refresh(self) -> None:
        """Hand every self-play opponent a snapshot drawn at random from the pool."""
        for opponent in self.opponents:
            opponent.load(self.rng.choice(self.states))


__all__ = ["SELF", "SnapshotOpponent", "SnapshotPool", "check_training_player", "parse_pool", "split_tables"]
