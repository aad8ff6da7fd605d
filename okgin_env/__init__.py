"""okgin: Oklahoma Gin as a reinforcement-learning environment.

The public names of docs/api.md live here. They are loaded on first use (PEP 562), so that
``import okgin_env.rules`` loads no RL library (no gymnasium, pettingzoo or torch) and
``okgin_env.GymEnv`` loads only what the Gymnasium wrapper needs; importing this package never
imports torch. ``okgin_env.__version__`` is the installed distribution's version.

Environment ids (``okgin_env.registration``): ``gymnasium.make("OklahomaGin-v0")`` and
``pettingzoo.make("aec", "okgin/oklahoma_gin_v0")`` work once an environment module is imported,
or after ``import okgin_env`` when gymnasium was imported first, or after ``register_envs()``.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

# Public name -> (module, attribute); a module alone when the attribute is the module itself.
_PUBLIC: dict[str, tuple[str, str | None]] = {
    "NUM_ACTIONS": ("okgin_env.rules.actions", "NUM_ACTIONS"),
    "BatchEnv": ("okgin_env.batch", "BatchEnv"),
    "GymEnv": ("okgin_env.gym_env", "GymEnv"),
    "MatchState": ("okgin_env.rules.match", "MatchState"),
    "Phase": ("okgin_env.rules.round", "Phase"),
    "RoundState": ("okgin_env.rules.round", "RoundState"),
    "RulesConfig": ("okgin_env.rules.config", "RulesConfig"),
    "VectorGymEnv": ("okgin_env.vector", "VectorGymEnv"),
    "action_str": ("okgin_env.rules.actions", "action_str"),
    "bots": ("okgin_env.bots", None),
    "best_melds": ("okgin_env.rules.melds", "best_melds"),
    "card_id": ("okgin_env.rules.cards", "card_id"),
    "card_str": ("okgin_env.rules.cards", "card_str"),
    "deadwood": ("okgin_env.rules.melds", "deadwood"),
    "env": ("okgin_env.env", "env"),
    "make_config": ("okgin_env.rules.config", "make_config"),
    "parse_cards": ("okgin_env.rules.cards", "parse_cards"),
    "raw_env": ("okgin_env.env", "raw_env"),
    "register_envs": ("okgin_env.registration", "register_envs"),
}

__all__ = sorted(_PUBLIC)  # noqa: PLE0605 - the names __getattr__ provides


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _PUBLIC:
        module_name, attribute = _PUBLIC[name]
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
    elif not name.startswith("_"):
        try:  # a submodule, as after an eager import: okgin_env.observation, okgin_env.render, ...
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    setattr(sys.modules[__name__], name, value)  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*_PUBLIC, "__version__", *(name for name in globals() if name.startswith("__"))})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("okgin")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "0+unknown"


class _Package(types.ModuleType):
    """This package's module type: the public name ``env`` stays the function ``env()``.

    Importing the submodule ``okgin_env.env`` makes Python bind it as the package attribute
    ``env``; the public name (as before this package became lazy) is the factory function.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "env" and isinstance(value, types.ModuleType):
            value = value.env
        super().__setattr__(name, value)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Pickled by name, as plain modules are (cloudpickle, used by Ray, pickles module references).
        return importlib.import_module, (self.__name__,)


sys.modules[__name__].__class__ = _Package

if "gymnasium" in sys.modules:  # already paid for: make the env ids work now
    from .registration import register_envs as _register_envs

    _register_envs()
