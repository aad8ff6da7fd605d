"""Oklahoma Gin as a PettingZoo AEC environment.

| | |
|---|---|
| Import | ``import okgin_env; env = okgin_env.env()`` or ``pettingzoo.make("aec", "okgin/oklahoma_gin_v0")`` |
| Agents | ``player_0`` … ``player_{N-1}`` (agent index = seat), N = 2 (``classic``) or 2-4 (``penalty``) |
| Actions | ``Discrete(107)``: 0 draw stock, 1 take discard / accept upcard, 2 pass, 3+c discard c, 55+c knock discarding c |
| Observations | ``{"observation": float32 (size by player count), "action_mask": int8 (107,)}`` |

Oklahoma Gin is two-player gin rummy (or 2-4 players with the ``penalty`` preset) in which the
first upcard sets the knock limit: its value, an Ace meaning gin only. The rules are those of
``docs/rules.md`` (every option and interpretation is there, §10 and the list at its end).

**Turn order.** Draw and discard are two consecutive decisions of the same agent; the upcard
offer goes around the table first. ``agent_selection`` always names the seat the engine expects.

**Observation.** One flat float32 array of named slices (``okgin_env.observation`` documents the
layout; ``okgin_env.observation.decode(obs)`` returns the named parts). It holds exactly what the
seat may know: own hand, the discard pile, the upcard and knock limit, cards each opponent is
known to hold or declined/threw, stock size, phase, seats, match scores. The hands shown at a showdown
are in every agent's ``infos["round_outcome"]`` (an after-the-round record, the knocker's face-down discard ``knock_card`` included, as in game records; never in an observation); in the observation they appear only at the end
of the episode (in a match, the next round is dealt within the same step). The action mask of an agent that is not to act is all
zeros.

**Rewards.** ``reward="points"`` (default): at the end of each round, each seat receives the
round's zero-sum reward (classic: the scorer ``+points``, the other ``-points``; penalty: the mean
penalty of the others minus one's own). ``reward="win"``: ``+1`` to the match winner and ``-1`` to
the others at the end of the match (with ``episode="round"``: to the round's winner; 0 on a draw).
With a house rule of docs/rules.md §11 on (``box_bonus``, ``game_bonus``, ``shutout_multiplier``;
classic only), the step that ends the match also pays, with ``reward="points"``, the zero-sum
reward of the match bonuses, and every agent's ``infos["match_bonus"]`` holds them (rounds won,
box, game, shutout, multiplier, scores before and after, points, rewards: ``okgin_env.episode``);
``scores`` then reports the totals with the bonuses (observations keep the totals without them).

**Episodes.** ``episode="match"`` (default) deals rounds until a seat reaches ``target_score``;
``episode="round"`` ends after one round. ``max_rounds`` (default 200, ``None``: unbounded) ends
a match still undecided after that many rounds (policies that never knock draw every round) in
a PettingZoo **truncation**: every agent's ``truncations`` is True (``terminations`` False), and
each agent is then stepped with ``None`` and removed, as after a termination; sensible play
never comes near it (``okgin_env.episode``). At the end of every round all agents' ``infos`` hold
``"round_outcome"`` (kind, knocker, winner, deadwood, melds, layoffs, points, rewards, hands),
each agent its own copy.

**Options.** ``rules`` (a preset name or a ``RulesConfig``), ``num_players`` (default None: the
preset's or the config's own count), every rule option of ``docs/rules.md`` (``gin_bonus``,
``undercut_bonus``, ``target_score``, ``ace_upcard_gin_only``, ``allow_discard_taken``,
``knock_limit``, ``max_turns``, ``max_reshuffles``, ``spade_double``, ``box_bonus``, ``game_bonus``,
``shutout_multiplier``), ``episode``, ``reward``, ``max_rounds``,
``render_mode`` (``"human"``, ``"ansi"``, ``"rgb_array"``) and ``illegal_action``: ``"raise"``
(default: a ValueError naming the legal actions) or, for ``env()``, ``"terminate"`` (PettingZoo's
``TerminateIllegalWrapper``: the offender gets -1 and the episode ends; a value that is no action
id at all, such as ``None``, ``-1`` or ``107``, is still a ValueError). ``reset(seed=...,
options={"deck": [...], "dealer": s})`` deals the first round from an exact deck (top first)
and/or dealer; the seed is None or a non-negative int. Using the env before a successful
``reset`` is a ``ResetRequiredError`` (a RuntimeError).

**Observation space.** Finite: every entry has the bounds ``okgin_env.episode.observation_bounds``
derives from the rules (0/1 card planes and one-hots, scaled numbers at most 1, scores at most
``(target_score + the most one round can give) / target_score``).

**Feature observations.** ``observation="features"`` (default ``"cards"``) appends to the same
array the solver features of ``okgin_env.features`` (per-card planes lined up with the discard
and knock actions, per-decision numbers), computed from the seat's own observation and action
mask alone; ``okgin_env.observation.layout_for(n, "features")`` names the slices, ``decode`` reads them.

**State.** ``state()`` returns the full state (every hand, the stock in drawing order, the discard
pile, scores, ...; ``okgin_env.state``) inside ``state_space``, a finite ``Box``. It is
privileged: for centralized critics (MAPPO and the like) and tools, never a policy's input.

**Version history.** v0: first release.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from .echo import shown
from .episode import (
    seat_observation,
    DEFAULT_MAX_ROUNDS,
    MATCH_BONUS_INFO,
    RESET_OPTIONS,
    check_max_rounds,
    check_options,
    check_reset_options,
    check_seed,
    end_of_round,
    observation_bounds,
)
from .observation import check_observation, layout_for
from .registration import register_envs
from .rules.actions import NUM_ACTIONS, action_index
from .rules.config import RulesConfig, make_config
from .rules.match import MatchState
from .rules.showdown import RoundOutcome
from .state import encode_state, state_bounds

ENV_NAME = "oklahoma_gin_v0"
OWN_OPTIONS = ("rules", "num_players", "episode", "reward", "max_rounds", "render_mode", "illegal_action", "observation")
ILLEGAL_ACTION_MODES = ("raise", "terminate")
#: What ``reset`` sets: reading one before a successful reset is a ``ResetRequiredError``.
SET_BY_RESET = frozenset(
    {"agents", "agent_selection", "rewards", "_cumulative_rewards", "terminations", "truncations", "infos"}
)


class ResetRequiredError(RuntimeError, AttributeError):
    """The env was used before a successful ``reset()``. Also an AttributeError, so that
    ``hasattr(env, "agents")`` stays False before reset, as PettingZoo's tools expect."""


