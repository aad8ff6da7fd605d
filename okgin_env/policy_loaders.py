"""Policies from files, without okgin_env importing the code that reads them.

``okgin-eval`` and ``okgin-play`` accept a path such as ``checkpoints/okgin_classic.pt`` as a
policy. okgin_env does not know how to read such a file (the network lives in ``training/``, on
top of okgin_env, and needs torch); a *loader* does: ``loader(path, rules=config) -> policy``
where the policy has ``act(observation) -> int`` and ``rules`` is the ``RulesConfig`` of the
game it will play (so that the loader can refuse a file trained for other rules); a loader
without a ``rules`` parameter is called as ``loader(path)``. Loaders reach okgin_env in two
ways, looked up in this order:

1. ``register_policy_loader(".pt", loader)`` in the running process (``training`` does this
   when it is imported);
2. the entry point group ``okgin.policy_loaders``: an entry point named ``pt`` handles paths
   ending in ``.pt``. The okgin distribution declares ``pt = okgin_training:load_policy``, so an
   installed okgin reads its own checkpoints in any process, worker processes included.

A policy file may carry settings for its loader, as a bot spec does:
``checkpoints/okgin_classic.pt:suit_symmetric=False`` or ``pretrained:classic:suit_symmetric=False``
(values read as Python literals where they parse as one). A loader names the settings it takes in
its ``spec_settings`` attribute (a tuple of keyword names; none if absent); any other is refused.

Nothing here imports torch or ``training``; the loader is imported on the first path it handles.
A loaded policy is kept and reused for every game with the same rules in the process (and loaded
once per worker process), so it should not depend on the games it played before (a greedy
policy does not).
"""

from __future__ import annotations

import ast
import inspect
import os
import warnings
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from .echo import clipped, shown
from .pretrained import is_pretrained, pretrained_path
from .rules.config import VALUE_WORDS

ENTRY_POINT_GROUP = "okgin.policy_loaders"
CHECKPOINT_SUFFIX = ".pt"  # always recognised as a policy file, so a missing loader gets a clear error
INSTALL_HINT = "install the training extras: pip install -e '.[train]'"

PolicyLoader = Callable[..., Any]  # loader(path, rules=RulesConfig) or loader(path)

_LOADERS: dict[str, PolicyLoader] = {}
_LOADED: dict[tuple[str, Any], Any] = {}  # (path, rules) -> policy, once per process


class PolicyLoadError(ValueError):
    """A policy file that cannot be loaded: no loader for it, or the loader failed (names the file)."""


def register_policy_loader(suffix: str, loader: PolicyLoader) -> None:
    """Read files ending in ``suffix`` (e.g. ``".pt"``) with ``loader(path, rules=config) -> policy``.

    A later registration for the same suffix replaces the earlier one.
    """
    if not isinstance(suffix, str) or not suffix.startswith(".") or len(suffix) < 2:
        raise ValueError(f"suffix must be a file ending such as '.pt', got {suffix!r}")
    if not callable(loader):
        raise ValueError(f"loader must be callable as loader(path) -> policy, got {loader!r}")
    _LOADERS[suffix] = loader
    _LOADED.clear()  # a new loader may read a file differently


def registered_loaders() -> dict[str, PolicyLoader]:
    """The loaders registered in this process, by suffix (a copy)."""
    return dict(_LOADERS)


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, Any]:
    """Entry points of ``okgin.policy_loaders``, by suffix (``"pt"`` -> ``".pt"``); read once per process."""
    from importlib.metadata import entry_points  # noqa: PLC0415 - only when a policy file is used

    return {f".{point.name}": point for point in entry_points(group=ENTRY_POINT_GROUP)}


def known_suffixes() -> list[str]:
    """Every file ending that names a policy file, longest first."""
    suffixes = {CHECKPOINT_SUFFIX, *_LOADERS, *_entry_points()}
    return sorted(suffixes, key=lambda s: (-len(s), s))


