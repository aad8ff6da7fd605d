"""Replaying game records through the AEC env, exactly (the package docstring: **Replay**)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..rules.actions import DISCARD_BASE, KNOCK_BASE, action_str
from ..rules.cards import card_str
from ..rules.config import RulesConfig
from ..rules.round import RoundState
from ..rules.showdown import RoundOutcome
from .files import GameRecord, parse_record


class RecordMismatch(ValueError):
    """A record that does not replay; ``game_index``, ``round_index`` and ``action_index`` (from 0;
    None where the difference is not at one round or action) say where it first differs."""

    def __init__(self, game: int, round_index: int | None, action: int | None, message: str):
        self.game_index, self.round_index, self.action_index = game, round_index, action
        where = f"game {game}"
        if round_index is not None:
            where += f", round {round_index}" + (f", action {action}" if action is not None else "")
        super().__init__(f"{where}: {message}")


@dataclass
class ReplayStep:
    """One step of a replay. ``step_index`` 0 is the deal (``action`` and ``seat`` None); step
    ``k`` follows the round's action ``k - 1``, played by ``seat``. ``state``: a copy of the
    ``RoundState`` after it (every hand visible). ``scores_before``: the match totals before the
    round. ``outcome``: the round's ``RoundOutcome`` at the step that ended it, else None."""

    round_index: int
    step_index: int
    action: int | None
    seat: int | None
    state: RoundState
    scores_before: list[int]
    outcome: RoundOutcome | None


class _ShuffleMismatch(Exception):
    """A reshuffle the record does not give (raised inside the engine, reported by the replay)."""


class _RecordedShuffles:
    """Stands in for a round's random generator: stock reshuffle ``k`` deals the record's ``k``-th
    order. ``pile`` is set to the discard pile before each discard (the cards a reshuffle takes)."""

    def __init__(self, orders: Sequence[Sequence[int]]):
        self.orders = [list(order) for order in orders]
        self.used = 0
        self.pile: list[int] = []

    def permutation(self, count: int) -> list[int]:
        k = self.used
        if k == len(self.orders):
            raise _ShuffleMismatch(f"the stock is reshuffled ({k + 1}. time), but the record gives {k} reshuffle order(s)")
        order, under = self.orders[k], self.pile
        if len(under) != count or sorted(order) != sorted(under):
            raise _ShuffleMismatch(
                f"reshuffles[{k}] gives {' '.join(map(card_str, order))}; the discard pile under its top "
                f"holds {' '.join(map(card_str, sorted(under)))}"
            )
        self.used += 1
        position = {card: i for i, card in enumerate(under)}
        return [position[card] for card in reversed(order)]  # the stock lists its top card last


def replay_round(config: RulesConfig, entry: Mapping[str, Any]) -> Iterator[tuple[int | None, int | None, RoundState]]:
    """``(action, seat, state)`` for the deal (``None, None``) and each action of one recorded round
    (``entry``: one of a record's ``rounds``), played on one live ``RoundState`` from the round's
    own deck and dealer, the stock reshuffled in the recorded orders. For a round that ``replay``
    has checked: every action is then legal and the reshuffle orders are those the round draws
    (unchecked, an illegal action raises as ``RoundState.apply`` does)."""
    shuffles = _RecordedShuffles(entry.get("reshuffles", ()))
    state = RoundState(config, entry["deck"], entry["dealer"], rng=shuffles)  # type: ignore[arg-type]
    yield None, None, state
    for action in entry["actions"]:
        seat = state.current
        if DISCARD_BASE <= action < KNOCK_BASE:
            shuffles.pile = list(state.discard_pile)  # the cards a reshuffle after this discard takes
        state.apply(action)
        yield action, seat, state


def replay(record: GameRecord, game: int = 0) -> list[RoundOutcome]:
    """Replay every round of ``record`` (see the module docstring); returns the rounds' outcomes.
    ``game`` is the index that a ``RecordMismatch`` names."""
    return [step.outcome for step in _replay(record, game, copy_states=False) if step.outcome is not None]


def replay_steps(record: GameRecord, game: int = 0) -> Iterator[ReplayStep]:
    """The replay step by step: per round the deal, then one step per action (``ReplayStep``).
    It checks as ``replay`` does, raising ``RecordMismatch`` when it reaches a difference."""
    return _replay(record, game, copy_states=True)


