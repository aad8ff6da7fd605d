"""Decision labelling for ``training.improve``: every legal action of a decision valued by a
rollout on the true state, many rollouts at once (``label_decisions``), or the decision labelled
with a teacher's choice (``label_with_teacher``, ``improve --teacher``).

A job (``LabelJob``: a checkpoint, the rules, a seed, a count and the rollout player) plays
matches with the policy (greedy) in one seat, alternating from match to match, and ``simple`` in
the others, and labels ``count`` of the policy's decisions that have a choice, in two passes:

1. **Collect.** At each labelled decision, before the policy acts, a continuation seed is drawn
   from the job's generator (which also breaks ``simple``'s ties at the match tables) and a copy
   of the round state is kept for each legal action, that action applied. The main line never
   depends on the labels.
2. **Roll out in lockstep.** Every (decision, action) pair becomes a rollout with its own
   ``random.Random(seed)`` for ``simple``'s tie-breaks in the other seats (common random
   numbers: every action of a decision meets the same continuation). Up to ``rollout_batch``
   rollouts advance together, whatever their learner's seat: each runs ``simple`` and forced
   moves until the network has a choice; then every waiting rollout's observation goes through
   the network in one forward pass and each takes its greedy action; finished rollouts make room
   for the next. A rollout's label is the learner's zero-sum round points. With a rollout player
   other than ``policy`` (a bot spec, ``check_rollout_player``) that bot plays the learner's
   seat in the rollouts, and no network runs there.

**The network itself plays**: a file that asks for suit-symmetric play
(``training.symmetry``, as the shipped ones do) is labelled with its network's own choices, the
play that the fit changes, at the cost of one forward pass instead of 24 (labelling from such a
file took about eight times as long); the fitted file keeps the start's way of playing.

A rollout's moves depend only on its own state and generator, so the order in which rollouts
advance changes nothing; ``tests/test_labelling.py`` checks the labels against a plain loop that
plays each rollout alone. ``benchmarks/bench_labelling.py`` measures the cost per label.
"""

from __future__ import annotations

import gc
import os
import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from typing import NamedTuple

import numpy as np
import torch

from okgin_env.bots.simple import SimpleBot, simple_action_for_state
from okgin_env.episode import seat_observation
from okgin_env.match_loop import play_match
from okgin_env.observation import PackedEncoder
from okgin_env.rules.config import make_config

from .features import MAX_LEGAL_ACTIONS
from .policy import encode_decision, encode_states, load_checkpoint, load_policy

DEFAULT_ROLLOUT_BATCH = 1024
LABEL_KEYS = ("obs", "ctx", "feat", "ids", "legal", "q")


class LabelJob(NamedTuple):
    """One labelling job (``unpack_job``): label ``count`` decisions of matches dealt from ``seed``."""

    checkpoint: str | bytes  # a path, or the file's bytes (a Ray job on another node)
    rules: str  # the preset; the player count is the checkpoint's own
    seed: int
    count: int
    rollout: str = "policy"  # who plays the learner's seat in the rollouts (check_rollout_player)


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


def finish_round(state, scores, learner: int, rng: random.Random, learner_bot, target: int) -> None:
    """Play ``state`` to the end of its round: ``learner_bot`` in the learner's seat (``bot_action``;
    ``None``: ``simple``) and ``simple`` in every other seat, tie-breaks from ``rng``."""
    while not state.is_over:
        bot = learner_bot if state.current == learner else None
        state.apply_unchecked(bot_action(bot, state, scores, state.current, target, rng))


def unpack_job(job: tuple) -> LabelJob:
    """``(checkpoint, rules, seed, count[, options])``, ``options`` a dict that may set the
    ``rollout`` player; checked, with a message that says what is allowed."""
    checkpoint, rules, seed, count, *rest = job
    if len(rest) > 1:
        raise ValueError(f"a labelling job has 4 or 5 entries (the fifth a dict of options), got {len(job)}")
    options = rest[0] if rest else {}
    if not isinstance(options, dict) or set(options) - {"rollout"}:
        raise ValueError(f"labelling options {options!r}; allowed keys: rollout")
    rollout = options.get("rollout", "policy")
    if not isinstance(rollout, str):
        raise ValueError(f"rollout player {rollout!r}; allowed: policy or a bot spec such as simple")
    return LabelJob(checkpoint, rules, seed, count, rollout)


