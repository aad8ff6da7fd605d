"""``VectorGymEnv``: the single-agent view of the batch engine, as a ``gymnasium.vector.VectorEnv``.

The learner plays one seat in each of ``num_envs`` games of a ``BatchEnv`` (``okgin_env.batch``);
an opponent (``okgin_env.opponents``: a bot name, a policy with ``act``, or a batch policy) plays
the other seats. ``GymEnv`` is the same contract for one game: ``tests/test_vector.py`` checks
that both give the same observations, masks, rewards and terminations.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium
import numpy as np

from .batch import BatchEnv, BatchStep, add_info
from .episode import check_options, check_seed
from .opponents import (as_batch_policy, check_learner_seat, check_opponent_seed, make_opponent, refuse_old_keyword,
                        reset_seed)
from .rules.actions import NUM_ACTIONS
from .registration import register_envs
from .rules.config import is_int

try:  # Gymnasium >= 1.0
    from gymnasium.vector import AutoresetMode as _AutoresetMode

    _SAME_STEP: Any = _AutoresetMode.SAME_STEP
except ImportError:  # pragma: no cover - older Gymnasium
    _SAME_STEP = "SameStep"


#: The env options a VectorGymEnv takes besides the rule options (not BatchEnv's buffers).
VECTOR_OPTIONS = ("rules", "num_players", "episode", "reward", "max_rounds", "observation", "render_mode")


def check_vector_options(num_envs: Any, env_options: dict[str, Any]) -> None:
    """A ValueError naming a bad ``num_envs`` or option by VectorGymEnv's own names (the batch under
    it would name ``num_games`` and its buffer options)."""
    if not is_int(num_envs) or num_envs < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
    if "illegal_action" in env_options:
        raise ValueError("illegal_action: VectorGymEnv raises a ValueError on an illegal action, naming the game and "
                         "the legal actions (GymEnv's illegal_action is not offered); give actions from the mask")
    check_options({key: value for key, value in env_options.items() if key not in VECTOR_OPTIONS},
                  env_options.get("episode", "match"), env_options.get("reward", "points"),
                  ("opponents", "learner_seat", "opponent_seed", *VECTOR_OPTIONS))


class VectorGymEnv(gymnasium.vector.VectorEnv):
    """The learner plays one seat in each of ``num_envs`` games; a batched opponent plays the rest.

    ``VectorGymEnv(num_envs, opponents="simple", learner_seat=0, opponent_seed=None, **env_options)``;
    ``env_options`` are those of ``okgin_env.env`` (``rules``, ``num_players``, ``episode``
    (default ``"match"``), ``reward`` (default ``"points"``), ``max_rounds`` (default 200),
    ``observation`` (``"cards"`` or ``"features"``, as ``BatchEnv``), rule options) — the
    defaults of ``GymEnv``. ``render_mode`` may only be None (no rendering).
    Gymnasium ``VectorEnv`` conventions:

    * ``reset(seed=s) -> (observations (num_envs, obs_size) float32, infos)``; game ``i`` is seeded
      as ``GymEnv.reset(seed=s + i)`` would be (see ``BatchEnv``); the seed is None or a
      non-negative int (Python or numpy).
    * ``step(actions) -> (observations, rewards, terminations, truncations, infos)``; rewards
      (num_envs,) float32 are the learner's, accumulated since its previous decision (the
      opponents' moves included), as ``GymEnv`` gives them; ``truncations[i]`` is True when game
      ``i``'s match ended undecided after ``max_rounds`` rounds (its ``terminations[i]`` False;
      the ``max_turns`` guard ends a round as a draw, which is no truncation).
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
      construction and at every seeded reset, so that ``reset(seed=s)`` replays; reseeding every
      episode therefore always starts the learner in seat 0) puts the learner in seat
      ``k % num_players``, like ``GymEnv``.

    ``opponents`` (see ``okgin_env.opponents``; default ``"simple"``, like ``GymEnv``; ``None``
    is ``"random"``, uniform legal and batched): a player spec of ``okgin_env.players`` (``"simple"``,
    which plays engine states through ``act_states``, ``"search:rollouts=8"``, a policy file), an object with ``act_batch(observations, masks)`` or
    ``act_states(round_states)``, or any policy with ``act(observation_dict) -> int`` (called once
    per game); or a list of ``num_envs`` of those, one per game (a league: ``set_opponent(i, policy)``
    changes game ``i``'s opponent between episodes; ``opponents`` is the list in use). A game's
    opponent plays every non-learner seat of that game; each distinct opponent gets one batched
    call per opponent move. An opponent named by a string is built once for all the games it plays,
    seeded with ``opponent_seed`` and reseeded from ``reset(seed=s)``, so a seeded reset replays
    the same games for the same learner actions; an opponent object keeps its own generator.
    """

    metadata = {"autoreset_mode": _SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int,
        opponents: Any = "simple",
        learner_seat: int | str = 0,
        opponent_seed: int | None = None,
        **env_options: Any,
    ):
        refuse_old_keyword(env_options)
        check_vector_options(num_envs, env_options)
        render_mode = env_options.pop("render_mode", None)
        if render_mode is not None:
            raise ValueError(f"render_mode={render_mode!r}; VectorGymEnv does not render: allowed: None")
        self.batch = BatchEnv(num_envs, **env_options)
        n = self.batch.num_players
        self.learner_seat_mode = check_learner_seat(learner_seat, n)
        self.render_mode = None
        self.num_envs = self.batch.num_games
        per_game = isinstance(opponents, (list, tuple))
        if per_game and len(opponents) != self.num_envs:
            raise ValueError(f"opponents is a list of {len(opponents)}; a list needs one opponent per game ({self.num_envs})")
        self._opponent_specs = list(opponents) if per_game else [opponents] * self.num_envs
        check_opponent_seed(opponent_seed)
        self._build_opponents(opponent_seed)
        self.num_players = n
        self.single_observation_space = self.batch.observation_space
        self.single_action_space = gymnasium.spaces.Discrete(NUM_ACTIONS)
        self.observation_space = gymnasium.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._episodes = np.zeros(self.num_envs, dtype=np.int64)  # episodes started per game
        self._learner = np.zeros(self.num_envs, dtype=np.int64)
        self._mask = np.zeros((self.num_envs, NUM_ACTIONS), dtype=np.int8)
        self._started = False

    def _build_opponents(self, seed: int | None) -> None:
        """One batch policy per game; a bot name is built once (seeded with ``seed``) for every
        game it plays, an object is used as it is."""
        built: dict[Any, Any] = {}
        self.opponents = []
        for spec in self._opponent_specs:
            key = ("name", "random" if spec is None else spec) if spec is None or isinstance(spec, str) else ("object", id(spec))
            if key not in built:
                built[key] = as_batch_policy(make_opponent(spec, seed, self.batch.config))
            self.opponents.append(built[key])

    @property
    def opponent(self) -> Any:
        """The opponent of every game (when one plays them all; see ``opponents`` for a list)."""
        if any(policy is not self.opponents[0] for policy in self.opponents):
            raise AttributeError("games have different opponents: read VectorGymEnv.opponents (one per game)")
        return self.opponents[0]

    def set_opponent(self, game: int, opponent: Any) -> None:
        """Game ``game``'s opponent from now on (a batch policy or a policy with ``act``; for a league:
        change it between episodes). A bot name is refused here: build the bot and pass it."""
        if not is_int(game) or not 0 <= game < self.num_envs:
            raise ValueError(f"game={game!r:.80}; allowed: 0..{self.num_envs - 1} (an int)")
        if isinstance(opponent, str) or opponent is None:
            raise ValueError("set_opponent takes a policy object; build a named bot with okgin_env.opponents.make_opponent")
        self._opponent_specs[game] = opponent
        self.opponents[game] = as_batch_policy(make_opponent(opponent))

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
        seed = check_seed(seed)
        self.batch.reset(seed=seed, options=options)  # checks the options before changing anything
        super().reset(seed=seed)
        if seed is not None:
            self._episodes[:] = 0  # a seeded reset replays: the seat alternation restarts too
            # Opponents built here from names are reseeded too, so reset(seed=s) replays exactly.
            self._build_opponents(reset_seed(seed))
        every = np.arange(self.num_envs)
        self._new_episodes(every)
        self._started = True
        m = self.num_envs
        reward = np.zeros(m, dtype=np.float32)
        before = np.zeros(m, dtype=np.float32)
        acted = np.zeros(m, dtype=bool)
        infos: dict[str, Any] = {}
        skipped = np.zeros(m, dtype=np.int64)
        self._play_opponents(reward, before, acted, np.zeros(m, dtype=bool), np.zeros(m, dtype=bool), infos, skipped)
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
        truncated = _truncated(result)
        terminated = result.dones & ~truncated
        acted = ~result.dones
        infos: dict[str, Any] = {}
        self._record_round_outcomes(infos, result.infos, np.arange(m))
        if result.dones.any():
            ended = np.flatnonzero(result.dones)
            self._record_final(infos, result.infos, ended, ended)
            self._new_episodes(ended)
        skipped = np.zeros(m, dtype=np.int64)
        self._play_opponents(reward, before, acted, terminated, truncated, infos, skipped)
        infos["opponent_reward_before_first_move"] = before
        infos["episodes_without_learner"] = skipped
        observations, infos = self._learner_view(infos)
        return observations, reward, terminated, truncated, infos

    def _play_opponents(self, reward, before, acted, terminated, truncated, infos, skipped) -> None:
        """Step the opponents' seats until every game waits for the learner."""
        batch = self.batch
        while True:
            seats, _, _ = batch.latest()
            pending = np.flatnonzero(seats != self._learner)
            if pending.size == 0:
                return
            actions = np.empty(pending.size, dtype=np.int64)
            groups: dict[int, list[int]] = {}  # one call per distinct opponent, in order of first game
            for row, game in enumerate(pending.tolist()):
                groups.setdefault(id(self.opponents[game]), []).append(row)
            for rows in groups.values():
                opponent, games = self.opponents[pending[rows[0]]], pending[rows]
                if callable(getattr(opponent, "act_states", None)):
                    actions[rows] = opponent.act_states(batch.round_states(games))
                else:
                    _, observations, masks = batch.latest(games)
                    actions[rows] = opponent.act_batch(observations, masks)
            result = batch.step(actions, games=pending)
            got = result.rewards[np.arange(pending.size), self._learner[pending]]
            counted = acted[pending]
            reward[pending[counted]] += got[counted]
            before[pending[~counted]] += got[~counted]
            self._record_round_outcomes(infos, result.infos, pending)
            done_rows = np.flatnonzero(result.dones)
            if done_rows.size:
                games = pending[done_rows]
                ends = acted[games]
                # Episodes in which the learner decided: terminated or truncated now (same-step autoreset).
                self._record_final(infos, result.infos, games[ends], done_rows[ends])
                cut = _truncated(result)[done_rows]
                terminated[games[ends & ~cut]] = True
                truncated[games[ends & cut]] = True
                skipped[games[~ends]] += 1
                acted[games] = False
                self._new_episodes(games)

    def _record_round_outcomes(self, infos, batch_infos, games) -> None:
        if "round_outcome" not in batch_infos:
            return
        for j in np.flatnonzero(batch_infos["_round_outcome"]).tolist():
            add_info(infos, "round_outcome", int(games[j]), batch_infos["round_outcome"][j], self.num_envs)

    def _record_final(self, infos, batch_infos, games, rows) -> None:
        for g, j in zip(games.tolist(), rows.tolist()):
            seat = int(self._learner[g])
            add_info(infos, "final_obs", g, batch_infos["final_obs"][j][seat], self.num_envs)
            final_info = {}
            if "round_outcome" in batch_infos and batch_infos["_round_outcome"][j]:
                # Its own copy: infos["round_outcome"][g] holds the same outcome, and a caller that
                # changes one must not change the other.
                final_info["round_outcome"] = copy.deepcopy(batch_infos["round_outcome"][j])
            if "match_bonus" in batch_infos and batch_infos["_match_bonus"][j]:  # house rules (docs/rules.md §11)
                final_info["match_bonus"] = copy.deepcopy(batch_infos["match_bonus"][j])
            add_info(infos, "final_info", g, final_info, self.num_envs)

    def _learner_view(self, infos: dict[str, Any]):
        _, observations, masks = self.batch.latest()
        self._mask = masks.copy()
        infos["action_mask"] = self._mask
        return observations.copy(), infos

    def action_masks(self) -> np.ndarray:
        """(num_envs, 107) bool: the learner's legal actions in every game."""
        self.batch._require_reset()  # (all False before a reset: no game is dealt)
        return self._mask.astype(bool)

    def close_extras(self, **kwargs: Any) -> None:
        self.batch.close()


def _truncated(result: BatchStep) -> np.ndarray:
    """(M,) bool: the games of a ``BatchEnv`` step whose match was truncated by ``max_rounds``."""
    found = result.infos.get("truncated")
    return np.zeros(result.dones.shape[0], dtype=bool) if found is None else found


register_envs()  # OklahomaGin-v0 and okgin/oklahoma_gin_v0, as env.py does: gymnasium.make_vec finds them

__all__ = ["VectorGymEnv"]
