"""``TensorEnv``: ``num_envs`` games of gin stepped together as torch operations, on CPU or GPU.

The pgx shape: one ``step`` for 1 or 100,000 games, every game's state a row of a few tensors on
one device, every rule a batched tensor operation, no Python loop over games::

    from okgin_env.tensor import TensorEnv
    env = TensorEnv(4096, device="cuda", rules="classic", episode="round")
    out = env.reset(seed=0)
    while training:
        actions = policy(out.observation, out.action_mask)      # (N,) int64, one per game
        out = env.step(actions)

* ``TensorEnv(num_envs, device="cpu", rules="classic", episode="round", reward="points",
  observation="cards", max_rounds=200, illegal="raise", **rule_options)``: the options of
  ``okgin_env.env`` (a preset name or a ``RulesConfig``, and any rule option of docs/rules.md §10).
  Every preset: ``classic``, ``standard`` and ``penalty`` with 2-4 players (its stock rebuilds
  shuffle the discard pile on the device, from the env's generator). ``observation="features"``
  appends the solver features of ``okgin_env.features`` (``okgin_env.tensor.features``).
* ``reset(seed=None, options=None) -> TensorStep`` deals a new episode in every game;
  ``options={"deck": decks, "dealer": dealers}`` fixes the first deal of every game: ``decks`` a
  (N, 52) integer tensor or array of card ids, top first (a permutation per row), ``dealers`` (N,)
  seats or one seat for all (as ``BatchEnv``'s options of the same names).
* ``step(actions, active=None, observe=True) -> TensorStep``: ``actions`` (N,) integers, one per
  game, for its seat to act; ``active`` (N,) bool steps only those games (the others keep their
  state, and their actions are not read): a learner and its opponents can take turns on one batch.
  ``observe=False`` skips the observations (``observation`` and ``final_observation`` are None) for
  a caller that encodes only the games it needs with ``observe_rows(rows)``.
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

from typing import Any, NamedTuple

import numpy as np
import torch

from ..episode import DEFAULT_MAX_ROUNDS, RESET_OPTIONS, check_max_rounds, check_options, check_reset_options
from ..observation import check_observation, layout_for
from ..rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, NUM_ACTIONS, PASS, TAKE_DISCARD, action_str
from ..rules.cards import CARD_VALUES, NUM_CARDS
from ..rules.config import RulesConfig, check_seed, is_int, make_config
from ..rules.round import STOCK_LEFT_AT_WALL, Phase
from .arguments import check_device, generator_seed
from .encode import encode_observations
from .round_end import end_rounds
from .solver import NO_CHOICE, MeldTables, deadwood_after_each

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
        self._tables = MeldTables.on(self.device)
        dev = self.device
        self._rows = torch.arange(n, device=dev)
        self._card_bits = (1 << torch.arange(NUM_CARDS, dtype=torch.int64)).to(dev)
        self._card_values = torch.tensor(CARD_VALUES, dtype=torch.int64, device=dev)
        self._generator: torch.Generator | None = None
        i64 = dict(dtype=torch.int64, device=dev)
        # Round state, one row per game (the fields of rules.round.RoundState).
        self.deck = torch.zeros(n, NUM_CARDS, **i64)  # the deck dealt, top first
        self.hands = torch.zeros(n, p, NUM_CARDS, dtype=torch.bool, device=dev)
        self.known = torch.zeros_like(self.hands)
        self.passed = torch.zeros_like(self.hands)
        self.pile = torch.zeros(n, NUM_CARDS, **i64)  # bottom first
        self.pile_len = torch.zeros(n, **i64)
        self.pile_mask = torch.zeros(n, NUM_CARDS, dtype=torch.bool, device=dev)
        self.stock_pos = torch.zeros(n, **i64)  # deck index of the stock's top card
        self.upcard = torch.zeros(n, **i64)
        self.knock_limit = torch.zeros(n, **i64)
        self.phase = torch.zeros(n, **i64)
        self.current = torch.zeros(n, **i64)
        self.dealer = torch.zeros(n, **i64)
        self.offers_declined = torch.zeros(n, **i64)
        self.must_draw_stock = torch.zeros(n, dtype=torch.bool, device=dev)
        self.taken_card = torch.full((n,), -1, **i64)
        self.discards = torch.zeros(n, **i64)
        self.reshuffles = torch.zeros(n, **i64)
        #: The order of the last stock rebuild of each game (rules.round.RoundState._reshuffle's
        #: permutation of the pile under its top): tools and tests read it.
        self.last_permutation = torch.zeros(n, NUM_CARDS, **i64)
        # Match state (rules.match.MatchState): totals toward the target, rounds won and played.
        self.totals = torch.zeros(n, p, **i64)
        self.rounds_won = torch.zeros(n, p, **i64)
        self.rounds_lost = torch.zeros(n, p, **i64)  # penalty tie-break: rounds in which a seat was charged
        self.rounds_played = torch.zeros(n, **i64)
        self._observation = torch.zeros(n, self.obs_size, dtype=torch.float32, device=dev)
        self._mask = torch.zeros(n, NUM_ACTIONS, dtype=torch.bool, device=dev)

    # ------------------------------------------------------------------ reset
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> TensorStep:
        """Deal a new episode in every game (seeding and options: the module docstring)."""
        seed = check_seed(seed)
        options = check_reset_options(options)
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            raise ValueError(f"unknown reset option(s) {unknown}; known: {', '.join(RESET_OPTIONS)}")
        n, p = self.num_envs, self.num_players
        decks = self._checked_decks(options.get("deck"))
        dealers = self._checked_dealers(options.get("dealer"))
        if seed is not None or self._generator is None:
            generator = torch.Generator(device=self.device)  # (replaced only once everything is checked)
            if seed is None:
                generator.seed()
            else:
                generator.manual_seed(generator_seed(seed))
            self._generator = generator
        rows = self._rows
        first_dealers = torch.randint(0, p, (n,), generator=self._generator, device=self.device)
        if dealers is not None:
            first_dealers = dealers
        self.totals.zero_()
        self.rounds_won.zero_()
        self.rounds_lost.zero_()
        self.rounds_played.zero_()
        self.dealer.copy_(first_dealers)
        self._deal(rows, decks)
        self._observation, self._mask = self._observe_acting()
        zeros = torch.zeros(n, dtype=torch.bool, device=self.device)
        return TensorStep(
            self._observation, self._mask, self.current.clone(), torch.zeros(n, p, device=self.device), zeros, zeros,
            zeros, self.totals.clone(), torch.zeros(n, p, self.obs_size, device=self.device), zeros)

    def _checked_decks(self, decks: Any) -> torch.Tensor | None:
        if decks is None:
            return None
        n = self.num_envs
        try:
            tensor = torch.as_tensor(np.asarray(decks) if not isinstance(decks, torch.Tensor) else decks)
        except (TypeError, ValueError, RuntimeError):
            tensor = None
        if (tensor is None or tensor.shape != (n, NUM_CARDS) or tensor.dtype.is_floating_point or tensor.dtype.is_complex
                or tensor.dtype == torch.bool):
            raise ValueError(f"options['deck'] must be an integer tensor or array of shape ({n}, {NUM_CARDS}) "
                             f"(one deck of card ids per game, top first), got {decks!r:.80}")
        tensor = tensor.to(device=self.device, dtype=torch.int64)
        ok = (tensor.sort(1).values == torch.arange(NUM_CARDS, device=self.device)).all(1)
        if not bool(ok.all()):
            bad = int((~ok).nonzero()[0, 0])
            raise ValueError(f"options['deck'][{bad}] is not a permutation of the 52 card ids 0..51")
        return tensor

    def _checked_dealers(self, dealers: Any) -> torch.Tensor | None:
        if dealers is None:
            return None
        n, p = self.num_envs, self.num_players
        if is_int(dealers):
            dealers = [int(dealers)] * n
        try:
            tensor = torch.as_tensor(np.asarray(dealers) if not isinstance(dealers, torch.Tensor) else dealers)
        except (TypeError, ValueError, RuntimeError):
            tensor = None
        if (tensor is None or tensor.shape != (n,) or tensor.dtype.is_floating_point or tensor.dtype == torch.bool
                or bool(((tensor < 0) | (tensor >= p)).any())):
            raise ValueError(f"options['dealer'] must be one seat in 0..{p - 1} or ({n},) seats, got {dealers!r:.80}")
        return tensor.to(device=self.device, dtype=torch.int64)

    def _deal(self, rows: torch.Tensor, decks: torch.Tensor | None = None) -> None:
        """Deal a round in the games ``rows`` (their ``dealer`` already set): docs/rules.md §3."""
        k, p, dev = rows.numel(), self.num_players, self.device
        if decks is None:
            decks = torch.rand(k, NUM_CARDS, generator=self._generator, device=dev).argsort(1)
        dealer = self.dealer[rows]
        dealt = self.dealt
        # One card at a time, starting with the player after the dealer.
        seat_of = (dealer[:, None] + 1 + torch.arange(dealt, device=dev)) % p  # (k, dealt)
        hands = torch.zeros(k, p * NUM_CARDS, dtype=torch.bool, device=dev)
        hands.scatter_(1, seat_of * NUM_CARDS + decks[:, :dealt], True)
        upcard = decks[:, dealt]
        self.deck[rows] = decks
        self.hands[rows] = hands.view(k, p, NUM_CARDS)
        self.known[rows] = False
        self.passed[rows] = False
        pile = torch.zeros(k, NUM_CARDS, dtype=torch.int64, device=dev)
        pile[:, 0] = upcard
        self.pile[rows] = pile
        self.pile_len[rows] = 1
        self.pile_mask[rows] = torch.nn.functional.one_hot(upcard, NUM_CARDS).bool()
        self.stock_pos[rows] = dealt + 1
        self.upcard[rows] = upcard
        self.knock_limit[rows] = self._knock_limits(upcard)
        self.phase[rows] = _OFFER
        self.current[rows] = (dealer + 1) % p
        self.offers_declined[rows] = 0
        self.must_draw_stock[rows] = False
        self.taken_card[rows] = -1
        self.discards[rows] = 0
        self.reshuffles[rows] = 0

    def _knock_limits(self, upcard: torch.Tensor) -> torch.Tensor:
        """``rules.round.knock_limit_for`` of each upcard."""
        config = self.config
        if config.knock_limit is not None:
            return torch.full_like(upcard, config.knock_limit)
        value = self._card_values[upcard]
        return torch.where((value == 1) & config.ace_upcard_gin_only, 0, value)

    # ------------------------------------------------------------------ legality and observations
    def _legal_masks(self) -> torch.Tensor:
        """(N, 107) bool: ``RoundState.legal_parts`` of every game's seat to act."""
        n, dev = self.num_envs, self.device
        phase = self.phase
        mask = torch.zeros(n, NUM_ACTIONS, dtype=torch.bool, device=dev)
        offer, draw, discard = phase == _OFFER, phase == _DRAW, phase == _DISCARD
        mask[:, DRAW_STOCK] = draw
        mask[:, TAKE_DISCARD] = offer | (draw & ~self.must_draw_stock)
        mask[:, PASS] = offer
        hand = self.hands[self._rows, self.current]  # (N, 52)
        throwable = hand & discard[:, None]
        if not self.config.allow_discard_taken:
            taken = self.taken_card
            throwable = throwable & ~(torch.nn.functional.one_hot(taken.clamp(min=0), NUM_CARDS).bool() & (taken >= 0)[:, None])
        mask[:, DISCARD_BASE:KNOCK_BASE] = throwable
        rows = discard.nonzero().squeeze(1)
        # The least deadwood after putting away each card, where a card is to be thrown (for the
        # knocks here, and for simple and the features, which read it from the env).
        self._deadwood_after = torch.full((n, NUM_CARDS), NO_CHOICE, dtype=torch.int64, device=dev)
        self._hand_deadwood = torch.zeros(n, dtype=torch.int64, device=dev)  # (of the 11 cards, discard phase only)
        if rows.numel():
            best, after = deadwood_after_each(hand[rows], self._tables)
            self._deadwood_after[rows] = after
            self._hand_deadwood[rows] = best
            mask[rows, KNOCK_BASE:] = throwable[rows] & (after <= self.knock_limit[rows, None])
        return mask

    def observe_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """(len(rows), D) the observation of the seat to act in the games ``rows`` (what
        ``observations[rows]`` holds after an observed step)."""
        return encode_observations(self, rows, self.current[rows], over=False, mask=self._mask[rows])

    def _observe_acting(self) -> tuple[torch.Tensor, torch.Tensor]:
        mask = self._legal_masks()
        return encode_observations(self, self._rows, self.current, over=False, mask=mask), mask

    # ------------------------------------------------------------------ step
    def step(self, actions: Any, active: Any = None, observe: bool = True) -> TensorStep:
        """Play one action in every game (or in the games where ``active``, an (N,) bool tensor, is
        True: the others are left as they are, their actions unread) and restart finished episodes
        (the module docstring). ``observe=False`` skips the observations (for a caller that encodes
        only the games it needs with ``observe_rows``): the returned ``observation`` and
        ``final_observation`` are None and ``observations`` is stale until the next observed step."""
        if self._generator is None:
            raise RuntimeError("call reset() before step()")
        acts, given = self._checked_actions(actions)
        if active is not None:
            if not isinstance(active, torch.Tensor) or active.dtype != torch.bool or active.shape != (self.num_envs,):
                raise ValueError(f"active must be a bool tensor of shape ({self.num_envs},), got {active!r:.80}")
            active = active.to(self.device)
        in_range = (acts >= 0) & (acts < NUM_ACTIONS)
        legal = self._mask.gather(1, acts.clamp(0, NUM_ACTIONS - 1)[:, None]).squeeze(1) & in_range
        if active is not None:
            legal = legal | ~active
        if self.illegal == "raise":
            if not bool(legal.all()):
                self._raise_illegal(acts if given is None else given, legal)
            return self._apply(acts, active, torch.zeros_like(legal), observe)
        play = legal if active is None else legal & active
        return self._apply(acts, play, ~legal, observe)

    def _checked_actions(self, actions: Any) -> tuple[torch.Tensor, np.ndarray | None]:
        """The actions as an int64 tensor on the device, and the actions as given where int64
        cannot hold them (huge uint64 ids, for the error message to name), else None."""
        n = self.num_envs
        given = None
        if isinstance(actions, torch.Tensor) and actions.dtype == torch.uint64:
            actions = actions.cpu().numpy()
        if not isinstance(actions, torch.Tensor):
            array = np.asarray(actions)
            if array.dtype == object or not (np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_):
                raise ValueError(f"actions must be integers (action ids 0..{NUM_ACTIONS - 1}), got dtype {array.dtype}")
            if array.dtype == np.uint64 and (array >= NUM_ACTIONS).any():  # int64 would wrap the largest
                given = array
                array = np.minimum(array, NUM_ACTIONS)  # out of range all the same
            actions = torch.as_tensor(array.astype(np.int64) if array.dtype != np.bool_ else array)
        if actions.shape != (n,):
            raise ValueError(f"actions must have shape ({n},) (one per game), got {tuple(actions.shape)}")
        if actions.dtype == torch.bool or actions.dtype.is_floating_point or actions.dtype.is_complex:
            raise ValueError(f"actions must be integers (action ids 0..{NUM_ACTIONS - 1}), got dtype {actions.dtype}")
        return actions.to(device=self.device, dtype=torch.int64), given

    def _raise_illegal(self, acts: torch.Tensor | np.ndarray, legal: torch.Tensor) -> None:
        """A ValueError naming the first illegal action (``acts`` as the caller gave them) and the legal ones."""
        g = int((~legal).nonzero()[0, 0])
        a = int(acts[g])
        allowed = self._mask[g].nonzero().squeeze(1).tolist()
        names = ", ".join(f"{x} ({action_str(x)})" for x in allowed)
        what = f"{a} ({action_str(a)})" if 0 <= a < NUM_ACTIONS else f"{a} (out of range 0..{NUM_ACTIONS - 1})"
        raise ValueError(f"game {g}: action {what} is not legal for seat {int(self.current[g])}; legal: {names}")

    def _apply(self, acts: torch.Tensor, play: torch.Tensor | None, illegal: torch.Tensor, observe: bool) -> TensorStep:
        """Play ``acts`` in the games where ``play`` (None: all); ``illegal`` is returned as is;
        ``observe``: as ``step``'s."""
        n, p, dev = self.num_envs, self.num_players, self.device
        one_hot = torch.nn.functional.one_hot
        rows = self._rows
        phase, cur = self.phase, self.current
        live = torch.ones(n, dtype=torch.bool, device=dev) if play is None else play
        offer = live & (phase == _OFFER)
        draw = live & (phase == _DRAW)
        discard_phase = live & (phase == _DISCARD)
        take = (offer | draw) & (acts == TAKE_DISCARD)
        decline = offer & (acts == PASS)
        from_stock = draw & (acts == DRAW_STOCK)
        knock = discard_phase & (acts >= KNOCK_BASE)
        discard = discard_phase & ~knock
        top = self.pile[rows, (self.pile_len - 1).clamp(min=0)]
        stock_top = self.deck[rows, self.stock_pos.clamp(max=NUM_CARDS - 1)]
        thrown = torch.where(knock, acts - KNOCK_BASE, acts - DISCARD_BASE).clamp(0, NUM_CARDS - 1)
        seat = one_hot(cur, p).bool()  # (N, P)

        gained = one_hot(torch.where(take, top, stock_top), NUM_CARDS).bool() & (take | from_stock)[:, None]
        thrown_oh = one_hot(thrown, NUM_CARDS).bool() & (knock | discard)[:, None]
        passed_card = torch.where(decline, self.upcard, torch.where(from_stock, top, thrown))
        passed_oh = one_hot(passed_card, NUM_CARDS).bool() & (decline | from_stock | discard)[:, None]
        at_seat = seat[:, :, None]
        self.hands = (self.hands | (at_seat & gained[:, None])) & ~(at_seat & thrown_oh[:, None])
        self.known = (self.known | (at_seat & (gained & take[:, None])[:, None])) & ~(at_seat & thrown_oh[:, None])
        self.passed = self.passed | (at_seat & passed_oh[:, None])
        # The discard pile: the top leaves it when taken; a discard goes on it.
        top_oh = one_hot(top, NUM_CARDS).bool()
        self.pile_mask = (self.pile_mask & ~(top_oh & take[:, None])) | (thrown_oh & discard[:, None])
        slot = self.pile_len.clamp(max=NUM_CARDS - 1)
        self.pile[rows, slot] = torch.where(discard, thrown, self.pile[rows, slot])
        self.pile_len = self.pile_len - take.long() + discard.long()
        self.stock_pos = self.stock_pos + from_stock.long()
        self.taken_card = torch.where(take, top, torch.where(from_stock | discard_phase, -1, self.taken_card))
        self.offers_declined = self.offers_declined + decline.long()
        everybody_passed = decline & (self.offers_declined == p)
        self.must_draw_stock = (self.must_draw_stock & ~from_stock) | everybody_passed
        self.discards = self.discards + discard.long()
        stock_size = NUM_CARDS - self.stock_pos
        too_long = discard & (self.discards >= self.config.max_turns)
        exhausted = discard & ~too_long & (stock_size <= STOCK_LEFT_AT_WALL)
        if self.config.reshuffle_stock:  # penalty: the stock is rebuilt, up to max_reshuffles times
            rebuild = exhausted & (self.reshuffles < self.config.max_reshuffles)
            exhausted = exhausted & ~rebuild
            rebuilt = rebuild.nonzero().squeeze(1)
            if rebuilt.numel():
                self._rebuild_stock(rebuilt)
        wall = too_long | exhausted
        next_seat = (cur + 1) % p
        self.current = torch.where(everybody_passed, (self.dealer + 1) % p,
                                   torch.where(decline | (discard & ~wall), next_seat, cur))
        new_phase = torch.where(take | from_stock, _DISCARD, phase)
        new_phase = torch.where(decline, torch.where(everybody_passed, _DRAW, _OFFER), new_phase)
        new_phase = torch.where(discard, _DRAW, new_phase)
        self.phase = torch.where(knock | wall, _OVER, new_phase)

        rewards = torch.zeros(n, p, dtype=torch.float32, device=dev)
        round_over = knock | wall
        terminated = torch.zeros(n, dtype=torch.bool, device=dev)
        truncated = torch.zeros_like(terminated)
        final = torch.zeros(n, p, self.obs_size, dtype=torch.float32, device=dev) if observe else None
        scores = self.totals.clone()
        ended = round_over.nonzero().squeeze(1)
        if ended.numel():
            terminated, truncated, scores = end_rounds(self, ended, knock, rewards, final)
        if observe:
            self._observation, self._mask = self._observe_acting()
        else:
            self._mask = self._legal_masks()
        return TensorStep(self._observation if observe else None, self._mask, self.current.clone(), rewards,
                          terminated, truncated, round_over, scores, final, illegal)

    def _rebuild_stock(self, games: torch.Tensor) -> None:
        """docs/rules.md §9 (``RoundState._reshuffle``): the discard pile but its top, shuffled, goes
        under the stock's last cards; the top stays as the pile."""
        k, dev = games.numel(), self.device
        pile, length = self.pile[games], self.pile_len[games]
        under = length - 1  # cards shuffled
        slots = torch.arange(NUM_CARDS, device=dev)
        # A uniform permutation of 0..under-1 per game (positions past it sort last).
        keys = torch.rand(k, NUM_CARDS, generator=self._generator, device=dev).masked_fill(slots >= under[:, None], 2.0)
        permutation = keys.argsort(1)
        shuffled = pile.gather(1, permutation)  # shuffled[j] = under[permutation[j]]
        left = NUM_CARDS - self.stock_pos[games]  # the cards still in the stock, in draw order
        start = NUM_CARDS - left - under  # the rebuilt stock fills the deck's last positions
        position = slots - start[:, None]  # 0.. in draw order: the old stock, then the shuffled cards last first
        old = self.deck[games].gather(1, (self.stock_pos[games, None] + position).clamp(0, NUM_CARDS - 1))
        new = shuffled.gather(1, (under[:, None] - 1 - (position - left[:, None])).clamp(0, NUM_CARDS - 1))
        deck = torch.where(position < 0, self.deck[games], torch.where(position < left[:, None], old, new))
        top = pile.gather(1, (length - 1)[:, None]).squeeze(1)
        self.deck[games] = deck
        self.stock_pos[games] = start
        self.pile[games, 0] = top
        self.pile_len[games] = 1
        self.pile_mask[games] = torch.nn.functional.one_hot(top, NUM_CARDS).bool()
        self.reshuffles[games] += 1
        self.last_permutation[games] = permutation

    # ------------------------------------------------------------------ read-only views
    @property
    def observations(self) -> torch.Tensor:
        """(N, D) the latest observation of every game's seat to act."""
        return self._observation.clone()

    @property
    def action_masks(self) -> torch.Tensor:
        """(N, 107) bool: the current legal actions of every game's seat to act."""
        return self._mask.clone()

    def action_mask_view(self) -> torch.Tensor:
        """``action_masks`` without the copy: valid until the next ``step`` or ``reset``; not to be written."""
        return self._mask

    def hand_masks(self) -> torch.Tensor:
        """(N, num_players) int64: every seat's hand as a 52-bit card mask (hidden information: for
        tools, scripted opponents and tests, not agents)."""
        return (self.hands.long() * self._card_bits).sum(-1)


__all__ = ["ILLEGAL_MODES", "TensorEnv", "TensorStep"]
