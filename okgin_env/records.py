"""Game records: one game per line of JSON (JSON Lines), written, read and replayed exactly.

``okgin-eval --record PATH`` and ``okgin-play --record PATH`` write them; docs/records.md
describes every field and the versioning policy. A line (shortened)::

    {"format": "okgin.game", "version": 1,
     "env": {"rules": "classic", "num_players": 2, "gin_bonus": 25, ..., "episode": "match",
             "reward": "points", "max_rounds": 200},
     "players": ["simple", "checkpoints/okgin_classic.pt"], "scores": [104, 57], "winner": 0,
     "rounds": [{"deck": [52 card ids, top first], "dealer": 1, "actions": [2, 1, 40, ...],
                 "scores_after": [31, 0], "outcome": {"kind": "knock", "knocker": 0, ...}}, ...]}

**Replay.** ``replay(record)`` plays every round again through the AEC env
``okgin_env.env.raw_env(**record.env)``: ``reset(options={"deck": ..., "dealer": ...})`` deals
the round as a first round, and the env then plays it on a copy of the match state the previous
round left (``env.match``: its totals, rounds played, won and lost, with the new round), so the
env's own bookkeeping scores the round and decides whether the match is won (and by whom) or
truncated. Each recorded action must be legal and is played with ``env.step``. The deck does not
fix everything: the penalty preset reshuffles the stock during a round with the env's random
generator, so a round that reshuffled records each reshuffle's cards in draw order
(``"reshuffles"``), and the replay deals that order (the round's generator is replaced by one
that answers with it). Every round's ``outcome`` fields, its ``scores_after``, the next round's
dealer and the game's ``scores``, ``winner`` and ``truncated`` are compared with the replay; the
first difference raises ``RecordMismatch`` naming the game, round and action (indices from 0).

``replay_steps(record)`` yields the same replay step by step (a ``ReplayStep`` with a copy of
the round state, every hand visible), for replay viewers; ``replay_round(config, entry)`` plays
one recorded round alone on a live state (the web replay's frames). A ``GameRecord`` built by hand is
checked as a read one is before it is replayed. ``python -m okgin_env.records FILE`` checks a
file: exit 0 when every game replays, 1 on a mismatch, 2 on a malformed file (one line).

**Reading** (``read_records``, also what ``okgin-web`` reads) refuses anything that is not a
record file with a ValueError naming the file and line, never reading without end: a line over
``MAX_LINE_BYTES``, a file over ``MAX_FILE_BYTES``, JSON nested deeper than ``MAX_DEPTH``, a
number of more digits than Python reads. **Writing** (``write_records``) is all or nothing: the
lines go to a file beside the target, renamed over it once complete.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .episode import DEFAULT_MAX_ROUNDS
from .record_checks import FORMAT, MAX_DEPTH, VERSION, checked_fields, copy_json
from .rules.actions import DISCARD_BASE, KNOCK_BASE, action_str
from .rules.cards import card_str
from .rules.config import RulesConfig
from .rules.round import RoundState
from .rules.showdown import RoundOutcome

#: The ``RoundOutcome`` fields a written round keeps (a record may give any of ``to_dict``'s).
OUTCOME_FIELDS = ("kind", "knocker", "winner", "points", "deadwood", "knock_card")
#: The longest line and the largest file ``read_records`` reads (a match is a few KB a line).
MAX_LINE_BYTES = 64 * 2**20
MAX_FILE_BYTES = 2**30


@dataclass
class GameRecord:
    """One game. ``rounds``: dicts with ``deck``, ``dealer``, ``actions``, ``scores_after`` and the
    optional ``outcome`` and ``reshuffles``; ``extras``: every other top-level field (``winner``,
    ``finished``, ``truncated``, ``seed``, ``okgin_version``, ...), kept as read."""

    env: dict[str, Any]
    players: list[str]
    rounds: list[dict[str, Any]]
    scores: list[int]
    extras: dict[str, Any] = field(default_factory=dict)
    format: str = FORMAT
    version: int = VERSION

    @property
    def finished(self) -> bool:
        """False for a game left during a round (its last round has no outcome)."""
        return self.extras.get("finished", True)

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON data (a copy: changing it leaves the record as it was)."""
        return copy_json(self._fields())

    def _fields(self) -> dict[str, Any]:
        head = {"format": self.format, "version": self.version, "env": self.env, "players": self.players}
        return {**head, "scores": self.scores, **self.extras, "rounds": self.rounds}

    @classmethod
    def from_dict(cls, data: Any) -> "GameRecord":
        """A checked record; a ValueError names the first wrong field (``rounds[2].deck``)."""
        return _parse(data)


