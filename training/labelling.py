"""Batched decision labelling for ``training.improve``: the same labels, many rollouts at once.

``training.improve.label_decisions`` labels one decision at a time: every legal action is tried
on a copy of the true round state and the round is played out, the policy choosing for the
learner one observation at a time (a forward pass of batch 1 for each of its decisions, about
60 per labelled decision). ``label_decisions_batched`` computes exactly the same labels (same job
tuple, same arrays) in two passes:

1. **Collect.** The policy plays the job's matches against ``simple`` as before, drawing each
   labelled decision's continuation seed from the job's generator at the same moment, and
   keeps a copy of each labelled decision's round state instead of rolling it out there. The
   main line never depends on the labels, so this is the same sequence of matches.
2. **Roll out in lockstep.** Every (decision, action) pair (with a ``top``, the policy's ``top``
   best-scored actions of the decision) becomes a rollout with its own
   ``random.Random(seed)`` for the simple player's tie-breaks (as in the unbatched path). Up to
   ``rollout_batch`` rollouts advance together, whatever their learner's seat: each one runs
   ``simple`` and forced moves until the network has a choice; then the observations of every
   waiting rollout go through the network in one forward pass and each takes its greedy
   action; finished rollouts make room for the next. A rollout's moves depend only on its own
   state and generator, so the order in which rollouts advance changes nothing.

The one possible difference from the unbatched path is floating-point: a batched matrix product
may round differently from a batch of one, which could flip a greedy choice between two actions
whose logits tie to the last bits. ``tests/test_labelling.py`` checks that the labels are
identical on fixed seeds; ``benchmarks/bench_labelling.py`` measures both paths.
"""

from __future__ import annotations

import gc
import hashlib
import os
import random
import tempfile
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from okgin_env.bots.simple import SimpleBot, simple_action_for_state
from okgin_env.episode import seat_observation
from okgin_env.match_loop import play_match
from okgin_env.observation import PackedEncoder
from okgin_env.rules.config import is_int, make_config

from .features import MAX_LEGAL_ACTIONS
from .policy import decision_forward, encode_decision, encode_states, load_checkpoint, load_policy

DEFAULT_ROLLOUT_BATCH = 1024
LABEL_KEYS = ("obs", "ctx", "feat", "ids", "legal", "q")
#: What a job also records of the rounds, for fits that value a round by the match
#: (``training.match_odds``): ``scores`` (D, N), the score line at each labelled decision;
#: ``round_points`` (D, MAX_LEGAL_ACTIONS, N), each labelled action's rollout's round points
#: (-1 where a rollout was cut short by a rollout depth, or the action was not labelled); and
#: ``rounds`` (R, N), the points of every round the job's matches played to its end. Every row
#: lists the learner first, then the other seats in turn order (``learner_first``).
OUTCOME_KEYS = ("scores", "round_points", "rounds")


LABEL_REWARDS = ("points", "own_penalty")  # training.improve --label-reward


def label_value(outcome, learner: int, reward: str) -> float:
    """A finished round's worth to ``learner``: its zero-sum reward (``"points"``) or minus its own
    penalty points (``"own_penalty"``)."""
    if reward == "own_penalty":
        return -float(outcome.points[learner])
    return float(outcome.rewards[learner])


class LabelJob(NamedTuple):
    """One labelling job (``unpack_job``): label ``count`` decisions of matches dealt from ``seed``."""

    checkpoint: str | bytes  # a path, or the file's bytes (a Ray job on another node)
    rules: str  # the preset; the player count is the checkpoint's own
    seed: int
    count: int
    reward: str = "points"  # label_value's ``reward``
    depth: int = 0  # 0: whole rounds; K: stop at the learner's K-th choice (value head's estimate)
    top: int = 0  # 0: every legal action; K: the policy's K highest-scored actions only
    rollout: str = "policy"  # who plays the learner's seat in the rollouts (check_rollout_player)
    opponent: str = "simple"  # who plays the other seats, in the matches and the rollouts (LABEL_OPPONENTS)


