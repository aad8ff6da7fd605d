"""Players: the one way to name who plays a seat, for every tool and every purpose.

A **player spec** is one of

* a **bot**: ``"name"`` or ``"name:key=value,key=value"`` with the bot's settings
  (``"search:rollouts=64,max_discards=3"``; values are Python literals where they parse as one,
  ``true``/``false``/``none`` in any case, else text). The names are those of
  ``okgin_env.bots.BOTS``; ``seed`` and the rule options are not settings of a spec: the table
  gives every bot its own seed and its rules;
* a **policy file**: a path ending in a policy-file suffix (``checkpoints/okgin_classic.pt``),
  read by the loader registered for that suffix (``okgin_env.policy_loaders``), or a shipped
  policy by name, ``pretrained:classic`` (``okgin_env.pretrained``); either with optional
  settings for its loader, ``pretrained:classic:suit_symmetric=False`` (the ``.pt`` loader's one
  setting: ``False`` plays the network alone, not averaged over the renamings of the suits);
* an **agent file**: ``my_agent.py:MyAgent``, a class, factory or policy object defined in a Python
  file; a class or factory is called with ``seed=`` and ``rules=`` where its signature takes them
  (with nothing else), and must give an object with ``act``. The file is imported once per process;
  only the command lines name one, never a web page;
* a **policy object**: anything with ``act(observation) -> int``, or a batch policy with
  ``act_batch(observations, masks)`` or ``act_states(round_states)``;
* a **factory**: a callable ``factory(seed) -> policy`` (a class counts as one), for evaluation
  in worker processes, where a top-level function pickles and an object might not.

``make_player(spec, seed=, rules=)`` builds the policy; ``check_player(spec, rules, purpose=)``
fails at once, with a message naming the spec, on a spec that cannot serve its purpose:

| purpose | who | what is refused beyond a bad spec |
|---|---|---|
| ``"play"`` | okgin-eval, okgin-play, okgin-web, the Gym envs' ``opponents=`` | nothing |
| ``"teach"`` | training's opponent pool, imitation teachers | held-out bots; ``time_limit`` |
| ``"label"`` | the labelling matches' and rollouts' players | held-out bots; ``time_limit`` |

Training stages never play the held-out bots (``okgin_env.bots.HELD_OUT_BOTS``: they measure how a
policy generalises), and their players must be reproducible for a seed, so that the same
arguments give the same labels and weights: a ``time_limit`` makes play depend on the machine.

``bot_help()`` is the one text that lists the bots for the command lines' help.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
from types import ModuleType
from typing import Any

from .echo import failure
from .policy_loaders import is_policy_file, load_policy_file, parse_settings, shown, takes_keyword
from .pretrained import PREFIX, PRETRAINED
from .rules.config import OPTION_NAMES, RulesConfig, make_config

#: What a check is for (see the module docstring's table).
PURPOSES = ("play", "teach", "label")
#: Methods that make an object a policy (``act``) or a batch policy.
POLICY_METHODS = ("act", "act_batch", "act_states")

#: Settings the table gives a bot itself, with the reason a spec may not set them.
RESERVED_SETTINGS = {
    "seed": "each game derives the bots' seeds from its own seed",
    **{name: "bots play by the game's rules; set rule options for the game (--rules, --target-score)"
       for name in OPTION_NAMES},
}
#: Settings that make a bot's play depend on the machine: refused where play must be reproducible.
UNREPRODUCIBLE_SETTINGS = ("time_limit",)

FORMS = ("a bot name with optional settings (search:rollouts=64), a policy file ending in .pt (settings as "
         "FILE.pt:suit_symmetric=False), "
         f"{PREFIX}NAME, FILE.py:NAME, "
         "an object with act(observation), act_batch(observations, masks) or act_states(states), "
         "or a factory(seed) -> policy")

#: ``my_agent.py:MyAgent``: a Python file, then the name of what it defines.
AGENT_FILE = re.compile(r"(?P<path>.+\.py):(?P<name>[A-Za-z_]\w*)", re.S)
_AGENT_MODULES: dict[str, ModuleType] = {}  # real path -> module, imported once per process


def is_policy_object(spec: Any) -> bool:
    """An instance with one of ``POLICY_METHODS`` (a class is a factory: called with the seed)."""
    return not isinstance(spec, type) and any(callable(getattr(spec, m, None)) for m in POLICY_METHODS)


def parse_bot_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``"search:rollouts=64,max_discards=3"`` -> ``("search", {"rollouts": 64, "max_discards": 3})``.

    Values are Python literals where they parse as one (``64``, ``0.5``, ``True``, ``None``), else
    text (``okgin_env.policy_loaders.parse_settings``, which policy files' settings share). A setting
    given twice or without ``=`` is a ValueError naming it.
    """
    return _bot_name(text), parse_settings(text.partition(":")[2], text)


