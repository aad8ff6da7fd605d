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

The package: ``files`` (``GameRecord``, ``game_record``, ``write_records``, ``read_records``),
``checks`` (the field checks), ``replay`` (``replay``, ``replay_steps``, ``replay_round``) and
``cli`` (the file checker); every public name is importable from ``okgin_env.records``.
"""

from .checks import FORMAT, MAX_DEPTH, VERSION
from .cli import main
from .files import (
    MAX_FILE_BYTES,
    MAX_LINE_BYTES,
    OUTCOME_FIELDS,
    GameRecord,
    check_record_path,
    env_options,
    game_record,
    parse_record,
    read_records,
    round_entry,
    write_records,
)
from .replay import RecordMismatch, ReplayStep, replay, replay_round, replay_steps

__all__ = [
    "FORMAT",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "OUTCOME_FIELDS",
    "VERSION",
    "GameRecord",
    "RecordMismatch",
    "ReplayStep",
    "check_record_path",
    "env_options",
    "game_record",
    "main",
    "parse_record",
    "read_records",
    "replay",
    "replay_round",
    "replay_steps",
    "round_entry",
    "write_records",
]