class RecordMismatch(ValueError):
    """A record that does not replay; ``game_index``, ``round_index`` and ``action_index`` (from 0;
    None where the difference is not at one round or action) say where it first differs."""

    def __init__(self, game: int, round_index: int | None, action: int | None, message: str):
        self.game_index, self.round_index, self.action_index = game, round_index, action
        where = f"game {game}"
        if round_index is not None:
            where += f", round {round_index}" + (f", action {action}" if action is not None else "")
        super().__init__(f"{where}: {message}")


@dataclass
class ReplayStep:
    """One step of a replay. ``step_index`` 0 is the deal (``action`` and ``seat`` None); step
    ``k`` follows the round's action ``k - 1``, played by ``seat``. ``state``: a copy of the
    ``RoundState`` after it (every hand visible). ``scores_before``: the match totals before the
    round. ``outcome``: the round's ``RoundOutcome`` at the step that ended it, else None."""

    round_index: int
    step_index: int
    action: int | None
    seat: int | None
    state: RoundState
    scores_before: list[int]
    outcome: RoundOutcome | None


# ----------------------------------------------------------------------------- writing


def env_options(
    config: RulesConfig, episode: str = "match", reward: str = "points", max_rounds: int | None = DEFAULT_MAX_ROUNDS
) -> dict[str, Any]:
    """The ``env`` of a record: ``raw_env(**env_options(...))`` makes the env the game ran in."""
    return {**config.to_dict(), "episode": episode, "reward": reward, "max_rounds": max_rounds}


def round_entry(state: RoundState, scores_after: Sequence[int]) -> dict[str, Any]:
    """A round of a record from its ``RoundState`` (finished, or left unfinished: outcome None)."""
    if state.deck is None:
        raise ValueError("a round built from parts (RoundState.from_parts) has no deck to record")
    entry: dict[str, Any] = {
        "deck": list(state.deck),
        "dealer": state.dealer,
        "actions": [action for _, action in state.history],
        "scores_after": [int(s) for s in scores_after],
    }
    if state.reshuffle_orders:
        entry["reshuffles"] = [list(order) for order in state.reshuffle_orders]
    outcome = state.outcome
    entry["outcome"] = None if outcome is None else {key: outcome.to_dict()[key] for key in OUTCOME_FIELDS}
    return entry


def game_record(
    config: RulesConfig,
    players: Sequence[str],
    rounds: Sequence[RoundState],
    scores: Sequence[int],
    *,
    episode: str = "match",
    reward: str = "points",
    max_rounds: int | None = DEFAULT_MAX_ROUNDS,
    winner: int | None = None,
    finished: bool = True,
    truncated: bool = False,
    **extras: Any,
) -> GameRecord:
    """The record of a game whose ``rounds`` were played in order from totals of zero and ended
    with the totals ``scores`` (the match's, with any match-end bonus); ``finished=False``: the
    last round was left unfinished. ``extras`` are added as fields."""
    totals = [0] * config.num_players
    entries = []
    for state in rounds:
        if state.outcome is not None:
            totals = [s + p for s, p in zip(totals, state.outcome.points)]
        entries.append(round_entry(state, totals))
    if finished and entries:  # the match totals after the last round count its match-end bonuses
        entries[-1]["scores_after"] = [int(s) for s in scores]
    fields = {"winner": winner, "finished": finished, "truncated": truncated, "okgin_version": _version()}
    return GameRecord(
        env=env_options(config, episode, reward, max_rounds),
        players=[str(p) for p in players],
        rounds=entries,
        scores=[int(s) for s in scores],
        extras={**fields, **extras},
    )