class UnknownAgentError(KeyError, ValueError):
    """An agent name the env does not have (still a KeyError, as PettingZoo's dicts raise): the
    message names it and the agents there are."""

    def __str__(self) -> str:  # (a KeyError would show its message quoted)
        return str(self.args[0])


def check_action_id(action: Any) -> int:
    """``action`` as a Python int if it is an action id: an integer (``rules.actions.action_index``:
    Python, numpy, a 0-d integer array or tensor; not a bool or float) in 0..106; else a ValueError."""
    index = action_index(action)
    if index is None or not 0 <= index < NUM_ACTIONS:
        raise ValueError(f"action must be an action id (an int in 0..{NUM_ACTIONS - 1}), got {action!r}")
    return index


class TerminateIllegalActions(wrappers.TerminateIllegalWrapper):
    """PettingZoo's ``TerminateIllegalWrapper`` (an illegal action ends the episode, the offender
    gets -1), refusing first with a ValueError what is no action id at all: the plain wrapper
    indexes the mask with it (``-1`` would read action 106, ``107`` and ``None`` fail obscurely)."""

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if not (self.terminations[agent] or self.truncations[agent]):
            action = check_action_id(action)
        super().step(action)


#: What PettingZoo's order-enforcing wrapper refuses to read before a reset.
WRAPPER_SET_BY_RESET = frozenset({"rewards", "terminations", "truncations", "infos", "agent_selection", "num_agents",
                                  "agents"})


