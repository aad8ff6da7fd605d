"""``BatchEnv``: ``N`` independent games of Oklahoma Gin stepped together, arrays in and out.

Every game is one reference engine state (``MatchState`` with its ``RoundState``), so the rules
are exactly those of ``okgin_env.env``; what is batched is everything around them: actions come
in as one array and are checked against the current masks in one numpy call; each game's
transition is then ``MatchState.apply_unchecked`` (what ``apply`` does after its legality check,
which the mask check replaces); and the observation and action mask of the seat to act in every
game are written straight into ``(N, obs_size)`` float32 / ``(N, 107)`` int8 arrays by the
observation codec's ``PackedEncoder`` (a few ints per game, one ``np.unpackbits`` per batch; the
legal actions are the rules' own ``RoundState.legal_parts``).

* ``reset(seed=None, options=None) -> BatchStep`` and ``step(actions, games=None) -> BatchStep``
  where ``BatchStep = (seats, observations, action_masks, rewards, dones, infos)``:
  ``seats`` (M,) int64 — the seat to act in each game; ``observations`` (M, obs_size) float32 —
  that seat's observation, in exactly the layout of the AEC env (``okgin_env.observation``);
  ``action_masks`` (M, 107) int8; ``rewards`` (M, num_players) float32 — what the AEC env's
  ``env.rewards`` hold after that step (``okgin_env.episode``); ``dones`` (M,) bool — the episode
  (a round with ``episode="round"``, else a match) ended with this action: terminated, or
  truncated by ``max_rounds`` (default 200; then ``infos["truncated"][j]`` is True, see below).
* ``step(actions, games=None)``: ``actions`` (M,) ints, one per game in ``games`` (default:
  every game, M = N). Stepping a subset lets different policies act in different games.
  Every action is checked against the game's legal actions before any game is changed; an
  illegal one raises ``ValueError`` naming the game, the action and the legal actions.
* **Auto-reset, "same step"**: a game whose episode ends in ``step`` is reset in that same
  call; the returned seat, observation and mask are those of the new episode, and
  ``infos["final_obs"][j]`` (with the boolean mask ``infos["_final_obs"]``, as Gymnasium vector
  envs do) holds the finished episode's last observation for **every** seat, shape
  ``(num_players, obs_size)`` — what ``env.observe(agent)`` returns after termination (hands
  shown at the showdown). ``infos["round_outcome"][j]`` (mask ``infos["_round_outcome"]``) is the
  ``RoundOutcome.to_dict()`` of every round that ended in the step, as the AEC env's
  ``infos[agent]["round_outcome"]``. ``infos["truncated"]`` (M,) bool (and the same mask
  ``infos["_truncated"]``): the games whose match ended undecided after ``max_rounds`` rounds
  (PettingZoo/Gymnasium truncation; their ``dones`` is True too, and ``final_obs`` is given).
  Info arrays are indexed like the returned rows (position ``j`` is game ``games[j]``); keys are
  present only when some game has them. With a house rule of docs/rules.md §11 on,
  ``infos["match_bonus"][j]`` (mask ``infos["_match_bonus"]``) is the ``MatchBonus.to_dict()``
  of a match that ended in the step (its ``scores`` are the final totals, bonuses included, as
  the AEC env's ``scores``), and with ``reward="points"`` its zero-sum reward is in ``rewards``.
* **Seeding**: ``reset(seed=s)`` seeds game ``i`` with ``gymnasium.utils.seeding.np_random(s + i)``,
  which is exactly what ``raw_env.reset(seed=s + i)`` does (the convention of Gymnasium's
  vector envs). Each game keeps its generator for every later deal, stock reshuffle and
  auto-reset, so game ``i`` plays the same sequence of deals as ``raw_env`` given
  ``reset(seed=s + i)`` and then ``reset()`` after each episode, for the same actions.
  ``reset()`` without a seed continues each game's generator (fresh OS entropy the first time).
  ``options={"deck": decks, "dealer": dealers}`` fixes the first round of every game (``decks``:
  N decks of 52 card ids/texts, top first, or ``None`` per game; ``dealers``: N seats, or
  ``None`` per game, or one seat for every game), like ``raw_env.reset(options={"deck": ...,
  "dealer": ...})``. The seed is None or a non-negative int (Python or numpy).
* ``observe(seats, games=None) -> (observations, action_masks)`` — any seat's observation (a mask
  of zeros for a seat that is not to act), e.g. ``observe(0)`` or ``observe(array_of_seats)``.
* Read-only state: ``seats``, ``observations``, ``action_masks`` (copies of the latest of every
  game), ``latest(games=None)`` (the same without copying: read-only views, valid until the next
  call), ``round_states(games)`` and ``matches`` (the engine states: hidden information, for
  scripted opponents and tools, not agents).

The plain engine stays the reference: ``tests/test_vector.py`` checks, step by step on thousands
of seeded games, that the batch gives the AEC env's masks, observations, rewards, terminations,
round outcomes and final observations. No JIT is used (numba is not a dependency): the per-game
work left in Python is the reference engine's own transition plus packing a dozen ints, and the
rest is a handful of numpy calls per batch; ``benchmarks/bench_vector.py`` measures it against
OpenSpiel. Each ``RoundState`` keeps its ``history``; each ``MatchState``'s ``outcomes`` list is
emptied after every round unless ``keep_outcomes=True`` (the dicts are in ``infos``).
``observation_space`` is finite (``okgin_env.episode.observation_bounds``). With
``observation="features"`` every observation (``final_obs`` and ``observe`` too) is followed by
the solver features of ``okgin_env.features``, as the AEC env's, computed from the packed
observation words (no decoding) with one numpy pass per batch.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gymnasium
import numpy as np
from gymnasium.utils import seeding

from .episode import (
    DEFAULT_MAX_ROUNDS,
    MATCH_BONUS_INFO,
    RESET_OPTIONS,
    check_flag,
    check_max_rounds,
    check_options,
    check_reset_options,
    check_seed,
    end_of_round,
    observation_bounds,
    seat_observation,
)
from .features import fill_features, parts_of_words
from .observation import PackedEncoder, check_observation, layout_for
from .rules.actions import NUM_ACTIONS, action_str
from .rules.config import RulesConfig, is_int, make_config
from .rules.match import MatchState
from .rules.round import Phase, RoundState, check_deck

_DISCARD = Phase.DISCARD  # (an Enum member lookup is slow: not in the per-game loop)
OWN_OPTIONS = ("rules", "num_players", "episode", "reward", "max_rounds", "copy", "keep_outcomes", "observation")


class BatchStep(NamedTuple):
    """What ``BatchEnv.reset`` and ``BatchEnv.step`` return (rows in the order of the stepped games)."""

    seats: np.ndarray  # (M,) int64: seat to act
    observations: np.ndarray  # (M, obs_size) float32: that seat's observation
    action_masks: np.ndarray  # (M, 107) int8
    rewards: np.ndarray  # (M, num_players) float32: rewards of this step, per seat
    dones: np.ndarray  # (M,) bool: the episode ended in this step (the game was reset); infos["truncated"] says which by max_rounds
    infos: dict[str, Any]


def _check_games_arg(games: Any, num_games: int) -> np.ndarray | None:
    if games is None:
        return None
    idx = np.asarray(games)
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise ValueError(f"games must be a 1-d array of game indices, got {idx.dtype} array of shape {idx.shape}")
    idx = idx.astype(np.int64, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= num_games):
        raise ValueError(f"game indices must be in 0..{num_games - 1}")
    if np.unique(idx).size != idx.size:
        raise ValueError("game indices must not repeat")
    return idx


def _read_only(array: np.ndarray) -> np.ndarray:
    out = array.view()
    out.flags.writeable = False
    return out


def add_info(infos: dict[str, Any], key: str, j: int, value: Any, m: int) -> None:
    """Gymnasium's vector info style: ``infos[key]`` an object array, ``infos["_" + key]`` a bool mask."""
    if key not in infos:
        infos[key] = np.full(m, None, dtype=object)
        infos["_" + key] = np.zeros(m, dtype=bool)
    infos[key][j] = value
    infos["_" + key][j] = True


