"""``TensorEnv`` against the rules core: every mask, observation, reward, termination, score and
final observation of thousands of random and greedy rounds and matches, dealt from the decks the
tensor engine drew (each reference round is a ``RoundState`` of the same deck and dealer), under
every rule option; the batched meld solver against the rules core's; scripted rule scenarios."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from okgin_env.episode import end_of_round, seat_observation  # noqa: E402
from okgin_env.rules.actions import KNOCK_BASE, NUM_ACTIONS  # noqa: E402
from okgin_env.rules.match import MatchState  # noqa: E402
from okgin_env.rules.melds import deadwood_of_mask  # noqa: E402
from okgin_env.rules.round import RoundState  # noqa: E402
from okgin_env.tensor import TensorEnv  # noqa: E402
from okgin_env.tensor.solver import NO_CHOICE, MeldTables, deadwood_after_each  # noqa: E402

from tests.helpers import build_deck, discard, greedy_action, knock  # noqa: E402

pytestmark = pytest.mark.long  # one of the default suite's long modules: -m "not slow and not long" skips it


class EnvShuffles:
    """The rules core's generator in a reference match: a penalty stock rebuild takes the
    permutation the tensor engine drew for that game (``TensorState.last_permutation``)."""

    def __init__(self, env: TensorEnv, game: int):
        self.env, self.game = env, game

    def permutation(self, count: int) -> list[int]:
        return self.env.state.last_permutation[self.game, :count].tolist()


class Reference:
    """One rules-core match per game of ``env``, dealt the decks the tensor engine dealt."""

    def __init__(self, env: TensorEnv):
        self.env = env
        self.matches = [self._new_match(g) for g in range(env.num_envs)]
        self.rounds = 0

    def _new_match(self, g: int) -> MatchState:
        env = self.env
        return MatchState(env.config, EnvShuffles(env, g), deck=env.state.deck[g].tolist(), dealer=int(env.state.dealer[g]))

    def check_acting(self, out) -> None:
        """The seat to act, its observation and its mask in every game equal the rules core's."""
        env = self.env
        target = env.config.target_score
        expected = [seat_observation(m.round, m.round_totals, target, m.round.current, env.observation)
                    for m in self.matches]
        seats = np.array([m.round.current for m in self.matches])
        np.testing.assert_array_equal(out.current_player.cpu().numpy(), seats)
        np.testing.assert_array_equal(out.action_mask.cpu().numpy().astype(np.int8), np.stack([e["action_mask"] for e in expected]))
        got = out.observation.cpu().numpy()
        want = np.stack([e["observation"] for e in expected])
        assert got.dtype == want.dtype == np.float32
        assert got.tobytes() == want.tobytes(), np.argwhere(got != want)[:5]

    def step(self, actions: np.ndarray, out, reward: str = "points") -> None:
        """Play ``actions`` in the reference and check ``out`` (what the tensor engine returned)."""
        env = self.env
        rewards = out.rewards.cpu().numpy()
        terminated, truncated = out.terminated.cpu().numpy(), out.truncated.cpu().numpy()
        round_over, scores = out.round_over.cpu().numpy(), out.scores.cpu().numpy()
        final = out.final_observation.cpu().numpy()
        for g, match in enumerate(self.matches):
            outcome = match.apply(int(actions[g]))
            if outcome is None:
                assert not round_over[g] and not terminated[g] and not truncated[g] and not rewards[g].any()
                np.testing.assert_array_equal(scores[g], match.scores)
                continue
            self.rounds += 1
            end = end_of_round(outcome, match, env.episode, reward, env.max_rounds)
            paid = np.zeros(env.num_players, np.float32) if end.rewards is None else np.array(end.rewards, np.float32)
            assert round_over[g]
            assert rewards[g].tobytes() == paid.tobytes(), (g, rewards[g], paid)
            assert (terminated[g], truncated[g]) == (end.terminated, end.truncated)
            assert scores[g].tolist() == match.scores
            if end.terminated or end.truncated:
                target = env.config.target_score
                for seat in range(env.num_players):
                    last = seat_observation(match.round, match.round_totals, target, seat, env.observation)["observation"]
                    assert final[g, seat].tobytes() == last.tobytes(), (g, seat)
                self.matches[g] = self._new_match(g)
            else:
                assert not final[g].any()
                assert match.dealer == int(env.state.dealer[g])  # the winner deals the next round
                match.round = RoundState(env.config, env.state.deck[g].tolist(), match.dealer, match.rng)


