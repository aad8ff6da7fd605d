"""Single-agent Gymnasium view: the learner plays one seat, opponents are policies.

``GymEnv(opponents="simple", learner_seat=0, illegal_action="terminate", opponent_seed=None,
**env_options)``; registered as ``OklahomaGin-v0`` (``gymnasium.make`` passes nothing else, so
these are its defaults too). ``env_options`` are those of ``okgin_env.env``: ``rules``,
``num_players``, ``episode`` (default ``"match"``), ``reward`` (default ``"points"``: each round's
zero-sum points), ``max_rounds`` (default 200: a match undecided after 200 rounds ends
*truncated*), ``render_mode`` and every rule option. So by default an episode is one match to 100
points against the ``simple`` bot, and it always ends: a match against ``simple`` lasts a few
rounds (``simple`` knocks as soon as it may), each round at most ``max_turns`` discards, and
``max_rounds`` bounds the match whatever the policies do.

``opponents`` is an opponent as ``okgin_env.opponents`` defines it — a bot name (``"random"``,
``"simple"``, ``"search"``, ...), a policy with ``act(observation) -> int``, or a batch policy
(``act_batch``/``act_states``), the same keyword and the same values as ``VectorGymEnv`` — used
for every other seat; or a list of them (one per other seat, in seat order, the learner's seat
skipped) or a dict by agent name. ``"random"`` (or ``None``) plays uniformly random legal
actions drawn from the env's own generator, so ``reset(seed=s)`` replays; other names are seeded
with ``opponent_seed`` and rebuilt from ``reset(seed=s)``. ``learner_seat="alternate"``
switches seats every reset so that every seat is learned; a seeded reset restarts the
alternation (the learner is in seat 0 after ``reset(seed=s)``, so that it replays: reseed once
and then reset without a seed, since reseeding every episode always starts in seat 0).

``illegal_action="terminate"`` (default, as pgx and PettingZoo's classic games do, and what
unmasked samplers such as Gymnasium's ``check_env`` need): an illegal action ends the episode
with reward -1 (``terminated`` True, ``info["illegal_action"]`` the action); ``"raise"`` raises
a ValueError naming the legal actions and changes nothing. In both modes a value that is no
action id (not an int in 0..106: ``None``, ``1.5``, ``True``) is a ValueError.

Observations are the flat float32 array of the learner's seat, inside a finite ``Box`` (bounds
from ``okgin_env.episode.observation_bounds``); with ``observation="features"`` (an env option)
followed by the solver features of ``okgin_env.features`` (the opponents get the same layout;
the bots read either). The action mask is in ``info["action_mask"]``
and from ``action_masks()`` (as sb3-contrib's ``MaskablePPO`` expects). The reward of a step is
the learner's reward accumulated since its previous decision. An episode that ends before the
learner's first decision is dealt again inside ``reset`` (counted in
``info["episodes_without_learner"]``), as ``VectorGymEnv`` does.
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Any

import gymnasium
import numpy as np

from .env import ILLEGAL_ACTION_MODES, ResetRequiredError, check_action_id, raw_env
from .episode import check_reset_options, check_seed
from .opponents import (check_learner_seat, check_opponent, check_opponent_seed, decide, make_opponent,
                        refuse_old_keyword, reset_seed)
from .rules.actions import NUM_ACTIONS



class GymEnv(gymnasium.Env):
    metadata = {"render_modes": ["human", "ansi", "rgb_array"], "render_fps": 1}

    def __init__(
        self,
        opponents: Any = "simple",
        learner_seat: int | str = 0,
        illegal_action: str = "terminate",
        opponent_seed: int | None = None,
        **env_options: Any,
    ):
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise ValueError(f"illegal_action={illegal_action!r}; allowed: {', '.join(ILLEGAL_ACTION_MODES)}")
        refuse_old_keyword(env_options)
        self.illegal_action = illegal_action
        self.aec = raw_env(**env_options)
        n = self.aec.config.num_players
        self.learner_seat_mode = check_learner_seat(learner_seat, n)
        self.learner_seat = 0 if self.learner_seat_mode == "alternate" else self.learner_seat_mode
        self._opponents_spec = self._check_opponents(opponents, learner_seat)
        check_opponent_seed(opponent_seed)
        self._build_opponents(opponent_seed)
        self.observation_space = self.aec.observation_spaces[self.aec.possible_agents[0]]["observation"]
        self.action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        # The table is drawn from the learner's side by this env (render(), and after reset and step
        # in "human" mode); the AEC env would draw it at every opponent's turn from that seat.
        self.render_mode = self.aec.render_mode
        self.aec.render_mode = None
        self._mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        self._episodes = 0
        self._started = False
        self._over = False  # the learner's episode ended (terminated, truncated or an illegal action)

    def _check_opponents(self, spec: Any, learner_seat: int | str) -> Any:
        """``spec`` as given, after checking it: one opponent, one per other seat, or a dict by agent."""
        agents = self.aec.possible_agents
        if isinstance(spec, (list, tuple)):
            if len(spec) != len(agents) - 1:
                raise ValueError(f"opponents as a list holds one opponent per other seat: {len(agents) - 1}, got {len(spec)}")
            for one in spec:
                check_opponent(one, self.aec.config)
        elif isinstance(spec, dict):
            needed = set(agents) if learner_seat == "alternate" else set(agents) - {agents[learner_seat]}
            if not needed <= set(spec) <= set(agents):
                raise ValueError(f"opponents as a dict holds one opponent for each of {sorted(needed)}, got keys {sorted(spec)}")
            for one in spec.values():
                check_opponent(one, self.aec.config)
        else:
            check_opponent(spec, self.aec.config)
        return spec

    def _build_opponents(self, seed: int | None) -> None:
        """Build the named opponents (``"random"`` is built at each reset, on the env's generator)."""
        config = self.aec.config

        def build(spec: Any, k: int) -> Any:
            if spec is None or spec == "random":
                return None
            return make_opponent(spec, None if seed is None else seed + k, config)

        spec = self._opponents_spec
        if isinstance(spec, (list, tuple)):
            self._opponents: Any = [build(one, k) for k, one in enumerate(spec)]
        elif isinstance(spec, dict):
            self._opponents = {agent: build(one, k) for k, (agent, one) in enumerate(sorted(spec.items()))}
        else:
            self._opponents = build(spec, 0)

    def _opponent_for(self, seat: int):
        """The opponent of ``seat``: a list is read in seat order, skipping the learner's seat."""
        chosen = self._opponents
        if isinstance(chosen, list):
            others = [s for s in range(self.aec.config.num_players) if s != self.learner_seat]
            chosen = chosen[others.index(seat)]
        elif isinstance(chosen, dict):
            chosen = chosen[self.aec.possible_agents[seat]]
        return self._random_opponent if chosen is None else chosen

    @property
    def learner(self) -> str:
        return self.aec.possible_agents[self.learner_seat]

    def _aec_over(self) -> bool:
        """The AEC episode ended for the learner (terminated, or truncated by ``max_rounds``)."""
        return self.aec.terminations[self.learner] or self.aec.truncations[self.learner]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        seed = check_seed(seed)
        options = check_reset_options(options)
        self.aec.reset(seed=seed, options=options)  # checks the deck and dealer before changing anything
        super().reset(seed=seed)
        if seed is not None:
            self._episodes = 0  # a seeded reset replays: the seat alternation restarts too
            self._build_opponents(reset_seed(seed))
        if self.learner_seat_mode == "alternate":
            self.learner_seat = self._episodes % self.aec.config.num_players
        self._episodes += 1
        self._random_opponent = make_opponent("random", generator=self.aec.np_random)
        self._started, self._over = True, False
        reward = self._play_opponents()
        redeals = 0
        while self._aec_over():
            # The episode ended before the learner's first decision (e.g. an opponent took the
            # upcard and knocked at once): it is not an episode for the learner, so deal again.
            self.aec.reset()
            reward += self._play_opponents()
            redeals += 1
        observation, info = self._learner_view()
        info["opponent_reward_before_first_move"] = reward
        info["episodes_without_learner"] = redeals
        if self.render_mode == "human":
            self.render()
        return observation, info

    def step(self, action: int):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if self._over:
            raise RuntimeError("the episode is over; call reset()")
        if self.illegal_action == "terminate":
            action = check_action_id(action)
            if not self._mask[action]:
                # Unmasked samplers and checkers send illegal actions: the episode ends with -1.
                self._over = True
                observation, info = self._learner_view()
                info["illegal_action"] = int(action)
                return observation, -1.0, True, False, info
        self.aec.step(action)
        reward = self.aec._cumulative_rewards[self.learner]
        reward += self._play_opponents()
        terminated = bool(self.aec.terminations[self.learner])
        truncated = bool(self.aec.truncations[self.learner])
        self._over = terminated or truncated
        observation, info = self._learner_view()
        if self.render_mode == "human":
            self.render()
        return observation, float(reward), terminated, truncated, info

    def _play_opponents(self) -> float:
        """Let the other seats act until the learner is to act or the episode ends."""
        env = self.aec
        reward = 0.0
        while not self._aec_over() and env.agent_selection != self.learner:
            agent = env.agent_selection
            opponent = self._opponent_for(env.agent_name_mapping[agent])
            env.step(decide(opponent, partial(env.observe, agent), env.round_state))
            reward += env.rewards[self.learner]
        return reward

    def _learner_view(self) -> tuple[np.ndarray, dict[str, Any]]:
        view = self.aec.observe(self.learner)
        self._mask = view["action_mask"]
        info = copy.deepcopy(self.aec.infos[self.learner])  # its own round_outcome: never shared between calls
        info["action_mask"] = self._mask
        return view["observation"], info

    def action_masks(self) -> np.ndarray:
        if not self._started:  # (an all-False mask would leave a masked sampler no move, far from the cause)
            raise ResetRequiredError("call reset() before action_masks() (no reset has succeeded yet)")
        return self._mask.astype(bool)

    def render(self):
        from .render import render

        return render(self.aec, self.render_mode, seat=self.learner_seat)
