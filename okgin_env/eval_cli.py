"""The ``okgin-eval`` command: ``okgin_env.evaluate`` from the command line.

    okgin-eval search simple --matches 200 --workers 2 --out out/search_vs_simple
    python -m okgin_env.eval_cli random simple search --matches 100          # the same command

Every problem found before the first game (an unknown policy or bot setting, a bad rule option, a
negative ``--seed``, an ``--out`` or ``--record`` that cannot be written, two outputs that are one
file, an output that is a file being evaluated) ends with exit status 2 and a one-line message.
``--workers`` is capped at the number of games (the summary line says so). Ctrl-C and SIGTERM stop
the run: the workers are ended, the table of the games that finished is printed with a line saying
the run was interrupted, and the exit status is 130 (SIGINT) or 143 (SIGTERM). The results are
printed before any file is written: a file that cannot be written after the games (a full disk) is
named in a one-line message, and the exit status is then 2 (or the signal's, when the run was
stopped). The table fits 100 columns for bot names; ``--wide`` shows every column.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from .episode import DEFAULT_MAX_ROUNDS
from .eval_results import check_output_prefix, output_paths
from .evaluate import MAX_WORKERS, EvaluationInterrupted, RecordsNotWritten, evaluate
from .players import AGENT_FILE, bot_help, is_agent_file, parse_bot_spec
from .policy_loaders import is_policy_file, resolve_policy_spec
from .signals import sigterm_raises
from .table_cli import add_table_arguments, table_options




def _input_files(specs: Sequence[Any]) -> list[str]:
    """The files the player specs read (policy files, agent files, and those named in a bot's
    settings, such as ``search:policy=FILE.pt``), where they name one."""
    files = []
    for spec in specs:
        if not isinstance(spec, str):
            continue
        if is_agent_file(spec):
            files.append(AGENT_FILE.fullmatch(spec)["path"])
        elif is_policy_file(spec):
            try:
                files.append(resolve_policy_spec(spec)[1])
            except ValueError:  # a malformed spec: evaluate reports it
                pass
        elif ":" in spec:
            try:
                settings = parse_bot_spec(spec)[1]
            except ValueError:  # a malformed spec: evaluate reports it
                continue
            files += _input_files(list(settings.values()))
    return files


def check_distinct_outputs(out: str | None, record: str | None, policies: Sequence[str]) -> None:
    """A ValueError, before any game, where two outputs are one file (the later one would replace
    the earlier, and both would be reported written) or an output is a file a player reads
    (okgin-eval's and okgin-play's check)."""
    outputs = [*(output_paths(out) if out else ()), *([record] if record else [])]
    seen: dict[str, str] = {}
    for path in outputs:
        real = os.path.realpath(path)
        if real in seen:
            raise ValueError(f"--record {record!r} is also a file of --out {out!r}: give them different names")
        seen[real] = path
    inputs = {os.path.realpath(path) for path in _input_files(policies)}
    for real, path in seen.items():
        if real in inputs:
            raise ValueError(f"the output {path!r} is a file being evaluated (a player reads it): it would be "
                             "overwritten; give another name")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="okgin-eval",
        description="Evaluate Oklahoma Gin policies head to head (two) or round robin (more), "
        "with mirrored deals and 95% Wilson intervals. Ctrl-C or SIGTERM stops the run and "
        "prints the games that finished (exit 130 or 143).",
    )
    parser.add_argument(
        "policies",
        nargs="+",
        help=f"player specs: {bot_help()}",
    )
    parser.add_argument("--matches", type=int, default=100, help="games per pair (rounded up to mirrored deals)")
    add_table_arguments(parser)
    parser.add_argument(
        "--max-rounds",
        type=int,
        default=DEFAULT_MAX_ROUNDS,
        help="end a match still undecided after this many rounds as a draw (default: %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="a non-negative int: the run's deals and bot seeds (default 0)")
    parser.add_argument(
        "--workers", type=int, default=1, help=f"processes, 1..{MAX_WORKERS}, at most one per game (default 1: inline)"
    )
    parser.add_argument("--out", default=None, help="write PREFIX.json and PREFIX.csv")
    parser.add_argument("--record", default=None, metavar="PATH", help="write every game to PATH (JSON Lines game records)")
    parser.add_argument("--wide", action="store_true", help="every column: rounds per game, how rounds were won, decisions")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar (there is none either when stderr is not a terminal)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if len(args.policies) < 2:
        parser.error("give at least two policies")
    code = 0
    try:
        options = table_options(args)
        with sigterm_raises():
            if args.out:
                check_output_prefix(args.out)
            check_distinct_outputs(args.out, args.record, args.policies)
            results = evaluate(
                args.policies,
                matches=args.matches,
                episode=args.episode,
                seed=args.seed,
                workers=args.workers,
                progress=not args.no_progress and sys.stderr.isatty(),  # no bar in a log file or a pipe
                max_rounds=args.max_rounds,
                record=args.record,
                **options,
            )
    except EvaluationInterrupted as stop:
        results = stop.results
        code = 128 + int(signal.Signals[stop.signal_name])
    except RecordsNotWritten as failure:  # reported below, after the results
        results = failure.results
    except KeyboardInterrupt as stop:  # before the first game
        name = getattr(stop, "signal_name", "SIGINT")
        print(f"okgin-eval: interrupted by {name} before any game", file=sys.stderr)
        return 128 + int(signal.Signals[name])
    except (ValueError, ImportError, FileNotFoundError) as error:
        print(f"okgin-eval: error: {error}", file=sys.stderr)
        return 2
    print(results.table(wide=args.wide))
    settings = results.settings
    if code:
        print(
            f"(interrupted by {settings['interrupted']}: {settings['games_finished']} of "
            f"{settings['games_planned']} games finished, {settings['seconds']:.1f} s)"
        )
    else:
        capped = ""
        if "workers_requested" in settings:
            capped = f"; {settings['workers']} worker processes, one per game, not {settings['workers_requested']}"
        print(f"({settings['games_per_pair']} games per pair, {settings['seconds']:.1f} s{capped})")
    if args.out:
        try:
            for path in results.write(args.out):
                print(f"wrote {path}")
        except OSError as error:
            print(f"okgin-eval: error: cannot write results to {args.out!r}: {error.strerror or error}", file=sys.stderr)
            code = code or 2
    if args.record:
        if "record_error" in settings:
            print(f"okgin-eval: error: {settings['record_error']}", file=sys.stderr)
            code = code or 2
        else:
            print(f"wrote {args.record} ({len(results.records)} game records)")
    return code




if __name__ == "__main__":
    sys.exit(main())