def random_actions(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A uniformly random legal action per row."""
    scores = torch.rand(mask.shape, generator=generator) * mask
    return scores.argmax(1)


def play(env: TensorEnv, steps: int, seed: int, policy: str, reward: str = "points", knock_bias: float = 0.0,
         record: list | None = None) -> int:
    """Play ``steps`` steps against the reference; returns the rounds finished. ``record``: a list
    that gets each step's rewards, scores and observations (to tell two envs' games apart)."""
    out = env.reset(seed=seed)
    ref = Reference(env)
    ref.check_acting(out)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        if policy == "greedy":
            actions = torch.tensor([greedy_action(m.round) for m in ref.matches])
        else:
            actions = random_actions(out.action_mask, generator)
            if knock_bias:  # knock at once where a knock is legal, most of the time
                knocks = out.action_mask[:, KNOCK_BASE:]
                take = knocks.any(1) & (torch.rand(env.num_envs, generator=generator) < knock_bias)
                actions = torch.where(take, KNOCK_BASE + random_actions(knocks, generator), actions)
        out = env.step(actions)
        ref.step(actions.numpy(), out, reward)
        ref.check_acting(out)
        if record is not None:
            record.append((out.rewards.tolist(), out.scores.tolist(), out.observation.sum().item(),
                           out.action_mask.sum().item()))
    return ref.rounds


# ----------------------------------------------------------------------------- the solver


def test_solver_equals_the_rules_core_on_random_and_set_heavy_hands():
    rng = np.random.default_rng(0)
    hands, masks = [], []
    for i in range(3000):
        size = (10, 11, 7)[i % 3]
        if i % 2:
            cards = rng.choice(52, size, replace=False).tolist()
        else:  # two or three ranks held three or four times
            ranks = rng.choice(13, 3, replace=False)
            cards = [int(s) * 13 + int(r) for r in ranks for s in rng.choice(4, int(rng.integers(3, 5)), replace=False)]
            cards = (cards + [c for c in rng.permutation(52).tolist() if c not in cards])[:size]
        masks.append(sum(1 << c for c in cards))
        row = np.zeros(52, bool)
        row[cards] = True
        hands.append(row)
    best, after = deadwood_after_each(torch.as_tensor(np.stack(hands)), MeldTables.on(torch.device("cpu")))
    for i, mask in enumerate(masks):
        assert int(best[i]) == deadwood_of_mask(mask)
        want = [deadwood_of_mask(mask ^ (1 << c)) if mask >> c & 1 else NO_CHOICE for c in range(52)]
        assert after[i].tolist() == want


# ----------------------------------------------------------------------------- differential play


def test_random_rounds_equal_the_rules_core():
    env = TensorEnv(500, rules="classic", episode="round")
    rounds = play(env, 2500, seed=1, policy="random")
    assert rounds >= 10_000


def test_greedy_rounds_equal_the_rules_core():
    env = TensorEnv(100, rules="classic", episode="round")
    rounds = play(env, 700, seed=2, policy="greedy")
    assert rounds >= 2_000


@pytest.mark.parametrize("num_players, options", [(2, {}), (3, {}), (4, {"spade_double": True, "max_reshuffles": 1}),
                                                  (3, {"target_score": 40, "max_reshuffles": 0})])
@pytest.mark.parametrize("reward", ["points", "win"])
def test_penalty_matches_with_stock_rebuilds_equal_the_rules_core(num_players, options, reward):
    env = TensorEnv(48, rules="penalty", num_players=num_players, episode="match", reward=reward, max_rounds=5, **options)
    assert play(env, 250, seed=13, policy="greedy", reward=reward) >= 150


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_penalty_stock_rebuilds_in_random_play_equal_the_rules_core(num_players):
    env = TensorEnv(48, rules="penalty", num_players=num_players, episode="round", max_reshuffles=2)
    play(env, 250, seed=15, policy="random")
    assert (env.state.last_permutation != 0).any(1).sum() >= 10  # games that rebuilt their stock


def test_penalty_feature_observations_and_greedy_rounds_equal_the_rules_core():
    env = TensorEnv(48, rules="penalty", num_players=4, episode="round", observation="features")
    assert play(env, 300, seed=14, policy="greedy") >= 150


def test_feature_observations_equal_the_rules_core():
    env = TensorEnv(64, rules="classic", episode="match", observation="features", max_rounds=4)
    assert play(env, 200, seed=6, policy="greedy") >= 200
    env = TensorEnv(64, rules="standard", episode="round", observation="features", allow_discard_taken=True)
    assert play(env, 300, seed=7, policy="random", knock_bias=0.9) >= 100


@pytest.mark.parametrize("rules, options", [
    ("classic", {}),
    ("standard", {}),
    ("classic", {"target_score": 40, "spade_double": True, "gin_bonus": 20, "undercut_bonus": 15}),
    ("classic", {"target_score": 30, "box_bonus": 25, "game_bonus": 100, "shutout_multiplier": 2}),
    ("classic", {"ace_upcard_gin_only": False, "allow_discard_taken": True, "max_turns": 12}),
    ("classic", {"knock_limit": 0}),
    ("standard", {"target_score": 25, "knock_limit": 5}),
])
@pytest.mark.parametrize("reward", ["points", "win"])
def test_matches_with_every_option_equal_the_rules_core(rules, options, reward):
    env = TensorEnv(64, rules=rules, episode="match", reward=reward, max_rounds=6, **options)
    rounds = play(env, 300, seed=3, policy="greedy", reward=reward)
    assert rounds >= 300


# ----------------------------------------------------------------------------- scripted scenarios


def scripted(deck, dealer, actions, rules="classic", **options):
    """Play ``actions`` from an injected deck in a one-game TensorEnv and the reference; returns the
    last step and the reference match."""
    env = TensorEnv(1, rules=rules, episode="round", **options)
    out = env.reset(seed=0, options={"deck": [deck], "dealer": [dealer]})
    ref = Reference(env)
    ref.check_acting(out)
    for action in actions:
        out = env.step(torch.tensor([action]))
        ref.step(np.array([action]), out)
        if not out.round_over[0]:
            ref.check_acting(out)
    return out, ref


def test_scripted_blocking_layout_of_the_rules_example():
    # docs/rules.md §6: the knocker lays out 2S 2C 2D and 5C 6C 7C, keeping 8, and scores 17 - 8 = 9.
    knocker = "AS 2S 3S 2C 5C 6C 7C AD 2D 3D"
    defender = "JS QS KS 4D 5D 8D 2H 3H 4H 5H"
    deck = build_deck([knocker[:-3] + " 9C", defender], "TH", stock="3D", dealer=1)
    out, _ = scripted(deck, 1, [2, 2, 0, knock("9C")])
    assert out.round_over[0] and out.rewards[0].tolist() == [9.0, -9.0]


def test_scripted_taken_card_rule_and_illegal_actions_change_nothing():
    deck = build_deck(["AS 2S 3S 4H 5H 6H 9C TC JC 9D", None], "KD", dealer=1)
    env = TensorEnv(1, episode="round")
    out = env.reset(options={"deck": [deck], "dealer": [1]})
    out = env.step(torch.tensor([1]))  # seat 0 takes the upcard KD
    before = (env.state.hands.clone(), env.state.phase.clone(), out.observation.clone())
    with pytest.raises(ValueError, match=r"game 0: action 41 \(discard KD\) is not legal for seat 0; legal: "):
        env.step(torch.tensor([discard("KD")]))
    assert torch.equal(env.state.hands, before[0]) and torch.equal(env.state.phase, before[1])
    assert torch.equal(env.observations, before[2])
    for bad in (torch.tensor([NUM_ACTIONS]), torch.tensor([-1])):
        with pytest.raises(ValueError, match="out of range 0..106"):
            env.step(bad)
    with pytest.raises(ValueError, match=r"actions must have shape \(1,\)"):
        env.step(torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="actions must be integers"):
        env.step(torch.tensor([1.0]))
    out = env.step(torch.tensor([knock("9D")]))  # three runs and the KD: 10 of deadwood, the KD upcard's limit
    assert out.round_over[0]


def test_illegal_report_mode_skips_only_those_games():
    env = TensorEnv(3, episode="round", illegal="report")
    first = env.reset(seed=5)
    hands = env.state.hands.clone()
    actions = torch.tensor([2, 99, 0])  # pass (legal in the offer), out of range, draw (illegal in the offer)
    out = env.step(actions)
    assert out.illegal.tolist() == [False, True, True]
    assert torch.equal(env.state.hands[1:], hands[1:])
    assert torch.equal(out.observation[1:], first.observation[1:]) and torch.equal(out.action_mask[1:], first.action_mask[1:])
    assert not torch.equal(out.observation[0], first.observation[0])


def test_bad_arguments_are_refused_with_what_is_allowed():
    with pytest.raises(ValueError, match="num_envs must be a positive int"):
        TensorEnv(0)
    with pytest.raises(ValueError, match="observation='pixels'; allowed: 'cards', 'features'"):
        TensorEnv(2, observation="pixels")
    with pytest.raises(ValueError, match="illegal='ignore'; allowed: 'raise', 'report'"):
        TensorEnv(2, illegal="ignore")
    with pytest.raises(ValueError, match="unknown option"):
        TensorEnv(2, knock_limt=3)
    env = TensorEnv(2)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(torch.tensor([0, 0]))
    with pytest.raises(ValueError, match=r"options\['deck'\]\[1\] is not a permutation"):
        env.reset(options={"deck": [list(range(52)), [0] * 52]})
    with pytest.raises(ValueError, match=r"options\['dealer'\] must be one seat in 0..1"):
        env.reset(options={"dealer": [0, 2]})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"decks": None})


def test_same_seed_same_games():
    a, b = TensorEnv(16), TensorEnv(16)
    out_a, out_b = a.reset(seed=9), b.reset(seed=9)
    generator = torch.Generator().manual_seed(0)
    for _ in range(200):
        actions = random_actions(out_a.action_mask, generator)
        out_a, out_b = a.step(actions), b.step(actions)
        assert torch.equal(out_a.observation, out_b.observation)
    assert not torch.equal(TensorEnv(16).reset(seed=10).observation, a.reset(seed=9).observation)


# ----------------------------------------------------------------------------- simple as a tensor policy


class FixedDraws:
    """A stand-in for simple's ``random.Random``: ``randrange(count)`` gives ``floor(u * count)``
    for the next given uniform ``u``, the tensor policy's tie-break rule."""

    def __init__(self):
        self.uniform = 0.0

    def randrange(self, count: int) -> int:
        return min(int(self.uniform * count), count - 1)


