"""Rule options as one frozen, validated object, and the two presets (docs/rules.md §3-§11).

``make_config(rules="classic", **options)`` is the only way users build one: it starts from the
preset and applies the named options, rejecting unknown names and bad values with a ValueError
that says what is allowed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np

from ..settings import checked, setting

PRESETS = ("classic", "standard", "penalty")
#: The two-player presets with points scoring (``standard``: plain gin as OpenSpiel and RLCard play it).
TWO_PLAYER_PRESETS = ("classic", "standard")
#: The largest fixed knock limit (a hand may keep at most this much deadwood when knocking).
MAX_KNOCK_LIMIT = 10
#: The most seats at a table.
MAX_PLAYERS = 4


@dataclass(frozen=True)
class RulesConfig:
    """Every rule option, declared with its help and range (``okgin_env.settings``); docs/rules.md
    §10 says what each one means."""

    rules: str = setting("classic", "the preset the other options start from", choices=PRESETS)
    num_players: int = setting(2, "seats at the table: 2 for classic and standard, 2-4 for penalty", low=2,
                               high=MAX_PLAYERS)
    gin_bonus: int = setting(25, "bonus for going gin (classic: added to the knocker's score; penalty: charged to "
                             "each other player)", low=0, high=1000)
    undercut_bonus: int = setting(10, "bonus for an undercut (classic: to the defender; penalty: charged extra to "
                                  "the knocker)", low=0, high=1000)
    target_score: int = setting(100, "the match ends when a player's total reaches this", low=1, high=100_000)
    ace_upcard_gin_only: bool = setting(True, "an Ace upcard means gin only (knock limit 0); off: an Ace allows "
                                        "knocking with 1")
    allow_discard_taken: bool = setting(False, "allow discarding the card just taken from the discard pile (off: "
                                        "the standard rule)")
    knock_limit: int | None = setting(None, "the round's knock limit: None for Oklahoma (the upcard's value, "
                                      "docs/rules.md §3); an int 0-10 fixes it for every round (standard: 10)",
                                      kind=int, low=0, high=MAX_KNOCK_LIMIT)
    max_turns: int = setting(500, "a round that reaches this many discards ends as a draw (a guard against "
                             "endless rounds)", low=1, high=1_000_000)
    max_reshuffles: int = setting(3, "penalty preset: after this many stock reshuffles, reaching two stock cards "
                                  "draws the round", low=0, high=1000)
    spade_double: bool = setting(False, "if the upcard is a spade, the round's score (or penalties) is doubled")
    box_bonus: int = setting(0, "house rule (classic only): when the match ends, each player gets this per round "
                             "they won", low=0, high=1000)
    game_bonus: int = setting(0, "house rule (classic only): when the match ends, the match winner gets this",
                              low=0, high=100_000)
    shutout_multiplier: int = setting(1, "house rule (classic only): the winner's final total (bonuses included) "
                                      "is multiplied by this when the loser's total before bonuses is 0 (a "
                                      "shutout)", low=1, high=100)

    # ---- derived from the preset, not options
    @property
    def penalty_scoring(self) -> bool:
        return self.rules == "penalty"

    @property
    def reshuffle_stock(self) -> bool:
        """Penalty preset: an exhausted stock is rebuilt from the discard pile instead of drawing the round."""
        return self.rules == "penalty"

    @property
    def tie_is_undercut(self) -> bool:
        """Classic and standard: a tie (defender deadwood == knocker's) is an undercut. Penalty: only strictly less."""
        return self.rules in TWO_PLAYER_PRESETS

    @property
    def has_match_bonuses(self) -> bool:
        """A match-end house rule is on (``box_bonus``, ``game_bonus`` or ``shutout_multiplier``
        off its default): the match's end adds bonuses to the reported totals (docs/rules.md §11)."""
        return any(getattr(self, name) != default for name, default in MATCH_BONUS_DEFAULTS.items())

    @property
    def hand_size(self) -> int:
        return 10 if self.num_players == 2 else 7

    def __post_init__(self) -> None:
        # A config built directly (not through make_config) obeys the same checks.
        _validate(asdict(self))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


OPTION_NAMES = tuple(f.name for f in fields(RulesConfig))
_PRESET_DEFAULTS = {
    "classic": {},
    "standard": {"knock_limit": 10, "undercut_bonus": 25},
    "penalty": {"undercut_bonus": 25},
}
#: The match-end house rules and their "off" values (docs/rules.md §11): the only values allowed
#: with ``rules="penalty"``, where lower totals win and a bonus has no meaning.
MATCH_BONUS_DEFAULTS = {"box_bonus": 0, "game_bonus": 0, "shutout_multiplier": 1}


def make_config(rules: str | RulesConfig = "classic", **options: Any) -> RulesConfig:
    """Build a validated config from a preset name and rule options (docs/rules.md names).

    ``rules`` may also be a ``RulesConfig``: the options then change that config (validated
    again). ``num_players=None`` (the envs' default) means the preset's or the given config's own
    player count.
    """
    if "num_players" in options and options["num_players"] is None:
        del options["num_players"]
    if isinstance(rules, RulesConfig):
        if not options:
            return rules
        # Re-validate: a derived config must obey the same rules as one built from a preset.
        base = {k: v for k, v in rules.to_dict().items() if k != "rules"}
        return make_config(rules.rules, **{**base, **options})
    if rules not in PRESETS:
        raise ValueError(f"unknown rules preset {rules!r}; allowed: {', '.join(PRESETS)}")
    unknown = sorted(set(options) - set(OPTION_NAMES) - {"rules"})
    if unknown:
        raise ValueError(f"unknown rule option(s) {unknown}; allowed: {', '.join(OPTION_NAMES[1:])}")
    options = {name: int(value) if is_int(value) else value for name, value in options.items()}
    values: dict[str, Any] = {"rules": rules, **_PRESET_DEFAULTS[rules], **options}
    _validate(values)
    return RulesConfig(**values)


def players_allowed(rules: str) -> tuple[int, ...]:
    """The seat counts a preset allows."""
    return (2,) if rules in TWO_PLAYER_PRESETS else (2, 3, 4)


def option_table_rows() -> list[tuple[str, ...]]:
    """docs/rules.md §10's table from the declarations, one row per option: the option, its value
    in each preset (``classic``, ``standard``, ``penalty``) and what it allows (the page adds what
    each means; ``tests/test_config.py`` checks that the page shows these rows)."""
    def value(name: str, preset: str) -> str:
        default = make_config(preset).to_dict()[name] if name != "rules" else None
        text = "–" if name == "rules" else "None" if default is None else (
            ("on" if default else "off") if isinstance(default, bool) else str(default))
        return f"{text} (only {text})" if preset == "penalty" and name in MATCH_BONUS_DEFAULTS else text

    def allowed(item: Any) -> str:
        meta = item.metadata
        if item.name == "rules":
            return ", ".join(f'`"{preset}"`' for preset in PRESETS)
        if item.name == "num_players":
            return "; ".join(f"{' and '.join(group)}: {', '.join(map(str, players_allowed(group[0])))}"
                             for group in (TWO_PLAYER_PRESETS, ("penalty",)))
        if meta["kind"] is bool:
            return "`True`/`False`"
        text = f"int {meta['low']:,}–{meta['high']:,}"
        return f"None or {text}" if meta["optional"] else text

    return [(f"`{item.name}`", *(value(item.name, preset) for preset in PRESETS), allowed(item))
            for item in fields(RulesConfig)]


def _validate(values: dict[str, Any]) -> None:
    rules = values["rules"]
    if rules not in PRESETS:
        raise ValueError(f"unknown rules preset {rules!r}; allowed: {', '.join(PRESETS)}")
    num_players = values.get("num_players", 2)
    allowed_players = players_allowed(rules)
    if not is_int(num_players) or num_players not in allowed_players:
        raise ValueError(
            f"num_players={num_players!r} is not allowed with rules={rules!r}; allowed: {list(allowed_players)}"
        )
    limit = values.get("knock_limit")
    if limit is not None and (not is_int(limit) or not 0 <= limit <= MAX_KNOCK_LIMIT):
        raise ValueError(f"knock_limit={limit!r} is not allowed; expected None (the upcard's value, Oklahoma) "
                         f"or an int in 0..{MAX_KNOCK_LIMIT} (a fixed limit; standard gin: 10)")
    for item in fields(RulesConfig):  # every other option by its declared type and range
        if item.name in values and item.name not in ("rules", "num_players", "knock_limit"):
            checked(item.name, values[item.name], item.metadata, numpy_scalars=False)  # (kept as given)
    if rules == "penalty":
        for name, off in MATCH_BONUS_DEFAULTS.items():
            if values.get(name, off) != off:
                raise ValueError(
                    f"{name}={values[name]!r} is not allowed with rules='penalty' (penalty points: the lower total "
                    f"wins, so a match bonus has no meaning there); allowed: {off}. The house rules box_bonus, "
                    "game_bonus and shutout_multiplier are for rules='classic'"
                )


#: Words a command line may write for ``True``, ``False`` and ``None``, in any case: read alike by
#: ``--rule NAME=VALUE`` and by a player spec's settings (``okgin_env.policy_loaders.parse_settings``).
VALUE_WORDS = {"true": True, "false": False, "none": None}

#: Options a command line sets with ``--rule NAME=VALUE`` (the preset and the player count have flags of their own).
RULE_FLAG_OPTIONS = tuple(name for name in OPTION_NAMES if name not in ("rules", "num_players"))


def parse_rule_option(text: str) -> tuple[str, Any]:
    """``"gin_bonus=20"`` -> ``("gin_bonus", 20)``: a command line's ``--rule NAME=VALUE``. VALUE is an
    int, ``true``/``false`` or ``none``; ``make_config`` then checks it against the option's range."""
    name, equals, value = str(text).partition("=")
    name, value = name.strip(), value.strip()
    if not equals or name not in RULE_FLAG_OPTIONS:
        raise ValueError(f"--rule {text!r}: expected NAME=VALUE with NAME one of {', '.join(RULE_FLAG_OPTIONS)}")
    if value.lower() in VALUE_WORDS:
        return name, VALUE_WORDS[value.lower()]
    try:
        return name, int(value)
    except ValueError:
        raise ValueError(f"--rule {text!r}: VALUE must be an int, true, false or none") from None


def rule_options_of(texts: Any, target_score: int | None = None) -> dict[str, Any]:
    """The options of every ``--rule NAME=VALUE`` given (None: none), plus a command's own
    ``--target-score`` flag when given; an option given twice is refused."""
    options: dict[str, Any] = {}
    for text in texts or ():
        name, value = parse_rule_option(text)
        if name in options:
            raise ValueError(f"--rule {name} is given twice")
        options[name] = value
    if target_score is not None:
        if "target_score" in options:
            raise ValueError("--target-score and --rule target_score=... both given; give one")
        options["target_score"] = target_score
    return options


def is_int(value: Any) -> bool:
    """An integer: a Python or numpy int, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_seed(seed: Any) -> int | None:
    """A seed as a Python int: None or a non-negative int (Python or numpy, not a bool); the one
    seed check of the envs' resets and the bots."""
    if seed is None:
        return None
    if not is_int(seed) or seed < 0:
        raise ValueError(f"seed={seed!r} is not allowed; expected a non-negative int (Python or numpy) or None")
    return int(seed)