class OrderEnforcingEnv(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` with ``last`` and ``step`` handed to the env inside in
    one call once reset: the plain wrapper reads every attribute that ``last`` and ``step`` touch
    through its ``__getattr__``, a third of a decision's time in a random-play loop. Behaviour is
    the plain wrapper's (the warning for a step with no agents left), except that use before a
    reset is this module's ``ResetRequiredError``, as the raw env's, where the plain wrapper raises
    an AssertionError or a bare AttributeError."""

    def _require_reset(self, what: str) -> None:
        if not self._has_reset:
            raise ResetRequiredError(f"call reset() before {what} (no reset has succeeded yet)")

    def __getattr__(self, name: str) -> Any:
        if name in WRAPPER_SET_BY_RESET and not self.__dict__.get("_has_reset", False):
            raise ResetRequiredError(f"call reset() before using the environment (no reset has succeeded yet; "
                                     f"{name} is unset)")
        return super().__getattr__(name)

    def last(self, observe: bool = True):
        self._require_reset("last()")
        return self.env.last(observe)

    def step(self, action: Any) -> None:
        self._require_reset("step()")
        if self.env.agents:
            self._has_updated = True
            self.env.step(action)
        else:
            super().step(action)

    def observe(self, agent: str) -> Any:
        self._require_reset("observe()")
        return super().observe(agent)

    def render(self) -> Any:
        self._require_reset("render()")
        return super().render()

    def state(self) -> np.ndarray:
        self._require_reset("state()")
        return super().state()

    def agent_iter(self, max_iter: int = 2**63) -> Any:
        self._require_reset("agent_iter()")
        return super().agent_iter(max_iter)

    def __str__(self) -> str:
        return str(self.env)


def env(**options: Any) -> AECEnv:
    """The environment as users get it: the raw env inside PettingZoo's order-enforcing wrapper
    (``OrderEnforcingEnv``, the same checks with fewer attribute hops).

    Actions are checked (with a clear error) inside ``raw_env.step`` itself, so the out-of-bounds
    wrapper would only repeat that check; ``illegal_action="terminate"`` adds PettingZoo's
    ``TerminateIllegalWrapper``.
    """
    illegal_action = options.pop("illegal_action", "raise")
    if illegal_action not in ILLEGAL_ACTION_MODES:
        raise ValueError(f"illegal_action={illegal_action!r}; allowed: {', '.join(ILLEGAL_ACTION_MODES)}")
    environment: AECEnv = raw_env(**options)
    if illegal_action == "terminate":
        environment = TerminateIllegalActions(environment, illegal_reward=-1)
    return OrderEnforcingEnv(environment)


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    metadata = {
        "name": ENV_NAME,
        "render_modes": ["human", "ansi", "rgb_array"],
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        rules: str | RulesConfig = "classic",
        num_players: int | None = None,
        episode: str = "match",
        reward: str = "points",
        max_rounds: int | None = DEFAULT_MAX_ROUNDS,
        render_mode: str | None = None,
        illegal_action: str = "raise",
        observation: str = "cards",
        **rule_options: Any,
    ):
        """``illegal_action`` is accepted for symmetry with ``env()``, as ``"raise"`` only: the raw
        env always raises on an illegal action (``env(illegal_action="terminate")`` adds the wrapper)."""
        super().__init__()
        check_options(rule_options, episode, reward, OWN_OPTIONS)
        self.observation = check_observation(observation)
        if illegal_action != "raise":
            raise ValueError(
                f"illegal_action={illegal_action!r}: raw_env allows only 'raise' (it always raises on an illegal "
                "action); for 'terminate' use okgin_env.env(illegal_action='terminate')"
            )
        self.config = make_config(rules, num_players=num_players, **rule_options)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r}; allowed: None, {', '.join(self.metadata['render_modes'])}")
        self.episode = episode
        self.reward_mode = reward
        self.max_rounds = check_max_rounds(max_rounds)
        self.render_mode = render_mode
        n = self.config.num_players
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agent_name_mapping = {agent: i for i, agent in enumerate(self.possible_agents)}
        self.layout = layout_for(n, self.observation)
        low, high = observation_bounds(self.config, self.observation)
        observation_space = spaces.Dict(
            {
                "observation": spaces.Box(low=low, high=high, dtype=np.float32),
                "action_mask": spaces.Box(low=0, high=1, shape=(NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = {agent: observation_space for agent in self.possible_agents}
        self.action_spaces = {agent: spaces.Discrete(NUM_ACTIONS) for agent in self.possible_agents}
        self.state_space = spaces.Box(*state_bounds(self.config), dtype=np.float32)  # privileged: okgin_env.state
        self.match: MatchState | None = None
        self.np_random: np.random.Generator | None = None
        self.last_round_outcome: RoundOutcome | None = None

    def __getattr__(self, name: str) -> Any:
        # Only called for a missing attribute: what reset sets is missing until a reset succeeded.
        # Also when a property raised an AttributeError (a ResetRequiredError is one): its own
        # error, not "no attribute", for an accessor that exists.
        accessor = getattr(type(self), name, None)
        if isinstance(accessor, property):
            return accessor.fget(self)
        if name in SET_BY_RESET:
            raise ResetRequiredError(f"call reset() before using the environment (no reset has succeeded yet; {name} is unset)")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ------------------------------------------------------------------ PettingZoo API
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Deal a new episode: every agent back in play, rewards 0, ``agent_selection`` the seat to act.

        ``seed`` (None or a non-negative int) fixes the deals; None continues the env's generator
        (a fresh one on the first reset). ``options``: ``{"deck": [...], "dealer": s}`` deals the
        first round from an exact deck (card ids or names, top first) and/or dealer; unknown keys
        warn. Returns None (PettingZoo AEC): read the first observation with ``last()``.
        """
        seed = check_seed(seed)
        options = check_reset_options(options)
        unknown = sorted(set(options) - set(RESET_OPTIONS))
        if unknown:
            # PettingZoo's api_test passes arbitrary reset options, so unknown keys warn rather than fail.
            warnings.warn(f"ignoring unknown reset option(s) {unknown}; known: {', '.join(RESET_OPTIONS)}", stacklevel=2)
        if seed is not None or self.np_random is None:
            rng, _ = seeding.np_random(seed)
        else:
            rng = self.np_random
        # Validate the injected deck/dealer before touching any state.
        match = MatchState(self.config, rng, deck=options.get("deck"), dealer=options.get("dealer"))
        self.np_random = rng
        self.match = match
        self.agents = list(self.possible_agents)
        self.rewards = {agent: 0.0 for agent in self.agents}
        self._cumulative_rewards = {agent: 0.0 for agent in self.agents}
        self.terminations = {agent: False for agent in self.agents}
        self.truncations = {agent: False for agent in self.agents}
        self.infos = {agent: {} for agent in self.agents}
        self.last_round_outcome = None
        self.agent_selection = self.possible_agents[match.round.current]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        """``agent``'s view: ``{"observation": float32 array, "action_mask": int8[107]}``. The array holds
        only what that seat may know (``okgin_env.observation``); the mask is all zeros unless
        ``agent`` is the one to act."""
        match = self._require_match()
        seat = self._seat(agent)
        to_act = agent == self.agent_selection and not self.terminations[agent] and not self.truncations[agent]
        # round_totals: the match-end house-rule bonuses (docs/rules.md §11) stay out of observations.
        return seat_observation(match.round, match.round_totals, self.config.target_score, seat, self.observation,
                                to_act=to_act)

    def state(self) -> np.ndarray:
        """The full state (``okgin_env.state``): every hand and the stock order. Privileged: for
        centralized critics and tools, never a policy's input."""
        return encode_state(self._require_match())

    def last(self, observe: bool = True):
        """``(observation, reward, terminated, truncated, info)`` of ``agent_selection``, the agent to
        act: its observation (None with ``observe=False``), its reward accumulated since it last
        acted, and its ``infos`` entry (``round_outcome`` after a round). Step it with an action id
        from the mask, or with None once it is terminated or truncated."""
        self._require_match()
        return super().last(observe)

    def step(self, action: Any) -> None:
        """Play ``action`` (an int action id that the mask allows) for ``agent_selection``; a terminated
        or truncated agent is stepped with None and leaves ``agents``. An illegal action is a
        ValueError naming the legal ones, and changes nothing. Rewards are paid at the end of each
        round (``reward="points"``) or of the episode (``reward="win"``)."""
        match = self._require_match()
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = match.round.checked(action)  # an illegal one raises, naming the legal actions
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        for info in self.infos.values():
            info.pop("round_outcome", None)
        outcome = match.apply_unchecked(action)  # (checked above)
        if outcome is not None:
            self._end_round(outcome)
        if not (self.terminations[agent] or self.truncations[agent]):
            self.agent_selection = self.possible_agents[match.round.current]
        else:
            self.agent_selection = self._agent_selector_after_end(agent)
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    # ------------------------------------------------------------------ episode bookkeeping
    def _end_round(self, outcome: RoundOutcome) -> None:
        match = self._require_match()
        self.last_round_outcome = outcome
        # Only the last outcome is kept (memory stays flat in long matches); each is in infos and last_round_outcome.
        del match.outcomes[:-1]
        for agent in self.agents:  # each agent its own dict: one agent's change is not seen by the others
            self.infos[agent]["round_outcome"] = outcome.to_dict()
        end = end_of_round(outcome, match, self.episode, self.reward_mode, self.max_rounds)
        if end.rewards is not None:
            for agent, value in zip(self.possible_agents, end.rewards):
                self.rewards[agent] = float(value)
        if end.bonus is not None:
            for agent in self.agents:
                self.infos[agent][MATCH_BONUS_INFO] = end.bonus.to_dict()
        if end.terminated:
            self.terminations = {agent: True for agent in self.agents}
        elif end.truncated:
            self.truncations = {agent: True for agent in self.agents}
        else:
            match.deal_next_round()

    def _agent_selector_after_end(self, agent: str) -> str:
        """After the end, each agent in turn is selected once to receive its final reward."""
        seat = self.agent_name_mapping[agent]
        return self.possible_agents[(seat + 1) % len(self.possible_agents)]

    def _require_match(self) -> MatchState:
        if self.match is None:
            raise ResetRequiredError("call reset() before using the environment (no reset has succeeded yet)")
        return self.match

    # ------------------------------------------------------------------ accessors (docs/api.md)
    def hand(self, agent: str) -> list[int]:
        """``agent``'s cards (card ids) now. Hidden information: for tools and tests, not agents."""
        return self._require_match().round.hand(self._seat(agent))

    def _seat(self, agent: Any) -> int:
        """The seat of the agent named ``agent``; an ``UnknownAgentError`` naming the agents otherwise."""
        try:
            return self.agent_name_mapping[agent]
        except (KeyError, TypeError):
            raise UnknownAgentError(f"unknown agent {shown(agent)}; the agents are {', '.join(self.possible_agents)}") \
                from None

    @property
    def discard_pile(self) -> list[int]:
        return list(self._require_match().round.discard_pile)

    @property
    def stock_size(self) -> int:
        return len(self._require_match().round.stock)

    @property
    def knock_limit(self) -> int:
        return self._require_match().round.knock_limit

    @property
    def dealer(self) -> str:
        return self.possible_agents[self._require_match().round.dealer]

    @property
    def scores(self) -> dict[str, int]:
        """Match totals so far; once the match is over they include the house-rule bonuses (§11)."""
        return dict(zip(self.possible_agents, self._require_match().scores))

    @property
    def round_state(self):
        """The engine's current ``RoundState`` (hidden information included: for tools, not agents)."""
        return self._require_match().round

    # ------------------------------------------------------------------ rendering
    def render(self) -> Any:
        from .render import render

        return render(self, self.render_mode)

    def close(self) -> None:
        pass


register_envs()  # OklahomaGin-v0 and okgin/oklahoma_gin_v0 (okgin_env.registration)