@pytest.mark.parametrize("rules, options", [("classic", {}), ("standard", {}), ("classic", {"allow_discard_taken": True}),
                                            ("penalty", {"num_players": 4})])
def test_simple_as_a_tensor_policy_makes_simples_choices(rules, options):
    from okgin_env.bots.simple import simple_action_for_state
    from okgin_env.tensor.simple import simple_actions

    env = TensorEnv(64, rules=rules, episode="round", **options)
    out = env.reset(seed=4)
    ref = Reference(env)
    generator = torch.Generator().manual_seed(4)
    draws = FixedDraws()
    decisions = ties = 0
    while decisions < 6_000:
        uniforms = torch.rand(env.num_envs, generator=generator, dtype=torch.float64)
        actions = simple_actions(env.state, uniforms)
        for g, match in enumerate(ref.matches):
            draws.uniform = float(uniforms[g])
            assert int(actions[g]) == simple_action_for_state(match.round, draws), g
        discard_rows = env.state.phase == 2
        ties += int((env.state.deadwood_after[discard_rows] == env.state.deadwood_after[discard_rows].min(1, keepdim=True).values).sum(1).gt(1).sum())
        decisions += env.num_envs
        out = env.step(actions)
        ref.step(actions.numpy(), out)
        ref.check_acting(out)
    assert ref.rounds >= 60 and ties >= 500  # knocks, gins, walls and tie-breaks all met


