"""What ``okgin_env.evaluate`` reports: per-pair statistics, the table, the JSON and CSV files.

``evaluate(...)`` returns an ``EvalResults``; ``PairResult`` holds one pair's numbers (every
field is described in ``okgin_env.evaluate``'s docstring). ``table()`` fits 100 columns for
bot names (the win rate with its interval, points per round and timing); ``table(wide=True)``
adds rounds per game, the ways rounds were won and decisions per game.
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .output_folder import prepare_output_folder
from .policy_loaders import is_policy_file

Z95 = 1.959963984540054  # two-sided 95% normal quantile
KINDS = ("gin", "knock", "undercut")


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default); ``(0, 1)`` for no trials."""
    if trials <= 0:
        return 0.0, 1.0
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be in 0..{trials}, got {successes}")
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class PairResult:
    """Policy A against policy B (see ``okgin_env.evaluate``'s docstring for every field)."""

    a: str
    b: str
    games: int = 0
    wins_a: int = 0
    wins_b: int = 0
    draws: int = 0
    win_rate_a: float = float("nan")
    ci_low: float = 0.0
    ci_high: float = 1.0
    num_players: int = 2
    parity: float = 0.5  # A's win share if it played as well as B: 1 / num_players
    rounds: int = 0
    points_per_round_a: float = float("nan")
    penalty_per_round_a: float = float("nan")  # penalty preset: points charged to A per round
    penalty_per_round_field: float = float("nan")  # ... and to each of B's seats, on average
    rounds_per_game: float = float("nan")
    rounds_won_a: int = 0  # single hands won by A (a drawn round is won by nobody)
    round_win_rate_a: float = float("nan")  # rounds_won_a / rounds: per hand, next to the per-match win rate
    round_ci_low: float = 0.0
    round_ci_high: float = 1.0
    gin_rate_a: float = 0.0
    gin_rate_b: float = 0.0
    knock_rate_a: float = 0.0
    knock_rate_b: float = 0.0
    undercut_rate_a: float = 0.0
    undercut_rate_b: float = 0.0
    draw_rate: float = 0.0
    decisions_per_game_a: float = float("nan")
    decisions_per_game_b: float = float("nan")
    ms_per_decision_a: float = float("nan")
    ms_per_decision_b: float = float("nan")

    @classmethod
    def from_records(cls, a: str, b: str, records: list[dict[str, Any]]) -> "PairResult":
        r = cls(a=a, b=b)
        r.games = len(records)
        r.wins_a = sum(rec["result"] == "a" for rec in records)
        r.wins_b = sum(rec["result"] == "b" for rec in records)
        r.draws = r.games - r.wins_a - r.wins_b
        decided = r.wins_a + r.wins_b
        if decided:
            r.win_rate_a = r.wins_a / decided
        r.ci_low, r.ci_high = wilson_interval(r.wins_a, decided)
        if records:
            r.num_players = records[0].get("num_players", 2)
            r.parity = 1 / r.num_players
        r.rounds = sum(rec["rounds"] for rec in records)
        if r.rounds:
            r.points_per_round_a = sum(rec["a_points"] for rec in records) / r.rounds
            if records[0].get("penalty_scoring"):
                r.penalty_per_round_a = sum(rec["a_penalty"] for rec in records) / r.rounds
                r.penalty_per_round_field = sum(rec["b_penalty"] for rec in records) / r.rounds / (r.num_players - 1)
            for kind in KINDS:
                for side in "ab":
                    setattr(r, f"{kind}_rate_{side}", sum(rec[f"{kind}_{side}"] for rec in records) / r.rounds)
            r.draw_rate = sum(rec["round_draws"] for rec in records) / r.rounds
            r.rounds_won_a = sum(rec[f"{kind}_a"] for rec in records for kind in KINDS)
            r.round_win_rate_a = r.rounds_won_a / r.rounds
            r.round_ci_low, r.round_ci_high = wilson_interval(r.rounds_won_a, r.rounds)
        if r.games:
            r.rounds_per_game = r.rounds / r.games
            for side in "ab":
                count = sum(rec[f"decisions_{side}"] for rec in records)
                setattr(r, f"decisions_per_game_{side}", count / r.games)
                if count:
                    setattr(r, f"ms_per_decision_{side}", 1000 * sum(rec[f"seconds_{side}"] for rec in records) / count)
        return r


