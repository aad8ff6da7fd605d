"""okgin: Oklahoma Gin as a reinforcement-learning environment.

The public names of CONTRACT.md live here; importing this package never imports torch.
"""

from . import bots
from .env import env, raw_env
from .gym_env import GymEnv
from .rules.actions import NUM_ACTIONS, action_str
from .rules.cards import card_id, card_str, parse_cards
from .rules.config import RulesConfig, make_config
from .rules.match import MatchState
from .rules.melds import best_melds, deadwood
from .rules.round import Phase, RoundState
from .vector import BatchEnv, VectorGymEnv

__all__ = [
    "NUM_ACTIONS",
    "BatchEnv",
    "GymEnv",
    "MatchState",
    "Phase",
    "RoundState",
    "RulesConfig",
    "VectorGymEnv",
    "action_str",
    "bots",
    "best_melds",
    "card_id",
    "card_str",
    "deadwood",
    "env",
    "make_config",
    "parse_cards",
    "raw_env",
]


def _register() -> None:
    """Make ``pettingzoo.make("aec", "okgin/oklahoma_gin_v0")`` and ``gymnasium.make("OklahomaGin-v0")`` work."""
    import gymnasium
    import pettingzoo

    if "okgin/oklahoma_gin_v0" not in pettingzoo.aec_registry:
        pettingzoo.register("aec", "okgin/oklahoma_gin_v0", entry_point="okgin_env.env:env")
    if "OklahomaGin-v0" not in gymnasium.registry:
        gymnasium.register(
            "OklahomaGin-v0",
            entry_point="okgin_env.gym_env:GymEnv",
            vector_entry_point="okgin_env.vector:VectorGymEnv",
        )


_register()