@contextmanager
def checkpoint_file(checkpoint: str | bytes) -> Iterator[str]:
    """A path to the job's checkpoint while the ``with`` block lasts: the path itself, or for the
    file's bytes (what a Ray job carries to another node) a copy in the temporary folder, removed
    when the block ends (the job has loaded the policy by then)."""
    if isinstance(checkpoint, str):
        yield checkpoint
        return
    handle, name = tempfile.mkstemp(prefix="okgin-labelling-", suffix=".pt")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(checkpoint)
        yield name
    finally:
        os.unlink(name)


def labelling_config(checkpoint: str, rules: str):
    """The rules of a labelling job: the preset ``rules`` at the checkpoint's own player count
    (a 3-player penalty policy labels 3-player tables: it against ``simple`` in the other seats)."""
    return make_config(rules, num_players=load_checkpoint(checkpoint, rules=rules)["metadata"]["num_players"])


class _Rollout:
    """One action of one labelled decision, played out to the end of its round; ``learner`` is the
    seat of its match's learner."""

    __slots__ = ("state", "seed", "rng", "scores", "row", "column", "learner")

    def __init__(self, state, seed: int, scores, row: int, column: int, learner: int):
        self.state, self.rng, self.scores, self.row, self.column = state, random.Random(seed), scores, row, column
        self.seed, self.learner = seed, learner


def _advance(rollout: _Rollout) -> bool:
    """Play the other seats (``simple``) and forced moves until the learner has a choice (True) or
    the round ends."""
    state, learner, rng = rollout.state, rollout.learner, rollout.rng
    while not state.is_over:
        if state.current != learner:
            state.apply_unchecked(simple_action_for_state(state, rng))
            continue
        legal = state.legal_actions()
        if len(legal) > 1:
            return True
        state.apply_unchecked(legal[0])
    return False


def _act_greedy(model, rollouts: list[_Rollout], encoder: PackedEncoder) -> None:
    """Apply the network's greedy action for the seat to act in every rollout: one forward pass,
    the inputs read straight from the round states (the action rows cut to the widest legal set:
    padding rows only add -inf logits)."""
    inputs, actions = encode_states(encoder, [r.state for r in rollouts], [r.scores for r in rollouts],
                                    outlook=model.outlook)
    with torch.no_grad():
        logits, _ = model(*inputs)
    for rollout, choice, legal_actions in zip(rollouts, torch.argmax(logits, dim=-1).tolist(), actions):
        rollout.state.apply_unchecked(legal_actions[choice])


def _write_label(rollout: _Rollout, q: np.ndarray) -> None:
    q[rollout.row, rollout.column] = float(rollout.state.outcome.rewards[rollout.learner])


def roll_out(model, rollouts: list[_Rollout], config, q: np.ndarray, rollout_batch: int,
             rollout_player: str = "policy") -> None:
    """Play every rollout to the end of its round and write the learner's round points into
    ``q[row, column]``. A ``rollout_player`` other than ``"policy"`` plays the learner's seat
    instead of the network (``finish_round``, no forward passes).

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
            finish_round(rollout.state, rollout.scores, rollout.learner, rollout.rng, bot, target)
            _write_label(rollout, q)
        return
    encoder = PackedEncoder(config.num_players, target)
    queue = iter(rollouts)
    moving: list[_Rollout] = []  # rollouts that just acted, or were just taken from the queue
    while True:
        moving.extend(islice(queue, rollout_batch - len(moving)))
        if not moving:
            break
        pending = []
        for rollout in moving:
            if _advance(rollout):
                pending.append(rollout)
            else:
                _write_label(rollout, q)
        if pending:
            _act_greedy(model, pending, encoder)
        moving = pending


def play_learner_matches(config, policy, opponent, seed: int, count: int, on_choice) -> None:
    """The matches every labelling job plays, until ``count`` learner decisions have been seen.

    ``policy`` plays one seat (seat ``k % num_players`` in match ``k``, dealt from
    ``[seed, k]``), ``opponent`` every other seat, through ``okgin_env.match_loop.play_match``.
    At each of the learner's decisions with a choice, before it acts,
    ``on_choice(match, learner_seat, observation, encode_decision(...))`` is called.
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
        play_match(config, policies, np.random.default_rng([seed, game]), on_decision=hook)
        game += 1


