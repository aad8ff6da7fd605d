"""The field checks of game records (``okgin_env.records``, docs/records.md): JSON data in,
checked copies out, and a ValueError naming the first wrong field (``field rounds[2].deck: ...``).

Fields a record may add (extras, and unknown fields of a round) are kept as read, as copies;
they may be nested at most ``MAX_DEPTH`` levels (a record itself needs five), so that a hostile
line is refused with a ValueError instead of exhausting the interpreter's stack.
"""

from __future__ import annotations

from typing import Any

from ..echo import shown
from ..episode import DEFAULT_MAX_ROUNDS, EPISODE_OPTIONS, EPISODES, REWARDS, check_max_rounds
from ..rules.actions import NUM_ACTIONS
from ..rules.cards import NUM_CARDS, card_str
from ..rules.config import OPTION_NAMES, PRESETS, is_int, make_config
from ..rules.showdown import KINDS

FORMAT = "okgin.game"
VERSION = 1
#: The top-level fields every record has; any other is an extra, kept as read.
REQUIRED = ("format", "version", "env", "players", "rounds", "scores")
#: The fields of a round that are checked; any other is kept as read.
ROUND_FIELDS = ("deck", "dealer", "actions", "scores_after", "reshuffles", "outcome")
#: How deeply a record's JSON may nest lists and objects (the record itself: ``rounds[0].outcome.points``).
MAX_DEPTH = 100


def _fail(where: str, message: str) -> None:
    raise ValueError(f"field {where}: {message}")


def _int(value: Any, where: str, low: int, high: int) -> int:
    if not is_int(value) or not low <= value <= high:
        _fail(where, f"expected an int in {low}..{high}, got {shown(value)}")
    return int(value)


def _ints(value: Any, where: str, low: int, high: int, length: int | None = None) -> list[int]:
    if not isinstance(value, list):
        _fail(where, f"expected a list of ints, got {type(value).__name__}")
    if length is not None and len(value) != length:
        _fail(where, f"expected {length} entries, got {len(value)}")
    if all(type(v) is int and low <= v <= high for v in value):  # the common case, without a name per entry
        return list(value)
    return [_int(v, f"{where}[{i}]", low, high) for i, v in enumerate(value)]


def _seat_or_none(value: Any, where: str, n: int) -> int | None:
    return None if value is None else _int(value, where, 0, n - 1)


def _cards(value: Any, where: str, whole_deck: bool) -> list[int]:
    cards = _ints(value, where, 0, NUM_CARDS - 1, NUM_CARDS if whole_deck else None)
    if len(set(cards)) != len(cards):
        seen: set[int] = set()
        repeated = sorted({c for c in cards if c in seen or seen.add(c)})
        missing = sorted(set(range(NUM_CARDS)) - seen) if whole_deck else []
        named = lambda cs: ", ".join(f"{c} ({card_str(c)})" for c in cs)  # noqa: E731
        what = "not a permutation of the card ids 0..51" if whole_deck else "a card is given twice"
        _fail(where, what + (f"; missing {named(missing)}" if missing else "") + (f"; repeated {named(repeated)}" if repeated else ""))
    return cards


