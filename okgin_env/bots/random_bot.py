"""``random``: a uniformly random legal action."""

from __future__ import annotations

import random

import numpy as np


class RandomBot:
    """Uniform over the legal actions of the action mask. ``act(observation) -> int``."""

    name = "random"

    def __init__(self, seed: int | None = None, **_ignored):
        self.rng = random.Random(seed)

    def act(self, observation: dict) -> int:
        legal = np.flatnonzero(np.asarray(observation["action_mask"]))
        if legal.size == 0:
            raise ValueError("no legal action: this observation is not for the agent to act")
        return int(legal[self.rng.randrange(legal.size)])
