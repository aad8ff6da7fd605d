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
    "GymEnv",
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
from .gym_env import GymEnv  # noqa: E402


def _register() -> None:
    """Make ``pettingzoo.make("aec", "okgin/oklahoma_gin_v0")`` and ``gymnasium.make("OklahomaGin-v0")`` work."""
    import gymnasium
    import pettingzoo

    if "okgin/oklahoma_gin_v0" not in pettingzoo.aec_registry:
        pettingzoo.register("aec", "okgin/oklahoma_gin_v0", entry_point="okgin_env.env:env")
    if "OklahomaGin-v0" not in gymnasium.registry:
        gymnasium.register("OklahomaGin-v0", entry_point="okgin_env.gym_env:GymEnv")


_register()
