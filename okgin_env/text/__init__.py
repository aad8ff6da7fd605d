"""The text protocol for language-model agents (docs/text.md): an observation in words, a reply in
words back to an action id.

    from okgin_env.text import TextPolicy, describe, legal_move_names, parse

    observation = env.observe(agent)          # the dict the AEC env gives
    print(describe(observation, config=env.config))
    action = parse("I'll knock with 2C", observation)   # ValueError listing the legal moves if not
    policy = TextPolicy(my_model)             # my_model(prompt) -> reply; policy.act(observation) -> int

* ``describe(observation, config=None)``: what the player knows, from the observation alone (the
  rules given by ``config``, else said to be unknown): the rules, seats and scores, the upcard and
  knock limit, the discard pile (its top; the rest by suit, as the observation keeps no order),
  the stock, the hand sorted with its best melds and deadwood, each opponent's known cards and
  what they declined or threw, whose turn, and the legal moves by name.
* ``describe_outcome(outcome, seat=None, config=None)``: a showdown (``infos["round_outcome"]``):
  who knocked, every hand's melds, layoffs and deadwood, the points.
* ``legal_move_names(observation) -> {action id: name}``: ``action_str`` names, gin knocks marked
  ``"knock 9C (gin)"``.
* ``parse(reply, observation) -> int`` and ``read_move(line)`` (the short forms ``okgin-play``
  reads): see ``okgin_env.text.parse``.
* ``TextPolicy(prompt_to_reply, *, config=None, retries=2, fallback=None)``: a policy that asks.
"""

from __future__ import annotations

from .describe import cards_text, describe, describe_outcome, hand_order, hand_text, legal_move_names, sort_key
from .parse import parse, read_move
from .policy import INSTRUCTIONS, TextPolicy, TextPolicyError

__all__ = [
    "INSTRUCTIONS",
    "TextPolicy",
    "TextPolicyError",
    "cards_text",
    "describe",
    "describe_outcome",
    "hand_order",
    "hand_text",
    "legal_move_names",
    "parse",
    "read_move",
    "sort_key",
]