# ----------------------------------------------------------------------------- the network's inputs


@pytest.mark.parametrize("rules, num_players", [("classic", 2), ("standard", 2), ("penalty", 3)])
def test_network_inputs_equal_the_training_encoders(rules, num_players):
    from okgin_env.observation import view
    from okgin_env.tensor.network import decision_inputs
    from training.policy import encode_views

    env = TensorEnv(128, rules=rules, num_players=num_players, episode="match")
    out = env.reset(seed=8)
    generator = torch.Generator().manual_seed(8)
    decisions = 0
    for step in range(60):
        got = decision_inputs(env.state)
        observations, masks = out.observation.numpy(), out.action_mask.numpy().astype(np.int8)
        views = [view({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)]
        want, actions = encode_views(views, num_players)
        for name, a, b in zip(("context", "action features", "action ids", "legal"), got, want):
            assert a.dtype == b.dtype and a.numpy().tobytes() == b.numpy().tobytes(), (name, step)
        decisions += env.num_envs
        out = env.step(random_actions(out.action_mask, generator) if step % 2 else
                       torch.tensor([greedy_action(s) for s in env_states(env)]))
    assert decisions >= 7_000


def env_states(env):
    """The rules core's round state of every game of ``env`` (from its dealt deck and its history is
    not kept, so rebuilt from parts)."""
    from okgin_env.rules.round import Phase

    states = []
    hands = env.hand_masks().tolist()
    for g in range(env.num_envs):
        pile = env.state.pile[g, : int(env.state.pile_len[g])].tolist()
        stock = env.state.deck[g, int(env.state.stock_pos[g]):].flip(0).tolist()
        states.append(RoundState.from_parts(
            env.config, hands=hands[g], stock=stock, discard_pile=pile, upcard=int(env.state.upcard[g]),
            dealer=int(env.state.dealer[g]), current=int(env.state.current[g]), phase=Phase(int(env.state.phase[g])),
            taken_card=int(env.state.taken_card[g]), must_draw_stock=bool(env.state.must_draw_stock[g]),
            offers_declined=int(env.state.offers_declined[g]) if int(env.state.phase[g]) == 0 else None,
            discards=int(env.state.discards[g])))
    return states


def test_active_steps_only_those_games():
    env = TensorEnv(4, episode="round")
    first = env.reset(seed=11)
    hands = env.state.hands.clone()
    active = torch.tensor([True, False, True, False])
    out = env.step(torch.tensor([2, 999, 2, -5]), active=active)  # inactive games' actions are not read
    assert torch.equal(env.state.hands[~active], hands[~active])
    assert torch.equal(out.observation[~active], first.observation[~active])
    assert torch.equal(out.current_player[active], 1 - first.current_player[active])
    with pytest.raises(ValueError, match=r"active must be a bool tensor of shape \(4,\)"):
        env.step(torch.tensor([2, 2, 2, 2]), active=torch.tensor([1, 0, 1, 0]))


def test_tensor_tables_return_when_every_learner_is_to_act_and_alternate_seats():
    from training.model import PolicyValueNet
    from training.tensor_rollout import TensorTables
    from training.train import Rollout, collect_rollout

    tables = TensorTables(32, learner_seat="alternate", episode="round")
    tables.reset(seed=12)
    assert torch.equal(tables.env.state.current, tables.learner) and not tables.learner.any()
    generator = torch.Generator().manual_seed(12)
    seats_seen, rounds = set(), 0
    for _ in range(300):
        before = tables.learner.clone()
        rewards, ended = tables.learner_step(random_actions(tables.env.action_mask_view(), generator))
        assert torch.equal(tables.env.state.current, tables.learner)
        assert not rewards[~ended].any()  # points are paid only where a round ended
        assert torch.equal(tables.learner != before, ended)  # a round episode ends: the seats swap
        seats_seen |= set(tables.learner.tolist())
        rounds += int(ended.sum())
    assert seats_seen == {0, 1} and rounds >= 100
    model = PolicyValueNet(tables.env.obs_size)
    rollout = Rollout.allocate(8, 32, tables.env.obs_size)
    collect_rollout(model, tables, rollout, 1.0)
    chosen_ids = rollout.action_ids.gather(2, rollout.actions[:, :, None]).squeeze(2)
    assert (chosen_ids < NUM_ACTIONS).all() and rollout.legal.gather(2, rollout.actions[:, :, None]).all()


# ----------------------------------------------------------------------------- argument checks (issue 52)


def test_devices_other_than_real_cpu_or_cuda_are_refused_with_what_is_allowed():
    with pytest.raises(ValueError, match="device='meta' is not allowed; allowed: a cpu, cuda"):
        TensorEnv(2, device="meta")
    with pytest.raises(ValueError, match="is not a torch device"):
        TensorEnv(2, device="floppy")
    if not torch.cuda.is_available():  # a CPU-only torch: ValueError, not torch's AssertionError
        with pytest.raises(ValueError, match="device='cuda' is not usable here.*allowed: a cpu, cuda"):
            TensorEnv(2, device="cuda")
    assert TensorEnv(2, device=torch.device("cpu")).device.type == "cpu"


def test_big_seeds_are_taken_and_a_refused_reset_changes_nothing():
    env = TensorEnv(8)
    for seed in (2**63 - 1, 2**63, 2**64, 10**30, np.uint64(2**64 - 1)):
        first = env.reset(seed=seed).observation
        assert torch.equal(env.reset(seed=seed).observation, first)  # the same seed, the same games
    assert not torch.equal(env.reset(seed=2**64).observation, env.reset(seed=2**64 + 1).observation)
    assert torch.equal(env.reset(seed=5).observation, TensorEnv(8).reset(seed=5).observation)  # small seeds as before
    # A refused reset leaves the generator as it was: the next unseeded reset deals the same games.
    env.reset(seed=3)
    follow = TensorEnv(8)
    follow.reset(seed=3)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="seed="):
            env.reset(seed=bad)
    with pytest.raises(ValueError, match="not a permutation"):
        env.reset(seed=7, options={"deck": [[0] * 52] * 8})
    assert torch.equal(env.reset().observation, follow.reset().observation)


