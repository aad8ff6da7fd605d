"""Recorded games for the replay view of ``okgin-web``: every step of a round as a frame, all hands visible.

A record file (JSON Lines, ``okgin_env.records``) is read with ``okgin_env.records.read_records``,
which names the line and field of anything wrong. ``ReplayStore`` keeps the file loaded at start-up
(``okgin-web --records FILE``) and those uploaded from the page, each under an id.

**What one request can cost.** A game is sent in two parts, so that no answer grows with the
length of a game: its outline (``game_outline``: the players, the scores and, per round, the dealer,
the number of steps and the totals after it) and, one round at a time, that round's frames
(``round_frames``): per step the move just made and who made it, every hand with its melds and
deadwood, the discard pile, the stock size, the upcard and knock limit, the match totals before the
round, and at the round's end its showdown. The first time a game is opened it is replayed whole
through the AEC env (``okgin_env.records.replay``, which checks every action, total and result;
a game that does not replay is refused with the game, round and action of the first difference).
A round's frames are then rebuilt from its own deal, without the rounds before it. Nothing else is
computed or cached: a game's outline is checked once (a flag per game), frames are made for each
request and dropped. The bounds:

* a game is replayed only if it holds at most ``MAX_GAME_ACTIONS`` recorded actions, and each of
  its rounds at most ``MAX_ROUND_ACTIONS`` (a round of the default rules, at most 500 discards,
  holds about 1,000): so one request replays at most 100,000 actions (about 1 s) or builds at most
  2,001 frames (about 0.1 s, an answer of at most about 1.5 MB);
* uploads are kept as their JSON text (one line per game, parsed again when a game is opened),
  at most ``DEFAULT_MAX_RECORD_SETS`` files and ``DEFAULT_MAX_KEPT_BYTES`` of text together; past
  either, the least recently used upload is dropped (the start-up file stays, outside the budget).
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from ..rules.actions import action_str
from ..rules.round import Phase, RoundState
from . import payload
from .game import GameError, shown

DEFAULT_MAX_RECORD_SETS = 16
DEFAULT_MAX_KEPT_BYTES = 64 * 1024 * 1024
#: Games one upload may hold: each keeps a summary (about 500 bytes) beside its text, and the
#: upload's answer lists them all.
MAX_UPLOAD_GAMES = 20_000
MAX_GAME_ACTIONS = 100_000
MAX_ROUND_ACTIONS = 2_000
STARTUP_SET_ID = "records"


def read_record_file(path: str | os.PathLike) -> list[Any]:
    """The games of a record file (``okgin_env.records.read_records``; a ValueError names what is
    wrong): a regular file (a pipe would hold the server's start until something writes to it)."""
    from ..records import read_records

    if os.path.exists(path) and not os.path.isfile(path):
        raise ValueError(f"{os.fspath(path)} is not a regular file (a folder, a pipe or a device); give a record file")
    try:
        records = read_records(path)
    except RecursionError:  # json.loads of a line nested thousands deep
        raise ValueError(f"{os.fspath(path)}: a line is nested too deeply to be a game record") from None
    if not records:
        raise ValueError(f"{os.fspath(path)}: the file holds no game record")
    return records


def read_record_text(data: bytes | str, name: str = "upload") -> list[Any]:
    """The games of a record file's contents (an upload), read by ``read_records`` from a temporary
    file (bytes are decoded line by line there, so a line that is no UTF-8 is named); at most
    ``MAX_UPLOAD_GAMES`` games."""
    data = data.encode("utf-8") if isinstance(data, str) else data
    # Counted before anything is parsed (each line that is not blank is one game's record), so that
    # an upload of too many games is refused without paying for them; each kept game holds a summary.
    games = sum(1 for line in data.split(b"\n") if line.strip())  # (lines as read_records reads them)
    if games > MAX_UPLOAD_GAMES:
        raise ValueError(f"{name} holds {games:,} games; an upload may hold at most {MAX_UPLOAD_GAMES:,}")
    handle, path = tempfile.mkstemp(suffix=".jsonl", prefix="okgin-web-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        try:
            return read_record_file(path)
        except ValueError as error:
            raise ValueError(str(error).replace(path, name)) from error
    finally:
        os.unlink(path)


def action_count(record: Any) -> int:
    return sum(len(entry["actions"]) for entry in record.rounds)


def game_summary(index: int, record: Any) -> dict[str, Any]:
    return {
        "index": index,
        "players": [str(p) for p in record.players],
        "rounds": len(record.rounds),
        "actions": action_count(record),
        "scores": list(record.scores),
        "rules": dict(record.env).get("rules", "classic"),
    }


def check_replay_limits(label: str, actions: int, round_actions: list[int] | None = None) -> None:
    """A ``GameError`` (422) if a game of ``actions`` recorded actions (``round_actions`` per round,
    when known) is longer than okgin-web replays (see the module docstring)."""
    limits = (f"okgin-web replays games of at most {MAX_GAME_ACTIONS:,} recorded actions and rounds of at most "
              f"{MAX_ROUND_ACTIONS:,}; python -m okgin_env.records FILE checks a longer one")
    if actions > MAX_GAME_ACTIONS:
        raise GameError(f"{label} holds {actions:,} recorded actions: {limits}", status=422)
    for r, count in enumerate(round_actions or ()):
        if count > MAX_ROUND_ACTIONS:
            raise GameError(f"{label}, round {r} holds {count:,} recorded actions: {limits}", status=422)


def game_outline(record: Any) -> dict[str, Any]:
    """A game without its frames: the players, the final scores and per round its dealer, its
    number of steps (the deal and one per action) and the match totals after it."""
    return {
        "players": [str(p) for p in record.players],
        "scores": list(record.scores),
        "rules": dict(record.env).get("rules", "classic"),
        "rounds": [
            {"round": r, "dealer": entry["dealer"], "steps": len(entry["actions"]) + 1,
             "scores_after": list(entry["scores_after"])}
            for r, entry in enumerate(record.rounds)
        ],
    }


def _round_steps(record: Any, round_index: int) -> Iterator[tuple[int | None, int | None, RoundState]]:
    """``(action, seat, state)`` of one round of a checked game (``okgin_env.records.replay_round``)."""
    from ..env import raw_env
    from ..records import replay_round

    return replay_round(raw_env(**record.env).config, record.rounds[round_index])


def round_frames(record: Any, round_index: int) -> list[dict[str, Any]]:
    """The frames of one round of a checked game (see ``_round_steps``), the deal first."""
    entry = record.rounds[round_index]
    n = len(record.players)
    scores_before = list(record.rounds[round_index - 1]["scores_after"]) if round_index else [0] * n
    frames = []
    for step, (action, seat, state) in enumerate(_round_steps(record, round_index)):
        over = state.phase is Phase.OVER
        outcome = state.outcome if over else None
        frames.append({
            "round": round_index,
            "step": step,
            "seat": seat,
            "move": None if action is None else action_str(action),
            "phase": payload.PHASE_NAMES[state.phase],
            "to_act": None if over else state.current,
            "dealer": state.dealer,
            "hands": payload.full_hands(state.hands),
            "taken_card": payload.card(state.taken_card),
            "discard_pile": [payload.card(c) for c in state.discard_pile],  # bottom first
            "discard_top": payload.card(state.discard_top),
            "upcard": payload.card(state.upcard),
            "knock_limit": state.knock_limit,
            "stock_size": len(state.stock),
            "scores": scores_before,
            "showdown": None if outcome is None else payload.showdown(outcome, entry["scores_after"]),
        })
    return frames


def game_lines(data: bytes) -> list[bytes]:
    """The lines of a record file that ``read_records`` reads as games (it skips blank ones), as sent."""
    return [line for line in data.split(b"\n") if line.decode("utf-8").strip()]


def _compact(record: Any) -> bytes:
    return json.dumps(record.to_dict(), separators=(",", ":")).encode("utf-8")


class RecordSet:
    """The games of one record file, kept as JSON text (one line per game: ``lines``, the file's own,
    or else each record written compactly) with their summaries; a game is parsed again for each
    request, and checked by a whole replay once."""

    def __init__(self, set_id: str, name: str, records: list[Any], lines: list[bytes] | None = None):
        self.set_id = set_id
        self.name = name
        self._summaries = [game_summary(i, r) for i, r in enumerate(records)]
        self._games = lines if lines is not None and len(lines) == len(records) else [_compact(r) for r in records]
        self.size_bytes = sum(len(g) for g in self._games)
        self._replayed: set[int] = set()  # games that replay exactly (records.replay)
        self.lock = threading.Lock()

    def summary(self) -> dict[str, Any]:
        return {"id": self.set_id, "name": self.name, "games": list(self._summaries)}

    def outline(self, index: Any) -> dict[str, Any]:
        """Game ``index``'s outline (``game_outline``), once it is known to replay."""
        return game_outline(self._checked_game(index))

    def frames(self, index: Any, round_index: Any) -> dict[str, Any]:
        """The frames of one round of game ``index``: ``{"round", "frames"}``."""
        record = self._checked_game(index)
        count = len(record.rounds)
        if not isinstance(round_index, int) or not 0 <= round_index < count:
            raise GameError(f"no round {round_index!r} in game {index} of {self.name}: it holds rounds 0..{count - 1}",
                            status=404)
        return {"round": round_index, "frames": round_frames(record, round_index)}

    def _checked_game(self, index: Any) -> Any:
        from ..records import GameRecord, replay

        count = len(self._games)
        if not isinstance(index, int) or not 0 <= index < count:
            raise GameError(f"no game {index!r} in {self.name}: it holds games 0..{count - 1}", status=404)
        label = f"{self.name}: game {index}"
        check_replay_limits(label, self._summaries[index]["actions"])  # before parsing a game too long to show
        record = GameRecord.from_dict(json.loads(self._games[index]))
        check_replay_limits(label, action_count(record), [len(entry["actions"]) for entry in record.rounds])
        with self.lock:  # one whole replay per game, however many pages ask at once
            if index not in self._replayed:
                try:
                    replay(record, index)
                except ValueError as error:  # records.RecordMismatch ("game 3, round 2, action 17: ...")
                    raise GameError(f"{self.name}: {error}", status=422) from error
                self._replayed.add(index)
        return record


class ReplayStore:
    """Record files by id: the start-up file under ``"records"``, uploads under random ids. At most
    ``max_sets`` files and ``max_bytes`` of uploaded games (their JSON text) are kept; past either
    the least recently used upload is dropped."""

    def __init__(self, max_sets: int = DEFAULT_MAX_RECORD_SETS, max_bytes: int = DEFAULT_MAX_KEPT_BYTES):
        self.max_sets = max_sets
        self.max_bytes = max_bytes
        self._sets: OrderedDict[str, RecordSet] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, name: str, records: list[Any], set_id: str | None = None, lines: list[bytes] | None = None) -> RecordSet:
        """Keep ``records`` (read from a file whose game lines are ``lines``, if given) under ``set_id``."""
        record_set = RecordSet(set_id or secrets.token_urlsafe(9), name, records, lines)
        with self._lock:
            self._sets[record_set.set_id] = record_set
            while len(self._sets) > self.max_sets or self.uploaded_bytes() > self.max_bytes:
                oldest = next((k for k in self._sets if k not in (STARTUP_SET_ID, record_set.set_id)), None)
                if oldest is None:  # only the start-up file and this one: this one fits alone (see MAX_UPLOAD_BYTES)
                    break
                del self._sets[oldest]
        return record_set

    def uploaded_bytes(self) -> int:
        """The size of the uploads kept (compact JSON), the start-up file aside."""
        return sum(s.size_bytes for key, s in self._sets.items() if key != STARTUP_SET_ID)

    def get(self, set_id: str) -> RecordSet:
        with self._lock:
            record_set = self._sets.get(set_id)
            if record_set is not None:
                self._sets.move_to_end(set_id)
        if record_set is None:
            raise GameError(f"no record file {shown(set_id)}: load one with --records or choose a file in the page (at most "
                            f"{self.max_sets} files are kept, the least recently viewed dropped first)", status=404)
        return record_set

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            sets = list(self._sets.values())
        return [s.summary() for s in sets if s.set_id == STARTUP_SET_ID]

    def __len__(self) -> int:
        return len(self._sets)
