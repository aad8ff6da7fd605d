"""``TensorEnv``: ``num_envs`` games of gin stepped together as torch operations, on CPU or GPU.

The pgx shape: one ``step`` for 1 or 100,000 games, every game's state a row of the tensors of
one value (``TensorState``), every rule a batched tensor operation, no Python loop over games.
The env holds the settings; ``init``, ``step_state`` and ``observe`` are functions of a state::

    from okgin_env.tensor import TensorEnv
    env = TensorEnv(4096, device="cuda", rules="classic", episode="round")
    state = env.init(seed=0)
    while training:
        actions = policy(state.observation, state.legal_action_mask)   # (N,) int64, one per game
        state, out = env.step_state(state, actions)                   # state itself is kept

and the same with the state kept inside the env (``env.state``), as the trainer steps it::

    out = env.reset(seed=0)
    while training:
        out = env.step(policy(out.observation, out.action_mask))

* ``TensorEnv(num_envs, device="cpu", rules="classic", episode="round", reward="points",
  observation="cards", max_rounds=200, illegal="raise", **rule_options)``: the options of
  ``okgin_env.env`` (a preset name or a ``RulesConfig``, and any rule option of docs/rules.md §10).
  Every preset: ``classic``, ``standard`` and ``penalty`` with 2-4 players (its stock rebuilds
  shuffle the discard pile on the device, from the env's generator). ``observation="features"``
  appends the solver features of ``okgin_env.features`` (``okgin_env.tensor.features``).
* ``init(seed=None, options=None) -> TensorState``: a new episode in every game as a new state
  (the fields: ``okgin_env.tensor.state``; ``seed=None`` seeds from the operating system).
  ``step_state(state, actions, active=None, observe=True) -> (TensorState, TensorStep)`` plays
  ``step`` on a copy (``state`` is left as it was, so a search can branch from it; the copy's
  generator continues from the same position). ``observe(state, rows=None)`` encodes the seat to
  act's observation in the games ``rows``.
* ``reset(seed=None, options=None) -> TensorStep`` deals a new episode in every game into a new
  ``env.state`` (without a seed, on the same generator object: keep an earlier state with
  ``env.state.clone()``, not by reference);
  ``options={"deck": decks, "dealer": dealers}`` fixes the first deal of every game: ``decks`` a
  (N, 52) integer tensor or array of card ids, top first (a permutation per row), ``dealers`` (N,)
  seats or one seat for all (as ``BatchEnv``'s options of the same names).
* ``step(actions, active=None, observe=True) -> TensorStep``: ``actions`` (N,) integers, one per
  game, for its seat to act; ``active`` (N,) bool steps only those games (the others keep their
  state, and their actions are not read): a learner and its opponents can take turns on one batch.
  ``observe=False`` skips the observations (``observation`` and ``final_observation`` are None) for
  a caller that encodes only the games it needs with ``observe_rows(rows)``. ``step`` updates
  ``env.state`` in place (no copy).
* ``TensorStep`` fields, tensors on the env's device: ``observation`` (N, D) float32 and
  ``action_mask`` (N, 107) bool of the seat to act, ``current_player`` (N,) int64; ``rewards``
  (N, num_players) float32 (what the AEC env's ``rewards`` hold after that step); ``terminated``
  and ``truncated`` (N,) bool (the episode ended by the rules, or a match reached ``max_rounds``
  undecided); ``round_over`` (N,) bool (a round ended in this step); ``scores`` (N, num_players)
  int64 (each match's totals after the action, before a finished episode restarts: the final
  score of a finished match, house-rule bonuses included); ``final_observation``
  (N, num_players, D) float32 (where an episode ended, every seat's last observation, what the
  AEC env's ``observe`` gives after the end, hands shown; zeros elsewhere); ``illegal`` (N,) bool.
* **Auto-reset in the same step**: a game whose episode ends is dealt a new one at once; the
  returned observation, mask and seat are the new episode's (as ``BatchEnv`` and ``VectorGymEnv``).
* **Illegal actions** are never played. ``illegal="raise"`` (the default) raises ``ValueError``
  naming the first game, its action and its legal actions, and changes nothing; this reads the
  check back from the device once a step. ``illegal="report"`` skips that read: the games with an
  illegal action are left as they were (their observation and mask are returned again) and
  ``illegal`` flags them.
* **Seeding**: ``reset(seed=s)`` seeds one ``torch.Generator`` on the device; every deal, first
  dealer and restart of every game is drawn from it, so the same seed, device and ``num_envs`` give
  the same games. The deals are not those of ``BatchEnv`` for the same seed (another generator);
  inject decks for that. ``reset()`` without a seed continues the generator. Any non-negative int
  seed is taken (as the AEC env): below 2**63 it seeds the generator itself, larger ones through
  numpy's ``SeedSequence`` (63 bits of it). A refused reset changes nothing, the generator included.
* ``device``: a cpu or cuda device (mps and xpu too) that this torch can use; others (``"meta"``,
  or ``"cuda"`` on a CPU-only torch) are refused with ``ValueError``.
* **Exactness**: the observation is the numpy codec's (``okgin_env.observation``) bit for bit, the
  mask is ``RoundState.legal_parts``' and rewards and scores are the rules core's;
  ``tests/test_tensor.py`` plays thousands of random and greedy rounds and matches against the
  rules core with the decks this engine dealt. The showdown after a knock (the knocker's best
  layout and the layoffs) is batched on the device for two-player points scoring
  (``okgin_env.tensor.showdown``, exact against the rules core's ``knock_outcome``) on a GPU, and
  on the CPU for steps with many knocks; other presets and small CPU steps (a few knocks per
  hundred decisions) call ``knock_outcome`` on the host (``round_end.showdowns``); everything else
  stays on the device.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
import torch

from ..episode import DEFAULT_MAX_ROUNDS, RESET_OPTIONS, check_max_rounds, check_options, check_reset_options
from ..observation import check_observation, layout_for
from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, NUM_ACTIONS, PASS, TAKE_DISCARD, action_str
from ..rules.cards import CARD_VALUES, NUM_CARDS
from ..rules.config import RulesConfig, check_seed, is_int, make_config
from ..rules.round import STOCK_LEFT_AT_WALL, Phase
from .arguments import check_device, checked_actions, checked_dealers, checked_decks, checked_rows, generator_seed
from .encode import encode_observations
from .round_end import end_rounds
from .solver import NO_CHOICE, MeldTables, deadwood_after_each
from .state import TensorState

OWN_OPTIONS = ("device", "rules", "num_players", "episode", "reward", "observation", "max_rounds", "illegal")
ILLEGAL_MODES = ("raise", "report")
_OFFER, _DRAW, _DISCARD, _OVER = int(Phase.OFFER), int(Phase.DRAW), int(Phase.DISCARD), int(Phase.OVER)


class TensorStep(NamedTuple):
    """What ``TensorEnv.reset`` and ``TensorEnv.step`` return (one row per game)."""

    observation: torch.Tensor  # (N, D) float32: the seat to act's observation
    action_mask: torch.Tensor  # (N, 107) bool
    current_player: torch.Tensor  # (N,) int64
    rewards: torch.Tensor  # (N, num_players) float32
    terminated: torch.Tensor  # (N,) bool
    truncated: torch.Tensor  # (N,) bool
    round_over: torch.Tensor  # (N,) bool: a round ended in this step
    scores: torch.Tensor  # (N, num_players) int64: match totals after the action, before a restart
    final_observation: torch.Tensor  # (N, num_players, D) float32: every seat's last observation where an episode ended
    illegal: torch.Tensor  # (N,) bool: with illegal="report", the games whose action was refused


class TensorEnv:
    """``num_envs`` games of gin as batched tensors on ``device`` (see the module docstring)."""

    def __init__(
        self,
        num_envs: int,
        device: str | torch.device = "cpu",
        rules: str | RulesConfig = "classic",
        num_players: int | None = None,
        episode: str = "round",
        reward: str = "points",
        observation: str = "cards",
        max_rounds: int | None = DEFAULT_MAX_ROUNDS,
        illegal: str = "raise",
        **rule_options: Any,
    ):
        if not is_int(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        check_options(rule_options, episode, reward, OWN_OPTIONS)
        check_observation(observation)
        if illegal not in ILLEGAL_MODES:
            raise ValueError(f"illegal={illegal!r}; allowed: {', '.join(map(repr, ILLEGAL_MODES))}")
        config = make_config(rules, num_players=num_players, **rule_options)
        self.device = check_device(device)
        self.config = config
        self.num_envs = n = int(num_envs)
        self.num_players = p = config.num_players
        self.episode = episode
        self.reward_mode = reward
        self.observation = observation
        self.max_rounds = check_max_rounds(max_rounds)
        self.illegal = illegal
        self.hand_size = config.hand_size
        self.dealt = p * config.hand_size
        self.layout = layout_for(p)  # the card layout; "features" appends the solver features
        self.obs_size = layout_for(p, observation).size
        self.meld_tables = MeldTables.on(self.device)
        self.table_rows = torch.arange(n, device=self.device)
        self._card_values = torch.tensor(CARD_VALUES, dtype=torch.int64, device=self.device)
        #: The games of the stateful API (``reset``/``step``); None before the first reset.
        self.state: TensorState | None = None

    # ------------------------------------------------------------------ the functions over a state
    def init(self, seed: int | None = None, options: dict[str, Any] | None = None) -> TensorState:
        """A new episode in every game as a new state (``options``: as ``reset``'s); ``seed=None``
        seeds its generator from the operating system."""
        return self._init(seed, options, None)

    def step_state(self, state: TensorState, actions: Any, active: Any = None,
                   observe: bool = True) -> tuple[TensorState, TensorStep]:
        """``step`` on a copy of ``state``: ``(the state after the step, what step returns)``;
        ``state`` itself is left as it was (search and tree expansions can branch from it)."""
        self._check_state(state)
        new = state.clone()
        return new, self._step(new, actions, active, observe)

    def observe(self, state: TensorState, rows: torch.Tensor | None = None, *, check_rows: bool = True) -> torch.Tensor:
        """(len(rows), D) the observation of the seat to act in the games ``rows`` of ``state``
        (default every game); the mask is ``state.legal_action_mask``. ``check_rows=False`` takes
        ``rows`` as a 1-D int64 tensor of valid indices on this device without checking it (the
        range check reads the tensor back: one device sync a call on a GPU)."""
        self._check_state(state)
        if rows is None:
            rows = self.table_rows
        elif check_rows:
            rows = checked_rows(rows, self.num_envs, self.device)
        return encode_observations(self, state, rows, state.current[rows], over=False,
                                   mask=state.legal_action_mask[rows])

    def _check_state(self, state: Any) -> None:
        if not isinstance(state, TensorState):
            raise ValueError(f"state must be a TensorState (from init, reset or step_state), got {type(state).__name__}")
        if (state.num_envs, state.num_players) != (self.num_envs, self.num_players) or state.device != self.device:
            raise ValueError(f"state holds {state.num_envs} games of {state.num_players} seats on {state.device}; "
                             f"this env plays {self.num_envs} of {self.num_players} on {self.device}")
        if state.rules is not self.config and state.rules != self.config:  # (identity first: every call checks)
            differ = "; ".join(f"{item.name}: {getattr(state.rules, item.name, None)!r} in the state, "
                               f"{getattr(self.config, item.name)!r} here" for item in dataclasses.fields(self.config)
                               if getattr(state.rules, item.name, None) != getattr(self.config, item.name))
            raise ValueError(f"state is played by other rules than this env's ({differ}); step and observe a "
                             "state with an env of its rules")
        if state.observation.shape[1] != self.obs_size:
            raise ValueError(f"state holds observations of {state.observation.shape[1]} values; this env's have "
                             f"{self.obs_size} (observation={self.observation!r})")

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> TensorStep:
        """Deal a new episode in every game (seeding and options: the module docstring)."""
        state = self._init(seed, options, None if self.state is None else self.state.generator)
        self.state = state
        n, p = self.num_envs, self.num_players
        zeros = torch.zeros(n, dtype=torch.bool, device=self.device)
        return TensorStep(
            state.observation, state.legal_action_mask, state.current.clone(), torch.zeros(n, p, device=self.device),
            zeros, zeros, zeros, state.totals.clone(), torch.zeros(n, p, self.obs_size, device=self.device), zeros)

    def _init(self, seed: int | None, options: dict[str, Any] | None,
              generator: torch.Generator | None) -> TensorState:
        """A new state; ``generator``: continued where ``seed`` is None (else a new one)."""
        seed = check_seed(seed)
        options = check_reset_options(options)
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; known: {', '.join(RESET_OPTIONS)}")
        n, p = self.num_envs, self.num_players
        decks = checked_decks(options.get("deck"), n, self.device)
        dealers = checked_dealers(options.get("dealer"), n, p, self.device)
        if seed is not None or generator is None:
            generator = torch.Generator(device=self.device)
            if seed is None:
                generator.seed()
            else:
                generator.manual_seed(generator_seed(seed))
        state = TensorState.empty(n, p, self.obs_size, generator, rules=self.config)
        first_dealers = torch.randint(0, p, (n,), generator=generator, device=self.device)
        state.dealer.copy_(first_dealers if dealers is None else dealers)
        self.deal(state, self.table_rows, decks)
        state.observation, state.legal_action_mask = self._observe_acting(state)
        return state

    def deal(self, state: TensorState, rows: torch.Tensor, decks: torch.Tensor | None = None) -> None:
        """Deal a round in the games ``rows`` of ``state`` (their ``dealer`` already set; ``decks``
        (len(rows), 52) card ids top first, default shuffled from its generator): docs/rules.md §3."""
        k, p, dev = rows.numel(), self.num_players, self.device
        if decks is None:
            decks = torch.rand(k, NUM_CARDS, generator=state.generator, device=dev).argsort(1)
        dealer = state.dealer[rows]
        dealt = self.dealt
        # One card at a time, starting with the player after the dealer.
        seat_of = (dealer[:, None] + 1 + torch.arange(dealt, device=dev)) % p  # (k, dealt)
        hands = torch.zeros(k, p * NUM_CARDS, dtype=torch.bool, device=dev)
        hands.scatter_(1, seat_of * NUM_CARDS + decks[:, :dealt], True)
        upcard = decks[:, dealt]
        state.deck[rows] = decks
        state.hands[rows] = hands.view(k, p, NUM_CARDS)
        state.known[rows] = False
        state.passed[rows] = False
        pile = torch.zeros(k, NUM_CARDS, dtype=torch.int64, device=dev)
        pile[:, 0] = upcard
        state.pile[rows] = pile
        state.pile_len[rows] = 1
        state.pile_mask[rows] = torch.nn.functional.one_hot(upcard, NUM_CARDS).bool()
        state.stock_pos[rows] = dealt + 1
        state.upcard[rows] = upcard
        state.knock_limit[rows] = self._knock_limits(upcard)
        state.phase[rows] = _OFFER
        state.current[rows] = (dealer + 1) % p
        state.offers_declined[rows] = 0
        state.must_draw_stock[rows] = False
        state.taken_card[rows] = -1
        state.discards[rows] = 0
        state.reshuffles[rows] = 0

    def _knock_limits(self, upcard: torch.Tensor) -> torch.Tensor:
        """``rules.round.knock_limit_for`` of each upcard."""
        config = self.config
        if config.knock_limit is not None:
            return torch.full_like(upcard, config.knock_limit)
        value = self._card_values[upcard]
        return torch.where((value == 1) & config.ace_upcard_gin_only, 0, value)

    # ------------------------------------------------------------------ legality and observations
    def _legal_masks(self, state: TensorState) -> torch.Tensor:
        """(N, 107) bool: ``RoundState.legal_parts`` of every game's seat to act; sets the solver's
        results (``deadwood_after``, ``hand_deadwood``) in ``state``."""
        n, dev = self.num_envs, self.device
        phase = state.phase
        mask = torch.zeros(n, NUM_ACTIONS, dtype=torch.bool, device=dev)
        offer, draw, discard = phase == _OFFER, phase == _DRAW, phase == _DISCARD
        mask[:, DRAW_STOCK] = draw
        mask[:, TAKE_DISCARD] = offer | (draw & ~state.must_draw_stock)
        mask[:, PASS] = offer
        hand = state.hands[self.table_rows, state.current]  # (N, 52)
        throwable = hand & discard[:, None]
        if not self.config.allow_discard_taken:
            taken = state.taken_card
            throwable = throwable & ~(torch.nn.functional.one_hot(taken.clamp(min=0), NUM_CARDS).bool() & (taken >= 0)[:, None])
        mask[:, DISCARD_BASE:KNOCK_BASE] = throwable
        rows = discard.nonzero().squeeze(1)
        # The least deadwood after putting away each card, where a card is to be thrown (for the
        # knocks here, and for simple and the features, which read it from the state).
        state.deadwood_after = torch.full((n, NUM_CARDS), NO_CHOICE, dtype=torch.int64, device=dev)
        state.hand_deadwood = torch.zeros(n, dtype=torch.int64, device=dev)  # (of the 11 cards, discard phase only)
        if rows.numel():
            best, after = deadwood_after_each(hand[rows], self.meld_tables)
            state.deadwood_after[rows] = after
            state.hand_deadwood[rows] = best
            mask[rows, KNOCK_BASE:] = throwable[rows] & (after <= state.knock_limit[rows, None])
        return mask

    def observe_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """(len(rows), D) the observation of the seat to act in the games ``rows`` (what
        ``observations[rows]`` holds after an observed step): ``observe(env.state, rows)``."""
        return self.observe(self._live_state(), rows)

    def _observe_acting(self, state: TensorState) -> tuple[torch.Tensor, torch.Tensor]:
        mask = self._legal_masks(state)
        return encode_observations(self, state, self.table_rows, state.current, over=False, mask=mask), mask

    def _live_state(self) -> TensorState:
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        return self.state

    # ------------------------------------------------------------------ step
    def step(self, actions: Any, active: Any = None, observe: bool = True) -> TensorStep:
        """Play one action in every game (or in the games where ``active``, an (N,) bool tensor, is
        True: the others are left as they are, their actions unread) and restart finished episodes
        (the module docstring). ``observe=False`` skips the observations (for a caller that encodes
        only the games it needs with ``observe_rows``): the returned ``observation`` and
        ``final_observation`` are None and ``observations`` is stale until the next observed step.
        ``env.state`` is updated in place (``step_state`` leaves its state as it was)."""
        return self._step(self._live_state(), actions, active, observe)

    def _step(self, state: TensorState, actions: Any, active: Any, observe: bool) -> TensorStep:
        acts, given = checked_actions(actions, self.num_envs, self.device)
        if active is not None:
            if not isinstance(active, torch.Tensor) or active.dtype != torch.bool or active.shape != (self.num_envs,):
                raise ValueError(f"active must be a bool tensor of shape ({self.num_envs},), got {active!r:.80}")
            active = active.to(self.device)
        in_range = (acts >= 0) & (acts < NUM_ACTIONS)
        legal = state.legal_action_mask.gather(1, acts.clamp(0, NUM_ACTIONS - 1)[:, None]).squeeze(1) & in_range
        if active is not None:
            legal = legal | ~active
        if self.illegal == "raise":
            if not bool(legal.all()):
                self._raise_illegal(state, acts if given is None else given, legal)
            return self._apply(state, acts, active, torch.zeros_like(legal), observe)
        play = legal if active is None else legal & active
        return self._apply(state, acts, play, ~legal, observe)

    def _raise_illegal(self, state: TensorState, acts: torch.Tensor | np.ndarray, legal: torch.Tensor) -> None:
        """A ValueError naming the first illegal action (``acts`` as the caller gave them) and the legal ones."""
        g = int((~legal).nonzero()[0, 0])
        a = int(acts[g])
        allowed = state.legal_action_mask[g].nonzero().squeeze(1).tolist()
        names = ", ".join(f"{x} ({action_str(x)})" for x in allowed)
        what = f"{a} ({action_str(a)})" if 0 <= a < NUM_ACTIONS else f"{a} (out of range 0..{NUM_ACTIONS - 1})"
        raise ValueError(f"game {g}: action {what} is not legal for seat {int(state.current[g])}; legal: {names}")

    def _apply(self, state: TensorState, acts: torch.Tensor, play: torch.Tensor | None, illegal: torch.Tensor, observe: bool) -> TensorStep:
        """Play ``acts`` in the games where ``play`` (None: all); ``illegal`` is returned as is;
        ``observe``: as ``step``'s."""
        n, p, dev = self.num_envs, self.num_players, self.device
        one_hot = torch.nn.functional.one_hot
        rows = self.table_rows
        phase, cur = state.phase, state.current
        live = torch.ones(n, dtype=torch.bool, device=dev) if play is None else play
        offer = live & (phase == _OFFER)
        draw = live & (phase == _DRAW)
        discard_phase = live & (phase == _DISCARD)
        take = (offer | draw) & (acts == TAKE_DISCARD)
        decline = offer & (acts == PASS)
        from_stock = draw & (acts == DRAW_STOCK)
        knock = discard_phase & (acts >= KNOCK_BASE)
        discard = discard_phase & ~knock
        top = state.pile[rows, (state.pile_len - 1).clamp(min=0)]
        stock_top = state.deck[rows, state.stock_pos.clamp(max=NUM_CARDS - 1)]
        thrown = torch.where(knock, acts - KNOCK_BASE, acts - DISCARD_BASE).clamp(0, NUM_CARDS - 1)
        seat = one_hot(cur, p).bool()  # (N, P)

        gained = one_hot(torch.where(take, top, stock_top), NUM_CARDS).bool() & (take | from_stock)[:, None]
        thrown_oh = one_hot(thrown, NUM_CARDS).bool() & (knock | discard)[:, None]
        passed_card = torch.where(decline, state.upcard, torch.where(from_stock, top, thrown))
        passed_oh = one_hot(passed_card, NUM_CARDS).bool() & (decline | from_stock | discard)[:, None]
        at_seat = seat[:, :, None]
        state.hands = (state.hands | (at_seat & gained[:, None])) & ~(at_seat & thrown_oh[:, None])
        state.known = (state.known | (at_seat & (gained & take[:, None])[:, None])) & ~(at_seat & thrown_oh[:, None])
        state.passed = state.passed | (at_seat & passed_oh[:, None])
        # The discard pile: the top leaves it when taken; a discard goes on it.
        top_oh = one_hot(top, NUM_CARDS).bool()
        state.pile_mask = (state.pile_mask & ~(top_oh & take[:, None])) | (thrown_oh & discard[:, None])
        slot = state.pile_len.clamp(max=NUM_CARDS - 1)
        state.pile[rows, slot] = torch.where(discard, thrown, state.pile[rows, slot])
        state.pile_len = state.pile_len - take.long() + discard.long()
        state.stock_pos = state.stock_pos + from_stock.long()
        state.taken_card = torch.where(take, top, torch.where(from_stock | discard_phase, -1, state.taken_card))
        state.offers_declined = state.offers_declined + decline.long()
        everybody_passed = decline & (state.offers_declined == p)
        state.must_draw_stock = (state.must_draw_stock & ~from_stock) | everybody_passed
        state.discards = state.discards + discard.long()
        stock_size = NUM_CARDS - state.stock_pos
        too_long = discard & (state.discards >= self.config.max_turns)
        exhausted = discard & ~too_long & (stock_size <= STOCK_LEFT_AT_WALL)
        if self.config.reshuffle_stock:  # penalty: the stock is rebuilt, up to max_reshuffles times
            rebuild = exhausted & (state.reshuffles < self.config.max_reshuffles)
            exhausted = exhausted & ~rebuild
            rebuilt = rebuild.nonzero().squeeze(1)
            if rebuilt.numel():
                self._rebuild_stock(state, rebuilt)
        wall = too_long | exhausted
        next_seat = (cur + 1) % p
        state.current = torch.where(everybody_passed, (state.dealer + 1) % p,
                                   torch.where(decline | (discard & ~wall), next_seat, cur))
        new_phase = torch.where(take | from_stock, _DISCARD, phase)
        new_phase = torch.where(decline, torch.where(everybody_passed, _DRAW, _OFFER), new_phase)
        new_phase = torch.where(discard, _DRAW, new_phase)
        state.phase = torch.where(knock | wall, _OVER, new_phase)

        rewards = torch.zeros(n, p, dtype=torch.float32, device=dev)
        round_over = knock | wall
        terminated = torch.zeros(n, dtype=torch.bool, device=dev)
        truncated = torch.zeros_like(terminated)
        final = torch.zeros(n, p, self.obs_size, dtype=torch.float32, device=dev) if observe else None
        scores = state.totals.clone()
        ended = round_over.nonzero().squeeze(1)
        if ended.numel():
            terminated, truncated, scores = end_rounds(self, state, ended, knock, rewards, final)
        if observe:
            state.observation, state.legal_action_mask = self._observe_acting(state)
        else:
            state.legal_action_mask = self._legal_masks(state)
        return TensorStep(state.observation if observe else None, state.legal_action_mask, state.current.clone(), rewards,
                          terminated, truncated, round_over, scores, final, illegal)

    def _rebuild_stock(self, state: TensorState, games: torch.Tensor) -> None:
        """docs/rules.md §9 (``RoundState._reshuffle``): the discard pile but its top, shuffled, goes
        under the stock's last cards; the top stays as the pile."""
        k, dev = games.numel(), self.device
        pile, length = state.pile[games], state.pile_len[games]
        under = length - 1  # cards shuffled
        slots = torch.arange(NUM_CARDS, device=dev)
        # A uniform permutation of 0..under-1 per game (positions past it sort last).
        keys = torch.rand(k, NUM_CARDS, generator=state.generator, device=dev).masked_fill(slots >= under[:, None], 2.0)
        permutation = keys.argsort(1)
        shuffled = pile.gather(1, permutation)  # shuffled[j] = under[permutation[j]]
        left = NUM_CARDS - state.stock_pos[games]  # the cards still in the stock, in draw order
        start = NUM_CARDS - left - under  # the rebuilt stock fills the deck's last positions
        position = slots - start[:, None]  # 0.. in draw order: the old stock, then the shuffled cards last first
        old = state.deck[games].gather(1, (state.stock_pos[games, None] + position).clamp(0, NUM_CARDS - 1))
        new = shuffled.gather(1, (under[:, None] - 1 - (position - left[:, None])).clamp(0, NUM_CARDS - 1))
        deck = torch.where(position < 0, state.deck[games], torch.where(position < left[:, None], old, new))
        top = pile.gather(1, (length - 1)[:, None]).squeeze(1)
        state.deck[games] = deck
        state.stock_pos[games] = start
        state.pile[games, 0] = top
        state.pile_len[games] = 1
        state.pile_mask[games] = torch.nn.functional.one_hot(top, NUM_CARDS).bool()
        state.reshuffles[games] += 1
        state.last_permutation[games] = permutation

    # ------------------------------------------------------------------ read-only views of env.state
    @property
    def observations(self) -> torch.Tensor:
        """(N, D) the latest observation of every game's seat to act."""
        return self._live_state().observation.clone()

    @property
    def action_masks(self) -> torch.Tensor:
        """(N, 107) bool: the current legal actions of every game's seat to act."""
        return self._live_state().legal_action_mask.clone()

    def action_mask_view(self) -> torch.Tensor:
        """``action_masks`` without the copy: valid until the next ``step`` or ``reset``; not to be written."""
        return self._live_state().legal_action_mask

    def hand_masks(self) -> torch.Tensor:
        """(N, num_players) int64: every seat's hand as a 52-bit card mask (hidden information: for
        tools, scripted opponents and tests, not agents)."""
        return self._live_state().hand_masks()


__all__ = ["ILLEGAL_MODES", "TensorEnv", "TensorState", "TensorStep"]
