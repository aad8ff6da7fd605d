"""``TextPolicy``: any ``prompt -> reply`` callable (a language model, a person, a script) as a policy.

The prompt is ``describe(observation, config)`` followed by ``INSTRUCTIONS``. A reply that
``parse`` refuses is asked again, with the refusal (what was wrong, the legal moves) added to
the prompt, up to ``retries`` times; after that ``act`` raises ``TextPolicyError`` (a
``ValueError``), or, when a ``fallback`` policy was given, returns the fallback's move and counts
it in ``fallbacks``. Raising is the default so that a model that cannot play is seen, not
hidden behind another policy's moves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..echo import shown
from ..rules.actions import action_index
from ..rules.config import RulesConfig, is_int, make_config
from ..rules.showdown import RoundOutcome
from .describe import describe, describe_outcome, rule_options, rules_of
from .parse import parse

INSTRUCTIONS = """\
How to answer: reply with exactly one of the legal moves above, written as listed, for example \
"discard 7H", "knock 2C", "draw stock", "take discard" or "pass". Reply with the move only: a reply \
that names two different legal moves is refused."""


class TextPolicyError(ValueError):
    """The replies stayed unusable after every retry (and no fallback was given)."""


class TextPolicy:
    """``act(observation) -> int`` through a text exchange (docs/text.md).

    ``prompt_to_reply(prompt) -> str`` is asked once per decision, and again (at most ``retries``
    more times) while ``parse`` refuses its reply. ``config`` (a ``RulesConfig``, preset name or
    mapping of rule options) lets the prompt state the rule options the observation does not
    carry. ``fallback`` (a policy with ``act``, or a callable ``observation -> int``) is used
    when the retries are spent; without one, ``TextPolicyError`` is raised.

    Counters: ``decisions``, ``asks`` (calls of ``prompt_to_reply``), ``refused`` (replies
    ``parse`` refused), ``fallbacks``; ``last_exchange`` holds the last decision's
    ``(prompt, reply)`` pairs. ``note_outcome(outcome, seat)`` adds a round's showdown
    (``describe_outcome``) to the next prompt, since in a match the next round is dealt at once.
    """

    def __init__(
        self,
        prompt_to_reply: Callable[[str], str],
        *,
        config: Any = None,
        retries: int = 2,
        fallback: Any = None,
        instructions: str = INSTRUCTIONS,
    ):
        if not callable(prompt_to_reply):
            raise ValueError(f"prompt_to_reply must be a callable prompt -> reply, got {type(prompt_to_reply).__name__}")
        if not is_int(retries) or not 0 <= retries <= 100:
            raise ValueError(f"retries must be an int in 0..100, got {retries!r}")
        if fallback is not None and not (hasattr(fallback, "act") or callable(fallback)):
            raise ValueError("fallback must be None, a policy with act(observation), or a callable observation -> action")
        if not isinstance(instructions, str):
            raise ValueError(f"instructions must be a str, got {type(instructions).__name__}")
        _check_config(config)
        self.prompt_to_reply = prompt_to_reply
        self.config = config
        self.retries = int(retries)
        self.fallback = fallback
        self.instructions = instructions
        self.decisions = self.asks = self.refused = self.fallbacks = 0
        self.last_exchange: list[tuple[str, str]] = []
        self._note = ""

    def prompt(self, observation: Mapping) -> str:
        """The first prompt of a decision: a pending showdown note, ``describe``, the instructions."""
        parts = [self._note] if self._note else []
        parts += [describe(observation, self.config), self.instructions]
        return "\n\n".join(parts)

    def note_outcome(self, outcome: RoundOutcome | Mapping, seat: int | None = None) -> None:
        """Tell the next prompt how the last round ended (``describe_outcome``; public at the showdown)."""
        self._note = "How the last round ended:\n" + describe_outcome(outcome, seat, self.config)

    def act(self, observation: Mapping) -> int:
        prompt = self.prompt(observation)
        self._note = ""
        self.decisions += 1
        self.last_exchange = []
        for attempt in range(self.retries + 1):
            reply = self.prompt_to_reply(prompt)
            self.asks += 1
            self.last_exchange.append((prompt, reply))
            try:
                return parse(reply, observation)
            except ValueError as error:
                self.refused += 1
                problem = str(error)
            echoed = reply if isinstance(reply, str) else repr(reply)
            prompt = (
                f"{self.prompt(observation)}\n\nYour reply {echoed!r} could not be played: {problem}.\n"
                "Answer again with exactly one legal move."
            )
        if self.fallback is None:
            raise TextPolicyError(f"no usable reply after {self.retries + 1} asks; the last was refused: {problem}")
        self.fallbacks += 1
        act = getattr(self.fallback, "act", self.fallback)
        action = act(observation)
        mask = observation["action_mask"]
        index = action_index(action)  # (the envs' reading of an action)
        if index is None or not 0 <= index < len(mask) or not mask[index]:
            raise TextPolicyError(f"the fallback played {shown(action)}, which is not a legal action id now (legal: "
                                  f"{[int(a) for a in np.flatnonzero(mask)]})")
        return index


def _check_config(config: Any) -> None:
    """A bad ``config`` is refused when the policy is made, not at its first decision (the player
    count is taken from each observation, so a preset name fits every count)."""
    if config is None or isinstance(config, RulesConfig):
        return
    if isinstance(config, str):
        make_config(config)
    elif isinstance(config, Mapping):
        make_config(**rule_options(config))
    else:
        rules_of(config, 2)  # raises: the ValueError naming what a config may be


__all__ = ["INSTRUCTIONS", "TextPolicy", "TextPolicyError"]