def _bot_name(text: str) -> str:
    """The bot a spec names, before its settings are read: an unknown name is reported as such,
    not as a malformed setting (``" pretrained:classic"`` is no bot called ``pretrained``)."""
    return text.partition(":")[0].strip()


def _bots() -> dict[str, type]:
    from .bots import BOTS  # (lazy: the bots load the solver tables only when a player is named)

    return BOTS


def _held_out() -> tuple[str, ...]:
    from .bots import HELD_OUT_BOTS

    return HELD_OUT_BOTS


def bot_help(purpose: str = "play") -> str:
    """The bots a spec may name for ``purpose``, for help texts (from the registry, never by hand)."""
    held_out = _held_out()
    usable = ", ".join(name for name in _bots() if name not in held_out)
    extra = f", the held-out {' and '.join(held_out)}" if purpose == "play" else ""
    return (f"{usable} (settings as search:rollouts=64){extra}, a policy file ending in .pt, a shipped policy "
            f"{PREFIX}NAME ({', '.join(PRETRAINED)}; either with :suit_symmetric=False, its network alone), or your agent "
            "FILE.py:NAME (a class or factory in that file)")


def unknown_player(text: str, purpose: str = "play") -> ValueError:
    """The error for a spec that names no bot and no policy file, listing what ``purpose`` takes."""
    hint = ""
    if _bot_name(text) == "simple_obs":
        hint = " ('simple' is one bot: it plays engine states with act_states and observations with act)"
    elif text.endswith(".py"):
        hint = " (an agent file needs the name of its class or factory: FILE.py:NAME)"
    return ValueError(f"unknown player {shown(text)}{hint}; expected {bot_help(purpose)}")


def is_agent_file(spec: Any) -> bool:
    """Whether ``spec`` is a string ``FILE.py:NAME`` (an agent defined in a Python file)."""
    return isinstance(spec, str) and AGENT_FILE.fullmatch(spec) is not None


def _agent_module(path: str, text: str) -> ModuleType:
    """The module of an agent file, imported once per process (a ValueError or FileNotFoundError naming it)."""
    real = os.path.realpath(path)
    if real in _AGENT_MODULES:
        return _AGENT_MODULES[real]
    if not os.path.exists(path):
        raise FileNotFoundError(f"player {shown(text)}: there is no file {shown(path)}")
    if not os.path.isfile(path):  # a folder, FIFO or device: never opened
        raise ValueError(f"player {shown(text)}: {shown(path)} is not a regular file")
    name = "okgin_agent_" + hashlib.sha256(real.encode()).hexdigest()[:16]
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, real))
    sys.modules[name] = module  # (dataclasses and pickling look a class's module up there)
    folder = os.path.dirname(real)
    if folder not in sys.path:  # its own imports of files beside it work, as under python my_agent.py
        sys.path.append(folder)
    try:
        module.__spec__.loader.exec_module(module)
    except (Exception, SystemExit) as error:  # whatever the file raises, the tools report in one line
        del sys.modules[name]
        raise ValueError(f"player {shown(text)}: importing {shown(path)} failed: {failure(error)}") from error
    _AGENT_MODULES[real] = module
    return module


def _agent_from_file(text: str, seed: int | None, config: RulesConfig | None) -> Any:
    """The policy ``FILE.py:NAME`` names: NAME itself if it has ``act``, else NAME(seed=, rules=)."""
    match = AGENT_FILE.fullmatch(text)
    path, name = match["path"], match["name"]
    module = _agent_module(path, text)
    if not hasattr(module, name):
        defined = [key for key, value in vars(module).items()
                   if not key.startswith("_") and callable(value) and getattr(value, "__module__", None) == module.__name__]
        listed = f"; it defines {', '.join(defined)}" if defined else "; it defines no class or function"
        raise ValueError(f"player {shown(text)}: {shown(path)} has no {name!r}{listed}")
    target = getattr(module, name)
    if is_policy_object(target):
        return target
    if not callable(target):
        raise ValueError(f"player {shown(text)}: {name} is of type {type(target).__name__}, not a class, a factory or an "
                         "object with act(observation)")
    arguments = {key: value for key, value in (("seed", seed), ("rules", config if config is not None else make_config("classic")))
                 if takes_keyword(target, key)}
    try:
        agent = target(**arguments)
    except Exception as error:  # noqa: BLE001 - the user's constructor: one line, naming it
        shown_args = ", ".join(f"{key}=..." for key in arguments)
        raise ValueError(f"player {shown(text)}: {name}({shown_args}) failed: {failure(error)}") from error
    if not is_policy_object(agent):
        raise ValueError(f"player {shown(text)}: {name}() gave a {type(agent).__name__} object, which has no "
                         "act(observation)")
    return agent


