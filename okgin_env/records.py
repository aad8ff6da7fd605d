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
the round state, every hand visible), for replay viewers. ``python -m okgin_env.records FILE``
checks a file: exit 0 when every game replays, 1 on a mismatch, 2 on a malformed file.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .episode import DEFAULT_MAX_ROUNDS
from .record_checks import FORMAT, VERSION, checked_fields, copy_json
from .rules.actions import DISCARD_BASE, KNOCK_BASE, action_str
from .rules.cards import card_str
from .rules.config import RulesConfig
from .rules.round import RoundState
from .rules.showdown import RoundOutcome

#: The ``RoundOutcome`` fields a written round keeps (a record may give any of ``to_dict``'s).
OUTCOME_FIELDS = ("kind", "knocker", "winner", "points", "deadwood", "knock_card")


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
    """A ValueError now (before any game) if a record file cannot be written at ``path``."""
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    if not os.path.basename(path):
        raise ValueError(f"cannot write game records to {path!r}: give a file name")
    if os.path.isdir(path):
        raise ValueError(f"cannot write game records to {path!r}: it is a folder")
    if not os.path.isdir(folder):
        raise ValueError(f"cannot write game records to {path!r}: folder {folder!r} does not exist")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise ValueError(f"cannot write game records to {path!r}: folder {folder!r}: {error.strerror or error}") from None
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise ValueError(f"cannot write game records to {path!r}: the file is not writable")
    return path


def write_records(path: str | os.PathLike, records: Iterable[GameRecord | Mapping[str, Any]], append: bool = False) -> int:
    """Write one line per record (replacing the file, or after its lines with ``append``); every
    record is checked first, so a bad one writes nothing. Returns the number written."""
    lines = []
    for index, record in enumerate(records):
        try:  # parsing copies, so the line is what was checked
            checked = _parse(record._fields() if isinstance(record, GameRecord) else record)
            lines.append(json.dumps(checked._fields(), separators=(",", ":"), default=_json_number) + "\n")
        except (TypeError, ValueError) as error:
            raise ValueError(f"record {index}: {error}") from None
    with open(path, "a" if append else "w", encoding="utf-8") as file:
        file.writelines(lines)
    return len(lines)


def _json_number(value: Any) -> Any:
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    raise TypeError(f"a record field holds {type(value).__name__} {value!r}, which JSON cannot hold")


# ----------------------------------------------------------------------------- reading


def read_records(path: str | os.PathLike) -> list[GameRecord]:
    """Every record of a file (blank lines skipped); a ValueError names the line and the field."""
    records = []
    with open(path, "rb") as file:
        for number, raw in enumerate(file, start=1):
            where = f"{os.fspath(path)}, line {number}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"{where}: not UTF-8 text ({error.reason} at byte {error.start})") from None
            if not text.strip():
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as error:
                raise ValueError(f"{where}: not valid JSON: {error.msg} (column {error.colno}); a truncated line?") from None
            try:
                records.append(_parse(data))
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
    return records


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
