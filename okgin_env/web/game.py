"""The games of ``okgin-web``: one match per session against bots or checkpoints, with no web code.

``WebGame`` drives the AEC environment (``okgin_env.env.raw_env``) for one person in one seat;
the other seats are policies built by ``okgin_env.players.make_player`` from the same specs as
``okgin-eval`` (bot names, ``search:rollouts=64``, ``.pt`` checkpoints). After each of the
person's moves the policies play until it is the person's turn again, or the round ends: the
game then holds the showdown until the person asks for the next round.

What the person is sent (``WebGame.state()``) is built from their own observation
(``env.observe``, decoded by ``okgin_env.observation.view``) plus public facts: the seats' names,
the dealer, the cards each seat holds (a count), the round number, the match totals, the moves
made at the table this round as the table saw them (a card drawn from the stock is named only to
the one who drew it; a knock discard is face down), and, once a round is over, its showdown
(``RoundOutcome``: every hand is laid out then, but the knock discard stays face down: only the
knocker is sent it, as ``describe_outcome`` never tells it). Never the stock, never another hand
during play.

Every move is checked here against the legal actions of the person's observation: a move that
is no action id, one that is not legal now, one made during a showdown or after the match is a
``GameError`` with an HTTP status (400 or 409) and a message naming the legal moves.

``GameStore`` keeps many games at once, each under a random session id, with a lock per game.
Past ``max_games`` a game is dropped to make room, least recently used first among those nobody is
playing (never moved in, or over); a match in progress goes only when every kept game is one, so
that a burst of new sessions (a script, a page opened many times) cannot push out a match that a
person is playing while idle ones remain.

With ``record_games`` every match played to its end is appended to that file by one background
thread: a slow or stuck file (a full network disk) delays only the records, never a request.
"""

from __future__ import annotations

import queue
import secrets
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..echo import shown
from ..env import raw_env
from ..players import check_player, make_player, player_label
from ..observation import view
from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, NUM_ACTIONS, PASS, TAKE_DISCARD, action_str
from ..rules.cards import from_mask
from ..rules.config import check_seed, is_int
from ..rules.round import RoundState
from . import payload

DEFAULT_MAX_GAMES = 64
#: Finished matches waiting for the record writer; past this many (a file that takes no writes)
#: a match is reported and not recorded, so that memory stays bounded.
MAX_PENDING_RECORDS = 1000