def check_record_path(path: str | os.PathLike) -> str:
    """A ValueError now (before any game) if a record file cannot be written at ``path``; creates
    its folder if missing (as ``okgin-eval --out`` does)."""
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    if not os.path.basename(path):
        raise ValueError(f"cannot write game records to {path!r}: give a file name")
    if os.path.isdir(path):
        raise ValueError(f"cannot write game records to {path!r}: it is a folder")
    existing = folder
    while not os.path.exists(existing) and os.path.dirname(existing) not in ("", existing):
        existing = os.path.dirname(existing)
    if os.path.exists(existing) and not os.path.isdir(existing):
        raise ValueError(f"cannot write game records to {path!r}: {existing!r} is not a folder")
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise ValueError(f"cannot write game records to {path!r}: folder {folder!r}: {error.strerror or error}") from None
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise ValueError(f"cannot write game records to {path!r}: the file is not writable")
    return path


def write_records(path: str | os.PathLike, records: Iterable[GameRecord | Mapping[str, Any]], append: bool = False) -> int:
    """Write one line per record (replacing the file, or after its lines with ``append``); every
    record is checked first, so a bad one writes nothing. Returns the number written. A missing
    folder is made, as ``okgin-eval --record`` makes it.

    The file is replaced at once (written beside it, then renamed), so that a failed write (a full
    disk) leaves the file as it was and raises an ``OSError`` naming the path; a device or a pipe
    (``/dev/stdout``) is written to directly."""
    lines = []
    for index, record in enumerate(records):
        try:  # parsing copies, so the line is what was checked
            checked = _parse(record._fields() if isinstance(record, GameRecord) else record)
            lines.append(json.dumps(checked._fields(), separators=(",", ":"), default=_json_number) + "\n")
        except (TypeError, ValueError) as error:
            raise ValueError(f"record {index}: {error}") from None
    data = "".join(lines).encode("utf-8")
    try:
        os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
        _write_whole(os.fspath(path), data, append)
    except OSError as error:
        raise OSError(error.errno, f"cannot write game records to {os.fspath(path)!r}: {error.strerror or error}") from None
    return len(lines)


def _write_whole(path: str, data: bytes, append: bool) -> None:
    """``data`` as the file's new contents (after its old ones with ``append``), all or nothing."""
    target = os.path.realpath(path)  # a link keeps pointing at the file it named
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):  # a device or a pipe: nothing to replace
        with open(target, "ab" if append else "wb") as file:
            file.write(data)
        return
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # O_EXCL: never another's file; mode 0o666 less the umask, as open() would create the file.
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(handle, "wb") as file:
            if existing is not None:
                os.chmod(temporary, stat.S_IMODE(existing.st_mode))
                if append:
                    with open(target, "rb") as old:
                        shutil.copyfileobj(old, file)
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _json_number(value: Any) -> Any:
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    raise TypeError(f"a record field holds {type(value).__name__} {value!r}, which JSON cannot hold")


# ----------------------------------------------------------------------------- reading