def parse_settings(args: str, text: str) -> dict[str, Any]:
    """A player spec's settings, ``"rollouts=64,max_discards=3"`` -> ``{"rollouts": 64, "max_discards": 3}``
    (``text``: the whole spec, for the errors). Values are Python literals where they parse as one
    (``64``, ``0.5``, ``True``, ``None``), or one of ``VALUE_WORDS`` in any case (``true``, ``false``,
    ``none``, as ``--rule`` reads them), else text; a setting given twice or without ``=`` is a
    ValueError naming it."""
    settings: dict[str, Any] = {}
    if not args.strip():
        return settings
    for item in args.split(","):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ValueError(f"bad setting {shown(item)} in {shown(text)}; expected name=value")
        if key in settings:
            raise ValueError(f"setting {key!r} is given twice in {shown(text)}")
        if value.strip().lower() in VALUE_WORDS:
            settings[key] = VALUE_WORDS[value.strip().lower()]
            continue
        try:
            with warnings.catch_warnings():  # text such as 1if 1else 2 warns before it fails to parse
                warnings.simplefilter("ignore")
                settings[key] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, RecursionError, MemoryError):
            settings[key] = value.strip()
    return settings


def split_policy_spec(spec: str) -> tuple[str, str]:
    """``"FILE.pt:key=value,..."`` -> ``("FILE.pt", "key=value,...")``: a policy file and its
    settings text (empty if it has none). A spec that is no policy file with settings comes back
    whole, with no settings."""
    head, colon, tail = spec.rpartition(":")
    if colon and "=" in tail and _names_a_file(head):  # any name: a misspelt one is refused by name when loaded
        return head, tail
    return spec, ""


def _names_a_file(path: str) -> bool:
    """``path`` names a policy file (a shipped one by name, or a path ending in a policy-file suffix)."""
    if is_pretrained(path):  # pretrained:NAME, a shipped file (an unknown NAME is refused when it is loaded)
        return True
    head, colon, rest = path.partition(":")
    if colon and head.isidentifier() and "=" in rest:  # a bot spec whose settings name a file: search:policy=x.pt
        return False
    return any(path.endswith(suffix) for suffix in known_suffixes())


def is_policy_file(spec: Any) -> bool:
    """Whether ``spec`` is a path (str or PathLike) ending in a policy-file suffix, or a shipped
    policy by name, optionally with settings (``FILE.pt:key=value``), and not a bot spec with
    settings, ``name:key=value,...``, whose last setting names such a file."""
    if not isinstance(spec, (str, os.PathLike)):
        return False
    path = os.fspath(spec)
    if not isinstance(path, str):
        return False
    named, settings = split_policy_spec(path)
    return bool(settings) or _names_a_file(named)  # (split_policy_spec gives settings only after a file's name)


def _suffix_of(path: str) -> str:
    """The policy-file suffix ``path`` ends in; ``PolicyLoadError`` naming the allowed ones if none."""
    suffixes = known_suffixes()
    for suffix in suffixes:
        if path.endswith(suffix):
            return suffix
    raise PolicyLoadError(f"policy file {shown(path)} does not end in a policy-file suffix; allowed: {', '.join(suffixes)}")


def loader_for(path: str) -> PolicyLoader:
    """The loader for ``path``: a registered one first, then an entry point; ``PolicyLoadError`` if none."""
    suffix = _suffix_of(path)
    if suffix in _LOADERS:
        return _LOADERS[suffix]
    point = _entry_points().get(suffix)
    if point is None:
        raise PolicyLoadError(f"cannot load policy file {shown(path)}: no policy loader handles {suffix!r} files; {INSTALL_HINT}")
    try:
        return point.load()
    except ImportError as error:
        raise PolicyLoadError(
            f"cannot load policy file {shown(path)}: its loader {point.value} cannot be imported ({error}); {INSTALL_HINT}"
        ) from error