def player_label(spec: Any) -> str:
    """A short name for ``spec`` in tables, records and pages."""
    if isinstance(spec, (str, os.PathLike)):
        return os.fspath(spec)
    return getattr(spec, "name", None) or getattr(spec, "__name__", None) or type(spec).__name__


def make_player(spec: Any, *, seed: int | None = None, rules: str | RulesConfig | None = None) -> Any:
    """The policy ``spec`` names (see the module docstring), built with ``seed`` for ``rules``.

    ``rules`` (a preset name or a ``RulesConfig``; None: classic for bots, the file's own for a
    policy file) is the table's; a policy object is returned as it is.
    """
    if is_policy_object(spec):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        config = rules if isinstance(rules, RulesConfig) else (make_config(rules) if rules is not None else None)
        if is_agent_file(spec):
            return _agent_from_file(os.fspath(spec), seed, config)
        if is_policy_file(spec):
            return load_policy_file(spec, rules=config)
        text = os.fspath(spec)
        bots = _bots()
        if _bot_name(text) not in bots:
            raise unknown_player(text)
        name, settings = parse_bot_spec(text)
        for key, why in RESERVED_SETTINGS.items():
            if key in settings:
                raise ValueError(f"player {shown(text)}: {key!r} cannot be set in a player spec; {why}")
        return bots[name](seed=seed, rules=config, **settings)
    if callable(spec):
        return spec(seed)
    raise ValueError(f"cannot make a player from {shown(spec)}; expected {FORMS}")


def check_player(spec: Any, rules: str | RulesConfig | None = None, *, purpose: str = "play") -> None:
    """A ValueError (FileNotFoundError for a missing file) unless ``spec`` can serve ``purpose``
    (``PURPOSES``) at a table of ``rules`` (default classic).

    Bot specs, policy files and agent files are built once, so that a mistyped or ill-typed setting and a file
    made for other rules fail here, before any game; objects and factories are taken as they are.
    """
    if purpose not in PURPOSES:
        raise ValueError(f"purpose={purpose!r}; allowed: {', '.join(PURPOSES)}")
    if is_policy_object(spec) or (callable(spec) and not isinstance(spec, (str, os.PathLike))):
        return
    if not isinstance(spec, (str, os.PathLike)) or not isinstance(os.fspath(spec), str):
        raise ValueError(f"cannot make a player from {shown(spec)}; expected {FORMS}")
    text = os.fspath(spec)
    own_code = is_policy_file(text) or is_agent_file(text)
    if not own_code and _bot_name(text) not in _bots():
        raise unknown_player(text, purpose)
    if purpose != "play" and not own_code:
        name, settings = parse_bot_spec(text)
        if name in _held_out():
            raise ValueError(f"player {shown(text)}: the held-out bots ({', '.join(_held_out())}) are for evaluation "
                             f"only; no training stage plays them (allowed: {bot_help(purpose)})")
        for key in UNREPRODUCIBLE_SETTINGS:
            if key in settings:
                raise ValueError(f"player {shown(text)}: a {key} makes play depend on the machine's speed, and training "
                                 "must repeat for its seed; give a rollouts budget instead (e.g. search:rollouts=160)")
    config = rules if isinstance(rules, RulesConfig) else make_config(rules if rules is not None else "classic")
    try:
        make_player(text, seed=0, rules=config)
    except TypeError as error:  # a setting a constructor cannot take
        raise ValueError(f"player {shown(text)}: {error}") from error


__all__ = [
    "FORMS",
    "POLICY_METHODS",
    "PURPOSES",
    "RESERVED_SETTINGS",
    "bot_help",
    "check_player",
    "is_agent_file",
    "is_policy_object",
    "make_player",
    "parse_bot_spec",
    "player_label",
]
