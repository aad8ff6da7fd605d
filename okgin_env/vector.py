"""Batched Oklahoma Gin: ``N`` independent games stepped together, arrays in and out.

Two classes:

``BatchEnv(num_games, **env_options)`` — the multi-agent batch engine.
    Every game is one reference engine state (``MatchState`` with its ``RoundState``), so the
    rules are exactly those of ``okgin_env.env``; what is batched is everything around them:
    actions come in as one array and are checked against the current masks in one numpy call;
    each game's transition is then ``MatchState.apply_unchecked`` (what ``apply`` does after its
    legality check, which the mask check replaces); and the observation
    and action mask of the seat to act in every game are written straight into ``(N, obs_size)``
    float32 / ``(N, 107)`` int8 arrays. For that each game contributes a few small ints — one
    52-bit word per card plane, a word of one-hot flags, the discard and knock cards of its mask,
    a word of small numbers — all games' words become one int64 array, and ``np.unpackbits``
    runs **once per batch** (not once per game); the numeric parts (knock limit, stock size,
    scores, ...) are filled column-wise. The knock actions come from the engine's exact solver,
    called only when a cheap bound (``_knock_ruled_out``) does not already exclude a knock.

    * ``reset(seed=None, options=None) -> BatchStep`` and ``step(actions, games=None) -> BatchStep``
      where ``BatchStep = (seats, observations, action_masks, rewards, dones, infos)``:
      ``seats`` (M,) int64 — the seat to act in each game; ``observations`` (M, obs_size) float32 —
      that seat's observation, in exactly the layout of the AEC env (``okgin_env.observation``);
      ``action_masks`` (M, 107) int8; ``rewards`` (M, num_players) float32 — what the AEC env's
      ``env.rewards`` hold after that step (``reward="points"``: the zero-sum round reward at each
      round end; ``reward="win"``: +1/-1 at the episode's end); ``dones`` (M,) bool — the episode
      (a round with ``episode="round"``, else a match) ended with this action.
    * ``step(actions, games=None)``: ``actions`` (M,) ints, one per game in ``games`` (default:
      every game, M = N). Stepping a subset lets different policies act in different games.
      Every action is checked against the game's mask before any game is changed; an illegal one
      raises ``ValueError`` naming the game, the action and the legal actions.
    * **Auto-reset, "same step"**: a game whose episode ends in ``step`` is reset in that same
      call; the returned seat, observation and mask are those of the new episode, and
      ``infos["final_obs"][j]`` (with the boolean mask ``infos["_final_obs"]``, as Gymnasium vector
      envs do) holds the finished episode's last observation for **every** seat, shape
      ``(num_players, obs_size)`` — what ``env.observe(agent)`` returns after termination (hands
      shown at the showdown). ``infos["round_outcome"][j]`` (mask ``infos["_round_outcome"]``) is the
      ``RoundOutcome.to_dict()`` of every round that ended in the step, as the AEC env's
      ``infos[agent]["round_outcome"]``. Info arrays are indexed like the returned rows (position
      ``j`` is game ``games[j]``); keys are present only when some game has them.
    * **Seeding**: ``reset(seed=s)`` seeds game ``i`` with ``gymnasium.utils.seeding.np_random(s + i)``,
      which is exactly what ``raw_env.reset(seed=s + i)`` does (the convention of Gymnasium's
      vector envs). Each game keeps its generator for every later deal, stock reshuffle and
      auto-reset, so game ``i`` plays the same sequence of deals as ``raw_env`` given
      ``reset(seed=s + i)`` and then ``reset()`` after each episode, for the same actions.
      ``reset()`` without a seed continues each game's generator (fresh OS entropy the first time).
      ``options={"deck": decks, "dealer": dealers}`` fixes the first round of every game (``decks``:
      N decks of 52 card ids/texts, top first, or ``None`` per game; ``dealers``: N seats, or
      ``None`` per game), like ``raw_env.reset(options={"deck": ..., "dealer": ...})``.
    * ``observe(seats, games=None) -> (observations, action_masks)`` — any seat's observation (a mask
      of zeros for a seat that is not to act), e.g. ``observe(0)`` or ``observe(array_of_seats)``.
    * Read-only state: ``seats``, ``observations``, ``action_masks`` (the latest of every game),
      ``matches`` (the engine ``MatchState`` of each game: hidden information, for tools only).

``VectorGymEnv(num_envs, opponent=None, learner_seat=0, **env_options)`` — the single-agent view
    (a ``gymnasium.vector.VectorEnv``): the learner plays one seat of every game, a batched
    opponent plays the others. See its docstring.

The plain engine stays the reference: ``tests/test_vector.py`` checks, step by step on thousands
of seeded games, that the batch gives the AEC env's masks, observations, rewards, terminations,
round outcomes and final observations. No JIT is used (numba is not a dependency): the per-game
work left in Python is the reference engine's own transition plus packing a dozen ints, and the
rest is a handful of numpy calls per batch; ``benchmarks/bench_vector.py`` measures it against
OpenSpiel. Each ``RoundState`` keeps its ``history``; each ``MatchState``'s ``outcomes`` list is
emptied after every round unless ``keep_outcomes=True`` (the dicts are in ``infos``).
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple

import gymnasium
import numpy as np
from gymnasium.utils import seeding

from .env import EPISODES, REWARDS
from .observation import encode, layout_for
from .rules.actions import NUM_ACTIONS, action_str
from .rules.cards import NUM_CARDS
from .rules.config import OPTION_NAMES, make_config
from .rules.match import MatchState
from .rules.melds import knock_discards_of_mask
from .rules.round import Phase, check_deck

_DISCARD = Phase.DISCARD
_DRAW = Phase.DRAW
_OVER = Phase.OVER


class BatchStep(NamedTuple):
    """What ``BatchEnv.reset`` and ``BatchEnv.step`` return (rows in the order of the stepped games)."""

    seats: np.ndarray  # (M,) int64: seat to act
    observations: np.ndarray  # (M, obs_size) float32: that seat's observation
    action_masks: np.ndarray  # (M, 107) int8
    rewards: np.ndarray  # (M, num_players) float32: rewards of this step, per seat
    dones: np.ndarray  # (M,) bool: the episode ended in this step (the game was reset)
    infos: dict[str, Any]


class _Layout:
    """Where the packed words of one game go in the observation, for one player count.

    Each game is packed as ``words`` little-endian int64 words (all < 2**63):
    one word per card plane (bit ``c`` = card ``c``, in the layout's plane order: hand, taken
    card, discard top, discard pile, upcard, then known/passed per opponent); a ``flags`` word
    (bits 0-3 phase one-hot, then ``acting_seat`` and ``seat_from_dealer`` one-hots, then bits
    32-34 the actions 0-2 of the mask); the discard actions' cards (mask 3..54); the knock
    actions' cards (mask 55..106); and a word of small ints: stock size (bits 0-7), knock limit
    (8-15), acting seat (16-23), reshuffles (24-).
    """

    def __init__(self, num_players: int):
        layout = layout_for(num_players)
        sl = layout.slices
        n = num_players
        planes = layout.card_planes
        expected = ("hand", "taken_card", "discard_top", "discard_pile", "upcard")
        assert planes[:5] == expected and all(sl[name].start == NUM_CARDS * i for i, name in enumerate(planes))
        assert planes[5:] == tuple(f"opponent_{k}_{w}" for k in range(1, n) for w in ("known", "passed"))
        self.size = layout.size
        self.planes = len(planes)
        self.card_end = NUM_CARDS * self.planes
        self.knock_limit = sl["knock_limit"].start
        self.stock_size = sl["stock_size"].start
        self.flags_start = sl["phase"].start
        self.flags_width = 4 + 2 * n
        assert sl["acting_seat"].start == self.flags_start + 4 and sl["seat_from_dealer"].start == self.flags_start + 4 + n
        self.acting_bit = 4  # within the flags word
        self.dealer_bit = 4 + n
        self.mask_bit = 32
        self.scores = sl["scores"].start
        self.target = sl["target_score"].start
        self.reshuffles = sl["reshuffles"].start
        self.flags_word = self.planes
        self.words = self.planes + 4
        self.phase_flag = {p: 1 << int(p) for p in Phase}  # (Enum hashing is slow: not in loops)


# Knock pre-check. Cards in no possible meld of the hand (their rank held fewer than three times,
# no three-card run through them in their suit) stay deadwood whatever is discarded, except the
# discarded card itself (worth at most 10); so when their value exceeds ``knock_limit + 10`` no
# discard leaves a knock and the exact solver is not called. Random play rules out nearly every
# discard decision this way; ``_knock_ruled_out`` is the same test, written out for the tests.
_RUN_MELDABLE = [0] * 8192  # cards of a 13-bit suit mask inside some 3-card run of that mask
_VALUE_SUM = [0] * 8192  # value of the cards of a 13-bit suit mask
for _m in range(1, 8192):
    _r3 = _m & _m >> 1 & _m >> 2
    _RUN_MELDABLE[_m] = (_r3 | _r3 << 1 | _r3 << 2) & _m
    _VALUE_SUM[_m] = _VALUE_SUM[_m & (_m - 1)] + min((_m & -_m).bit_length(), 10)
del _m, _r3


def _knock_ruled_out(hand: int, knock_limit: int) -> bool:
    """True if no discard from ``hand`` can leave deadwood <= ``knock_limit`` (see above)."""
    meld, value = _RUN_MELDABLE, _VALUE_SUM
    s0, s1, s2, s3 = hand & 8191, hand >> 13 & 8191, hand >> 26 & 8191, hand >> 39
    sets = (s0 & s1 & (s2 | s3)) | (s2 & s3 & (s0 | s1))
    dead = value[s0 & ~(meld[s0] | sets)] + value[s1 & ~(meld[s1] | sets)]
    return dead + value[s2 & ~(meld[s2] | sets)] + value[s3 & ~(meld[s3] | sets)] > knock_limit + 10


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


class BatchEnv:
    """``num_games`` independent games of Oklahoma Gin stepped together (see the module docstring).

    Options are those of ``okgin_env.env``: ``rules``, ``num_players``, ``episode``, ``reward`` and
    every rule option. ``copy=False`` returns the internal observation/mask buffers from a full-batch
    ``step``/``reset`` (overwritten by the next call) instead of copies. ``keep_outcomes=True``
    keeps each match's ``outcomes`` list (by default it is emptied after each round, after its
    dict went into ``infos``, so long matches do not grow memory).
    """

    def __init__(
        self,
        num_games: int,
        rules: str = "classic",
        num_players: int = 2,
        episode: str = "match",
        reward: str = "points",
        copy: bool = True,
        keep_outcomes: bool = False,
        **rule_options: Any,
    ):
        if not isinstance(num_games, (int, np.integer)) or isinstance(num_games, bool) or num_games < 1:
            raise ValueError(f"num_games must be a positive int, got {num_games!r}")
        unknown = sorted(set(rule_options) - set(OPTION_NAMES))
        if unknown:
            allowed = ["rules", "num_players", "episode", "reward", "copy", "keep_outcomes", *OPTION_NAMES[2:]]
            raise ValueError(f"unknown option(s) {unknown}; allowed: {', '.join(allowed)}")
        if episode not in EPISODES:
            raise ValueError(f"episode={episode!r}; allowed: {', '.join(EPISODES)}")
        if reward not in REWARDS:
            raise ValueError(f"reward={reward!r}; allowed: {', '.join(REWARDS)}")
        self.config = make_config(rules, num_players=num_players, **rule_options)
        self.num_games = int(num_games)
        self.num_players = self.config.num_players
        self.episode = episode
        self.reward_mode = reward
        self.copy = copy
        self.keep_outcomes = keep_outcomes
        self._lay = _Layout(self.num_players)
        self.obs_size = self._lay.size
        n, size = self.num_players, self.obs_size
        self.observation_space = gymnasium.spaces.Box(low=0.0, high=np.inf, shape=(size,), dtype=np.float32)
        self.action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self._obs = np.zeros((self.num_games, size), dtype=np.float32)
        self._masks = np.zeros((self.num_games, NUM_ACTIONS), dtype=np.int8)
        self._seats = np.zeros(self.num_games, dtype=np.int64)
        self._scores = np.zeros((self.num_games, n), dtype=np.float64)  # match totals (observation scores)
        self._rotation = np.arange(n, dtype=np.int64)
        self._rngs: list[np.random.Generator] | None = None
        self._matches: list[MatchState] = []
        self._rounds: list = []
        self._piles: list[int] = []  # discard pile of each game's round as a card mask (kept in step)

    # ------------------------------------------------------------------ read-only views
    @property
    def seats(self) -> np.ndarray:
        """(N,) the seat to act in every game."""
        return self._seats.copy()

    @property
    def observations(self) -> np.ndarray:
        """(N, obs_size) the latest observation of every game's acting seat."""
        return self._obs.copy()

    @property
    def action_masks(self) -> np.ndarray:
        """(N, 107) int8: the current action mask of every game's acting seat."""
        return self._masks.copy()

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
        options = dict(options or {})
        unknown = sorted(set(options) - {"deck", "dealer"})
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; known: deck, dealer")
        decks = options.get("deck")
        dealers = options.get("dealer")
        if decks is not None and len(decks) != n_games:
            raise ValueError(f"options['deck'] must hold one deck (or None) per game: {n_games}, got {len(decks)}")
        if dealers is not None and len(dealers) != n_games:
            raise ValueError(f"options['dealer'] must hold one seat (or None) per game: {n_games}, got {len(dealers)}")
        if seed is not None:
            if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
                raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")
            rngs = [seeding.np_random(int(seed) + i)[0] for i in range(n_games)]
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
                not isinstance(dealer, (int, np.integer)) or isinstance(dealer, bool) or not 0 <= dealer < n
            ):
                raise ValueError(f"options['dealer'][{i}] must be a seat in 0..{n - 1} or None, got {dealer!r}")
        matches = [
            MatchState(self.config, rngs[i], deck=first_decks[i], dealer=None if d is None else int(d))
            for i, d in enumerate(first_dealers)
        ]
        self._rngs = rngs
        self._matches = matches
        self._rounds = [m.round for m in matches]
        self._piles = [1 << r.upcard for r in self._rounds]
        self._scores[:] = 0.0
        self._run(None, range(n_games), None)
        return BatchStep(
            self._out(self._seats),
            self._out(self._obs),
            self._out(self._masks),
            np.zeros((n_games, n), dtype=np.float32),
            np.zeros(n_games, dtype=bool),
            {},
        )

    def _out(self, array: np.ndarray) -> np.ndarray:
        return array.copy() if self.copy else array

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
        acts = acts.astype(np.int64, copy=False)
        rows = np.arange(self.num_games) if idx is None else idx
        in_range = (acts >= 0) & (acts < NUM_ACTIONS)
        ok = in_range.copy()
        ok[in_range] = self._masks[rows[in_range], acts[in_range]] != 0
        if not ok.all():
            j = int(np.flatnonzero(~ok)[0])
            g = int(rows[j])
            a = int(acts[j])
            legal = np.flatnonzero(self._masks[g]).tolist()
            names = ", ".join(f"{x} ({action_str(x)})" for x in legal)
            what = f"{a} ({action_str(a)})" if 0 <= a < NUM_ACTIONS else f"{a} (out of range 0..{NUM_ACTIONS - 1})"
            raise ValueError(
                f"game {g}: action {what} is not legal for seat {int(self._seats[g])}; legal: {names}"
            )
        game_list = range(self.num_games) if idx is None else idx.tolist()
        return self._advance(idx, game_list, acts.tolist())

    def _advance(self, idx: np.ndarray | None, game_list, act_list: list[int]) -> BatchStep:
        m = len(act_list)
        n = self.num_players
        rewards = np.zeros((m, n), dtype=np.float32)
        dones = np.zeros(m, dtype=bool)
        infos: dict[str, Any] = {}
        self._run(idx, game_list, act_list, rewards, dones, infos)
        if idx is None:
            return BatchStep(self._out(self._seats), self._out(self._obs), self._out(self._masks), rewards, dones, infos)
        return BatchStep(self._seats[idx], self._obs[idx], self._masks[idx], rewards, dones, infos)

    def _end_round(self, g: int, j: int, outcome, rewards, dones, infos):
        """Rewards, infos and the next deal after a round of game ``g`` ended (row ``j`` of the step)."""
        match = self._matches[g]
        m = rewards.shape[0]
        _add_info(infos, "round_outcome", j, outcome.to_dict(), m)
        episode_over = self.episode == "round" or match.is_over
        if self.reward_mode == "points":
            rewards[j] = outcome.rewards
        elif episode_over:
            winner = outcome.winner if self.episode == "round" else match.winner
            if winner is not None:
                rewards[j] = -1.0
                rewards[j, winner] = 1.0
        if not self.keep_outcomes:
            match.outcomes.clear()
        if episode_over:
            dones[j] = True
            target = self.config.target_score
            final = np.stack([encode(match.round, match.scores, target, seat) for seat in range(self.num_players)])
            _add_info(infos, "final_obs", j, final, m)
            match = MatchState(self.config, self._rngs[g])
            self._matches[g] = match
            self._scores[g] = 0.0
        else:
            self._scores[g] = match.scores
            match.deal_next_round()
        st = match.round
        self._rounds[g] = st
        self._piles[g] = 1 << st.upcard
        return st

    # ------------------------------------------------------------------ encoding
    def _run(self, idx, game_list, act_list, rewards=None, dones=None, infos=None) -> None:
        """Apply ``act_list[j]`` in game ``game_list[j]`` (no action: ``act_list`` None), then write the
        seat, observation and mask of each game's acting seat into the buffers (rows ``idx``, or all).

        Actions were checked against the masks by ``step``, so the round's transition handlers are
        called directly (``RoundState.apply`` would rebuild the legal-action list to check again);
        the legal actions for the next mask are the engine's own rule (``RoundState._compute_legal``):
        every card but the one taken from the pile, and ``knock_discards_of_mask`` for knocks
        (skipped when ``_knock_ruled_out`` already rules a knock out).
        """
        lay = self._lay
        n = self.num_players
        acting = 1 << lay.acting_bit
        dealer_bit = lay.dealer_bit
        # Flags per phase: the phase one-hot, "the observer is to act" (index 0), actions 0-2.
        discard_flags = acting | lay.phase_flag[Phase.DISCARD]
        draw_flags = acting | lay.phase_flag[Phase.DRAW] | 3 << lay.mask_bit
        draw_stock_flags = acting | lay.phase_flag[Phase.DRAW] | 1 << lay.mask_bit
        offer_flags = acting | lay.phase_flag[Phase.OFFER] | 6 << lay.mask_bit
        others = range(1, n)
        allow_taken = self.config.allow_discard_taken
        piles = self._piles
        rounds = self._rounds
        matches = self._matches
        knock_discards = knock_discards_of_mask
        meld, value = _RUN_MELDABLE, _VALUE_SUM
        two = n == 2
        discard, draw = _DISCARD, _DRAW
        words: list[int] = []
        put = words.extend
        for j, g in enumerate(game_list):
            st = rounds[g]
            if act_list is not None:
                a = act_list[j]
                phase = st.phase
                outcome = matches[g].apply_unchecked(a)
                if phase is discard:
                    if a < 55:  # onto the pile (after a reshuffle the pile is only this card)
                        bit = 1 << (a - 3)
                        piles[g] = piles[g] | bit if len(st.discard_pile) > 1 else bit
                elif a == 1:  # took the discard top (or the upcard)
                    piles[g] ^= 1 << st.taken_card
                if outcome is not None:
                    st = self._end_round(g, j, outcome, rewards, dones, infos)
            cur = st.current
            phase = st.phase
            hand = st.hands[cur]
            taken = st.taken_card
            knocks = 0
            if phase is discard:
                flags = discard_flags
                if taken >= 0:
                    taken_bit = 1 << taken
                    forbidden = 0 if allow_taken else taken_bit
                else:
                    taken_bit = forbidden = 0
                playable = hand & ~forbidden
                limit = st.knock_limit
                # _knock_ruled_out(hand, limit), inline:
                s0, s1, s2, s3 = hand & 8191, hand >> 13 & 8191, hand >> 26 & 8191, hand >> 39
                sets = (s0 & s1 & (s2 | s3)) | (s2 & s3 & (s0 | s1))
                dead = value[s0 & ~(meld[s0] | sets)] + value[s1 & ~(meld[s1] | sets)]
                if dead + value[s2 & ~(meld[s2] | sets)] + value[s3 & ~(meld[s3] | sets)] <= limit + 10:
                    for card in knock_discards(hand, limit, forbidden):
                        knocks |= 1 << card
            else:
                # Draw or upcard offer (the acting state is never over: finished games were reset).
                flags = (draw_stock_flags if st.must_draw_stock else draw_flags) if phase is draw else offer_flags
                taken_bit = playable = 0
            pile = st.discard_pile
            flags |= 1 << (dealer_bit + (cur - st.dealer) % n)
            extras = len(st.stock) | st.knock_limit << 8 | cur << 16 | st.reshuffles << 24
            top = 1 << pile[-1] if pile else 0
            if two:
                other = 1 - cur
                put((hand, taken_bit, top, piles[g], 1 << st.upcard, st.known[other], st.passed[other],
                     flags, playable, knocks, extras))
            else:
                put((hand, taken_bit, top, piles[g], 1 << st.upcard))
                known, passed = st.known, st.passed
                for k in others:
                    seat = (cur + k) % n
                    put((known[seat], passed[seat]))
                put((flags, playable, knocks, extras))
        self._write(idx, words, None)

    def _write(self, idx: np.ndarray | None, words: list[int], observers: np.ndarray | None):
        """Unpack the packed words of all rows at once (one ``np.unpackbits``) and fill the
        numeric parts column-wise (layout: ``_Layout``). ``observers`` None: acting-seat rows go
        into the buffers (all games or rows ``idx``); otherwise a fresh (observations, masks) pair
        for those observers is returned."""
        lay = self._lay
        w = lay.words
        packed = np.fromiter(words, dtype=np.int64, count=len(words)).astype("<i8", copy=False).reshape(-1, w)
        m = packed.shape[0]
        bits = np.unpackbits(packed.view(np.uint8)[:, : 8 * (w - 1)], axis=1, bitorder="little")
        if observers is None and idx is None:
            obs, masks = self._obs, self._masks
        else:
            obs = np.empty((m, lay.size), dtype=np.float32)
            masks = np.empty((m, NUM_ACTIONS), dtype=np.int8)
        p = lay.planes
        obs[:, : lay.card_end] = bits[:, : 64 * p].reshape(m, p, 64)[:, :, :NUM_CARDS].reshape(m, lay.card_end)
        f = 64 * lay.flags_word
        obs[:, lay.flags_start : lay.flags_start + lay.flags_width] = bits[:, f : f + lay.flags_width]
        masks[:, :3] = bits[:, f + lay.mask_bit : f + lay.mask_bit + 3]
        masks[:, 3:55] = bits[:, f + 64 : f + 64 + NUM_CARDS]
        masks[:, 55:] = bits[:, f + 128 : f + 128 + NUM_CARDS]
        extras = packed[:, w - 1]
        obs[:, lay.stock_size] = (extras & 255) / 52.0
        obs[:, lay.knock_limit] = ((extras >> 8) & 255) / 10.0
        cur = (extras >> 16) & 255
        obs[:, lay.reshuffles] = extras >> 24
        target = self.config.target_score
        obs[:, lay.target] = target / 100.0
        n = self.num_players
        viewer = cur if observers is None else observers
        seat_order = (viewer[:, None] + self._rotation) % n
        if idx is None:
            obs[:, lay.scores : lay.scores + n] = np.take_along_axis(self._scores, seat_order, axis=1) / target
        else:
            obs[:, lay.scores : lay.scores + n] = self._scores[idx[:, None], seat_order] / target
        if observers is not None:
            return obs, masks
        if idx is None:
            self._seats[:] = cur
        else:
            self._seats[idx] = cur
            self._obs[idx] = obs
            self._masks[idx] = masks
        return None

    # ------------------------------------------------------------------ any seat
    def observe(self, seats: Any, games: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """Observations and masks of ``seats`` (one int for every game, or one seat per game) in ``games``.

        The mask is the legal-action mask where the seat is to act, zeros otherwise (as the AEC env).
        """
        self._require_reset()
        idx = _check_games_arg(games, self.num_games)
        rows = np.arange(self.num_games) if idx is None else idx
        n = self.num_players
        observers = np.broadcast_to(np.asarray(seats), rows.shape)
        if observers.size and (observers.dtype == np.bool_ or not np.issubdtype(observers.dtype, np.integer)):
            raise ValueError(f"seats must be ints in 0..{n - 1}")
        observers = observers.astype(np.int64)
        if observers.size and (observers.min() < 0 or observers.max() >= n):
            raise ValueError(f"seats must be in 0..{n - 1}")
        lay = self._lay
        words: list[int] = []
        put = words.extend
        for g, obs_seat in zip(rows.tolist(), observers.tolist()):
            st = self._rounds[g]
            cur = st.current
            over = st.phase is _OVER
            flags = lay.phase_flag[st.phase] | 1 << (lay.dealer_bit + (obs_seat - st.dealer) % n)
            taken_bit = playable = knocks = 0
            if cur == obs_seat and not over:
                flags |= 1 << lay.acting_bit
                if st.taken_card >= 0:
                    taken_bit = 1 << st.taken_card
                for action in st.legal_actions():
                    if action < 3:
                        flags |= 1 << (lay.mask_bit + action)
                    elif action < 55:
                        playable |= 1 << (action - 3)
                    else:
                        knocks |= 1 << (action - 55)
            elif not over:
                flags |= 1 << (lay.acting_bit + (cur - obs_seat) % n)
            pile = st.discard_pile
            put((st.hands[obs_seat], taken_bit, 1 << pile[-1] if pile else 0, self._piles[g], 1 << st.upcard))
            for k in range(1, n):
                seat = (obs_seat + k) % n
                put((st.hands[seat] if over else st.known[seat], st.passed[seat]))
            put((flags, playable, knocks, len(st.stock) | st.knock_limit << 8 | cur << 16 | st.reshuffles << 24))
        if not words:
            return np.zeros((0, self.obs_size), np.float32), np.zeros((0, NUM_ACTIONS), np.int8)
        result = self._write(rows, words, observers)
        assert result is not None
        return result

    def close(self) -> None:
        pass


def _add_info(infos: dict[str, Any], key: str, j: int, value: Any, m: int) -> None:
    """Gymnasium's vector info style: ``infos[key]`` an object array, ``infos["_" + key]`` a bool mask."""
    if key not in infos:
        infos[key] = np.full(m, None, dtype=object)
        infos["_" + key] = np.zeros(m, dtype=bool)
    infos[key][j] = value
    infos["_" + key][j] = True


# ---------------------------------------------------------------------- opponents
class RandomBatchOpponent:
    """Uniformly random legal actions for a batch: ``act_batch(observations, masks) -> actions``."""

    name = "random"

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return random_legal_actions(masks, self.rng)


def random_legal_actions(masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random legal action per row of ``masks`` (M, 107) of 0/1; every row needs one."""
    masks = np.asarray(masks)
    counts = np.count_nonzero(masks, axis=1)
    if masks.shape[0] and counts.min() == 0:
        raise ValueError("a row of the masks has no legal action")
    pick = (rng.random(masks.shape[0]) * counts).astype(np.int8)  # which legal action, 0-based (< 107)
    cumulative = np.cumsum(masks != 0, axis=1, dtype=np.int8)
    return np.argmax(cumulative > pick[:, None], axis=1)


class PerObservationOpponent:
    """Adapter: any policy with ``act(observation_dict) -> int`` (CONTRACT.md), called once per game."""

    def __init__(self, policy: Any):
        if not callable(getattr(policy, "act", None)):
            raise ValueError(f"{policy!r} has no act(observation) method")
        self.policy = policy
        self.name = getattr(policy, "name", type(policy).__name__)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        act = self.policy.act
        return np.array(
            [act({"observation": o, "action_mask": k}) for o, k in zip(observations, masks)], dtype=np.int64
        )


class SimpleStateOpponent:
    """The ``simple`` bot's policy run on the engine states directly (``act_states``), skipping the
    observation round trip. It reads only what the seat to act may know (its hand, the discard top,
    the knock limit, the card it may not discard), so it plays as ``make_bot("simple")`` does; it is
    a fast path for training against ``simple``, not a pattern for policies (those read observations).
    """

    name = "simple"

    def __init__(self, seed: int | None = None):
        from .bots.simple import simple_action_for_state  # lazy: the bots package is optional here

        self._policy = simple_action_for_state
        self.rng = random.Random(seed)

    def act_states(self, states: list) -> np.ndarray:
        policy, rng = self._policy, self.rng
        return np.array([policy(st, rng) for st in states], dtype=np.int64)


def make_opponent(opponent: Any, seed: int | None = None) -> Any:
    """``None``/``"random"`` -> ``RandomBatchOpponent``; ``"simple"`` -> ``SimpleStateOpponent``;
    ``"simple_obs"`` -> the ``simple`` bot through observations; an object with ``act_batch`` or
    ``act_states`` as is; an object with ``act`` wrapped in ``PerObservationOpponent``."""
    if opponent is None or opponent == "random":
        return RandomBatchOpponent(seed)
    if opponent == "simple":
        return SimpleStateOpponent(seed)
    if opponent == "simple_obs":
        from .bots import make_bot

        return PerObservationOpponent(make_bot("simple", seed=seed))
    if isinstance(opponent, str):
        raise ValueError(f"unknown opponent {opponent!r}; known: random, simple, simple_obs, or a policy object")
    if callable(getattr(opponent, "act_batch", None)) or callable(getattr(opponent, "act_states", None)):
        return opponent
    if callable(getattr(opponent, "act", None)):
        return PerObservationOpponent(opponent)
    raise ValueError(f"opponent {opponent!r} has none of act_batch(observations, masks), act_states(states), act(observation)")


# ---------------------------------------------------------------------- single-agent vector env
try:  # Gymnasium >= 1.0
    from gymnasium.vector import AutoresetMode as _AutoresetMode

    _SAME_STEP: Any = _AutoresetMode.SAME_STEP
except ImportError:  # pragma: no cover - older Gymnasium
    _SAME_STEP = "SameStep"


class VectorGymEnv(gymnasium.vector.VectorEnv):
    """The learner plays one seat in each of ``num_envs`` games; a batched opponent plays the rest.

    ``VectorGymEnv(num_envs, opponent=None, learner_seat=0, opponent_seed=None, **env_options)``;
    ``env_options`` are those of ``okgin_env.env`` (``rules``, ``num_players``, ``episode``,
    ``reward``, rule options). Gymnasium ``VectorEnv`` conventions:

    * ``reset(seed=s) -> (observations (num_envs, obs_size) float32, infos)``; game ``i`` is seeded
      as ``GymEnv.reset(seed=s + i)`` would be (see ``BatchEnv``).
    * ``step(actions) -> (observations, rewards, terminations, truncations, infos)``; rewards
      (num_envs,) float32 are the learner's, accumulated since its previous decision (the
      opponents' moves included), as ``GymEnv`` gives them; truncations are always False (the
      ``max_turns`` guard ends a round as a draw, a termination).
    * **Autoreset: "same step"** (``metadata["autoreset_mode"]``): a finished game is reset within
      ``step`` and the returned observation is the learner's first one of the next episode;
      ``infos["final_obs"][i]`` (mask ``infos["_final_obs"]``) is the learner's last observation of
      the finished episode and ``infos["final_info"][i]`` its info (``round_outcome``).
    * ``infos["action_mask"]`` (num_envs, 107) int8 on every call, and ``action_masks()`` ->
      (num_envs, 107) bool (for MaskablePPO-style samplers). ``infos["round_outcome"]`` (mask
      ``_round_outcome``): the outcome dict of a round that ended in the game during the step (the
      last one if several did). ``infos["opponent_reward_before_first_move"]`` (num_envs,) float32:
      in games that started a new episode during the call, the learner's reward from rounds that
      ended before its first decision (kept out of the step reward, as ``GymEnv`` does at reset);
      an episode that ends before the learner decides at all is not counted as an episode (its
      reward goes there too) and a new one is dealt (counted in ``infos["episodes_without_learner"]``).
    * ``learner_seat``: a seat, or ``"alternate"``: episode ``k`` of each game (counted from 0 at
      construction) puts the learner in seat ``k % num_players``, like ``GymEnv``.

    ``opponent``: ``None``/``"random"`` (uniform legal, batched), ``"simple"`` (the simple bot on
    engine states, ``SimpleStateOpponent``), ``"simple_obs"`` (``make_bot("simple")`` per
    observation), an object with ``act_batch(observations (M, obs_size), masks (M, 107)) -> (M,)``,
    an object with ``act_states(round_states) -> (M,)`` (given the engine ``RoundState`` of each
    game, hidden cards included: a fast path for scripted bots that read only what their seat may
    know, as ``SimpleStateOpponent`` does), or any policy with ``act(observation_dict) -> int``
    (called once per game). One opponent object
    plays every non-learner seat. An opponent named by a string is seeded with ``opponent_seed``
    and reseeded from ``reset(seed=s)``, so a seeded reset replays the same games for the same
    learner actions; an opponent object keeps its own generator.
    """

    metadata = {"autoreset_mode": _SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        opponent: Any = None,
        learner_seat: int | str = 0,
        opponent_seed: int | None = None,
        **env_options: Any,
    ):
        env_options.pop("render_mode", None)
        self.batch = BatchEnv(num_envs, **env_options)
        n = self.batch.num_players
        if learner_seat != "alternate" and (
            not isinstance(learner_seat, (int, np.integer)) or isinstance(learner_seat, bool) or not 0 <= learner_seat < n
        ):
            raise ValueError(f"learner_seat={learner_seat!r}; allowed: a seat in 0..{n - 1} or 'alternate'")
        self.learner_seat_mode = learner_seat
        self._opponent_name = "random" if opponent is None else opponent if isinstance(opponent, str) else None
        self.opponent = make_opponent(opponent, opponent_seed)
        self.num_envs = self.batch.num_games
        self.num_players = n
        self.single_observation_space = self.batch.observation_space
        self.single_action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._episodes = np.zeros(self.num_envs, dtype=np.int64)  # episodes started per game
        self._learner = np.zeros(self.num_envs, dtype=np.int64)
        self._mask = np.zeros((self.num_envs, NUM_ACTIONS), dtype=np.int8)
        self._started = False

    @property
    def learner_seats(self) -> np.ndarray:
        """(num_envs,) the learner's seat in each game's current episode."""
        return self._learner.copy()

    def _new_episodes(self, games: np.ndarray) -> None:
        if self.learner_seat_mode == "alternate":
            self._learner[games] = self._episodes[games] % self.num_players
        else:
            self._learner[games] = self.learner_seat_mode
        self._episodes[games] += 1

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.batch.reset(seed=seed, options=options)
        if seed is not None and self._opponent_name is not None:
            # An opponent built here from a name is reseeded too, so reset(seed=s) replays exactly.
            self.opponent = make_opponent(self._opponent_name, int(np.random.SeedSequence([seed, 1]).generate_state(1)[0]))
        every = np.arange(self.num_envs)
        self._new_episodes(every)
        self._started = True
        m = self.num_envs
        reward = np.zeros(m, dtype=np.float32)
        before = np.zeros(m, dtype=np.float32)
        acted = np.zeros(m, dtype=bool)
        infos: dict[str, Any] = {}
        skipped = np.zeros(m, dtype=np.int64)
        self._play_opponents(reward, before, acted, np.zeros(m, dtype=bool), infos, skipped)
        infos["opponent_reward_before_first_move"] = before
        infos["episodes_without_learner"] = skipped
        return self._learner_view(infos)

    def step(self, actions: Any):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), got {acts.shape}")
        m = self.num_envs
        result = self.batch.step(acts)  # all games are at the learner's turn
        reward = result.rewards[np.arange(m), self._learner].astype(np.float32)
        before = np.zeros(m, dtype=np.float32)
        terminated = result.dones.copy()
        acted = ~terminated
        infos: dict[str, Any] = {}
        self._record_round_outcomes(infos, result.infos, np.arange(m))
        if terminated.any():
            self._record_final(infos, result.infos, np.flatnonzero(terminated), np.flatnonzero(terminated))
            self._new_episodes(np.flatnonzero(terminated))
        skipped = np.zeros(m, dtype=np.int64)
        self._play_opponents(reward, before, acted, terminated, infos, skipped)
        infos["opponent_reward_before_first_move"] = before
        infos["episodes_without_learner"] = skipped
        observations, infos = self._learner_view(infos)
        return observations, reward, terminated, np.zeros(m, dtype=bool), infos

    def _play_opponents(self, reward, before, acted, terminated, infos, skipped) -> None:
        """Step the opponents' seats until every game waits for the learner."""
        batch = self.batch
        while True:
            pending = np.flatnonzero(batch._seats != self._learner)
            if pending.size == 0:
                return
            opponent = self.opponent
            if callable(getattr(opponent, "act_states", None)):
                actions = opponent.act_states([batch._rounds[g] for g in pending.tolist()])
            else:
                actions = opponent.act_batch(batch._obs[pending], batch._masks[pending].copy())
            result = batch.step(np.asarray(actions, dtype=np.int64), games=pending)
            got = result.rewards[np.arange(pending.size), self._learner[pending]]
            counted = acted[pending]
            reward[pending[counted]] += got[counted]
            before[pending[~counted]] += got[~counted]
            self._record_round_outcomes(infos, result.infos, pending)
            done_rows = np.flatnonzero(result.dones)
            if done_rows.size:
                games = pending[done_rows]
                ends = acted[games]
                # Episodes in which the learner decided: terminated now (same-step autoreset).
                self._record_final(infos, result.infos, games[ends], done_rows[ends])
                terminated[games[ends]] = True
                skipped[games[~ends]] += 1
                acted[games] = False
                self._new_episodes(games)

    def _record_round_outcomes(self, infos, batch_infos, games) -> None:
        if "round_outcome" not in batch_infos:
            return
        for j in np.flatnonzero(batch_infos["_round_outcome"]).tolist():
            _add_info(infos, "round_outcome", int(games[j]), batch_infos["round_outcome"][j], self.num_envs)

    def _record_final(self, infos, batch_infos, games, rows) -> None:
        for g, j in zip(games.tolist(), rows.tolist()):
            seat = int(self._learner[g])
            _add_info(infos, "final_obs", g, batch_infos["final_obs"][j][seat], self.num_envs)
            final_info = {}
            if "round_outcome" in batch_infos and batch_infos["_round_outcome"][j]:
                final_info["round_outcome"] = batch_infos["round_outcome"][j]
            _add_info(infos, "final_info", g, final_info, self.num_envs)

    def _learner_view(self, infos: dict[str, Any]):
        self._mask = self.batch._masks.copy()
        infos["action_mask"] = self._mask
        return self.batch._obs.copy(), infos

    def action_masks(self) -> np.ndarray:
        """(num_envs, 107) bool: the learner's legal actions in every game."""
        return self._mask.astype(bool)

    def close_extras(self, **kwargs: Any) -> None:
        self.batch.close()


__all__ = [
    "BatchEnv",
    "BatchStep",
    "PerObservationOpponent",
    "RandomBatchOpponent",
    "SimpleStateOpponent",
    "VectorGymEnv",
    "make_opponent",
    "random_legal_actions",
]