#: What a job's options may set, and the defaults (the labels of jobs written before them).
LABEL_OPTIONS = {"reward": "points", "depth": 0, "top": 0, "rollout": "policy", "opponent": "simple"}
#: Who plays the seats other than the learner's (``training.improve --label-opponent``), at the
#: labelling matches' tables and in every rollout: ``simple`` (the shipped recipes), ``policy``,
#: the policy being labelled itself, greedy (self-play: each action is valued against the policy's
#: own replies, not against ``simple``'s), or any bot spec that may teach a training stage
#: (``check_label_opponent``), such as ``lookahead``: one instance plays every other seat, seeded
#: from the job's generator at the matches' tables and with the label's tie seed in each rollout.
LABEL_OPPONENTS = ("simple", "policy")


def learner_first(values, learner: int) -> list:
    """``values`` by seat, rotated so that ``learner``'s comes first, then the next seats in turn order."""
    values = list(values)
    return values[learner:] + values[:learner]


def check_rollout_player(spec: str, config=None) -> None:
    """A ValueError unless ``spec`` can play the learner's seat in the labelling rollouts
    (``training.improve --rollout-player``): ``policy``, the policy being improved, or a bot spec
    that may teach a training stage (``okgin_env.players.check_player`` for labelling: no held-out bot, no time
    limit), checked for ``config``'s table (default classic). A bot makes each label the value of
    the action followed by that bot's play (``simple``: as in the search bot's rollouts), with no
    network in the rollouts."""
    if spec == "policy":
        return
    from .league import check_training_player

    check_training_player(spec, "rollout player", config or make_config("classic"), purpose="label")


def check_label_opponent(spec: str, config=None) -> None:
    """A ValueError unless ``spec`` can play the other seats of the labelling matches and rollouts
    (``training.improve --label-opponent``): ``simple``, ``policy`` or a bot spec that may teach a
    training stage (``okgin_env.players.check_player`` for labelling: no held-out bot, no time limit), checked for
    ``config``'s table (default classic)."""
    if spec in LABEL_OPPONENTS:
        return
    from .league import check_training_player

    check_training_player(spec, "label opponent", config or make_config("classic"), purpose="label")


def opponent_bot(spec: str, seed: int, config):
    """The other seats' player in a rollout of label opponent ``spec``: ``None`` for ``simple``
    (``simple_action_for_state`` with the rollout's generator) and ``policy`` (the network), else
    the bot seeded with the label's tie seed (the same for every action of a decision)."""
    return None if spec in LABEL_OPPONENTS else rollout_bot(spec, seed, config)


def bot_action(bot, state, scores, seat: int, target: int, rng: random.Random) -> int:
    """``bot``'s move for ``seat`` from its observation, a forced move without asking it; ``bot``
    ``None``: ``simple``'s, with tie-breaks from ``rng`` (``simple_action_for_state``)."""
    if bot is None:
        return simple_action_for_state(state, rng)
    legal = state.legal_actions()
    if len(legal) == 1:
        return legal[0]
    return bot.act(seat_observation(state, scores, target, seat, to_act=True))


def rollout_bot(spec: str, seed: int, config):
    """The learner's player in a rollout of ``rollout_player`` ``spec`` (not ``policy``): ``None`` for
    ``simple``, which plays from the rollout's own tie-break generator as the other seats do, else
    the bot seeded with the rollout's tie seed (the same for every action of a decision)."""
    if spec == "simple":
        return None
    from okgin_env.players import make_player

    return make_player(spec, seed=seed, rules=config)


def finish_round(state, scores, learner: int, rng: random.Random, learner_bot, target: int,
                 other_bot=None) -> None:
    """Play ``state`` to the end of its round: ``learner_bot`` in the learner's seat and ``other_bot``
    in every other seat, each from its observation (``bot_action``); ``None`` for either is ``simple``
    with tie-breaks from ``rng``."""
    while not state.is_over:
        bot = learner_bot if state.current == learner else other_bot
        state.apply_unchecked(bot_action(bot, state, scores, state.current, target, rng))