class BatchEnv:
    """``num_games`` independent games of Oklahoma Gin stepped together (see the module docstring).

    Options are those of ``okgin_env.env``: ``rules``, ``num_players`` (None: the preset's or the
    config's own), ``episode``, ``reward``, ``max_rounds`` (default 200) and every rule option. ``copy=False`` returns from a full-batch ``step``/``reset`` buffers that the
    next call overwrites, instead of fresh copies (what the caller writes into them changes nothing
    in the games: legality is checked against the batch's own masks). ``keep_outcomes=True``
    keeps each match's ``outcomes`` list (by default it is emptied after each round, after its
    dict went into ``infos``, so long matches do not grow memory).
    """

    def __init__(
        self,
        num_games: int,
        rules: str | RulesConfig = "classic",
        num_players: int | None = None,
        episode: str = "match",
        reward: str = "points",
        max_rounds: int | None = DEFAULT_MAX_ROUNDS,
        copy: bool = True,
        keep_outcomes: bool = False,
        observation: str = "cards",
        **rule_options: Any,
    ):
        if not is_int(num_games) or num_games < 1:
            raise ValueError(f"num_games must be a positive int, got {num_games!r}")
        check_options(rule_options, episode, reward, OWN_OPTIONS)
        self.observation = check_observation(observation)
        self._features = self.observation == "features"
        self.copy = check_flag("copy", copy)
        self.keep_outcomes = check_flag("keep_outcomes", keep_outcomes)
        self.max_rounds = check_max_rounds(max_rounds)
        self.config = make_config(rules, num_players=num_players, **rule_options)
        self.num_games = int(num_games)
        self.num_players = self.config.num_players
        self.episode = episode
        self.reward_mode = reward
        self._encoder = PackedEncoder(self.num_players, self.config.target_score)
        self.obs_size = layout_for(self.num_players, self.observation).size
        n, size = self.num_players, self.obs_size
        low, high = observation_bounds(self.config, self.observation)
        self.observation_space = gymnasium.spaces.Box(low=low, high=high, dtype=np.float32)
        self.action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self._obs = np.zeros((self.num_games, size), dtype=np.float32)
        self._masks = np.zeros((self.num_games, NUM_ACTIONS), dtype=np.int8)  # legality: never handed out
        # copy=False hands out this twin of ``_masks`` instead, so a caller's write cannot change legality.
        self._masks_out = np.zeros_like(self._masks) if not self.copy else None
        self._seats = np.zeros(self.num_games, dtype=np.int64)
        self._scores = np.zeros((self.num_games, n), dtype=np.float64)  # match totals (observation scores)
        self._rngs: list[np.random.Generator] | None = None
        self._matches: list[MatchState] = []
        self._rounds: list[RoundState] = []

    # ------------------------------------------------------------------ read-only views
    @property
    def seats(self) -> np.ndarray:
        """(N,) the seat to act in every game."""
        self._require_reset()
        return self._seats.copy()

    @property
    def observations(self) -> np.ndarray:
        """(N, obs_size) the latest observation of every game's acting seat."""
        self._require_reset()
        return self._obs.copy()

    @property
    def action_masks(self) -> np.ndarray:
        """(N, 107) int8: the current action mask of every game's acting seat."""
        self._require_reset()
        return self._masks.copy()

    def latest(self, games: Any = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(seats, observations, action_masks)`` of the seat to act: for every game as read-only
        views without a copy (valid until the next ``step``/``reset``), or the rows of ``games``."""
        self._require_reset()
        idx = _check_games_arg(games, self.num_games)
        if idx is None:
            return _read_only(self._seats), _read_only(self._obs), _read_only(self._masks)
        return self._seats[idx], self._obs[idx], self._masks[idx]

    def round_states(self, games: Any = None) -> list[RoundState]:
        """The engine ``RoundState`` of each game of ``games`` (default: all); hidden cards included,
        for scripted opponents that read only what their seat may know, and tools. Not to be changed."""
        self._require_reset()
        idx = _check_games_arg(games, self.num_games)
        rounds = self._rounds
        return list(rounds) if idx is None else [rounds[g] for g in idx.tolist()]

    @property
    def matches(self) -> list[MatchState]:
        """The engine state of every game (hidden information included: for tools and tests, not agents)."""
        self._require_reset()
        return list(self._matches)

    def _require_reset(self) -> None:
        if self._rngs is None:
            raise RuntimeError("call reset() before using the batch")

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> BatchStep:
        """Deal a new episode in every game (see the module docstring for seeding and options)."""
        n_games = self.num_games
        seed = check_seed(seed)
        options = check_reset_options(options)
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; known: {', '.join(RESET_OPTIONS)}")
        decks = options.get("deck")
        dealers = options.get("dealer")
        if is_int(dealers):
            dealers = [dealers] * n_games  # one seat deals first in every game
        if decks is not None and (not hasattr(decks, "__len__") or isinstance(decks, str) or len(decks) != n_games):
            raise ValueError(
                f"options['deck'] must hold one deck (or None) per game: a sequence of {n_games}, got {decks!r:.80}"
            )
        if dealers is not None and (not hasattr(dealers, "__len__") or isinstance(dealers, str) or len(dealers) != n_games):
            raise ValueError(
                f"options['dealer'] must be one seat for every game or a sequence of {n_games} seats (or None), got {dealers!r:.80}"
            )
        if seed is not None:
            rngs = [seeding.np_random(seed + i)[0] for i in range(n_games)]
        elif self._rngs is None:
            rngs = [seeding.np_random(None)[0] for _ in range(n_games)]
        else:
            rngs = self._rngs
        # Check every injected deck and dealer before any generator is used.
        n = self.num_players
        first_decks = [None if decks is None or decks[i] is None else check_deck(decks[i]) for i in range(n_games)]
        first_dealers = [None if dealers is None else dealers[i] for i in range(n_games)]
        for i, dealer in enumerate(first_dealers):
            if dealer is not None and (
                not is_int(dealer) or not 0 <= dealer < n
            ):
                raise ValueError(f"options['dealer'][{i}] must be a seat in 0..{n - 1} or None, got {dealer!r}")
        matches = [
            MatchState(self.config, rngs[i], deck=first_decks[i], dealer=None if d is None else int(d))
            for i, d in enumerate(first_dealers)
        ]
        self._rngs = rngs
        self._matches = matches
        self._rounds = [m.round for m in matches]
        self._scores[:] = 0.0
        self._store(None, self._encoder.pack_acting(self._rounds, range(n_games)))
        return self._result(None, np.zeros((n_games, n), dtype=np.float32), np.zeros(n_games, dtype=bool), {})

    # ------------------------------------------------------------------ step
    def step(self, actions: Any, games: Any = None) -> BatchStep:
        """Apply one action in each game of ``games`` (default: all) and auto-reset finished episodes."""
        self._require_reset()
        idx = _check_games_arg(games, self.num_games)
        acts = np.asarray(actions)
        m = self.num_games if idx is None else idx.size
        if acts.shape != (m,):
            raise ValueError(f"actions must have shape ({m},) (one per stepped game), got {acts.shape}")
        if m and (acts.dtype == np.bool_ or not np.issubdtype(acts.dtype, np.integer)):
            raise ValueError(f"actions must be integers (action ids 0..{NUM_ACTIONS - 1}), got dtype {acts.dtype}")
        given = acts  # as given: a uint64 above 2**63 must be named as itself, not as its int64 wrap
        acts = acts.astype(np.int64, copy=False)
        rows = np.arange(self.num_games) if idx is None else idx
        in_range = (acts >= 0) & (acts < NUM_ACTIONS)
        ok = in_range.copy()
        ok[in_range] = self._masks[rows[in_range], acts[in_range]] != 0
        if not ok.all():
            j = int(np.flatnonzero(~ok)[0])
            g = int(rows[j])
            a = int(given[j])
            legal = np.flatnonzero(self._masks[g]).tolist()
            names = ", ".join(f"{x} ({action_str(x)})" for x in legal)
            what = f"{a} ({action_str(a)})" if 0 <= a < NUM_ACTIONS else f"{a} (out of range 0..{NUM_ACTIONS - 1})"
            raise ValueError(
                f"game {g}: action {what} is not legal for seat {int(self._seats[g])}; legal: {names}"
            )
        game_list = range(self.num_games) if idx is None else idx.tolist()
        rewards = np.zeros((m, self.num_players), dtype=np.float32)
        dones = np.zeros(m, dtype=bool)
        infos: dict[str, Any] = {}
        self._apply(game_list, acts.tolist(), rewards, dones, infos)
        self._store(idx, self._encoder.pack_acting(self._rounds, game_list))
        return self._result(idx, rewards, dones, infos)

    def _apply(self, game_list, act_list: list[int], rewards, dones, infos) -> None:
        """Play ``act_list[j]`` in game ``game_list[j]`` (checked by ``step``, so the engine's
        unchecked transition is used), end rounds and episodes."""
        matches = self._matches
        # (``map`` runs the thousand transitions of a step without a Python loop around them)
        outcomes = map(MatchState.apply_unchecked, map(matches.__getitem__, game_list), act_list)
        ended = [(j, outcome) for j, outcome in enumerate(outcomes) if outcome is not None]
        # The few rounds that ended are settled after the loop, all together: interleaved with a
        # thousand transitions, each settlement ran two to three times slower (cold caches).
        for j, outcome in ended:
            self._end_round(game_list[j], j, outcome, rewards, dones, infos)

    def _end_round(self, g: int, j: int, outcome, rewards, dones, infos) -> None:
        """Rewards, infos and the next deal after a round of game ``g`` ended (row ``j`` of the step)."""
        match = self._matches[g]
        m = rewards.shape[0]
        add_info(infos, "round_outcome", j, outcome.to_dict(), m)
        end = end_of_round(outcome, match, self.episode, self.reward_mode, self.max_rounds)
        if end.rewards is not None:
            rewards[j] = end.rewards
        if end.bonus is not None:
            add_info(infos, MATCH_BONUS_INFO, j, end.bonus.to_dict(), m)
        if not self.keep_outcomes:
            match.outcomes.clear()
        if end.truncated:
            if "truncated" not in infos:
                infos["truncated"] = np.zeros(m, dtype=bool)
                infos["_truncated"] = np.zeros(m, dtype=bool)
            infos["truncated"][j] = infos["_truncated"][j] = True
        if end.terminated or end.truncated:
            dones[j] = True
            target = self.config.target_score
            totals = match.round_totals  # as the AEC env's observe: without the house-rule bonuses
            final = np.stack([seat_observation(match.round, totals, target, seat, self.observation, to_act=False)
                              ["observation"] for seat in range(self.num_players)])
            add_info(infos, "final_obs", j, final, m)
            match = MatchState(self.config, self._rngs[g])
            self._matches[g] = match
            self._scores[g] = 0.0
        else:
            self._scores[g] = match.round_totals
            match.deal_next_round()
        self._rounds[g] = match.round

    # ------------------------------------------------------------------ encoding
    def _store(self, idx: np.ndarray | None, words: list[int]) -> None:
        """Unpack the acting seats' words into the buffers (every game, or the rows ``idx``)."""
        encoder = self._encoder
        if idx is None:
            self._seats[:] = encoder.unpack(words, self._scores, self._obs, self._masks)
            if self._features:
                fill_features(parts_of_words(words, encoder), self._obs[:, encoder.size :])
            if self._masks_out is not None:
                np.copyto(self._masks_out, self._masks)
            return
        obs = np.empty((idx.size, self.obs_size), dtype=np.float32)
        masks = np.empty((idx.size, NUM_ACTIONS), dtype=np.int8)
        self._seats[idx] = encoder.unpack(words, self._scores[idx], obs, masks)
        if self._features:
            fill_features(parts_of_words(words, encoder), obs[:, encoder.size :])
        self._obs[idx] = obs
        self._masks[idx] = masks
        if self._masks_out is not None:
            self._masks_out[idx] = masks

    def _result(self, idx: np.ndarray | None, rewards: np.ndarray, dones: np.ndarray, infos: dict) -> BatchStep:
        if idx is not None:
            return BatchStep(self._seats[idx], self._obs[idx], self._masks[idx], rewards, dones, infos)
        if self.copy:
            return BatchStep(self._seats.copy(), self._obs.copy(), self._masks.copy(), rewards, dones, infos)
        return BatchStep(self._seats, self._obs, self._masks_out, rewards, dones, infos)

    # ------------------------------------------------------------------ any seat
    def observe(self, seats: Any, games: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Observations and masks of ``seats`` (one int for every game, or one seat per game) in ``games``.

        The mask is the legal-action mask where the seat is to act, zeros otherwise (as the AEC env).
        """
        self._require_reset()
        idx = _check_games_arg(games, self.num_games)
        rows = np.arange(self.num_games) if idx is None else idx
        n = self.num_players
        given = np.asarray(seats)
        if given.ndim > 1 or (given.ndim == 1 and given.shape != rows.shape):
            raise ValueError(f"seats must be one seat for every game or one per game ({rows.size}), "
                             f"got shape {given.shape}")
        observers = np.broadcast_to(given, rows.shape)
        if observers.size and (observers.dtype == np.bool_ or not np.issubdtype(observers.dtype, np.integer)):
            raise ValueError(f"seats must be ints in 0..{n - 1}")
        observers = observers.astype(np.int64)
        if observers.size and (observers.min() < 0 or observers.max() >= n):
            raise ValueError(f"seats must be in 0..{n - 1}")
        if not rows.size:
            return np.zeros((0, self.obs_size), np.float32), np.zeros((0, NUM_ACTIONS), np.int8)
        words = self._encoder.pack_seats(self._rounds, rows.tolist(), observers.tolist())
        obs = np.empty((rows.size, self.obs_size), dtype=np.float32)
        masks = np.empty((rows.size, NUM_ACTIONS), dtype=np.int8)
        self._encoder.unpack(words, self._scores[rows], obs, masks, viewers=observers)
        if self._features:
            fill_features(parts_of_words(words, self._encoder), obs[:, self._encoder.size :])
        return obs, masks

    def close(self) -> None:
        pass


__all__ = ["BatchEnv", "BatchStep", "add_info"]
