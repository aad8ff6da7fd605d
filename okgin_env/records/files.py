"""Game record files: the ``GameRecord``, building one from played rounds, writing and reading.

One game per line of JSON (docs/records.md). Reading refuses anything that is not a record file
with a ValueError naming the file and line, never reading without end; writing is all or nothing
(the lines go to a file beside the target, renamed over it once complete; appended lines are cut
back off if the write fails).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import secrets
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..echo import clipped
from ..episode import DEFAULT_MAX_ROUNDS
from ..output_folder import prepare_output_folder
from ..rules.config import RulesConfig
from ..rules.round import RoundState
from .checks import FORMAT, MAX_DEPTH, REQUIRED, VERSION, checked_fields, copy_json

try:
    import fcntl
except ImportError:  # not on Windows: appends there are not locked against other writers
    fcntl = None

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
        named = sorted(set(REQUIRED) & set(self.extras or {}))
        if named:  # an extra would replace the field of that name without a word
            raise ValueError(f"extras {named} are named like a record's own fields; set the record's "
                             f"{', '.join(named)} themselves, or give the extras other names")
        head = {"format": self.format, "version": self.version, "env": self.env, "players": self.players}
        return {**head, "scores": self.scores, **self.extras, "rounds": self.rounds}

    @classmethod
    def from_dict(cls, data: Any) -> "GameRecord":
        """A checked record; a ValueError names the first wrong field (``rounds[2].deck``)."""
        return cls(**checked_fields(data))



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


def check_record_path(path: str | os.PathLike, *, regular: bool = False, appending: bool = False) -> str:
    """A ValueError now (before any game) if a record file cannot be written at ``path``; creates
    its folder if missing (as ``okgin-eval --out`` does). ``regular``: refuse a device or a pipe
    too (a server must not block on a FIFO nobody reads). ``appending``: records will be added
    after the file's lines, so a file that is there must begin with a game record (notes or
    another file's text would no longer read as records)."""
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    if not os.path.basename(path):
        raise ValueError(f"cannot write game records to {path!r}: give a file name")
    if os.path.isdir(path):
        raise ValueError(f"cannot write game records to {path!r}: it is a folder")
    if os.path.islink(path) and not os.path.exists(path):  # written through, every record would be lost
        raise ValueError(f"cannot write game records to {path!r}: it is a link to {os.path.realpath(path)!r}, "
                         "which does not exist; give the file itself")
    if regular and os.path.exists(path) and not os.path.isfile(path):
        raise ValueError(f"cannot write game records to {path!r}: it is not a regular file (a pipe or a device); "
                         "give a file path")
    prepare_output_folder(folder, f"cannot write game records to {path!r}")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise ValueError(f"cannot write game records to {path!r}: the file is not writable")
    if appending and os.path.isfile(path):
        _check_first_record(path)
    return path


def _check_first_record(path: str) -> None:
    """A ValueError unless the file's first line that is not blank is a game record (or there is none)."""
    with open(path, "rb") as file:
        try:
            next(_records_in(file, path), None)  # (read as read_records reads it: the first record only)
        except ValueError as error:
            raise ValueError(f"cannot add game records to {path!r}: it is not a record file ({clipped(str(error), 300)}); "
                             "give a new file or a record file") from None


