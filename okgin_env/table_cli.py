"""The table arguments of every command that deals games (okgin-eval, okgin-play, okgin-web):
the same names, defaults and help, written once.

``add_table_arguments(parser)`` adds ``--rules``, ``--num-players``, ``--target-score`` and the
repeatable ``--rule NAME=VALUE`` (any option of ``RulesConfig``), and ``--episode`` where the
command plays single rounds too; ``table_options(args)`` turns them into the keyword arguments
every env, ``evaluate`` and the web table take (a ``ValueError`` naming a bad ``--rule``).
"""

from __future__ import annotations

import argparse
from typing import Any

from .episode import EPISODES
from .rules.config import OPTION_NAMES, PRESETS, rule_options_of


def add_table_arguments(parser: argparse.ArgumentParser, episode: bool = True) -> None:
    """The table's flags on ``parser``; ``episode``: also ``--episode`` (match or round)."""
    parser.add_argument("--rules", choices=PRESETS, default="classic",
                        help="rules preset: classic (Oklahoma), standard (knock at 10) or penalty (default classic)")
    parser.add_argument("--num-players", type=int, default=None,
                        help="seats: 2 (classic, standard), 2-4 (penalty) (default: the preset's 2)")
    parser.add_argument("--target-score", type=int, default=None, help="match target (default: the preset's 100)")
    parser.add_argument("--rule", action="append", default=[], metavar="NAME=VALUE",
                        help="a rule option of docs/rules.md §10, repeatable, e.g. --rule gin_bonus=20 "
                             f"--rule spade_double=true; the names: {', '.join(OPTION_NAMES[2:])}")
    if episode:
        parser.add_argument("--episode", choices=EPISODES, default="match",
                            help="a game is a whole match or one round (default match)")


def table_options(args: argparse.Namespace) -> dict[str, Any]:
    """``rules``, ``num_players`` and the rule options the flags name."""
    return {"rules": args.rules, "num_players": args.num_players, **rule_options_of(args.rule, args.target_score)}


__all__ = ["add_table_arguments", "table_options"]
