"""An agent in a file of its own, for the command lines (README, "Evaluate your own agent"):

    okgin-eval examples/my_agent.py:LowestLegal simple --matches 20
    okgin-play --opponent examples/my_agent.py:LowestLegal

Any class (or function returning an object) with ``act(observation) -> int`` works; a class is
built with ``seed=`` and ``rules=`` where its ``__init__`` takes them, so each game can seed it.
"""

import numpy as np


class LowestLegal:
    """Plays the legal action with the lowest id (so it never knocks): a baseline to beat."""

    def __init__(self, seed=None, rules=None):
        self.rules = rules  # the table's RulesConfig (preset, player count, options)

    def act(self, observation):
        return int(np.flatnonzero(observation["action_mask"])[0])