def test_decks_must_hold_integers():
    env = TensorEnv(1)
    deck = np.arange(52)
    for bad in (deck + 0.6, deck + 0j, deck + 0.6j, deck.astype(float)):
        with pytest.raises(ValueError, match=r"options\['deck'\] must be an integer tensor or array"):
            env.reset(options={"deck": bad[None]})
        with pytest.raises(ValueError, match=r"options\['deck'\] must be an integer tensor or array"):
            env.reset(options={"deck": torch.as_tensor(bad[None])})
    assert env.reset(options={"deck": deck[None].astype(np.uint8)}).current_player.shape == (1,)


def test_huge_unsigned_actions_are_reported_as_given():
    env = TensorEnv(2)
    env.reset(seed=0)
    for value, actions in ((2**63 + 1, np.array([2, 2**63 + 1], dtype=np.uint64)),
                           (2**63 + 1, torch.tensor([2, 2**63 + 1], dtype=torch.uint64)),
                           (2**64 - 1, np.array([2, 2**64 - 1], dtype=np.uint64))):
        with pytest.raises(ValueError, match=rf"game 1: action {value} \(out of range 0..106\)"):
            env.step(actions)
    report = TensorEnv(2, illegal="report")
    report.reset(seed=0)
    assert report.step(np.array([2, 2**64 - 1], dtype=np.uint64)).illegal.tolist() == [False, True]


# ----------------------------------------------------------------------------- every rule option


#: Every ``RulesConfig`` field: the preset and options that turn it on (its baseline: the same
#: without that option, or classic for ``rules``), small enough to matter within a short game.
OPTION_WALK = {
    "rules": ("standard", {}),
    "num_players": ("penalty", {"num_players": 3}),
    "gin_bonus": ("classic", {"gin_bonus": 40}),
    "undercut_bonus": ("classic", {"undercut_bonus": 2}),
    "target_score": ("classic", {"target_score": 15}),
    "ace_upcard_gin_only": ("classic", {"ace_upcard_gin_only": False}),
    "allow_discard_taken": ("classic", {"allow_discard_taken": True}),
    "knock_limit": ("classic", {"knock_limit": 3}),
    "max_turns": ("classic", {"max_turns": 3}),
    "max_reshuffles": ("penalty", {"max_reshuffles": 0}),  # (random play: greedy rounds rarely empty the stock)
    "spade_double": ("classic", {"spade_double": True}),
    "box_bonus": ("classic", {"target_score": 15, "box_bonus": 10}),
    "game_bonus": ("classic", {"target_score": 15, "game_bonus": 50}),
    "shutout_multiplier": ("classic", {"target_score": 15, "shutout_multiplier": 3}),
}


