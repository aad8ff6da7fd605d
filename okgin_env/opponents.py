"""Opponents of the single-agent views: one notion, one keyword (``opponents=``) in ``GymEnv`` and ``VectorGymEnv``.

An opponent is any of

* a **bot name**: ``"random"`` (uniform legal), ``"simple"`` (the simple bot, run on the engine
  states: ``SimpleStateOpponent``), ``"simple_obs"`` (the same bot through observations), or any
  other name of ``okgin_env.bots.BOT_NAMES`` (``"search"``), built for the env's rules;
* an object with ``act(observation_dict) -> int`` (every bot and trained policy, docs/api.md);
* a **batch policy**: ``act_batch(observations (M, obs_size), masks (M, 107)) -> (M,)`` ints, or
  ``act_states(round_states) -> (M,)`` (given the engine ``RoundState`` of each game, hidden
  cards included: a fast path for scripted bots that read only what their seat may know, as
  ``SimpleStateOpponent`` does).

``GymEnv`` asks for one decision at a time (``decide``: ``act`` if the object has it, else
``act_states``, else ``act_batch`` on a batch of one); ``VectorGymEnv`` for one batch of games
(``as_batch_policy``: ``act_states`` or ``act_batch`` if present, else ``act`` once per game).
An opponent built from a name is seeded (``seed``) and rebuilt from ``reset(seed=s)`` with
``reset_seed(s)``, so a seeded reset replays; an opponent object keeps its own generator.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from .bots.random_bot import RandomBot
from .rules.config import RulesConfig
from .rules.round import RoundState

METHODS = ("act", "act_batch", "act_states")


def _bot_names() -> tuple[str, ...]:
    from .bots import BOT_NAMES  # lazy: the search bot is loaded only when asked for

    return BOT_NAMES


def opponent_names() -> tuple[str, ...]:
    return tuple(dict.fromkeys(("random", "simple", "simple_obs", *_bot_names())))


def is_policy(obj: Any) -> bool:
    return any(callable(getattr(obj, method, None)) for method in METHODS)


def check_opponent(spec: Any) -> None:
    """ValueError unless ``spec`` is None, a known name or an object with one of ``METHODS``."""
    if spec is None or is_policy(spec):
        return
    if isinstance(spec, str):
        if spec not in opponent_names():
            raise ValueError(f"unknown opponent {spec!r}; known: {', '.join(opponent_names())}, or a policy object")
        return
    raise ValueError(
        f"opponent {spec!r} is neither a bot name ({', '.join(opponent_names())}) nor an object with "
        "act(observation), act_batch(observations, masks) or act_states(states)"
    )


def make_opponent(spec: Any, seed: int | None = None, config: RulesConfig | None = None,
                  generator: np.random.Generator | None = None) -> Any:
    """The opponent ``spec`` names (built with ``seed`` for ``config``'s rules), or ``spec`` itself.

    ``None`` means ``"random"``; with ``generator`` given, ``"random"`` draws from that generator."""
    check_opponent(spec)
    if spec is None or spec == "random":
        return RandomBot(seed, generator=generator)
    if spec == "simple":
        return SimpleStateOpponent(seed)
    if isinstance(spec, str):
        from .bots import make_bot

        return make_bot("simple" if spec == "simple_obs" else spec, seed=seed, rules=config)
    return spec


def reset_seed(seed: int) -> int:
    """The seed a named opponent is rebuilt with on ``reset(seed=seed)`` (independent of the deals)."""
    return int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])


def check_learner_seat(learner_seat: Any, num_players: int) -> int | str:
    """The learner's seat (an int, Python or numpy, not a bool) or ``"alternate"``; the check of
    both single-agent envs."""
    if learner_seat == "alternate" and isinstance(learner_seat, str):
        return learner_seat
    if not isinstance(learner_seat, (int, np.integer)) or isinstance(learner_seat, (bool, np.bool_)) or not (
        0 <= learner_seat < num_players
    ):
        raise ValueError(f"learner_seat={learner_seat!r}; allowed: a seat in 0..{num_players - 1} or 'alternate'")
    return int(learner_seat)


def refuse_old_keyword(options: dict[str, Any]) -> None:
    """A clear error for ``opponent=`` (``VectorGymEnv``'s keyword before both envs took ``opponents=``)."""
    if "opponent" in options:
        raise ValueError("the opponent is given as opponents=... (one keyword in GymEnv and VectorGymEnv); opponent= is gone")


# ----------------------------------------------------------------------------- asking for actions


def decide(policy: Any, observe: Callable[[], dict[str, np.ndarray]], state: RoundState) -> Any:
    """One action of ``policy`` for the seat to act in ``state``; ``observe()`` gives that seat's observation dict."""
    act = getattr(policy, "act", None)
    if callable(act):
        return act(observe())
    if callable(getattr(policy, "act_states", None)):
        return np.asarray(policy.act_states([state]))[0]
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


class SimpleStateOpponent:
    """The ``simple`` bot's policy run on the engine states directly (``act_states``), skipping the
    observation round trip. It reads only what the seat to act may know (its hand, the discard top,
    the knock limit, the card it may not discard), so it plays as ``make_bot("simple")`` does; it is
    a fast path for training against ``simple``, not a pattern for policies (those read observations).
    """

    name = "simple"

    def __init__(self, seed: int | None = None):
        from .bots.simple import simple_action_for_state

        self._policy = simple_action_for_state
        self.rng = random.Random(seed)

    def act_states(self, states: list) -> np.ndarray:
        policy, rng = self._policy, self.rng
        return np.array([policy(st, rng) for st in states], dtype=np.int64)


__all__ = [
    "check_learner_seat",
    "PerObservationOpponent",
    "SimpleStateOpponent",
    "as_batch_policy",
    "check_opponent",
    "decide",
    "make_opponent",
    "opponent_names",
    "refuse_old_keyword",
    "reset_seed",
]
