"""okgin-play, the command line of terminal play (``okgin_env.play``).

    okgin-play --opponent simple                          # or: python -m okgin_env.play_cli
    okgin-play --opponent pretrained:classic --seed 7 --episode round
    okgin-play --opponent simple --record my_games.jsonl  # the game as an okgin_env.records line

The moves, the record and the exit statuses are described in ``okgin_env.play``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from .echo import clipped
from .play import Game
from .players import bot_help
from .policy_loaders import is_policy_file, resolve_policy_spec
from .signals import signals_ignored, sigterm_raises
from .table_cli import add_table_arguments, table_options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="okgin-play", description="Play Oklahoma Gin in the terminal.")
    parser.add_argument("--opponent", default="simple", help=f"who plays the other seats: {bot_help()}")
    parser.add_argument("--seed", type=int, default=None, help="deal and bot seed (default: random)")
    parser.add_argument("--seat", type=int, default=0, help="your seat (0 = player_0)")
    add_table_arguments(parser)
    parser.add_argument("--record", default=None, metavar="PATH", help="write the game to PATH (a JSON Lines game record)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with sigterm_raises():
        try:
            options = table_options(args)
            rules, num_players = options.pop("rules"), options.pop("num_players")
            # A bad name or setting is refused before "Loading"; a missing file is named when it is loaded.
            if is_policy_file(args.opponent) and os.path.isfile(resolve_policy_spec(args.opponent)[1]):
                print(f"Loading the opponent {clipped(args.opponent, 200)} ...", flush=True)
            if args.record is not None:
                from .eval_cli import check_distinct_outputs
                from .records import check_record_path

                check_record_path(args.record)
                check_distinct_outputs(None, args.record, [args.opponent])  # never over the opponent's own file
            game = Game(
                args.opponent, args.seed, rules, args.episode, num_players, args.seat, **options
            )
        except (ValueError, ImportError, FileNotFoundError) as error:
            print(f"okgin-play: error: {error}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as stop:
            print()
            return 128 + int(signal.Signals[getattr(stop, "signal_name", "SIGINT")])
        code = 2  # an unexpected error is raised again once the record is written
        try:
            game.run()
            code = 0  # played to its end, or left with q
        except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: the game is left
            print()
            code = 128 + int(signal.Signals[getattr(stop, "signal_name", "SIGINT")])
        except (ValueError, ImportError, OSError) as error:  # a policy or the terminal failing mid-game
            print(f"okgin-play: error: {error}", file=sys.stderr)
        finally:
            if args.record is not None:
                with signals_ignored(signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C must not stop the write
                    written = _write_record(game, args.record)
                if not written and code in (0, 1):
                    code = 2
    return code


def _write_record(game: Game, path: str) -> bool:
    """Write ``game``'s record to ``path``; False (after a one-line message) if it cannot be written."""
    from .records import write_records

    if not game.round_states:
        print("No round was dealt: no game record written.")
        return True
    try:
        write_records(path, [game.record()])
    except (OSError, ValueError) as error:
        message = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        print(f"okgin-play: error: {message}", file=sys.stderr)
        return False
    print(f"Game record written to {path}.")
    return True


if __name__ == "__main__":
    sys.exit(main())