class GameError(ValueError):
    """A request the game refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 409):
        super().__init__(message)
        self.status = status


class OpponentError(RuntimeError):
    """A policy of the table failed or chose an illegal move (a server-side fault, HTTP 500)."""


class WebGame:
    """One match: the person plays ``seat``, ``opponent`` (a policy spec) every other seat.

    ``seed`` deals every round and seeds the policies (``None``: fresh randomness); ``deck`` and
    ``dealer`` fix the first round as ``env.reset(options=...)`` does (for tests and demos).
    """

    def __init__(
        self,
        opponent: Any = "simple",
        *,
        rules: str = "classic",
        num_players: int | None = None,
        seat: int = 0,
        seed: int | None = None,
        deck: Sequence[int | str] | None = None,
        dealer: int | None = None,
        game_id: str = "",
        on_match_end: Any = None,
        **rule_options: Any,
    ):
        self.env = raw_env(rules=rules, num_players=num_players, **rule_options)
        config = self.env.config
        n = config.num_players
        if not is_int(seat) or not 0 <= seat < n:
            raise ValueError(f"seat must be in 0..{n - 1}, got {seat!r}")
        self.seat = int(seat)
        self.game_id = game_id
        self.lock = threading.Lock()
        self.human = self.env.possible_agents[self.seat]
        label = player_label(opponent)
        self.players = ["you" if s == self.seat else label for s in range(n)]
        self.policies = {
            agent: make_player(opponent, seed=None if seed is None else seed * 10 + s, rules=config)
            for s, agent in enumerate(self.env.possible_agents)
            if s != self.seat
        }
        options = {key: value for key, value in (("deck", deck), ("dealer", dealer)) if value is not None}
        self.env.reset(seed=seed, options=options)
        self.seed = seed
        self.opponent_label = label
        self.round_states: list[RoundState] = [self.env.round_state]  # every round dealt (the game record's)
        self.on_match_end = on_match_end  # called once with this game when its match ends
        self._ended = False
        self.round_number = 1
        self.log: list[dict[str, Any]] = []
        self.showdown: dict[str, Any] | None = None
        self.finished_round: RoundState | None = None  # the round whose showdown is held (server side only)
        # The person has moved and the match goes on: kept before idle games (GameStore); set under
        # ``lock``, read without it (a plain attribute).
        self.in_progress = False
        self._advance()
        self._check_end()

    # ------------------------------------------------------------------ the match
    @property
    def match_over(self) -> bool:
        env = self.env
        return all(env.terminations.values()) or any(env.truncations.values())

    def move(self, action: Any) -> None:
        """Play the person's move (an action id) and let the table play until the person's next turn."""
        legal = self._legal()
        if not is_int(action) or not 0 <= action < NUM_ACTIONS:
            raise GameError(f"a move is an action id (an int in 0..{NUM_ACTIONS - 1}), got {shown(action)}; "
                            f"legal now: {_names(legal)}", status=400)
        if not legal:
            raise GameError(self._why_no_move())
        if action not in legal:
            raise GameError(f"move {action} ({action_str(int(action))}) is not legal now; legal: {_names(legal)}")
        self._play(int(action))
        self._advance()
        self.in_progress = not self.match_over
        self._check_end()

    def next_round(self) -> None:
        """Leave the showdown: the next round's first moves are played up to the person's turn."""
        if self.match_over:
            raise GameError("the match is over; start a new match")
        if self.showdown is None:
            raise GameError("the round is still being played; next round comes after its showdown")
        self.showdown = None
        self.finished_round = None
        self.log = []
        self.round_number += 1
        self._advance()
        self.in_progress = not self.match_over
        self._check_end()

    def _check_end(self) -> None:
        if self.match_over and not self._ended:
            self._ended = True
            if self.on_match_end is not None:
                self.on_match_end(self)

    def record(self) -> Any:
        """The match as an ``okgin_env.records.GameRecord`` (the person's seat is named "human")."""
        from ..records import game_record

        env = self.env
        truncated = any(env.truncations.values())
        winner = env.match.winner if self.match_over and not truncated else None
        players = ["human" if s == self.seat else self.opponent_label for s in range(env.config.num_players)]
        return game_record(env.config, players, self.round_states, env.match.scores, episode=env.episode,
                           reward=env.reward_mode, max_rounds=env.max_rounds, winner=winner,
                           finished=self.match_over, truncated=truncated, seed=self.seed)

    def _legal(self) -> list[int]:
        if self.match_over or self.showdown is not None or self.env.agent_selection != self.human:
            return []
        return view(self.env.observe(self.human)).legal

    def _why_no_move(self) -> str:
        if self.match_over:
            return "the match is over; start a new match"
        return "the round is over: see the showdown, then ask for the next round"

    def _advance(self) -> None:
        """The other seats play until the person is to act, the round ends or the match does."""
        env = self.env
        while not self.match_over and self.showdown is None and env.agent_selection != self.human:
            agent = env.agent_selection
            try:
                action = int(self.policies[agent].act(env.observe(agent)))
                self._play(action)
            except (ValueError, TypeError) as error:
                raise OpponentError(f"{agent} ({self.players[env.agent_name_mapping[agent]]}) failed: {error}") from error

    def _play(self, action: int) -> None:
        env = self.env
        state = env.round_state
        seat = state.current
        mine = seat == self.seat
        # The face-up card the move involves, read before the move (public: the discard top).
        seen: int | None = None
        if action in (TAKE_DISCARD, PASS):
            seen = state.discard_top
        elif DISCARD_BASE <= action < KNOCK_BASE:
            seen = action - DISCARD_BASE
        elif action >= KNOCK_BASE and mine:
            seen = action - KNOCK_BASE
        hand_before = state.hands[self.seat]
        outcome_before = env.last_round_outcome
        env.step(action)
        outcome = env.last_round_outcome
        ended = outcome is not None and outcome is not outcome_before
        if mine and action == DRAW_STOCK and not ended:
            drawn = from_mask(env.round_state.hands[self.seat] & ~hand_before)  # the person's own new card
            seen = drawn[0] if drawn else None
        self.log.append(payload.table_event(seat, action, card_seen=seen, private=mine))
        if ended:
            assert outcome is not None
            self.showdown = payload.showdown(outcome, list(env.scores.values()), shown_to=self.seat)
            self.finished_round = state
            if not self.match_over:
                self.round_states.append(env.round_state)  # the next round, already dealt

    # ------------------------------------------------------------------ what the person sees
    def state(self) -> dict[str, Any]:
        """Everything the person may see now (see the module docstring), as JSON values."""
        env = self.env
        result: dict[str, Any] = {
            "game_id": self.game_id,
            "seat": self.seat,
            "num_players": env.config.num_players,
            "players": list(self.players),
            "rules": env.config.rules,
            "target_score": env.config.target_score,
            "round": self.round_number,
            "log": list(self.log),
            "match_over": self.match_over,
            "truncated": any(env.truncations.values()),
            "winner": env.match.winner if self.match_over else None,
            "showdown": self.showdown,
            "table": None,
        }
        if self.showdown is not None:
            result["scores"] = list(self.showdown["scores_after"])
            return result
        observation = env.observe(self.human)
        seen = view(observation)
        n = seen.num_players
        seat_of = [(self.seat + k) % n for k in range(n)]  # observer-relative index -> seat
        scores = [0] * n
        for k, value in enumerate(seen.scores):
            scores[seat_of[k]] = value
        result["scores"] = scores
        result["table"] = {
            "phase": payload.PHASE_NAMES[seen.phase],
            "to_act": None if seen.acting_seat is None else seat_of[seen.acting_seat],
            "dealer": (self.seat - seen.seat_from_dealer) % n,
            "hand": payload.hand_layout(from_mask(seen.hand)),
            "taken_card": payload.card(seen.taken_card),
            "discard_top": payload.card(seen.discard_top),
            "discard_pile": payload.cards(from_mask(seen.discard_pile)),
            "upcard": payload.card(seen.upcard),
            "knock_limit": seen.knock_limit,
            "stock_size": seen.stock_size,
            "reshuffles": seen.reshuffles,
            "opponents": [
                {
                    "seat": seat_of[k],
                    "name": self.players[seat_of[k]],
                    # Public: between the person's decisions every other seat holds a full hand.
                    "cards": env.config.hand_size,
                    "known": payload.cards(from_mask(seen.opponent_known[k - 1])),
                    "passed": payload.cards(from_mask(seen.opponent_passed[k - 1])),
                }
                for k in range(1, n)
            ],
            "moves": [payload.move(a, seen.hand, seen.discard_top) for a in seen.legal],
        }
        return result


def _names(legal: list[int]) -> str:
    return ", ".join(f"{a} ({action_str(a)})" for a in legal) or "none"


def _record_error(path: str | None, error: Any) -> None:
    print(f"okgin-web: error: cannot record the match in {path}: {error}", file=sys.stderr, flush=True)


class GameStore:
    """Many games at once, each under a random session id (``create``, ``get``).

    ``opponent`` is the default spec (checked at once with ``okgin_env.players.check_player``); a game may also be
    started against any plain bot name. Game ``k`` (0, 1, ...) of a store with ``seed`` s is
    dealt from seed ``s + k``; ``deck``/``dealer`` fix every game's first round (tests, demos).
    Past ``max_games`` the least recently used game that nobody is playing is dropped (see the
    module docstring).
    """

    def __init__(
        self,
        opponent: Any = "simple",
        *,
        seed: int | None = None,
        max_games: int = DEFAULT_MAX_GAMES,
        deck: Sequence[int | str] | None = None,
        dealer: int | None = None,
        record_games: str | None = None,
        **game_options: Any,
    ):
        from ..bots import BOT_NAMES
        from ..records import check_record_path

        probe = raw_env(**{k: v for k, v in game_options.items() if k != "seat"})  # checks the rule options
        check_player(opponent, probe.config)
        check_seed(seed)
        if not is_int(max_games) or max_games < 1:
            raise ValueError(f"max_games must be an int >= 1, got {max_games!r}")
        self.default_opponent = opponent
        self.opponents = list(dict.fromkeys([player_label(opponent), *BOT_NAMES]))
        self._specs = {player_label(opponent): opponent, **{name: name for name in BOT_NAMES if name != player_label(opponent)}}
        self.seed = seed
        self.max_games = int(max_games)
        self.first_deal = {"deck": deck, "dealer": dealer}
        self.game_options = game_options
        self._games: OrderedDict[str, WebGame] = OrderedDict()
        self._lock = threading.Lock()
        self._created = 0
        # okgin-web --record: every match played to its end is appended to this file (a
        # regular one: opening a FIFO nobody reads would block the writer for ever).
        self.record_games = None if record_games is None else check_record_path(record_games, regular=True, appending=True)
        self._records: queue.Queue = queue.Queue(MAX_PENDING_RECORDS)
        self._records_pending = 0  # queued or being written; under _records_done
        self._records_done = threading.Condition()
        self._record_writer: threading.Thread | None = None

    def create(self, opponent: str | None = None) -> WebGame:
        if opponent is None:
            spec = self.default_opponent
        elif isinstance(opponent, str) and opponent in self._specs:
            spec = self._specs[opponent]
        else:
            raise GameError(f"unknown opponent {shown(opponent)}; choose one of: {', '.join(self.opponents)}", status=400)
        with self._lock:
            number = self._created
            self._created += 1
        seed = None if self.seed is None else self.seed + number
        game_id = secrets.token_urlsafe(12)
        on_end = self._write_record if self.record_games is not None else None
        game = WebGame(spec, seed=seed, game_id=game_id, on_match_end=on_end, **self.first_deal, **self.game_options)
        with self._lock:
            self._games[game_id] = game
            while len(self._games) > self.max_games:
                del self._games[self._game_to_drop(keep=game_id)]
        return game

    def _write_record(self, game: WebGame) -> None:
        """Queue ``game``'s finished match for the record writer (started on the first); the
        request goes on at once. A match that cannot be recorded is reported on stderr in one line."""
        try:
            record = game.record()  # now: the game may be played on after this request
        except ValueError as error:
            _record_error(self.record_games, error)
            return
        with self._records_done:
            if self._record_writer is None:
                self._record_writer = threading.Thread(target=self._record_loop, name="okgin-web records", daemon=True)
                self._record_writer.start()
            try:
                self._records.put_nowait(record)
            except queue.Full:
                _record_error(self.record_games, f"{MAX_PENDING_RECORDS} matches are waiting: the file takes no writes")
                return
            self._records_pending += 1

    def _record_loop(self) -> None:
        from ..records import write_records

        while True:
            record = self._records.get()
            try:
                write_records(self.record_games, [record], append=True)
            except (OSError, ValueError) as error:
                _record_error(self.record_games, error)
            finally:
                with self._records_done:
                    self._records_pending -= 1
                    self._records_done.notify_all()

    def flush_records(self, timeout: float | None = None) -> int:
        """Wait until every finished match is written (at most ``timeout`` seconds); how many are not."""
        with self._records_done:
            self._records_done.wait_for(lambda: self._records_pending == 0, timeout)
            return self._records_pending

    def _game_to_drop(self, keep: str) -> str:
        """The least recently used game that is not a match in progress, else the least recently
        used match in progress; never ``keep`` (the game just made)."""
        others = [(key, game) for key, game in self._games.items() if key != keep]
        return next((key for key, game in others if not game.in_progress), others[0][0])

    def get(self, game_id: str) -> WebGame:
        with self._lock:
            game = self._games.get(game_id)
            if game is None:
                raise GameError(
                    f"no game {shown(game_id)}: it never existed or was dropped to make room "
                    f"(at most {self.max_games} games are kept); start a new match", status=404)
            self._games.move_to_end(game_id)
            return game

    def __len__(self) -> int:
        return len(self._games)