def _replay(record: GameRecord, game: int, copy_states: bool) -> Iterator[ReplayStep]:
    from ..env import raw_env  # noqa: PLC0415 - reading and writing records needs no RL library

    record = _checked_for_replay(record, game)
    try:
        env = raw_env(**record.env)
    except (TypeError, ValueError) as error:
        raise RecordMismatch(game, None, None, f"field env: {error}") from None
    viewer_rng = np.random.default_rng()  # the copies' generator: play from a copy is not the record's
    previous = None  # the match state the previous round left
    next_dealer: int | None = None
    last = len(record.rounds) - 1
    outcome: RoundOutcome | None = None
    for r, entry in enumerate(record.rounds):
        dealer, actions = entry["dealer"], entry["actions"]
        if next_dealer is not None and dealer != next_dealer:
            raise RecordMismatch(game, r, None, f"dealer {dealer} recorded; after round {r - 1} player {next_dealer} deals")
        env.reset(options={"deck": entry["deck"], "dealer": dealer})
        state = env.match.round
        if previous is not None:  # carry the match so far (clone copies all its bookkeeping)
            carried = previous.clone()
            carried.rng, carried.round, carried.outcomes = env.match.rng, state, []
            env.match = carried
        match = env.match
        shuffles = _RecordedShuffles(entry.get("reshuffles", ()))
        state.rng = shuffles
        scores_before = list(match.scores)

        def snapshot() -> RoundState:
            if not copy_states:
                return state
            seen = state.copy()
            seen.rng = viewer_rng
            return seen

        yield ReplayStep(r, 0, None, None, snapshot(), scores_before, None)
        outcome = None
        for k, action in enumerate(actions):
            if state.is_over:
                raise RecordMismatch(game, r, k, f"the round ended at action {k - 1}, yet {len(actions) - k} more are recorded")
            legal = state.legal_actions()
            if action not in legal:
                names = ", ".join(f"{a} ({action_str(a)})" for a in legal)
                raise RecordMismatch(
                    game, r, k, f"action {action} ({action_str(action)}) is not legal for player {state.current}; legal: {names}"
                )
            seat = state.current
            if DISCARD_BASE <= action < KNOCK_BASE:
                shuffles.pile = list(state.discard_pile)
            try:
                env.step(action)
            except _ShuffleMismatch as error:
                raise RecordMismatch(game, r, k, str(error)) from None
            outcome = state.outcome
            yield ReplayStep(r, k + 1, action, seat, snapshot(), scores_before, outcome)
        at = len(actions) - 1 if actions else None
        if outcome is None:
            if r == last and not record.finished:
                if entry["scores_after"] != scores_before:
                    raise RecordMismatch(game, r, at, f"scores_after {entry['scores_after']} recorded, {scores_before} replayed")
                break
            raise RecordMismatch(game, r, at, f"the round is not over after its {len(actions)} recorded actions")
        if r == last and not record.finished:
            raise RecordMismatch(game, r, at, "the record says the game was left unfinished, yet its last round is over")
        if shuffles.used != len(shuffles.orders):
            raise RecordMismatch(game, r, at, f"{len(shuffles.orders)} reshuffle orders recorded; the round reshuffled {shuffles.used} time(s)")
        replayed = outcome.to_dict()
        for key, value in (entry.get("outcome") or {}).items():
            if key in replayed and _plain(value) != _plain(replayed[key]):
                raise RecordMismatch(game, r, at, f"outcome {key}: {value!r} recorded, {replayed[key]!r} replayed")
        previous, scores = match, list(match.scores)
        if entry["scores_after"] != scores:
            raise RecordMismatch(game, r, at, f"scores_after {entry['scores_after']} recorded, {scores} replayed")
        next_dealer = match.dealer
        ended = env.episode == "round" or match.is_over or any(env.truncations.values())
        if ended and r < last:
            raise RecordMismatch(game, r + 1, None, f"the game ended after round {r}, yet {last - r} more round(s) are recorded")
        if not ended and r == last and record.finished:
            raise RecordMismatch(game, r, at, "the record ends here, yet the match goes on (neither won nor truncated)")
    _check_result(record, env, game, outcome)


def _checked_for_replay(record: GameRecord, game: int) -> GameRecord:
    """A checked copy of ``record``: one built by hand (not by ``from_dict`` or ``read_records``),
    or changed since, is checked as a read one is; a wrong field raises ``RecordMismatch`` naming
    the game, and the round and action where the field is one of theirs."""
    try:
        return parse_record(record)
    except TypeError as error:  # not even shaped as a record (extras that are not a dict)
        raise RecordMismatch(game, None, None, f"not a record: {error}") from None
    except ValueError as error:
        place = re.match(r"field rounds\[(\d+)\](?:\.actions\[(\d+)\])?", str(error))
        round_index = None if place is None else int(place[1])
        action = None if place is None or place[2] is None else int(place[2])
        raise RecordMismatch(game, round_index, action, str(error)) from None


def _check_result(record: GameRecord, env: Any, game: int, outcome: RoundOutcome | None) -> None:
    last = len(record.rounds) - 1
    at = len(record.rounds[-1]["actions"]) - 1 if record.rounds[-1]["actions"] else None
    scores = list(env.match.scores)
    if record.scores != scores:
        raise RecordMismatch(game, last, at, f"final scores {record.scores} recorded, {scores} replayed")
    if not record.finished:  # a game left during a round: no winner, not truncated
        truncated, winner = False, None
    else:
        truncated = any(env.truncations.values())
        winner = outcome.winner if env.episode == "round" and outcome is not None else env.match.winner
    for key, replayed in (("truncated", truncated), ("winner", winner)):
        if key in record.extras and record.extras[key] != replayed:
            raise RecordMismatch(game, last, at, f"{key} {record.extras[key]!r} recorded, {replayed!r} replayed")


def _plain(value: Any) -> Any:
    """Lists for tuples, so a recorded JSON list compares equal to the replayed value."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


__all__ = ["RecordMismatch", "ReplayStep", "replay", "replay_round", "replay_steps"]