def record_inputs(records: dict[str, list], observation: dict[str, np.ndarray], encoded: tuple) -> None:
    """Append one decision's network inputs (``obs``, ``ctx``, ``feat``, ``ids``, ``legal``) to ``records``."""
    context, features, ids, legal_flags, _ = encoded
    for key, value in (("obs", observation["observation"]), ("ctx", context), ("feat", features),
                       ("ids", ids), ("legal", legal_flags)):
        records[key].append(value)


def label_with_teacher(job: tuple[str, str, str, int, int]) -> dict[str, np.ndarray]:
    """One worker of ``training.improve --teacher``: the student plays matches against ``simple``
    (``play_learner_matches``); the teacher labels ``count`` of its decisions.

    ``job`` = (checkpoint, rules, teacher spec, seed, count). The teacher and ``simple`` are
    seeded from ``seed``, and match ``k`` is dealt from ``[seed, k]``: the same job gives the same
    arrays. ``q`` is 1 for the teacher's action (in the row order of ``encode_decision``), else 0.
    """
    from okgin_env.players import make_player

    checkpoint, rules, teacher_spec, seed, count = job
    torch.set_num_threads(1)
    with checkpoint_file(checkpoint) as path:
        config = labelling_config(path, rules)
        student = load_policy(path, rules=config, suit_symmetric=False)  # the network itself: see the docstring
    teacher = make_player(teacher_spec, seed=seed, rules=config)
    opponent = SimpleBot(seed=random.Random(seed).getrandbits(32))
    records: dict[str, list] = {k: [] for k in LABEL_KEYS}

    def label(match, learner: int, observation: dict[str, np.ndarray], encoded: tuple) -> None:
        actions = encoded[-1]
        choice = int(teacher.act(observation))
        if choice not in actions:
            raise RuntimeError(f"teacher {teacher_spec!r} played {choice}, not a legal action {actions}")
        q = np.zeros(MAX_LEGAL_ACTIONS, dtype=np.float32)
        q[actions.index(choice)] = 1.0
        record_inputs(records, observation, encoded)
        records["q"].append(q)

    play_learner_matches(config, student, opponent, seed, count, label)
    return {k: np.stack(v) for k, v in records.items()}


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


def label_decisions(job: tuple, rollout_batch: int = DEFAULT_ROLLOUT_BATCH) -> dict[str, np.ndarray]:
    """One worker's job (see the module docstring): the ``LABEL_KEYS`` arrays of ``job.count``
    decisions, ``q`` holding each legal action's label in the row order of ``encode_decision``."""
    with _cyclic_gc_paused():
        return _label_decisions(job, rollout_batch)


def _label_decisions(job: tuple, rollout_batch: int) -> dict[str, np.ndarray]:
    job = unpack_job(job)
    if rollout_batch < 1:
        raise ValueError(f"rollout_batch must be at least 1, got {rollout_batch}")
    torch.set_num_threads(1)
    with checkpoint_file(job.checkpoint) as checkpoint:
        config = labelling_config(checkpoint, job.rules)
        check_rollout_player(job.rollout, config)
        policy = load_policy(checkpoint, rules=config, suit_symmetric=False)  # the network itself: see the docstring
    rng = random.Random(job.seed)
    # simple at the match tables draws its tie-breaks from the job's generator, shared with the
    # continuation seeds, in the order the decisions come: the same job gives the same labels.
    opponent = SimpleBot()
    opponent.rng = rng
    records: dict[str, list] = {k: [] for k in LABEL_KEYS if k != "q"}
    rollouts: list[_Rollout] = []

    def collect(match, learner: int, observation: dict[str, np.ndarray], encoded: tuple) -> None:
        actions = encoded[-1]
        tie_seed = rng.getrandbits(32)
        row = len(records["obs"])
        scores = list(match.scores)
        for column, action in enumerate(actions):
            # Only stock reshuffles draw from a round's generator: without them a copy sharing it
            # plays exactly as a clone and skips copying the generator (a third of the collection).
            trial = match.round.clone() if config.reshuffle_stock else match.round.copy()
            trial.apply_unchecked(action)
            rollouts.append(_Rollout(trial, tie_seed, scores, row, column, learner))
        record_inputs(records, observation, encoded)

    play_learner_matches(config, policy, opponent, job.seed, job.count, collect)
    q = np.zeros((len(records["obs"]), MAX_LEGAL_ACTIONS), dtype=np.float32)
    roll_out(policy.model, rollouts, config, q, rollout_batch, job.rollout)
    return {**{k: np.stack(v) for k, v in records.items()}, "q": q}