def unpack_job(job: tuple) -> LabelJob:
    """``(checkpoint, rules, seed, count[, options])``, ``options`` a dict of ``LABEL_OPTIONS``
    entries (or, as written before the other options, the label reward alone); every option is
    checked, with a message that says what is allowed."""
    checkpoint, rules, seed, count, *rest = job
    if len(rest) > 1:
        raise ValueError(f"a labelling job has 4 or 5 entries (the fifth a dict of options), got {len(job)}")
    options = rest[0] if rest else {}
    if isinstance(options, str):
        options = {"reward": options}
    if not isinstance(options, dict) or set(options) - set(LABEL_OPTIONS):
        raise ValueError(f"labelling options {options!r}; allowed keys: {', '.join(LABEL_OPTIONS)}")
    options = {**LABEL_OPTIONS, **options}
    reward, depth, top, rollout = options["reward"], options["depth"], options["top"], options["rollout"]
    opponent = options["opponent"]
    if not isinstance(opponent, str):
        raise ValueError(f"label opponent {opponent!r}; allowed: {', '.join(LABEL_OPPONENTS)} or a bot spec "
                         "such as lookahead")
    if opponent == "policy" and rollout != "policy":
        raise ValueError(f"the label opponent 'policy' plays the other seats with the network, which the rollout "
                         f"player {rollout!r} (a bot in the learner's seat, no network in the rollouts) leaves out; "
                         "use the rollout player 'policy' with it")
    if reward not in LABEL_REWARDS:
        raise ValueError(f"label reward {reward!r}; allowed: {', '.join(LABEL_REWARDS)}")
    if not isinstance(rollout, str):
        raise ValueError(f"rollout player {rollout!r}; allowed: policy or a bot spec such as simple")
    if depth and rollout != "policy":
        raise ValueError("a rollout depth stops at the policy's K-th choice and needs the rollout player "
                         f"'policy', not {rollout!r}")
    for name, value, meaning, least in (("rollout depth", depth, "play every rollout to the round's end", 1),
                                        ("label top", top, "label every legal action", 2)):
        if not is_int(value) or not (value == 0 or value >= least):
            raise ValueError(f"{name} {value!r}; allowed: 0 ({meaning}) or an integer of at least {least}")
    if depth and reward != "points":
        raise ValueError(f"a rollout depth needs the label reward 'points' (the value head estimates the "
                         f"zero-sum round points), not {reward!r}")
    return LabelJob(checkpoint, rules, seed, count, reward, depth, top, rollout, opponent)


def labelled_columns(model, flat: np.ndarray, encoded: tuple, top: int) -> list[int]:
    """The action slots of a decision to label, ascending: all legal ones (``top`` 0), else the
    ``top`` that the network scores highest (so its greedy choice among them), from one forward
    pass of the observation ``flat`` and ``encode_decision``'s inputs ``encoded``."""
    count = len(encoded[-1])
    if not top or top >= count:
        return list(range(count))
    logits, _ = decision_forward(model, flat, encoded)
    return sorted(torch.topk(logits, top).indices.tolist())


def labelled_flags(columns: list[int]) -> np.ndarray:
    """``(MAX_LEGAL_ACTIONS,)`` bool: True at the labelled slots (the ``labelled`` array of a job
    with a ``top``; the fit compares only these actions)."""
    flags = np.zeros(MAX_LEGAL_ACTIONS, dtype=bool)
    flags[columns] = True
    return flags


def value_scale(checkpoint: str) -> float:
    """Round points per unit of the checkpoint's value head: the ``reward_scale`` its PPO run
    divided the round points by. Truncated rollouts (a rollout depth) end on the value head's
    estimate, which only a network whose value head was trained against the round's points has:
    a file made by ``training.improve`` or ``training.distil`` (whose fits move the shared layers
    under an untrained value head) is refused."""
    metadata = load_checkpoint(checkpoint)["metadata"]
    scale = metadata.get("args", {}).get("reward_scale")
    if "improve_args" in metadata or not isinstance(scale, (int, float)) or scale <= 0:
        raise ValueError(f"{checkpoint}: a rollout depth ends rollouts on the value head's estimate, which needs a "
                         "network trained by PPO (training.train records its reward_scale); a file made by "
                         "training.improve or training.distil has a value head its fit did not train")
    return float(scale)


def checkpoint_file(checkpoint: str | bytes) -> str:
    """A path to the job's checkpoint: the path itself, or for the file's bytes (what a Ray job
    carries to another node) a copy written once per process into the temporary folder."""
    if isinstance(checkpoint, str):
        return checkpoint
    digest = hashlib.sha256(checkpoint).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"okgin-labelling-{os.getpid()}-{digest}.pt"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.write_bytes(checkpoint)
        partial.replace(path)
    return str(path)


