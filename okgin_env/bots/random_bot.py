"""``random``: a uniformly random legal action — the project's one uniform-random policy.

``RandomBot(seed).act(observation)`` draws with a ``random.Random(seed)``; ``act_batch(observations,
masks)`` draws one action per row with ``random_legal_actions`` from a numpy generator
(``np.random.default_rng(seed)``), which is how the batched envs use it.
``RandomBot(generator=rng)`` draws both from the given numpy generator instead (``GymEnv``'s
default opponent shares the env's own generator, so a seeded reset replays its moves).
"""

from __future__ import annotations

import random

import numpy as np

from ..rules.config import RulesConfig, check_seed
from .settings import COMMON_SETTINGS, check_rules, unknown_settings_error


def random_legal_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``masks`` (M, 107) of 0/1; every row needs one."""
    masks = np.asarray(masks)
    counts = np.count_nonzero(masks, axis=1)
    if masks.shape[0] and counts.min() == 0:
        raise ValueError("a row of the masks has no legal action")
    pick = (rng.random(masks.shape[0]) * counts).astype(np.int8)  # which legal action, 0-based (< 107)
    cumulative = np.cumsum(masks != 0, axis=1, dtype=np.int8)
    return np.argmax(cumulative > pick[:, None], axis=1)


class RandomBot:
    """Uniform over the legal actions of the action mask: ``act(observation) -> int`` and
    ``act_batch(observations, masks) -> (M,) actions``."""

    name = "random"

    def __init__(
        self,
        seed: int | None = None,
        generator: np.random.Generator | None = None,
        rules: str | RulesConfig | None = None,
        **unknown,
    ):
        """``rules`` is accepted and ignored (a uniformly random policy needs none), so that callers
        may pass the table's rules to every bot; any other name raises a ValueError."""
        if unknown:
            allowed = f"{COMMON_SETTINGS}, generator (a numpy Generator or None)"
            raise unknown_settings_error("random", list(unknown), ["seed", "generator", "rules"], allowed)
        seed = check_seed(seed)
        check_rules(rules)
        if generator is not None and not isinstance(generator, np.random.Generator):
            raise ValueError(f"generator must be a numpy Generator or None, got {type(generator).__name__}")
        self.rng = random.Random(seed)
        self._shared = generator is not None
        self.generator = generator if generator is not None else np.random.default_rng(seed)

    def act(self, observation: dict) -> int:
        legal = np.flatnonzero(np.asarray(observation["action_mask"]))
        if legal.size == 0:
            raise ValueError("no legal action: this observation is not for the agent to act")
        if self._shared:
            return int(legal[self.generator.integers(legal.size)])
        return int(legal[self.rng.randrange(legal.size)])

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return random_legal_actions(masks, self.generator)


__all__ = ["RandomBot", "random_legal_actions"]