def test_the_walk_names_every_rule_option():
    from okgin_env.rules.config import OPTION_NAMES

    assert set(OPTION_WALK) == set(OPTION_NAMES)  # a new option needs a row here


@pytest.mark.parametrize("name", sorted(OPTION_WALK))
def test_every_rule_option_is_honoured_as_the_rules_core_plays_it(name):
    """Each option is taken (the env's config holds it), changes the games (so it is not ignored)
    and is played as the rules core plays it; penalty's 3-4 players included."""
    rules, options = OPTION_WALK[name]
    baseline_rules = "classic" if name == "rules" else rules
    baseline_options = {k: v for k, v in options.items() if k != name}
    records = []
    for preset, chosen in ((rules, options), (baseline_rules, baseline_options)):
        env = TensorEnv(24, rules=preset, episode="match", max_rounds=6, **chosen)
        assert all(getattr(env.config, k) == v for k, v in chosen.items()) and env.config.rules == preset
        record: list = []
        play(env, 160, seed=21, policy="random" if name == "max_reshuffles" else "greedy", record=record)
        records.append(record)
    assert records[0] != records[1], f"{name} changed nothing"


@pytest.mark.parametrize("imitate", [False, True])
def test_tensor_rollout_records_each_tables_learner_decisions_in_order(imitate):
    """Every engine step plays every game (the learner's rows through the network, the others by
    simple): each table still gets T learner decisions, each slot's inputs are the training
    encoders' on that slot's observation, rewards sit where rounds ended, and the tables stop at
    their learners' turns."""
    from okgin_env.observation import view
    from training.model import PolicyValueNet
    from training.policy import encode_views
    from training.tensor_rollout import TensorTables
    from training.train import Rollout, collect_rollout

    tables = TensorTables(24, learner_seat="alternate", episode="match", reward="points", seed=5)
    tables.reset()
    torch.manual_seed(5)
    model = PolicyValueNet(tables.env.obs_size)
    steps, rounds = 12, 0
    for _ in range(3):
        rollout = Rollout.allocate(steps, 24, tables.env.obs_size)
        collect_rollout(model, tables, rollout, 25.0, imitate=imitate)
        assert torch.equal(tables.env.state.current, tables.learner)
        assert rollout.legal.any(-1).all() and rollout.legal.gather(2, rollout.actions[:, :, None]).all()
        observations = rollout.observations.reshape(-1, tables.env.obs_size)
        ids = rollout.action_ids.reshape(-1, rollout.action_ids.shape[-1])
        masks = torch.zeros(len(ids), NUM_ACTIONS + 1, dtype=torch.int8).scatter_(1, ids, 1)[:, :NUM_ACTIONS]
        views = [view({"observation": o, "action_mask": m}) for o, m in zip(observations.numpy(), masks.numpy())]
        want, _ = encode_views(views, 2)
        for got, expected in zip((rollout.contexts, rollout.action_features, rollout.action_ids, rollout.legal), want):
            assert got.reshape(expected.shape).numpy().tobytes() == expected.numpy().tobytes()
        assert all(v.acting_seat == 0 for v in views)  # the learner's own decisions only (its seat to act)
        ends = rollout.round_ends.bool()
        assert not rollout.rewards[~ends].any() and rollout.rounds == int(ends.sum())
        assert rollout.round_points == pytest.approx(float(rollout.rewards[ends].double().sum()) * 25.0)
        rounds += rollout.rounds
    assert rounds >= 10


# ----------------------------------------------------------------------------- the showdown on the device


def meldy_hand(rng, available: list[int], size: int) -> set[int]:
    """``size`` cards of ``available`` (in its order), most of them in random sets and runs."""
    hand: set[int] = set()
    for _ in range(int(rng.integers(1, 4))):
        if rng.random() < 0.5:
            rank = int(rng.integers(13))
            meld = {int(s) * 13 + rank for s in rng.choice(4, int(rng.choice([3, 3, 4])), replace=False)}
        else:
            suit, length = int(rng.integers(4)), int(rng.integers(3, 7))
            low = int(rng.integers(0, 14 - length))
            meld = {suit * 13 + r for r in range(low, low + length)}
        hand |= meld & set(available)
    hand = set(sorted(hand)[:size])
    return hand | set([c for c in available if c not in hand][: size - len(hand)])


