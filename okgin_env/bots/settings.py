"""The bots' settings, each with its type and range, checked when a bot is made.

Every bot takes ``seed`` (an int, or None for a fresh random one) and ``rules`` (the table's
rules: a preset name or a ``RulesConfig``; ``random`` and ``simple`` accept it and ignore it, so
that callers such as ``okgin_env.evaluate`` may pass it to every bot). ``search`` also takes the
fields of ``SearchSettings`` and ``lookahead`` those of ``LookaheadSettings``. An unknown name, a wrong type or a value out of range raises a
ValueError that names the setting, says what it expects and lists that bot's settings, also for a
value that arrives as text from a command line (``search:rollouts=abc``).

Every number has a range, declared once with its field (``_setting``, on the project's one
settings helper ``okgin_env.settings``): a lower bound and an upper
one, so that an absurd budget (``search:rollouts=10000000000000000000000``) is refused when the
bot is made instead of running for ever.
"""

from __future__ import annotations

import difflib
from dataclasses import MISSING, dataclass, fields
from typing import Any

from ..echo import shown
from ..rules.config import PRESETS, RulesConfig
from ..settings import checked, expected, setting

COMMON_SETTINGS = "seed (a non-negative int or None), rules (a preset name or a RulesConfig)"


def check_rules(rules: Any) -> str | RulesConfig | None:
    """``rules`` if it is None, a preset name or a ``RulesConfig``; ValueError otherwise."""
    if rules is None or isinstance(rules, RulesConfig) or (isinstance(rules, str) and rules in PRESETS):
        return rules
    raise ValueError(f"rules={rules!r} is not allowed; expected a preset name ({', '.join(PRESETS)}) or a RulesConfig")


def unknown_settings_error(bot: str, unknown: list[str], allowed: list[str], allowed_text: str) -> ValueError:
    """The error for setting names a bot does not have, with a close match if there is one."""
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, allowed, n=1)
        if close:
            hints.append(f"{shown(name)}: did you mean {close[0]!r}?")
    hint = f" ({'; '.join(hints)})" if hints else ""
    return ValueError(f"unknown setting(s) {shown(sorted(unknown))} for bot {bot!r}{hint}; its settings: {allowed_text}")


def _setting(default: Any, kind: type, *, low: float | None = None, above: float | None = None,
             high: float | None = None, choices: tuple = (), optional: bool = False) -> Any:  # fmt: skip
    """A field of a settings dataclass with its type and range (``okgin_env.settings.setting``),
    where every number declares its whole range: ``low`` or ``above``, and ``high``."""
    if kind in (int, float) and (high is None or (low is None and above is None)):
        raise TypeError("a numeric bot setting declares its whole range: low or above, and high")
    return setting(default, kind=kind, low=low, above=above, high=high, choices=choices, optional=optional,
                   nonempty=True)


class _BotSettings:
    """What every settings dataclass shares: names checked first (a typo is a ValueError listing the
    settings, not a TypeError), every value checked after, and ``describe`` for messages."""

    bot = ""

    def __new__(cls, *args: Any, **kwargs: Any):
        names = cls.names()
        unknown = [name for name in kwargs if name not in names]
        if unknown or len(args) > len(names):
            unknown = unknown or ["(too many positional values)"]
            raise unknown_settings_error(cls.bot, unknown, list(names), cls.describe())
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, checked(f.name, getattr(self, f.name), f.metadata))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def describe(cls) -> str:
        """Every setting with what it expects and its default, for error messages and help texts."""
        described = [f for f in fields(cls) if f.default is not MISSING]
        return ", ".join(f"{f.name} ({expected(f.metadata)}; default {f.default!r})" for f in described)


@dataclass(frozen=True)
class SearchSettings(_BotSettings):
    """The ``search`` bot's settings (see ``okgin_env.bots.search`` for what each one does); frozen,
    checked when made: an unknown name, a wrong type or a value out of range raises a ValueError."""

    bot = "search"

    #: Playouts per decision, spread over the candidate actions (reproducible for a seed).
    rollouts: int = _setting(480, int, low=1, high=10_000_000)
    #: Plain discards searched: those leaving the least deadwood.
    max_discards: int = _setting(4, int, low=1, high=52)
    #: Knocks searched: those leaving the least deadwood.
    max_knocks: int = _setting(2, int, low=0, high=52)
    #: Seconds per decision; the search stops sampling when they are spent (None: no limit, reproducible).
    time_limit: float | None = _setting(None, float, above=0, high=3600, optional=True)
    #: How unseen cards are dealt to the opponents: "greedy" (hands that kept their best cards) or "uniform".
    opponent_model: str = _setting("greedy", str, choices=("greedy", "uniform"))
    #: Greedy model: turns played per sampled hand, as a fraction of the turns the opponent has had.
    model_scale: float = _setting(0.5, float, low=0, high=100)
    #: Greedy model: at most this many turns per sampled hand.
    max_model_draws: int = _setting(12, int, low=0, high=1000)
    #: Improve the previous player's hand until the card they just threw is one of its best discards.
    infer_discard: bool = _setting(True, bool)
    #: ``infer_discard``: at most this many extra greedy turns.
    max_repair: int = _setting(12, int, low=0, high=1000)
    #: Points added to the value of the action ``simple`` would play.
    default_bonus: float = _setting(1.0, float, low=-1000, high=1000)
    #: Draws of the previous player's hand while it could have knocked (1: no redraw).
    max_resamples: int = _setting(1, int, low=1, high=1000)
    #: Give every card an opponent took from the pile a meld in their sampled hand.
    infer_takes: bool = _setting(True, bool)
    #: Samples drawn per determinization, keeping the one most consistent with what the opponents did.
    consistency_tries: int = _setting(8, int, low=1, high=1000)
    #: A policy file whose network plays every seat of the playouts, all of a stage's playouts in
    #: lockstep with one forward pass per step (None: ``simple`` plays them).
    policy: str | None = _setting(None, str, optional=True)


@dataclass(frozen=True)
class LookaheadSettings(_BotSettings):
    """The ``lookahead`` bot's settings (see ``okgin_env.bots.lookahead``); frozen, checked when made."""

    bot = "lookahead"

    #: Points of mean deadwood that a certain knock after the next stock draw is worth, when a discard is chosen.
    knock_weight: float = _setting(100.0, float, low=0, high=10_000)
    #: Take a face-up card that allows no knock only if it leaves more than this many points less
    #: deadwood than a stock draw leaves on average.
    take_margin: float = _setting(3.0, float, low=-1000, high=1000)
    #: With a knock (not gin) legal, discard instead when some discard leaves a hand that goes gin on at
    #: least this share of the next draws (None: always knock).
    hold_for_gin: float | None = _setting(0.03, float, low=0, high=1, optional=True)


SEARCH_SETTING_NAMES = SearchSettings.names()
LOOKAHEAD_SETTING_NAMES = LookaheadSettings.names()