def checked_fields(data: Any) -> dict[str, Any]:
    """The fields of a record (``env``, ``players``, ``rounds``, ``scores``, ``extras``) as checked
    copies of ``data`` (what ``json.loads`` gives); a ValueError names the first wrong field."""
    if not isinstance(data, dict):
        raise ValueError(f"a record is a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        _fail("format", f"expected {FORMAT!r}, got {shown(data.get('format'))}")
    version = data.get("version")
    if not is_int(version) or version != VERSION:
        newer = is_int(version) and version > VERSION
        _fail("version", f"this okgin reads version {VERSION}, got {shown(version)}" + ("; a newer okgin wrote it" if newer else ""))
    for key in REQUIRED[2:]:
        if key not in data:
            _fail(key, "missing")
    env = _parse_env(data["env"])
    n = env["num_players"]
    players = data["players"]
    if not isinstance(players, list) or len(players) != n or not all(isinstance(p, str) for p in players):
        _fail("players", f"expected a list of {n} names (one per seat), got {shown(players)}")
    extras = {k: copy_json(v, k) for k, v in data.items() if k not in REQUIRED}
    for key in ("finished", "truncated"):
        if key in extras and not isinstance(extras[key], bool):
            _fail(key, f"expected true or false, got {shown(extras[key])}")
    if "winner" in extras:
        _seat_or_none(extras["winner"], "winner", n)
    finished = extras.get("finished", True)
    rounds = data["rounds"]
    if not isinstance(rounds, list) or not rounds:
        _fail("rounds", "expected a non-empty list of rounds")
    parsed = [_parse_round(entry, f"rounds[{r}]", n, finished or r < len(rounds) - 1) for r, entry in enumerate(rounds)]
    scores = _ints(data["scores"], "scores", -(2**53), 2**53, n)
    return {"env": env, "players": list(players), "rounds": parsed, "scores": scores, "extras": extras}


def _parse_env(env: Any) -> dict[str, Any]:
    if not isinstance(env, dict):
        _fail("env", f"expected an object of env options, got {type(env).__name__}")
    unknown = sorted(set(env) - set(OPTION_NAMES) - set(EPISODE_OPTIONS))
    if unknown:
        _fail("env", f"unknown option(s) {unknown} (from a newer okgin?); known: {', '.join((*OPTION_NAMES, *EPISODE_OPTIONS))}")
    for name, value in env.items():  # every env option is a number, true/false, text or null
        if isinstance(value, (list, dict)):
            what = "list" if isinstance(value, list) else "object"
            _fail(f"env.{name}", f"expected a number, true/false, text or null, got a {what}")
    rules = env.get("rules")
    if rules not in PRESETS:
        _fail("env.rules", f"expected one of {', '.join(PRESETS)}, got {shown(rules)}")
    try:
        config = make_config(rules, **{k: v for k, v in env.items() if k in OPTION_NAMES and k != "rules"})
    except ValueError as error:
        _fail("env", str(error))
    if env.get("episode", "match") not in EPISODES:
        _fail("env.episode", f"expected one of {', '.join(EPISODES)}, got {shown(env.get('episode'))}")
    if env.get("reward", "points") not in REWARDS:
        _fail("env.reward", f"expected one of {', '.join(REWARDS)}, got {shown(env.get('reward'))}")
    try:
        check_max_rounds(env.get("max_rounds", DEFAULT_MAX_ROUNDS))
    except ValueError as error:
        _fail("env.max_rounds", str(error))
    return {**env, "num_players": config.num_players}


def _parse_round(entry: Any, where: str, n: int, must_be_over: bool) -> dict[str, Any]:
    if not isinstance(entry, dict):
        _fail(where, f"expected an object, got {type(entry).__name__}")
    for key in ("deck", "dealer", "actions", "scores_after"):
        if key not in entry:
            _fail(f"{where}.{key}", "missing")
    parsed = {key: value if key in ROUND_FIELDS else copy_json(value, f"{where}.{key}") for key, value in entry.items()}
    parsed["deck"] = _cards(entry["deck"], f"{where}.deck", whole_deck=True)
    parsed["dealer"] = _int(entry["dealer"], f"{where}.dealer", 0, n - 1)
    parsed["actions"] = _ints(entry["actions"], f"{where}.actions", 0, NUM_ACTIONS - 1)
    parsed["scores_after"] = _ints(entry["scores_after"], f"{where}.scores_after", -(2**53), 2**53, n)
    if "reshuffles" in entry:
        if not isinstance(entry["reshuffles"], list):
            _fail(f"{where}.reshuffles", "expected a list of card lists")
        parsed["reshuffles"] = [_cards(o, f"{where}.reshuffles[{i}]", False) for i, o in enumerate(entry["reshuffles"])]
    if "outcome" in entry:  # absent: not compared; null: the round was left unfinished
        if entry["outcome"] is not None:
            _check_outcome(entry["outcome"], f"{where}.outcome", n)
            parsed["outcome"] = copy_json(entry["outcome"], f"{where}.outcome")
        elif must_be_over:
            _fail(f"{where}.outcome", "null (an unfinished round) is allowed only in the last round of a game with finished false")
    return parsed


def _check_outcome(outcome: Any, where: str, n: int) -> None:
    if not isinstance(outcome, dict):
        _fail(where, f"expected an object or null, got {type(outcome).__name__}")
    if "kind" in outcome and outcome["kind"] not in KINDS:
        _fail(f"{where}.kind", f"expected one of {', '.join(KINDS)}, got {shown(outcome['kind'])}")
    for key in ("knocker", "winner"):
        if key in outcome:
            _seat_or_none(outcome[key], f"{where}.{key}", n)
    for key in ("points", "deadwood"):
        if key in outcome:
            _ints(outcome[key], f"{where}.{key}", -(2**53), 2**53, n)
    if outcome.get("knock_card") is not None:
        _int(outcome["knock_card"], f"{where}.knock_card", 0, NUM_CARDS - 1)


def copy_json(value: Any, where: str = "record", depth: int = 0) -> Any:
    """A copy of JSON data (dicts and lists copied all the way down; faster than deepcopy); a
    ValueError naming the field ``where`` if it nests more than ``MAX_DEPTH`` levels."""
    if isinstance(value, dict):
        if depth == MAX_DEPTH:
            _too_deep(where)
        return {key: copy_json(v, where, depth + 1) for key, v in value.items()}
    if isinstance(value, list):
        if depth == MAX_DEPTH:
            _too_deep(where)
        return [copy_json(v, where, depth + 1) for v in value]
    return value


def _too_deep(where: str) -> None:
    _fail(where, f"nests lists and objects more than {MAX_DEPTH} levels deep; a record allows at most {MAX_DEPTH}")