def labelling_config(checkpoint: str, rules: str):
    """The rules of a labelling job: the preset ``rules`` at the checkpoint's own player count
    (a 3-player penalty policy labels 3-player tables: it against ``simple`` in the other seats)."""
    return make_config(rules, num_players=load_checkpoint(checkpoint, rules=rules)["metadata"]["num_players"])


class _Rollout:
    """One action of one labelled decision, played out to the end of its round (or to the learner's
    ``depth``-th choice, ``choices`` counting those reached); ``learner`` is the seat of its match's
    learner, ``other_bot`` the other seats' bot (a bot label opponent's, ``opponent_bot``; else ``None``)."""

    __slots__ = ("state", "seed", "rng", "scores", "row", "column", "choices", "learner", "other_bot")

    def __init__(self, state, seed: int, scores, row: int, column: int, learner: int):
        self.state, self.rng, self.scores, self.row, self.column = state, random.Random(seed), scores, row, column
        self.seed, self.choices, self.learner, self.other_bot = seed, 0, learner, None


def _advance(rollout: _Rollout, opponent: str = "simple", target: int = 0) -> bool:
    """Play the other seats (``simple``, or the rollout's ``other_bot``) and forced moves until a seat
    the network plays (the learner's; every seat's, the ``opponent`` ``"policy"``) has a choice
    (True) or the round ends."""
    state, learner, other_bot = rollout.state, rollout.learner, rollout.other_bot
    network_everywhere = opponent == "policy"
    while not state.is_over:
        if state.current != learner and not network_everywhere:
            state.apply_unchecked(bot_action(other_bot, state, rollout.scores, state.current, target, rollout.rng))
            continue
        legal = state.legal_actions()
        if len(legal) > 1:
            return True
        state.apply_unchecked(legal[0])
    return False


def _forward(model, rollouts: list[_Rollout], encoder: PackedEncoder):
    """``(logits, values, legal actions)`` of the decision of the seat to act in every rollout (one
    forward pass; the seats may differ), its inputs read straight from the round states (the action
    rows cut to the widest legal set: padding rows only add -inf logits)."""
    inputs, actions = encode_states(encoder, [r.state for r in rollouts], [r.scores for r in rollouts],
                                    outlook=model.outlook)
    with torch.no_grad():
        logits, values = model(*inputs)
    return logits, values, actions


def _act_greedy(model, rollouts: list[_Rollout], encoder: PackedEncoder) -> None:
    """Apply the network's greedy action for the seat to act in every rollout (one forward pass)."""
    logits, _, actions = _forward(model, rollouts, encoder)
    for rollout, choice, legal_actions in zip(rollouts, torch.argmax(logits, dim=-1).tolist(), actions):
        rollout.state.apply_unchecked(legal_actions[choice])


def _write_label(rollout: _Rollout, reward: str, q: np.ndarray, round_points: np.ndarray) -> None:
    outcome, learner = rollout.state.outcome, rollout.learner
    q[rollout.row, rollout.column] = label_value(outcome, learner, reward)
    round_points[rollout.row, rollout.column] = learner_first(outcome.points, learner)