def read_records(path: str | os.PathLike) -> list[GameRecord]:
    """Every record of a file (blank lines skipped); a ValueError names the line and the field.

    A line longer than ``MAX_LINE_BYTES`` or a file longer than ``MAX_FILE_BYTES`` is refused
    (before it is read into memory), so that a wrong file such as ``/dev/zero`` ends with an error."""
    name = os.fspath(path)
    records = []
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size  # 0 for a device or a pipe: counted as read below
        if size > MAX_FILE_BYTES:
            raise ValueError(f"{name}: {size:,} bytes; a record file may hold at most {MAX_FILE_BYTES:,} (is it a record file?)")
        read = number = 0
        while raw := file.readline(MAX_LINE_BYTES + 1):
            number += 1
            read += len(raw)
            where = f"{name}, line {number}"
            if len(raw) > MAX_LINE_BYTES:
                raise ValueError(
                    f"{where}: longer than {MAX_LINE_BYTES:,} bytes, the most a record line may hold (is it a record file?)"
                )
            if read > MAX_FILE_BYTES:
                raise ValueError(f"{where}: the file goes on past {MAX_FILE_BYTES:,} bytes, the most a record file may hold")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"{where}: not UTF-8 text ({error.reason} at byte {error.start})") from None
            if not text.strip():
                continue
            try:
                records.append(_parse(_loads(text)))
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
    return records