def write_records(path: str | os.PathLike, records: Iterable[GameRecord | Mapping[str, Any]], append: bool = False) -> int:
    """Write one line per record (replacing the file, or after its lines with ``append``); every
    record is checked first, so a bad one writes nothing. Returns the number written. A missing
    folder is made, as ``okgin-eval --record`` makes it.

    The file is replaced at once (written beside it, then renamed), so that a failed write (a full
    disk) leaves the file as it was and raises an ``OSError`` naming the path; a device or a pipe
    (``/dev/stdout``) is written to directly. ``append`` adds the lines under a lock on the file,
    so that writers in several threads or processes each add theirs whole and none is lost."""
    if isinstance(records, (GameRecord, Mapping)):
        raise ValueError("records must be a list (an iterable) of records; got a single record: write [record]")
    lines = []
    for index, record in enumerate(records):
        try:  # parsing copies, so the line is what was checked
            checked = parse_record(record)
            lines.append(json.dumps(checked._fields(), separators=(",", ":"), default=_json_number,
                                    allow_nan=False) + "\n")
        except (TypeError, ValueError) as error:
            if "JSON compliant" in str(error):  # json's words for NaN and infinities, which JSON has not
                error = ValueError("a number is NaN or infinite, which JSON cannot hold")
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
    if append:
        _append(target, data)
        return
    folder, name = os.path.split(target)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # O_EXCL: never another's file; mode 0o666 less the umask, as open() would create the file.
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with open(handle, "wb") as file:
            if existing is not None:
                os.chmod(temporary, stat.S_IMODE(existing.st_mode))
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _append(path: str, data: bytes) -> None:
    """``data`` after the end of the regular file ``path`` (made if missing): O_APPEND under an
    exclusive ``flock``, never a copy renamed over the file, which would drop lines another writer
    appended meanwhile. A failed write is cut back off, leaving the file as it was."""
    handle = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
        size = os.fstat(handle).st_size
        if size and os.pread(handle, 1, size - 1) != b"\n":  # a last line without its end (edited by hand)
            data = b"\n" + data
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(handle, view):]
            os.fsync(handle)
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(handle, size)
            raise
    finally:
        os.close(handle)


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
    with _open_for_reading(name) as file:
        size = os.fstat(file.fileno()).st_size  # 0 for a device or a pipe: counted as read below
        if size > MAX_FILE_BYTES:
            raise ValueError(f"{name}: {size:,} bytes; a record file may hold at most {MAX_FILE_BYTES:,} (is it a record file?)")
        return list(_records_in(file, name))


def _records_in(file: Any, name: str) -> Iterator[GameRecord]:
    """The records of an open record file ``name``, one per line that is not blank, as they are read."""
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
            yield parse_record(_loads(text))
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None


def _open_for_reading(path: str) -> Any:
    """``open(path, "rb")``, except that a named pipe nobody writes to reads as empty at once (open
    would wait for a writer without end); a pipe with a writer (``/dev/stdin`` of ``cat x |``) reads as usual."""
    try:
        is_pipe = stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        is_pipe = False  # (open names the missing file)
    if not is_pipe:
        return open(path, "rb")
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(handle, True)  # (reads then wait for the writer's data, and end when it closes)
    return os.fdopen(handle, "rb")


def _loads(text: str) -> Any:
    """The JSON of one line; a ValueError saying what is wrong with it (never a RecursionError)."""
    try:
        return json.loads(text, parse_constant=_not_finite, parse_float=_finite)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON: {error.msg} (column {error.colno}); a truncated line?") from None
    except _NotFinite as error:
        raise ValueError(str(error)) from None
    except RecursionError:
        raise ValueError(f"JSON nested too deeply to read; a record nests at most {MAX_DEPTH} levels") from None
    except ValueError:  # json's other refusal: an int too long for Python to read
        limit = sys.get_int_max_str_digits()
        raise ValueError(f"a number of more than {limit} digits; a record's numbers have at most {limit}") from None


class _NotFinite(ValueError):
    pass


def _not_finite(name: str) -> None:
    raise _NotFinite(f"{name} is no JSON number (a record's numbers are finite)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"{text[:40]} is too large for a number (a record's numbers are finite)")
    return value


def parse_record(data: Any) -> GameRecord:
    """A checked copy of JSON data or of a ``GameRecord`` (one built by hand or changed since is
    checked as a read one is); a ValueError names the first wrong field."""
    return GameRecord.from_dict(data._fields() if isinstance(data, GameRecord) else data)


@functools.cache
def _version() -> str:
    import okgin_env  # noqa: PLC0415 - the installed distribution's version, looked up once

    return okgin_env.__version__


__all__ = [
    "MAX_FILE_BYTES", "MAX_LINE_BYTES", "OUTCOME_FIELDS", "GameRecord", "check_record_path", "env_options",
    "game_record", "parse_record", "read_records", "round_entry", "write_records",
]