def roll_out(model, rollouts: list[_Rollout], config, q: np.ndarray, round_points: np.ndarray,
             rollout_batch: int, reward: str = "points", depth: int = 0, scale: float = 0.0,
             rollout_player: str = "policy", opponent: str = "simple") -> None:
    """Play every rollout to the end of its round; write its learner's round points (``label_value``)
    into ``q[row, column]``, and every seat's (``learner_first``) into ``round_points[row, column]``
    (left as they were where a rollout stops early). ``depth > 0``: a rollout that reaches the
    learner's ``depth``-th choice stops there, and its label is the value head's estimate of the
    round's points from the learner's observation (times ``scale``, see ``value_scale``). A
    ``rollout_player`` other than ``"policy"`` plays the learner's seat instead of the network
    (``finish_round``, no forward passes); the ``opponent`` ``"policy"`` has the network play the
    other seats too (``LABEL_OPPONENTS``).

    At most ``rollout_batch`` rollouts are in play at once, whatever their learner's seat; each
    pass advances them all to the network's next decision and decides all of those in one forward
    pass, and rollouts that finished make room for the next ones: fewer, fuller passes, each with
    a fixed cost in numpy and torch calls whatever its size."""
    if rollout_batch < 1:
        raise ValueError(f"rollout_batch must be at least 1, got {rollout_batch}")
    target = config.target_score
    if rollout_player != "policy":
        for rollout in rollouts:
            bot = rollout_bot(rollout_player, rollout.seed, config)
            finish_round(rollout.state, rollout.scores, rollout.learner, rollout.rng, bot, target,
                         opponent_bot(opponent, rollout.seed, config))
            _write_label(rollout, reward, q, round_points)
        return
    encoder = PackedEncoder(config.num_players, target)
    queue = iter(rollouts)
    moving: list[_Rollout] = []  # rollouts that just acted, or were just taken from the queue
    while True:
        for rollout in islice(queue, rollout_batch - len(moving)):
            rollout.other_bot = opponent_bot(opponent, rollout.seed, config)  # seeded as in the unbatched path
            moving.append(rollout)
        if not moving:
            break
        pending, estimated = [], []
        for rollout in moving:
            if _advance(rollout, opponent, target):
                if rollout.state.current != rollout.learner:
                    pending.append(rollout)  # an opponent's choice (the opponent "policy")
                    continue
                rollout.choices += 1
                (estimated if rollout.choices == depth else pending).append(rollout)
            else:
                _write_label(rollout, reward, q, round_points)
                rollout.other_bot = None  # the job keeps every rollout: keep no finished one's bot
        if estimated:
            _, values, _ = _forward(model, estimated, encoder)
            for rollout, value in zip(estimated, (values * scale).tolist()):
                q[rollout.row, rollout.column] = value
                rollout.other_bot = None
        if pending:
            _act_greedy(model, pending, encoder)
        moving = pending


def label_opponent(name: str, policy, rng: random.Random, config):
    """The player of the labelling matches' other seats: ``policy`` itself (``name`` ``"policy"``),
    ``simple`` drawing its tie-breaks from ``rng``, the job's generator, shared with the
    continuation seeds (so the same job gives the same labels on either path), or the bot ``name``
    seeded with the generator's first draw."""
    if name == "policy":
        return policy
    if name != "simple":
        return rollout_bot(name, rng.getrandbits(32), config)
    opponent = SimpleBot()
    opponent.rng = rng
    return opponent


def play_learner_matches(config, policy, opponent, seed: int, count: int, on_choice, on_round=None) -> None:
    """The matches every labelling job plays, until ``count`` learner decisions have been seen.

    ``policy`` plays one seat (seat ``k % num_players`` in match ``k``, dealt from
    ``[seed, k]``), ``opponent`` every other seat, through ``okgin_env.match_loop.play_match``.
    At each of the learner's decisions with a choice, before it acts,
    ``on_choice(match, learner_seat, observation, encode_decision(...))`` is called, and at the
    end of each round ``on_round(learner_seat, outcome)``, if given.
    """
    num_players = config.num_players
    seen = 0
    learner = 0
    hooked: list = [None, None]  # the observation the hook last encoded, and its inputs

    def hook(match, seat: int, observation: dict[str, np.ndarray]) -> bool:
        nonlocal seen
        if seen >= count:
            return True  # stops the match
        if seat != learner or np.count_nonzero(observation["action_mask"]) < 2:
            return False
        encoded = encode_decision(observation["observation"], observation["action_mask"], num_players,
                                  policy.model.outlook)
        on_choice(match, learner, observation, encoded)
        hooked[:] = observation, encoded
        seen += 1
        return False

    class Learner:
        """``policy``, acting on the hook's inputs for the observation it just encoded (not twice)."""

        @staticmethod
        def act(observation: dict[str, np.ndarray]) -> int:
            if observation is hooked[0]:
                return policy.act_encoded(observation["observation"], hooked[1])
            return policy.act(observation)

    game = 0
    while seen < count:
        learner = game % num_players
        policies = [Learner if s == learner else opponent for s in range(num_players)]
        round_hook = None if on_round is None else (lambda match, outcome, seat=learner: on_round(seat, outcome))
        play_match(config, policies, np.random.default_rng([seed, game]), on_decision=hook, on_round=round_hook)
        game += 1