def takes_keyword(function: Callable[..., Any], name: str) -> bool:
    """Whether ``function`` (or a class) takes the keyword argument ``name``; False where it has no
    signature to read (some builtins): it is then called without it."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def policy_file_path(spec: str | os.PathLike) -> str:
    """The file a policy-file spec without settings names: ``pretrained:NAME``'s installed file (a
    ValueError listing the names if NAME is unknown), else the path itself. A spec with settings is
    a ValueError: where only a file is taken (``--init-from``), a setting must not be dropped silently."""
    path = os.fspath(spec)
    named, settings = split_policy_spec(path)
    if settings:
        raise ValueError(f"policy file {shown(path)}: settings ({shown(settings)}) are taken only where a player is "
                         f"named (okgin-eval, okgin-play, opponents=); here give the file alone, {shown(named)}")
    return pretrained_path(path) if is_pretrained(path) else path


def resolve_policy_spec(spec: str) -> tuple[str, str, dict[str, Any]]:
    """A policy-file player spec's ``(named, path, settings)``: the file as the spec names it, the
    file to read, and its settings parsed (a ValueError naming what is wrong: an unknown shipped
    name, a malformed setting, or settings separated by colons rather than commas)."""
    named, settings_text = split_policy_spec(spec)
    if split_policy_spec(named)[1]:
        raise ValueError(f"policy file {shown(spec)}: settings are separated by commas, not colons "
                         "(FILE.pt:name=value,name=value)")
    settings = parse_settings(settings_text, spec)
    return named, policy_file_path(named), settings


def load_policy_file(path: str | os.PathLike, rules: Any = None) -> Any:
    """The policy in ``path`` (or the shipped ``pretrained:NAME``) for games played by ``rules`` (a
    ``RulesConfig``; None: the file's own).

    Loaded once per process and rules, then reused.
    """
    spec = os.fspath(path)
    key = (spec, rules)
    if key in _LOADED:
        return _LOADED[key]
    named, path, settings = resolve_policy_spec(spec)
    if not os.path.exists(path):
        raise FileNotFoundError(f"policy file {shown(path)} does not exist")
    if not os.path.isfile(path):  # a folder, FIFO or device: a loader would fail on it, or block reading it
        raise PolicyLoadError(f"policy file {shown(path)} is not a regular file")
    loader = loader_for(path)
    allowed = getattr(loader, "spec_settings", ())
    if isinstance(allowed, str) or not all(isinstance(name, str) for name in allowed):
        raise PolicyLoadError(f"the loader for {shown(path)} declares spec_settings {shown(allowed)}; "
                              f"expected a tuple of setting names, such as ('suit_symmetric',)")
    allowed = tuple(allowed)
    for name in settings:
        if name not in allowed:
            takes = f"allowed: {', '.join(allowed)}" if allowed else "its loader takes none"
            raise PolicyLoadError(f"policy file {shown(spec)}: {name!r} is not a setting of a {_suffix_of(path)} "
                                  f"policy file; {takes}")
    if takes_keyword(loader, "rules"):
        settings["rules"] = rules
    try:
        policy = loader(path, **settings)
    except PolicyLoadError:
        raise
    except ImportError as error:  # the loader's own dependencies (torch) are not installed
        raise PolicyLoadError(f"cannot load policy file {shown(path)}: {type(error).__name__}: {clipped(str(error))}; "
                              f"{INSTALL_HINT}") from error
    except Exception as error:  # noqa: BLE001 - whatever a loader raises on a bad file, the CLIs report it
        text = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
        text = clipped(text.replace(path, named))  # pretrained:NAME by its name, not the installed file's path
        raise PolicyLoadError(text if named in text else f"cannot load policy file {shown(spec)}: {text}") from error
    if not hasattr(policy, "act"):
        raise PolicyLoadError(f"the loader for {shown(path)} returned {type(policy).__name__}, which has no act(observation)")
    _LOADED[key] = policy
    return policy


def install_loaders(loaders: dict[str, PolicyLoader]) -> None:
    """Register ``loaders`` (from ``registered_loaders()`` of another process): for worker processes."""
    for suffix, loader in loaders.items():
        _LOADERS.setdefault(suffix, loader)
