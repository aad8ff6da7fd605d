"""``python -m okgin_env.records FILE...``: check that every game of record files replays exactly."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .files import read_records
from .replay import RecordMismatch, replay


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m okgin_env.records FILE...``: replay every game of each file; a line for each.

    Exit status: 0 when every file holds games that all replay exactly, 1 when a game does not
    replay or a file holds no game, 2 when a file cannot be read as records (the worst of the files)."""
    paths = list(sys.argv[1:] if argv is None else argv)
    if not paths or any(p.startswith("-") for p in paths):
        print("usage: python -m okgin_env.records FILE [FILE ...]  (replays every game of each file)", file=sys.stderr)
        return 2
    status = 0
    for path in paths:
        try:
            records = read_records(path)
        except (OSError, ValueError) as error:
            print(f"okgin_env.records: error: {error}", file=sys.stderr)
            status = 2
            continue
        if not records:
            print(f"okgin_env.records: {path}: no game records in it", file=sys.stderr)
            status = max(status, 1)
            continue
        try:
            for index, record in enumerate(records):
                replay(record, game=index)
        except RecordMismatch as error:
            print(f"okgin_env.records: {path}: {error}", file=sys.stderr)
            status = max(status, 1)
            continue
        rounds = sum(len(r.rounds) for r in records)
        actions = sum(len(entry["actions"]) for r in records for entry in r.rounds)
        print(f"{path}: {len(records)} games, {rounds} rounds, {actions} actions: every one replays exactly")
    return status