# The table's columns: (header, cell(pair, name), shown by default: True, False, or "multi" /
# "penalty": when some pair has more than two players / penalty scoring; "matches": when the games
# are matches, whose rounds are then counted per hand too); ``{games}`` is
# "matches" or "rounds" and ``name`` maps a policy's name to the text the table shows for it.
_COLUMNS: list[tuple[str, Any, bool | str]] = [
    ("A vs B", lambda p, name: f"{name[p.a]} vs {name[p.b]}", True),
    ("{games}", lambda p, _: str(p.games), True),
    ("A-B-draw", lambda p, _: f"{p.wins_a}-{p.wins_b}-{p.draws}", True),
    ("A win% [95% CI]", lambda p, _: f"{100 * p.win_rate_a:.1f} [{100 * p.ci_low:.1f}, {100 * p.ci_high:.1f}]", True),
    ("A round% [95% CI]", lambda p, _: f"{100 * p.round_win_rate_a:.1f} [{100 * p.round_ci_low:.1f}, {100 * p.round_ci_high:.1f}]",
     "matches"),
    ("parity%", lambda p, _: f"{100 * p.parity:.1f}", "multi"),
    ("pts/round A", lambda p, _: f"{p.points_per_round_a:+.2f}", True),
    ("penalty/round A/field", lambda p, _: f"{p.penalty_per_round_a:.2f}/{p.penalty_per_round_field:.2f}", "penalty"),
    ("rounds/game", lambda p, _: f"{p.rounds_per_game:.2f}", False),
    ("gin% A/B", lambda p, _: f"{100 * p.gin_rate_a:.1f}/{100 * p.gin_rate_b:.1f}", False),
    ("knock% A/B", lambda p, _: f"{100 * p.knock_rate_a:.1f}/{100 * p.knock_rate_b:.1f}", False),
    ("undercut% A/B", lambda p, _: f"{100 * p.undercut_rate_a:.1f}/{100 * p.undercut_rate_b:.1f}", False),
    ("draw%", lambda p, _: f"{100 * p.draw_rate:.1f}", False),
    ("decisions/game A/B", lambda p, _: f"{p.decisions_per_game_a:.1f}/{p.decisions_per_game_b:.1f}", False),
    ("ms/decision A/B", lambda p, _: f"{p.ms_per_decision_a:.2f}/{p.ms_per_decision_b:.2f}", True),
]


#: The columns that mean something before any game finished (the others show "-" then).
_ALWAYS_SHOWN = ("A vs B", "{games}", "A-B-draw")


@dataclass
class EvalResults:
    """All pairs of one evaluation, with the settings that produced them.

    ``settings["interrupted"]`` is the signal's name (e.g. ``"SIGINT"``) when the run was stopped
    early; the pairs then count the games that had finished.
    """

    pairs: list[PairResult]
    settings: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def pair(self, a: str, b: str) -> PairResult:
        for result in self.pairs:
            if (result.a, result.b) == (a, b):
                return result
        raise KeyError(f"no pair {a!r} vs {b!r}; pairs: {[(p.a, p.b) for p in self.pairs]}")

    def table(self, wide: bool = False) -> str:
        """A fixed-width table, one line per pair (``wide``: every column).

        A policy file is shown by its file name when those are distinct (``okgin_classic.pt``
        for ``checkpoints/okgin_classic.pt``); the JSON and CSV keep the names in full.
        """
        games = "matches" if self.settings.get("episode", "match") == "match" else "rounds"
        shown_when = {True: True, False: wide, "matches": games == "matches",
                      "multi": any(p.num_players > 2 for p in self.pairs),
                      "penalty": any(not math.isnan(p.penalty_per_round_a) for p in self.pairs)}
        # wide adds the columns shown on request; those that mean nothing for these games (a
        # penalty or parity column at a two-player classic table) stay out in every form.
        columns = [(head.format(games=games), cell, counted) for head, cell, default in _COLUMNS
                   if shown_when[default] for counted in [head not in _ALWAYS_SHOWN]]
        head = [name for name, _, _ in columns]
        shown = _short_names([name for p in self.pairs for name in (p.a, p.b)])
        # A pair with no finished game (a run stopped early) has counts only: no nan, no empty interval.
        rows = [[cell(p, shown) if p.games or not counted else "-" for _, cell, counted in columns] for p in self.pairs]
        widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [head, *rows]]
        lines.insert(1, "  ".join("-" * width for width in widths))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"settings": self.settings, "pairs": [asdict(p) for p in self.pairs]}

    def write(self, prefix: str) -> list[str]:
        """Write ``prefix.json`` and ``prefix.csv``; returns the paths."""
        folder = os.path.dirname(prefix)
        if folder:
            os.makedirs(folder, exist_ok=True)
        json_path, csv_path = output_paths(prefix)
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump(self.to_dict(), handle, indent=2, default=_json_default)
            handle.write("\n")
        names = list(asdict(self.pairs[0])) if self.pairs else [f.name for f in PairResult.__dataclass_fields__.values()]
        with open(csv_path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=names)
            writer.writeheader()
            for p in self.pairs:
                writer.writerow(asdict(p))
        return [json_path, csv_path]


def _short_names(names: list[str]) -> dict[str, str]:
    """Each name as the table shows it: a policy file's path by its file name, if that is unambiguous."""
    shown = {name: os.path.basename(name) if is_policy_file(name) else name for name in names}
    return shown if len(set(shown.values())) == len(shown) else {name: name for name in names}


def output_paths(prefix: str) -> tuple[str, str]:
    return f"{prefix}.json", f"{prefix}.csv"


def check_output_prefix(prefix: str) -> None:
    """A ValueError now, before any game, if ``write(prefix)`` could not write its files.

    Creates the folder (as ``write`` would) and probes it with a temporary file, which also
    catches read-only file systems and a path through a regular file.
    """
    if not os.path.basename(prefix):  # 'out/' would write the hidden files out/.json and out/.csv
        raise ValueError(f"--out {prefix!r} ends in a folder: give a file prefix, e.g. {os.path.join(prefix, 'results')!r} "
                         "(which writes results.json and results.csv there)")
    folder = os.path.dirname(prefix) or "."
    prepare_output_folder(folder, f"cannot write results to {prefix!r}")
    for path in output_paths(prefix):
        if os.path.isdir(path):
            raise ValueError(f"cannot write results to {prefix!r}: {path!r} is a folder")
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise ValueError(f"cannot write results to {prefix!r}: {path!r} is not writable")


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return str(value)
