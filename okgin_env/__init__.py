"""okgin: Oklahoma Gin as a reinforcement-learning environment.

The public names of CONTRACT.md live here; importing this package never imports torch.
"""

from .rules.actions import NUM_ACTIONS, action_str
from .rules.cards import card_id, card_str, parse_cards
from .rules.config import RulesConfig, make_config
from .rules.match import MatchState
from .rules.melds import best_melds, deadwood
from .rules.round import Phase, RoundState

__all__ = [
    "env",
    "raw_env",
    "NUM_ACTIONS",
    "MatchState",
    "Phase",
    "RoundState",
    "RulesConfig",
    "action_str",
    "best_melds",
    "card_id",
    "card_str",
    "deadwood",
    "make_config",
    "parse_cards",
]

from .env import env, raw_env  # noqa: E402
