"""Recorded games for the replay view of ``okgin-web``: every step of a game as a frame, all hands visible.

A record file (JSON Lines, ``okgin_env.records``) is read with ``okgin_env.records.read_records``,
which names the line and field of anything wrong; each game is re-played with
``okgin_env.records.replay_steps`` (through the AEC env, exactly as recorded), and each step
becomes one frame: the move just made and who made it, every hand with its melds and deadwood,
the discard pile, the stock size, the upcard and knock limit, the match totals before the round,
and at a round's end its showdown. ``ReplayStore`` keeps the files loaded at start-up
(``okgin-web --records FILE``) and those uploaded from the page, each under an id.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import threading
from collections import OrderedDict
from typing import Any

from ..rules.actions import action_str
from ..rules.config import is_int
from ..rules.round import Phase
from . import payload
from .game import GameError

DEFAULT_MAX_RECORD_SETS = 16


def read_record_file(path: str | os.PathLike) -> list[Any]:
    """The games of a record file (``okgin_env.records.read_records``; a ValueError names what is wrong)."""
    from ..records import read_records

    records = read_records(path)
    if not records:
        raise ValueError(f"{os.fspath(path)}: the file holds no game record")
    return records


def read_record_text(text: str, name: str = "upload") -> list[Any]:
    """The games of a record file's contents (an upload), read by ``read_records`` from a temporary file."""
    handle, path = tempfile.mkstemp(suffix=".jsonl", prefix="okgin-web-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        try:
            return read_record_file(path)
        except ValueError as error:
            raise ValueError(str(error).replace(path, name)) from error
    finally:
        os.unlink(path)


def game_summary(index: int, record: Any) -> dict[str, Any]:
    return {
        "index": index,
        "players": [str(p) for p in record.players],
        "rounds": len(record.rounds),
        "scores": list(record.scores),
        "rules": dict(record.env).get("rules", "classic"),
    }


def game_frames(record: Any, index: int = 0) -> dict[str, Any]:
    """Every step of one game (``index`` in its file, for the messages) as frames, and the frame
    index at which each round starts; a record that does not replay raises ``RecordMismatch``."""
    from ..records import replay_steps

    frames: list[dict[str, Any]] = []
    round_starts: list[int] = []
    for step in replay_steps(record, index):
        state = step.state
        if step.action is None:
            round_starts.append(len(frames))
        over = state.phase is Phase.OVER
        outcome = step.outcome
        showdown = None
        if outcome is not None:
            after = record.rounds[step.round_index].get("scores_after")
            if after is None:  # a record without totals: the round's points added to those before it
                after = [a + b for a, b in zip(step.scores_before, outcome.points)]
            showdown = payload.showdown(outcome, after)
        frames.append({
            "round": step.round_index,
            "step": step.step_index,
            "seat": step.seat,
            "move": None if step.action is None else action_str(step.action),
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
            "scores": list(step.scores_before),
            "showdown": showdown,
        })
    return {"players": [str(p) for p in record.players], "frames": frames, "round_starts": round_starts,
            "scores": list(record.scores)}


class RecordSet:
    """The games of one record file, their frames computed on first request."""

    def __init__(self, set_id: str, name: str, records: list[Any]):
        self.set_id = set_id
        self.name = name
        self.records = records
        self._frames: dict[int, dict[str, Any]] = {}
        self.lock = threading.Lock()

    def summary(self) -> dict[str, Any]:
        return {"id": self.set_id, "name": self.name,
                "games": [game_summary(i, r) for i, r in enumerate(self.records)]}

    def frames(self, index: Any) -> dict[str, Any]:
        count = len(self.records)
        if not is_int(index) or not 0 <= index < count:
            raise GameError(f"no game {index!r} in {self.name}: it holds games 0..{count - 1}", status=404)
        with self.lock:
            if index not in self._frames:
                try:
                    self._frames[index] = game_frames(self.records[index], index)
                except ValueError as error:  # records.RecordMismatch ("game 3, round 2, action 17: ...")
                    raise GameError(f"{self.name}: {error}", status=422) from error
            return self._frames[index]


class ReplayStore:
    """Record files by id: the start-up file under ``"records"``, uploads under random ids."""

    def __init__(self, max_sets: int = DEFAULT_MAX_RECORD_SETS):
        self.max_sets = max_sets
        self._sets: OrderedDict[str, RecordSet] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, name: str, records: list[Any], set_id: str | None = None) -> RecordSet:
        record_set = RecordSet(set_id or secrets.token_urlsafe(9), name, records)
        with self._lock:
            self._sets[record_set.set_id] = record_set
            while len(self._sets) > self.max_sets:
                oldest = next(k for k in self._sets if k != "records")  # the start-up file stays
                del self._sets[oldest]
        return record_set

    def get(self, set_id: str) -> RecordSet:
        with self._lock:
            record_set = self._sets.get(set_id)
        if record_set is None:
            raise GameError(f"no record file {set_id!r}: load one with --records or choose a file in the page", status=404)
        return record_set

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            sets = list(self._sets.values())
        return [s.summary() for s in sets if s.set_id == "records"]