def record_inputs(records: dict[str, list], observation: dict[str, np.ndarray], encoded: tuple) -> None:
    """Append one decision's network inputs (``obs``, ``ctx``, ``feat``, ``ids``, ``legal``) to ``records``."""
    context, features, ids, legal_flags, _ = encoded
    for key, value in (("obs", observation["observation"]), ("ctx", context), ("feat", features),
                       ("ids", ids), ("legal", legal_flags)):
        records[key].append(value)


@contextmanager
def _cyclic_gc_paused():
    """Pause Python's cyclic garbage collector (reference counting still frees nearly everything):
    a job keeps tens of thousands of round states alive, and every collection walks them all
    (about a tenth of a classic job's time, measured on 300-decision jobs). The cyclic garbage
    left meanwhile is small: a 2,000-decision classic job peaks at 483 MB against 450 MB with the
    collector running."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def label_decisions_batched(job: tuple, rollout_batch: int = DEFAULT_ROLLOUT_BATCH) -> dict[str, np.ndarray]:
    """``training.improve.label_decisions`` (same job, same arrays), with batched rollouts."""
    with _cyclic_gc_paused():
        return _label_decisions_batched(job, rollout_batch)


def _label_decisions_batched(job: tuple, rollout_batch: int) -> dict[str, np.ndarray]:
    job = unpack_job(job)
    if rollout_batch < 1:
        raise ValueError(f"rollout_batch must be at least 1, got {rollout_batch}")
    checkpoint = checkpoint_file(job.checkpoint)
    scale = value_scale(checkpoint) if job.depth else 0.0
    torch.set_num_threads(1)
    config = labelling_config(checkpoint, job.rules)
    check_rollout_player(job.rollout, config)
    check_label_opponent(job.opponent, config)
    policy = load_policy(checkpoint, rules=config)
    rng = random.Random(job.seed)
    opponent = label_opponent(job.opponent, policy, rng, config)
    records: dict[str, list] = {k: [] for k in LABEL_KEYS if k != "q"}
    labelled: list[np.ndarray] = []
    scores_seen: list[list[int]] = []
    rounds: list[list[int]] = []
    rollouts: list[_Rollout] = []

    def collect(match, learner: int, observation: dict[str, np.ndarray], encoded: tuple) -> None:
        actions = encoded[-1]
        tie_seed = rng.getrandbits(32)
        row = len(records["obs"])
        scores = list(match.scores)
        columns = labelled_columns(policy.model, observation["observation"], encoded, job.top)
        for column in columns:
            # Only stock reshuffles draw from a round's generator: without them a copy sharing it
            # plays exactly as a clone and skips copying the generator (a third of the collection).
            trial = match.round.clone() if config.reshuffle_stock else match.round.copy()
            trial.apply_unchecked(actions[column])
            rollouts.append(_Rollout(trial, tie_seed, scores, row, column, learner))
        record_inputs(records, observation, encoded)
        labelled.append(labelled_flags(columns))
        scores_seen.append(learner_first(scores, learner))

    play_learner_matches(config, policy, opponent, job.seed, job.count, collect,
                         on_round=lambda seat, outcome: rounds.append(learner_first(outcome.points, seat)))

    decisions = len(records["obs"])
    q = np.zeros((decisions, MAX_LEGAL_ACTIONS), dtype=np.float32)
    round_points = np.full((decisions, MAX_LEGAL_ACTIONS, config.num_players), -1, dtype=np.int16)
    roll_out(policy.model, rollouts, config, q, round_points, rollout_batch, job.reward, job.depth, scale, job.rollout,
             job.opponent)
    extra = {"labelled": np.stack(labelled)} if job.top else {}
    return {**{k: np.stack(v) for k, v in records.items()}, "q": q, **extra,
            **outcome_arrays(scores_seen, round_points, rounds, config.num_players)}


def outcome_arrays(scores_seen: list, round_points: np.ndarray, rounds: list,
                   num_players: int) -> dict[str, np.ndarray]:
    """The ``OUTCOME_KEYS`` arrays of a job."""
    return {"scores": np.array(scores_seen, dtype=np.int16).reshape(-1, num_players),
            "round_points": round_points,
            "rounds": np.array(rounds, dtype=np.int16).reshape(-1, num_players)}
