"""``python -m okgin_env.records FILE...``: check that every game of record files replays exactly."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .files import read_records
from .replay import RecordMismatch, replay


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

