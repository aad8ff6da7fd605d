"""Opponents of the single-agent views: one keyword, ``opponents=``, in ``GymEnv`` and ``VectorGymEnv``.

An opponent is a player spec of ``okgin_env.players`` (a bot with settings such as
``"search:rollouts=8"``, a policy file such as ``"checkpoints/okgin_classic.pt"``, a policy
object or a batch policy), or ``None``, which is ``"random"``. Named opponents are built for the
env's rules, seeded with ``opponent_seed`` and rebuilt from ``reset(seed=s)`` with
``reset_seed(s)``, so a seeded reset replays; an opponent object keeps its own generator.

``GymEnv`` asks for one decision at a time (``decide``: ``act_states`` if the policy has it, the
fast path on engine states that ``simple`` offers, else ``act``, else ``act_batch`` on a batch of
one); ``VectorGymEnv`` for one batch of games (``as_batch_policy``: ``act_states`` or
``act_batch`` if present, else ``act`` once per game).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .bots.random_bot import RandomBot
from .players import check_player, make_player
from .rules.config import RulesConfig, check_seed, is_int
from .rules.round import RoundState

def check_opponent(spec: Any, config: RulesConfig | None = None) -> None:
    """ValueError unless ``spec`` is None or a player spec that can play at ``config``'s table."""
    if spec is not None:
        try:
            check_player(spec, config, purpose="play")
        except ValueError as error:
            raise ValueError(f"opponents: {error}") from None


def check_opponent_seed(seed: Any) -> None:
    """A ValueError unless ``seed`` is what the Gym envs' ``opponent_seed`` takes: None or an int >= 0
    (Python or numpy, not a bool), whatever the opponents (an object ignores it)."""
    try:
        check_seed(seed)  # (the one seed check; its message names the keyword here)
    except ValueError:
        raise ValueError(f"opponent_seed={seed!r:.80}; allowed: None or a non-negative int") from None


def make_opponent(spec: Any, seed: int | None = None, config: RulesConfig | None = None,
                  generator: np.random.Generator | None = None) -> Any:
    """The opponent ``spec`` names (built with ``seed`` for ``config``'s rules), or ``spec`` itself.

    ``None`` means ``"random"``; with ``generator`` given, ``"random"`` draws from that generator."""
    if spec is None or (spec == "random" and generator is not None):
        return RandomBot(seed, generator=generator)
    try:
        return make_player(spec, seed=seed, rules=config)
    except ValueError as error:
        raise ValueError(f"opponents: {error}") from None


def reset_seed(seed: int) -> int:
    """The seed a named opponent is rebuilt with on ``reset(seed=seed)`` (independent of the deals)."""
    return int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])


def check_learner_seat(learner_seat: Any, num_players: int) -> int | str:
    """The learner's seat (an int, Python or numpy, not a bool) or ``"alternate"``; the check of
    both single-agent envs."""
    if learner_seat == "alternate" and isinstance(learner_seat, str):
        return learner_seat
    if not is_int(learner_seat) or not 0 <= learner_seat < num_players:
        raise ValueError(f"learner_seat={learner_seat!r}; allowed: a seat in 0..{num_players - 1} or 'alternate'")
    return int(learner_seat)


def refuse_old_keyword(options: dict[str, Any]) -> None:
    """A clear error for ``opponent=`` (``VectorGymEnv``'s keyword before both envs took ``opponents=``)."""
    if "opponent" in options:
        raise ValueError("the opponent is given as opponents=... (one keyword in GymEnv and VectorGymEnv); opponent= is gone")


# ----------------------------------------------------------------------------- asking for actions


def decide(policy: Any, observe: Callable[[], dict[str, np.ndarray]], state: RoundState) -> Any:
    """One action of ``policy`` for the seat to act in ``state``; ``observe()`` gives that seat's observation dict."""
    if callable(getattr(policy, "act_states", None)):
        return np.asarray(policy.act_states([state]))[0]
    act = getattr(policy, "act", None)
    if callable(act):
        return act(observe())
    observation = observe()
    return np.asarray(policy.act_batch(observation["observation"][None], observation["action_mask"][None]))[0]


def as_batch_policy(policy: Any) -> Any:
    """``policy`` if it has ``act_states`` or ``act_batch``, else wrapped in ``PerObservationOpponent``."""
    if callable(getattr(policy, "act_batch", None)) or callable(getattr(policy, "act_states", None)):
        return policy
    return PerObservationOpponent(policy)


class PerObservationOpponent:
    """Adapter: any policy with ``act(observation_dict) -> int`` (docs/api.md), called once per game."""

    def __init__(self, policy: Any):
        if not callable(getattr(policy, "act", None)):
            raise ValueError(f"{policy!r} has no act(observation) method")
        self.policy = policy
        self.name = getattr(policy, "name", type(policy).__name__)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        act = self.policy.act
        return np.array(
            [act({"observation": o, "action_mask": k}) for o, k in zip(observations, masks)], dtype=np.int64
        )


__all__ = [
    "check_learner_seat",
    "PerObservationOpponent",
    "as_batch_policy",
    "check_opponent",
    "decide",
    "make_opponent",
    "refuse_old_keyword",
    "reset_seed",
]