def _loads(text: str) -> Any:
    """The JSON of one line; a ValueError saying what is wrong with it (never a RecursionError)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON: {error.msg} (column {error.colno}); a truncated line?") from None
    except RecursionError:
        raise ValueError(f"JSON nested too deeply to read; a record nests at most {MAX_DEPTH} levels") from None
    except ValueError:  # json's other refusal: an int too long for Python to read
        limit = sys.get_int_max_str_digits()
        raise ValueError(f"a number of more than {limit} digits; a record's numbers have at most {limit}") from None


def _parse(data: Any) -> GameRecord:
    return GameRecord(**checked_fields(data))


# ----------------------------------------------------------------------------- replaying


class _ShuffleMismatch(Exception):
    """A reshuffle the record does not give (raised inside the engine, reported by the replay)."""


class _RecordedShuffles:
    """Stands in for a round's random generator: stock reshuffle ``k`` deals the record's ``k``-th
    order. ``pile`` is set to the discard pile before each discard (the cards a reshuffle takes)."""

    def __init__(self, orders: Sequence[Sequence[int]]):
        self.orders = [list(order) for order in orders]
        self.used = 0
        self.pile: list[int] = []

    def permutation(self, count: int) -> list[int]:
        k = self.used
        if k == len(self.orders):
            raise _ShuffleMismatch(f"the stock is reshuffled ({k + 1}. time), but the record gives {k} reshuffle order(s)")
        order, under = self.orders[k], self.pile
        if len(under) != count or sorted(order) != sorted(under):
            raise _ShuffleMismatch(
                f"reshuffles[{k}] gives {' '.join(map(card_str, order))}; the discard pile under its top "
                f"holds {' '.join(map(card_str, sorted(under)))}"
            )
        self.used += 1
        position = {card: i for i, card in enumerate(under)}
        return [position[card] for card in reversed(order)]  # the stock lists its top card last


def replay_round(config: RulesConfig, entry: Mapping[str, Any]) -> Iterator[tuple[int | None, int | None, RoundState]]:
    """``(action, seat, state)`` for the deal (``None, None``) and each action of one recorded round
    (``entry``: one of a record's ``rounds``), played on one live ``RoundState`` from the round's
    own deck and dealer, the stock reshuffled in the recorded orders. For a round that ``replay``
    has checked: every action is then legal and the reshuffle orders are those the round draws
    (unchecked, an illegal action raises as ``RoundState.apply`` does)."""
    shuffles = _RecordedShuffles(entry.get("reshuffles", ()))
    state = RoundState(config, entry["deck"], entry["dealer"], rng=shuffles)  # type: ignore[arg-type]
    yield None, None, state
    for action in entry["actions"]:
        seat = state.current
        if DISCARD_BASE <= action < KNOCK_BASE:
            shuffles.pile = list(state.discard_pile)  # the cards a reshuffle after this discard takes
        state.apply(action)
        yield action, seat, state


def replay(record: GameRecord, game: int = 0) -> list[RoundOutcome]:
    """Replay every round of ``record`` (see the module docstring); returns the rounds' outcomes.
    ``game`` is the index that a ``RecordMismatch`` names."""
    return [step.outcome for step in _replay(record, game, copy_states=False) if step.outcome is not None]


def replay_steps(record: GameRecord, game: int = 0) -> Iterator[ReplayStep]:
    """The replay step by step: per round the deal, then one step per action (``ReplayStep``).
    It checks as ``replay`` does, raising ``RecordMismatch`` when it reaches a difference."""
    return _replay(record, game, copy_states=True)


def _replay(record: GameRecord, game: int, copy_states: bool) -> Iterator[ReplayStep]:
    from .env import raw_env  # noqa: PLC0415 - reading and writing records needs no RL library

    record = _checked_for_replay(record, game)
    try:
        env = raw_env(**record.env)
    except (TypeError, ValueError) as error:
        raise RecordMismatch(game, None, None, f"field env: {error}") from None
    viewer_rng = np.random.default_rng()  # the copies' generator: play from a copy is not the record's
    previous = None  # the match state the previous round left
    next_dealer: int | None = None
    last = len(record.rounds) - 1
    outcome: RoundOutcome | None = None
    for r, entry in enumerate(record.rounds):
        dealer, actions = entry["dealer"], entry["actions"]
        if next_dealer is not None and dealer != next_dealer:
            raise RecordMismatch(game, r, None, f"dealer {dealer} recorded; after round {r - 1} player {next_dealer} deals")
        env.reset(options={"deck": entry["deck"], "dealer": dealer})
        state = env.match.round
        if previous is not None:  # carry the match so far (clone copies all its bookkeeping)
            carried = previous.clone()
            carried.rng, carried.round, carried.outcomes = env.match.rng, state, []
            env.match = carried
        match = env.match
        shuffles = _RecordedShuffles(entry.get("reshuffles", ()))
        state.rng = shuffles
        scores_before = list(match.scores)

        def snapshot() -> RoundState:
            if not copy_states:
                return state
            seen = state.copy()
            seen.rng = viewer_rng
            return seen

        yield ReplayStep(r, 0, None, None, snapshot(), scores_before, None)
        outcome = None
        for k, action in enumerate(actions):
            if state.is_over:
                raise RecordMismatch(game, r, k, f"the round ended at action {k - 1}, yet {len(actions) - k} more are recorded")
            legal = state.legal_actions()
            if action not in legal:
                names = ", ".join(f"{a} ({action_str(a)})" for a in legal)
                raise RecordMismatch(
                    game, r, k, f"action {action} ({action_str(action)}) is not legal for player {state.current}; legal: {names}"
                )
            seat = state.current
            if DISCARD_BASE <= action < KNOCK_BASE:
                shuffles.pile = list(state.discard_pile)
            try:
                env.step(action)
            except _ShuffleMismatch as error:
                raise RecordMismatch(game, r, k, str(error)) from None
            outcome = state.outcome
            yield ReplayStep(r, k + 1, action, seat, snapshot(), scores_before, outcome)
        at = len(actions) - 1 if actions else None
        if outcome is None:
            if r == last and not record.finished:
                if entry["scores_after"] != scores_before:
                    raise RecordMismatch(game, r, at, f"scores_after {entry['scores_after']} recorded, {scores_before} replayed")
                break
            raise RecordMismatch(game, r, at, f"the round is not over after its {len(actions)} recorded actions")
        if r == last and not record.finished:
            raise RecordMismatch(game, r, at, "the record says the game was left unfinished, yet its last round is over")
        if shuffles.used != len(shuffles.orders):
            raise RecordMismatch(game, r, at, f"{len(shuffles.orders)} reshuffle orders recorded; the round reshuffled {shuffles.used} time(s)")
        replayed = outcome.to_dict()
        for key, value in (entry.get("outcome") or {}).items():
            if key in replayed and _plain(value) != _plain(replayed[key]):
                raise RecordMismatch(game, r, at, f"outcome {key}: {value!r} recorded, {replayed[key]!r} replayed")
        previous, scores = match, list(match.scores)
        if entry["scores_after"] != scores:
            raise RecordMismatch(game, r, at, f"scores_after {entry['scores_after']} recorded, {scores} replayed")
        next_dealer = match.dealer
        ended = env.episode == "round" or match.is_over or any(env.truncations.values())
        if ended and r < last:
            raise RecordMismatch(game, r + 1, None, f"the game ended after round {r}, yet {last - r} more round(s) are recorded")
        if not ended and r == last and record.finished:
            raise RecordMismatch(game, r, at, "the record ends here, yet the match goes on (neither won nor truncated)")
    _check_result(record, env, game, outcome)


def _checked_for_replay(record: GameRecord, game: int) -> GameRecord:
    """A checked copy of ``record``: one built by hand (not by ``from_dict`` or ``read_records``),
    or changed since, is checked as a read one is; a wrong field raises ``RecordMismatch`` naming
    the game, and the round and action where the field is one of theirs."""
    try:
        return _parse(record._fields() if isinstance(record, GameRecord) else record)
    except TypeError as error:  # not even shaped as a record (extras that are not a dict)
        raise RecordMismatch(game, None, None, f"not a record: {error}") from None
    except ValueError as error:
        place = re.match(r"field rounds\[(\d+)\](?:\.actions\[(\d+)\])?", str(error))
        round_index = None if place is None else int(place[1])
        action = None if place is None or place[2] is None else int(place[2])
        raise RecordMismatch(game, round_index, action, str(error)) from None


def _check_result(record: GameRecord, env: Any, game: int, outcome: RoundOutcome | None) -> None:
    last = len(record.rounds) - 1
    at = len(record.rounds[-1]["actions"]) - 1 if record.rounds[-1]["actions"] else None
    scores = list(env.match.scores)
    if record.scores != scores:
        raise RecordMismatch(game, last, at, f"final scores {record.scores} recorded, {scores} replayed")
    if not record.finished:
        return
    truncated = any(env.truncations.values())
    winner = outcome.winner if env.episode == "round" and outcome is not None else env.match.winner
    for key, replayed in (("truncated", truncated), ("winner", winner)):
        if key in record.extras and record.extras[key] != replayed:
            raise RecordMismatch(game, last, at, f"{key} {record.extras[key]!r} recorded, {replayed!r} replayed")


def _plain(value: Any) -> Any:
    """Lists for tuples, so a recorded JSON list compares equal to the replayed value."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@functools.cache
def _version() -> str:
    import okgin_env  # noqa: PLC0415 - the installed distribution's version, looked up once

    return okgin_env.__version__


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m okgin_env.records FILE...``: replay every game of each file."""
    paths = list(sys.argv[1:] if argv is None else argv)
    if not paths or any(p.startswith("-") for p in paths):
        print("usage: python -m okgin_env.records FILE [FILE ...]  (replays every game of each file)", file=sys.stderr)
        return 2
    for path in paths:
        try:
            records = read_records(path)
        except (OSError, ValueError) as error:
            print(f"okgin_env.records: error: {error}", file=sys.stderr)
            return 2
        try:
            for index, record in enumerate(records):
                replay(record, game=index)
        except RecordMismatch as error:
            print(f"okgin_env.records: {path}: {error}", file=sys.stderr)
            return 1
        rounds = sum(len(r.rounds) for r in records)
        actions = sum(len(entry["actions"]) for r in records for entry in r.rounds)
        print(f"{path}: {len(records)} games, {rounds} rounds, {actions} actions: every one replays exactly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