def random_knocks(rng, count: int, config) -> list[tuple[list[int], int, int, int]]:
    """``(hands, knocker, knock limit, upcard)`` of legal two-player knocks: hands built from random
    sets and runs plus loose cards; half the defenders drawn mostly from the cards next to the
    knocker's (so that layoffs, chains and clashes between melds' layoffs are common)."""
    knocks = []
    while len(knocks) < count:
        deck = rng.permutation(52).tolist()
        hand = meldy_hand(rng, deck, 10)
        mask = sum(1 << c for c in hand)
        limit = config.knock_limit if config.knock_limit is not None else int(rng.integers(0, 11))
        if deadwood_of_mask(mask) > limit:
            continue
        rest = [c for c in deck if c not in hand]
        if rng.random() < 0.5:
            defender = meldy_hand(rng, rest, 10)
        else:
            near = [c for c in rest if any(c % 13 == k % 13 or (c // 13 == k // 13 and abs(c - k) <= 2) for k in hand)]
            defender = set(near[: int(rng.integers(0, 9))])
            defender |= set([c for c in rest if c not in defender][: 10 - len(defender)])
        knocker = int(rng.integers(2))
        hands = [0, 0]
        hands[knocker], hands[1 - knocker] = mask, sum(1 << c for c in defender)
        knocks.append((hands, knocker, limit, int(rng.choice([c for c in rest if c not in defender]))))
    return knocks


@pytest.mark.parametrize("rules, options", [("classic", {}), ("standard", {}),
                                            ("classic", {"spade_double": True, "undercut_bonus": 0, "gin_bonus": 7})])
def test_the_device_showdown_scores_knocks_as_the_rules_core(rules, options):
    from okgin_env.rules.config import make_config
    from okgin_env.rules.showdown import knock_outcome
    from okgin_env.tensor.showdown import knock_points

    config = make_config(rules, **options)
    knocks = random_knocks(np.random.default_rng(31), 2500, config)
    hands = torch.tensor([[[bool(h >> c & 1) for c in range(52)] for h in hands] for hands, *_ in knocks])
    knocker, limit, upcard = (torch.tensor([k[i] for k in knocks]) for i in (1, 2, 3))
    points, winner, on_host = knock_points(config, hands, knocker, limit, upcard, MeldTables.on(torch.device("cpu")))
    kinds = set()
    for i, (h, k, lim, up) in enumerate(knocks):
        outcome = knock_outcome(config, h, k, lim, up, -1)
        if not on_host[i]:
            assert (points[i].tolist(), int(winner[i])) == (outcome.points, outcome.winner), (h, k, lim, up)
            kinds.add(outcome.kind)
    assert kinds == {"knock", "gin", "undercut"} and int(on_host.sum()) < len(knocks) // 20


def test_rounds_with_every_knock_scored_on_the_device_equal_the_rules_core(monkeypatch):
    import okgin_env.tensor.round_end as round_end

    monkeypatch.setattr(round_end, "CPU_DEVICE_SHOWDOWNS", 0)  # the device showdown however few knocks a step has
    env = TensorEnv(128, rules="classic", episode="match", max_rounds=8, spade_double=True)
    assert play(env, 400, seed=33, policy="greedy") >= 400
    env = TensorEnv(64, rules="standard", episode="round")
    assert play(env, 300, seed=34, policy="random", knock_bias=0.9) >= 100


@pytest.mark.parametrize("rules, num_players", [("classic", 2), ("penalty", 3), ("penalty", 4)])
def test_the_device_seat_view_is_the_rules_cores_for_every_seat(rules, num_players):
    """``seat_view_tensors`` mirrors ``observation.seat_view``, the one statement of what a seat
    may see: every plane, the acting seat and the dealer offset, for every seat of every game."""
    from okgin_env.observation import seat_view
    from okgin_env.tensor.encode import seat_view_tensors

    env = TensorEnv(40, rules=rules, num_players=num_players, episode="round")
    out = env.reset(seed=31)
    ref = Reference(env)
    generator = torch.Generator().manual_seed(31)
    rows = torch.arange(env.num_envs)
    checked = taken = 0
    for _ in range(60):
        for seat in range(num_players):
            planes, acting, from_dealer = seat_view_tensors(env.state, rows, torch.full_like(rows, seat), over=False)
            for g, match in enumerate(ref.matches):
                want = seat_view(match.round, seat)
                got = [sum(1 << int(c) for c in torch.nonzero(plane).flatten()) for plane in planes[g]]
                assert tuple(got) == want.planes, (g, seat)
                assert (int(acting[g]), int(from_dealer[g])) == (want.acting_seat, want.seat_from_dealer)
                checked += 1
                taken += want.taken_card >= 0
        actions = random_actions(out.action_mask, generator)
        out = env.step(actions)
        ref.step(actions.numpy(), out)
    assert checked == 60 * 40 * num_players and taken > 0


def _snapshot(state) -> dict:
    """Every tensor of a ``TensorState`` copied, and its generator's position."""
    import dataclasses

    fields = {f.name: getattr(state, f.name).clone() for f in dataclasses.fields(state)
              if f.name not in ("generator", "rules")}
    return {**fields, "generator": state.generator.get_state(), "rules": state.rules}


def _assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert (a[name] == b[name]) if name == "rules" else torch.equal(a[name], b[name]), name


@pytest.mark.parametrize("rules, num_players", [("classic", 2), ("penalty", 3)])
def test_the_state_functions_play_the_stateful_envs_games_and_keep_their_input(rules, num_players):
    """``init``/``step_state``/``observe`` over a ``TensorState`` give the games of ``reset``/``step``
    step for step, and ``step_state`` leaves the state it is given as it was (round ends, match
    restarts and the generator's draws included)."""
    options = dict(rules=rules, num_players=num_players, episode="match", max_rounds=1, observation="features")
    env, pure = TensorEnv(16, **options), TensorEnv(16, **options)
    out = env.reset(seed=3)
    state = pure.init(seed=3)
    assert torch.equal(state.observation, out.observation) and torch.equal(pure.observe(state), out.observation)
    rng = torch.Generator().manual_seed(0)
    restarts = rebuilds = 0
    for _ in range(500):
        actions = torch.multinomial(out.action_mask.float(), 1, generator=rng).squeeze(1)
        before = _snapshot(state)
        state_after, got = pure.step_state(state, actions)
        _assert_same(_snapshot(state), before)
        out = env.step(actions)
        for mine, theirs in zip(got, out):
            assert torch.equal(mine, theirs)
        assert torch.equal(pure.observe(state_after), out.observation)
        restarts += int((out.terminated | out.truncated).sum())
        rebuilds = max(rebuilds, int(state_after.reshuffles.sum()))
        state = state_after
    _assert_same(_snapshot(state), _snapshot(env.state))
    assert restarts >= 16  # episodes ended and were dealt again from the generator
    assert rebuilds > 0 or rules != "penalty"  # and stocks rebuilt from it


def test_a_search_can_branch_from_one_state():
    from okgin_env.tensor.simple import simple_actions

    env = TensorEnv(8, rules="classic", episode="round")
    root = env.init(seed=1)
    for _ in range(30):  # into the discard phase and past some round ends
        root, _ = env.step_state(root, simple_actions(root, tie_break=torch.zeros(8)))
    actions = simple_actions(root, tie_break=torch.zeros(8))
    first, first_out = env.step_state(root, actions)
    second, second_out = env.step_state(root, actions)
    _assert_same(_snapshot(first), _snapshot(second))
    assert all(torch.equal(a, b) for a, b in zip(first_out, second_out))
    copy = root.clone()
    copy.hands[0] = False
    assert root.hands[0].any()  # a clone shares no tensor


def test_a_state_of_another_shape_or_kind_is_refused():
    env = TensorEnv(4, rules="classic")
    with pytest.raises(ValueError, match=r"state holds 2 games of 2 seats on cpu; this env plays 4 of 2 on cpu"):
        env.step_state(TensorEnv(2, rules="classic").init(seed=0), torch.zeros(4, dtype=torch.int64))
    with pytest.raises(ValueError, match="state must be a TensorState"):
        env.observe({"hands": None})
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        env.step(torch.zeros(4, dtype=torch.int64))
    # Another preset's state has the same tensors: it was played by the wrong rules without a word.
    penalty = TensorEnv(4, rules="penalty").init(seed=1)
    with pytest.raises(ValueError, match="other rules than this env's \\(rules: 'penalty' in the state, 'classic' here"):
        env.step_state(penalty, penalty.legal_action_mask.float().argmax(1))
    with pytest.raises(ValueError, match="observations of"):
        env.observe(TensorEnv(4, observation="features").init(seed=1))
    state = env.init(seed=2)
    assert env.step_state(state, state.legal_action_mask.float().argmax(1))[0].rules == env.config


def test_observe_takes_game_indices_and_says_what_it_takes():
    env = TensorEnv(4)
    env.reset(seed=0)
    assert torch.equal(env.observe_rows([1, 3]), env.observe_rows(torch.tensor([1, 3])))
    assert env.observe_rows(np.array([], dtype=np.int64)).shape == (0, env.obs_size)
    for rows in (torch.tensor([4]), torch.tensor([-1]), torch.tensor([True, False, True, True]), torch.tensor([[0]]),
                 np.array([0.5]), ["a"]):
        with pytest.raises(ValueError, match="allowed: a 1-D tensor, array or list of game indices 0..3"):
            env.observe_rows(rows)
    # The rollout's own rows skip the check (a device sync a step on a GPU) and read the same observations.
    rows = torch.tensor([3, 0, 2])
    assert torch.equal(env.observe(env.state, rows, check_rows=False), env.observe(env.state, rows))
    assert torch.equal(env.observe(env.state, None, check_rows=False), env.observe(env.state))


def test_one_dealer_may_be_given_as_a_number_or_a_0_d_tensor():
    env = TensorEnv(3)
    for dealer in (1, np.int64(1), torch.tensor(1)):
        env.reset(seed=0, options={"dealer": dealer})
        assert env.state.dealer.tolist() == [1, 1, 1]
    for dealer, shown in ((2, "got 2$"), (np.array([2**63 + 1] * 3, dtype=np.uint64), "got array.*dtype=uint64")):
        with pytest.raises(ValueError, match=r"options\['dealer'\] must be one seat in 0..1 or \(3,\) seats, " + shown):
            env.reset(seed=0, options={"dealer": dealer})


def test_a_device_named_with_its_index_is_the_device_of_its_states():
    from training.tensor_rollout import TensorTables

    env = TensorEnv(2, device="cpu:0")
    assert env.device == torch.device("cpu") and env.observe(env.init(seed=0)).shape == (2, env.obs_size)
    tables = TensorTables(4, device="cpu:0")
    tables.reset(seed=0)
    assert tables.inputs()[0].shape[0] == 4
