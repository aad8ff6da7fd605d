"""Who the learner plays during training: a pool of bots and past snapshots of itself.

``--opponent-pool "simple=3,self=1"`` splits the tables by weight: here three quarters play the
``simple`` bot in every other seat, one quarter play *snapshots* of the learner (self-play). A
table's opponent fills all its non-learner seats, so with 3 or 4 players a self-play table seats
two or three copies of one snapshot. Names: every opponent name of ``okgin_env.opponents``
(``simple``, ``random``, ``search``, ...) but the held-out bots, and ``self``.

Snapshots: every ``snapshot_every`` updates after imitation the learner's weights join a pool of
the last ``capacity`` snapshots, and each self-play table is handed one of them, drawn at random,
until the next refresh (so the learner meets a spread of its past selves, not just the latest).
Until the first snapshot (during imitation) self-play tables play ``simple``. Snapshots sample
their moves from the policy (not greedy), so that they do not repeat one line of play. They are
not saved in ``last.pt``: a resumed run starts its pool again from the resumed weights.

``--pool-sampling prioritized`` re-splits the tables every ``--reweight-every`` updates by
``PrioritizedSampler``: each opponent's share of the tables is its pool weight scaled down by
how often the learner already beats it (prioritized fictitious self-play, as in AlphaStar), so
training time goes to the opponents it handles worst. A table handed to another opponent gets
it at once (mid-match: the new opponent finishes the match from the scores it finds).
"""

from __future__ import annotations

import copy
import random

import numpy as np
import torch

from okgin_env.bots import BOT_NAMES, HELD_OUT_BOTS
from okgin_env.opponents import opponent_names

from .model import PolicyValueNet
from .policy import encode_batch

SELF = "self"


def check_teacher(spec: str, flag: str, config) -> None:
    """A ValueError unless ``spec`` (an okgin-eval bot spec) can teach a training stage: a known bot
    with valid settings for ``config``, not a held-out bot (no training stage may play or learn
    from them), and reproducible for its seed (no ``time_limit``, so that the same arguments give
    the same labels). ``flag`` names the option in the message."""
    from okgin_env.evaluate import make_policy, parse_spec

    name, settings = parse_spec(spec)
    if name in HELD_OUT_BOTS:
        raise ValueError(f"{flag} {spec!r}: the held-out bots ({', '.join(HELD_OUT_BOTS)}) are for "
                         "evaluation only; no training stage plays them")
    if "time_limit" in settings:
        raise ValueError(f"{flag} {spec!r}: a time_limit makes the labels depend on the machine's speed; "
                         "give a rollouts budget instead (e.g. search:rollouts=160)")
    if name not in BOT_NAMES:  # (a teacher is a bot: make_policy would load a policy file)
        allowed = ", ".join(n for n in BOT_NAMES if n not in HELD_OUT_BOTS)
        raise ValueError(f"{flag} {spec!r}: unknown bot {name!r}; expected one of {allowed}, with optional settings")
    try:
        make_policy(spec, 0, config)
    except (ValueError, TypeError) as error:
        raise ValueError(f"{flag} {spec!r}: {error}") from None


def parse_pool(text: str) -> dict[str, float]:
    """``"simple=3,self=1"`` -> ``{"simple": 3.0, "self": 1.0}``; a bare name has weight 1.

    The held-out bots (``okgin_env.bots.HELD_OUT_BOTS``) are refused: they exist to measure an
    agent against play it has never met, so no training stage may play them."""
    allowed = tuple(name for name in (*opponent_names(), SELF) if name not in HELD_OUT_BOTS)
    pool: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, weight = part.partition("=")
        name = name.strip()
        if name in HELD_OUT_BOTS:
            raise ValueError(f"--opponent-pool: {name!r} is a held-out bot, for evaluation only; allowed: {', '.join(allowed)}")
        if name not in allowed:
            raise ValueError(f"--opponent-pool: unknown opponent {name!r}; allowed: {', '.join(allowed)}")
        if name in pool:
            raise ValueError(f"--opponent-pool: {name!r} is named twice")
        try:
            value = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"--opponent-pool: weight of {name!r} is {weight!r}, not a number") from None
        if not (value > 0 and np.isfinite(value)):
            raise ValueError(f"--opponent-pool: weight of {name!r} must be a positive number, got {weight!r}")
        pool[name] = value
    if not pool:
        raise ValueError(f"--opponent-pool is empty; give NAME=WEIGHT,... with names from {', '.join(allowed)}")
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


class PrioritizedSampler:
    """Prioritized fictitious self-play over the pool: more tables for the opponents the learner beats least.

    Each opponent name keeps a running count of the learner's finished rounds against it and of
    the rounds it won (both decayed by ``decay`` at every ``record``, so old results fade). Its
    share of the tables is its pool weight times ``max(floor, (1 - win_rate) ** power)``: with
    ``power`` 2 an opponent beaten in 80% of rounds gets a sixth of the share of one beaten in
    50% (AlphaStar's "hard" weighting). ``floor`` keeps every opponent in play, so a result that
    changes is seen again. Names without results yet keep their pool weight.
    """

    def __init__(self, pool: dict[str, float], power: float = 2.0, floor: float = 0.1, decay: float = 0.9):
        if not (power >= 0 and 0 < floor <= 1 and 0 <= decay < 1):
            raise ValueError(f"need power >= 0, 0 < floor <= 1 and 0 <= decay < 1; got {power}, {floor} and {decay}")
        self.pool = dict(pool)
        self.power, self.floor, self.decay = power, floor, decay
        self.wins = dict.fromkeys(pool, 0.0)
        self.rounds = dict.fromkeys(pool, 0.0)

    def record(self, results: dict[str, tuple[float, float]]) -> None:
        """``{name: (rounds won, rounds finished)}`` since the last call (names left out: none)."""
        for name in self.pool:
            won, finished = results.get(name, (0.0, 0.0))
            if not 0 <= won <= finished:
                raise ValueError(f"{name!r}: {won} rounds won of {finished} finished")
            self.wins[name] = self.decay * self.wins[name] + won
            self.rounds[name] = self.decay * self.rounds[name] + finished

    def win_rate(self, name: str) -> float | None:
        return self.wins[name] / self.rounds[name] if self.rounds[name] > 0 else None

    def weights(self) -> dict[str, float]:
        weights = {}
        for name, weight in self.pool.items():
            rate = self.win_rate(name)
            weights[name] = weight if rate is None else weight * max(self.floor, (1.0 - rate) ** self.power)
        return weights


def table_results(names: list[str], wins: np.ndarray, rounds: np.ndarray) -> dict[str, tuple[float, float]]:
    """Per-table round counts summed by each table's opponent name."""
    results: dict[str, tuple[float, float]] = {}
    for name, won, finished in zip(names, wins.tolist(), rounds.tolist()):
        a, b = results.get(name, (0.0, 0.0))
        results[name] = (a + won, b + finished)
    return results


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
    """The last ``capacity`` snapshots of the learner's weights, played by ``players`` opponents at a
    time (each shared by a share of the self-play tables, so that each makes one batched forward
    pass per opponent move rather than one per table)."""

    def __init__(self, capacity: int, players: int, seed: int):
        self.capacity = capacity
        self.players = players
        self.states: list[dict[str, torch.Tensor]] = []
        self.opponents: list[SnapshotOpponent] = []
        self.seed = seed
        self.rng = random.Random(seed)

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


__all__ = ["SELF", "PrioritizedSampler", "SnapshotOpponent", "SnapshotPool", "parse_pool", "split_tables", "table_results"]
