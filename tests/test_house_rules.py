"""House rules at the end of a match (docs/rules.md §11): ``box_bonus``, ``game_bonus``,
``shutout_multiplier``. Scripted matches (deck injection for the first round, ``ScriptedDecks``
for the later ones), their rewards and infos in the AEC env, their refusal with ``penalty``, and
the batch engine against the AEC env with the bonuses on."""

from __future__ import annotations

import random

import numpy as np
import pytest

import okgin_env
from okgin_env import MatchState, make_config
from okgin_env.batch import BatchEnv
from okgin_env.bots.simple import simple_action_for_state
from okgin_env.episode import MATCH_BONUS_INFO
from okgin_env.observation import decode
from okgin_env.rules.actions import DRAW_STOCK, PASS, TAKE_DISCARD
from okgin_env.rules.config import RulesConfig
from okgin_env.rules.match import match_bonus

from tests.helpers import build_deck, discard, knock

AGENTS = ["player_0", "player_1"]

# Dealer 0. Seat 1 takes the 5H upcard and knocks with AC left against 39: 38 points (test_rules_match).
KNOCK_BY_1 = dict(hands=["5C 6C 7C KS KH KD 9S TS QH JH", "2S 3S 4S 7D 8D 9D AC 2C 3H 4H"], upcard="5H", dealer=0)
KNOCK_BY_1_ACTIONS = [TAKE_DISCARD, knock("2C")]
# Dealer 0. Both pass the 8C, seat 1 draws 5S and goes gin against 49 deadwood: 25 + 49 = 74.
GIN_BY_1 = dict(hands=["6S TD 6D TC 2C 3C 4C AH 7H 9H", "2S 3S 4S 7D 8D 9D JC QC KC 5H"], upcard="8C", stock="5S", dealer=0)
GIN_ACTIONS = [PASS, PASS, DRAW_STOCK, knock("5H")]
# The same gin with seats swapped and seat 1 dealing (the winner of a round deals the next): seat 0 scores 74.
GIN_BY_0 = dict(hands=["2S 3S 4S 7D 8D 9D JC QC KC 5H", "6S TD 6D TC 2C 3C 4C AH 7H 9H"], upcard="8C", stock="5S", dealer=1)
# The gin of GIN_BY_1 under a spade upcard (9S): with spade_double it scores 2 * 74 = 148.
GIN_BY_1_SPADE = {**GIN_BY_1, "upcard": "9S"}


class ScriptedDecks:
    """Stands in for a match's generator after its first round: ``permutation(52)`` hands out
    the given decks in order (a classic round uses its generator for nothing else)."""

    def __init__(self, *decks: list[int]):
        self.decks = list(decks)

    def permutation(self, size: int) -> np.ndarray:
        assert size == 52 and self.decks, "the match dealt a round the test did not script"
        return np.array(self.decks.pop(0))


def deck(story: dict) -> list[int]:
    return build_deck(**story)


def scripted_match(cfg, *stories) -> MatchState:
    """A match whose rounds are dealt from ``stories`` in order (the first one's dealer deals first)."""
    first, *later = stories
    match = MatchState(cfg, np.random.default_rng(0), deck=deck(first), dealer=first["dealer"])
    match.rng = ScriptedDecks(*(deck(s) for s in later))
    return match


def play(match: MatchState, actions, then_deal: bool = True):
    """Play one scripted round; the outcome (and deal the next round if the match goes on)."""
    *first, last = actions
    for action in first:
        assert match.apply(action) is None
    outcome = match.apply(last)
    assert outcome is not None
    if then_deal and not match.is_over:
        match.deal_next_round()
    return outcome


def two_round_match(**options) -> MatchState:
    """Seat 1 knocks for 38, then seat 0 goes gin for 74 and wins the match (target 50); both won a round."""
    match = scripted_match(make_config("classic", target_score=50, **options), KNOCK_BY_1, GIN_BY_0)
    play(match, KNOCK_BY_1_ACTIONS)
    assert not match.is_over and match.round.dealer == 1
    play(match, GIN_ACTIONS)
    assert match.is_over and match.winner == 0 and match.round_totals == [74, 38]
    return match


# ----------------------------------------------------------------------------- options


def test_the_house_rules_are_off_in_both_presets():
    for preset in ("classic", "penalty"):
        cfg = make_config(preset)
        assert (cfg.box_bonus, cfg.game_bonus, cfg.shutout_multiplier) == (0, 0, 1)
        assert not cfg.has_match_bonuses
    assert make_config("classic", box_bonus=1).has_match_bonuses
    assert make_config("classic", game_bonus=1).has_match_bonuses
    assert make_config("classic", shutout_multiplier=2).has_match_bonuses
    # The "off" values may be given explicitly, also with penalty.
    assert not make_config("penalty", num_players=3, box_bonus=0, game_bonus=0, shutout_multiplier=1).has_match_bonuses


@pytest.mark.parametrize(
    "name, value, allowed",
    [
        ("box_bonus", -1, r"0\.\.1000"),
        ("box_bonus", 1001, r"0\.\.1000"),
        ("box_bonus", 2.5, r"0\.\.1000"),
        ("box_bonus", "25", r"0\.\.1000"),
        ("box_bonus", True, r"0\.\.1000"),
        ("game_bonus", -5, r"0\.\.100000"),
        ("game_bonus", 100_001, r"0\.\.100000"),
        ("game_bonus", None, r"0\.\.100000"),
        ("shutout_multiplier", 0, r"1\.\.100"),
        ("shutout_multiplier", 101, r"1\.\.100"),
        ("shutout_multiplier", 1.5, r"1\.\.100"),
    ],
)
def test_bad_values_are_refused_with_the_allowed_range(name, value, allowed):
    pattern = rf"{name}={value!r} is not allowed; expected an int in {allowed}"
    with pytest.raises(ValueError, match=pattern):
        make_config("classic", **{name: value})
    with pytest.raises(ValueError, match=pattern):
        RulesConfig(**{name: value})
    with pytest.raises(ValueError, match=pattern):
        okgin_env.env(**{name: value})
    with pytest.raises(ValueError, match=pattern):
        BatchEnv(2, **{name: value})
    # A derived config is checked too, and the one it derives from is left as it was.
    base = make_config("classic", box_bonus=5)
    with pytest.raises(ValueError, match=pattern):
        make_config(base, **{name: value})
    assert (base.box_bonus, base.game_bonus, base.shutout_multiplier) == (5, 0, 1)


def test_numpy_ints_are_accepted_and_stored_as_ints():
    cfg = make_config("classic", box_bonus=np.int64(25), game_bonus=np.int32(100), shutout_multiplier=np.int8(2))
    assert (cfg.box_bonus, cfg.game_bonus, cfg.shutout_multiplier) == (25, 100, 2)
    assert all(type(v) is int for v in (cfg.box_bonus, cfg.game_bonus, cfg.shutout_multiplier))


@pytest.mark.parametrize("name, value, off", [("box_bonus", 25, 0), ("game_bonus", 100, 0), ("shutout_multiplier", 2, 1)])
@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_penalty_refuses_the_house_rules(name, value, off, num_players):
    with pytest.raises(ValueError, match=rf"{name}={value} is not allowed with rules='penalty'.*allowed: {off}\b"):
        make_config("penalty", num_players=num_players, **{name: value})
    with pytest.raises(ValueError, match="rules='penalty'"):
        okgin_env.env(rules="penalty", num_players=num_players, **{name: value})
    with pytest.raises(ValueError, match="rules='penalty'"):
        make_config(make_config("penalty", num_players=num_players), **{name: value})


# ----------------------------------------------------------------------------- the match


def test_without_house_rules_nothing_is_added():
    match = two_round_match()
    assert match.scores == [74, 38] and match.bonus is None


def test_box_bonus_alone_pays_every_round_won_to_both():
    match = two_round_match(box_bonus=25)
    assert match.scores == [74 + 25, 38 + 25]
    bonus = match.bonus
    assert bonus.rounds_won == [1, 1] and bonus.box == [25, 25] and bonus.game == [0, 0]
    assert bonus.points == [25, 25] and bonus.rewards == [0.0, 0.0]
    assert not bonus.shutout and bonus.multiplier == 1
    assert bonus.scores_before == [74, 38] and bonus.scores == [99, 63]


def test_game_bonus_alone_goes_to_the_match_winner():
    match = two_round_match(game_bonus=100)
    assert match.scores == [174, 38]
    assert match.bonus.game == [100, 0] and match.bonus.box == [0, 0]
    assert match.bonus.points == [100, 0] and match.bonus.rewards == [100.0, -100.0]


def test_no_shutout_when_the_loser_scored():
    match = two_round_match(shutout_multiplier=3)
    assert match.scores == [74, 38]  # the loser has 38: no bonus applies at all
    assert not match.bonus.shutout and match.bonus.multiplier == 1
    assert match.bonus.points == [0, 0] and match.bonus.rewards == [0.0, 0.0]


def test_all_three_together_without_a_shutout():
    match = two_round_match(box_bonus=25, game_bonus=100, shutout_multiplier=2)
    assert match.scores == [74 + 25 + 100, 38 + 25]
    assert match.bonus.points == [125, 25] and match.bonus.rewards == [100.0, -100.0]


def test_a_shutout_multiplies_the_winners_total():
    cfg = make_config("classic", target_score=50, shutout_multiplier=3)
    match = scripted_match(cfg, GIN_BY_1)
    outcome = play(match, GIN_ACTIONS)
    assert outcome.points == [0, 74] and outcome.rewards == [-74.0, 74.0]  # the round itself is unchanged
    assert match.winner == 1 and match.scores == [0, 3 * 74] and match.round_totals == [0, 74]
    assert match.bonus.shutout and match.bonus.multiplier == 3
    assert match.bonus.points == [0, 148] and match.bonus.rewards == [-148.0, 148.0]


def test_all_three_with_spade_double_and_a_shutout():
    """The box counts rounds, not doubled points; the multiplier takes the winner's whole total."""
    cfg = make_config("classic", target_score=50, spade_double=True, box_bonus=25, game_bonus=100, shutout_multiplier=2)
    match = scripted_match(cfg, GIN_BY_1_SPADE)
    outcome = play(match, GIN_ACTIONS)
    assert outcome.kind == "gin" and outcome.points == [0, 2 * 74]
    assert match.round_totals == [0, 148]
    assert match.scores == [0, (148 + 25 + 100) * 2]
    assert match.bonus.points == [0, 546 - 148] and match.bonus.rewards == [-398.0, 398.0]


def test_spade_double_without_a_spade_upcard_changes_nothing():
    cfg = make_config("classic", target_score=50, spade_double=True, box_bonus=10, game_bonus=40)
    match = scripted_match(cfg, GIN_BY_1)
    play(match, GIN_ACTIONS)
    assert match.scores == [0, 74 + 10 + 40]


def test_a_drawn_round_counts_for_nobody():
    cfg = make_config("classic", target_score=50, box_bonus=25)
    match = scripted_match(cfg, {**KNOCK_BY_1}, GIN_BY_1)
    match.apply(PASS)
    match.apply(PASS)
    outcome = None
    while outcome is None:  # draw and throw the drawn card until the stock is down to two
        card = match.round.stock[-1]
        match.apply(DRAW_STOCK)
        outcome = match.apply(discard(card))
    assert outcome.kind == "draw"
    match.deal_next_round()  # the same dealer (0) deals again
    play(match, GIN_ACTIONS)
    assert match.bonus.rounds_won == [0, 1] and match.bonus.box == [0, 25]
    assert match.scores == [0, 99]


def test_the_bonuses_do_not_count_toward_the_target():
    """With a box worth more than the target the match still needs 100 round points to end."""
    match = scripted_match(make_config("classic", box_bonus=1000, game_bonus=1000), KNOCK_BY_1, GIN_BY_0)
    play(match, KNOCK_BY_1_ACTIONS)
    play(match, GIN_ACTIONS, then_deal=False)
    assert not match.is_over and match.bonus is None
    assert match.scores == match.round_totals == [74, 38]
    assert match.rounds_won == [1, 1]


def test_clone_keeps_its_own_totals():
    match = scripted_match(make_config("classic", target_score=50, box_bonus=5), KNOCK_BY_1, GIN_BY_0)
    play(match, KNOCK_BY_1_ACTIONS, then_deal=False)
    copy = match.clone()
    copy.round_totals[1] = 0
    copy.rounds_won[1] = 7
    assert match.round_totals == [0, 38] and match.rounds_won == [0, 1]


def test_match_bonus_is_a_pure_function_of_the_totals():
    cfg = make_config("classic", box_bonus=25, game_bonus=100, shutout_multiplier=2)
    bonus = match_bonus(cfg, [105, 0], [3, 1], winner=0)  # a zero-point round won by the loser
    assert bonus.shutout and bonus.box == [75, 25] and bonus.scores == [(105 + 75 + 100) * 2, 25]
    assert bonus.to_dict()["scores"] == [560, 25] and bonus.to_dict()["rewards"] == [430.0, -430.0]


# ----------------------------------------------------------------------------- the AEC env


def scripted_env(**options):
    """An AEC env playing KNOCK_BY_1 then GIN_BY_0 (target 50)."""
    env = okgin_env.raw_env(target_score=50, **options)
    env.reset(seed=3, options={"deck": deck(KNOCK_BY_1), "dealer": 0})
    env.match.rng = ScriptedDecks(deck(GIN_BY_0))
    return env


def step_all(env, actions):
    """Step the scripted actions; each step's (rewards by seat, infos)."""
    steps = []
    for action in actions:
        env.step(action)
        steps.append(([env.rewards[a] for a in AGENTS], {a: dict(env.infos[a]) for a in AGENTS}))
    return steps


def test_points_rewards_pay_the_bonus_difference_at_the_last_step():
    env = scripted_env(box_bonus=25, game_bonus=100, shutout_multiplier=2)
    steps = step_all(env, KNOCK_BY_1_ACTIONS + GIN_ACTIONS)
    for rewards, _ in steps:
        assert sum(rewards) == 0.0
    assert [rewards for rewards, _ in steps] == [[0, 0], [-38, 38], [0, 0], [0, 0], [0, 0], [74 + 100, -74 - 100]]
    assert all(MATCH_BONUS_INFO not in infos[a] for _, infos in steps[:-1] for a in AGENTS)
    final = steps[-1][1]
    for agent in AGENTS:
        assert final[agent]["round_outcome"]["points"] == [74, 0]  # the round outcome is unchanged
        assert final[agent]["round_outcome"]["rewards"] == [74.0, -74.0]
        assert final[agent][MATCH_BONUS_INFO] == {
            "rounds_won": [1, 1],
            "box": [25, 25],
            "game": [100, 0],
            "shutout": False,
            "multiplier": 1,
            "scores_before": [74, 38],
            "scores": [199, 63],
            "points": [125, 25],
            "rewards": [100.0, -100.0],
        }
    assert final["player_0"][MATCH_BONUS_INFO] is not final["player_1"][MATCH_BONUS_INFO]
    assert all(env.terminations.values())
    assert env.scores == {"player_0": 199, "player_1": 63}
    # Over the match the rewards add up to the difference of the final totals.
    assert sum(r[0] for r, _ in steps) == 199 - 63
    # Observations keep the totals of round points (the bonuses stay out of the finite observation space).
    for agent in AGENTS:
        observation = env.observe(agent)
        assert env.observation_space(agent).contains(observation)
        assert decode(observation)["scores"] == ([74, 38] if agent == "player_0" else [38, 74])


def test_a_shutout_in_the_env_pays_the_multiplied_total():
    env = okgin_env.raw_env(target_score=50, shutout_multiplier=2, game_bonus=10)
    env.reset(seed=0, options={"deck": deck(GIN_BY_1), "dealer": 0})
    steps = step_all(env, GIN_ACTIONS)
    # The round pays 74; the bonus (74 + 10) * 2 - 74 = 94 more.
    assert steps[-1][0] == [-74.0 - 94.0, 74.0 + 94.0]
    assert env.scores == {"player_0": 0, "player_1": 168}
    assert steps[-1][1]["player_1"][MATCH_BONUS_INFO]["shutout"] is True


def test_win_rewards_are_unchanged_by_the_bonuses():
    env = scripted_env(reward="win", box_bonus=25, game_bonus=100, shutout_multiplier=2)
    steps = step_all(env, KNOCK_BY_1_ACTIONS + GIN_ACTIONS)
    assert [rewards for rewards, _ in steps] == [[0, 0]] * 5 + [[1.0, -1.0]]
    assert steps[-1][1]["player_0"][MATCH_BONUS_INFO]["scores"] == [199, 63]
    assert env.scores == {"player_0": 199, "player_1": 63}


def test_the_bonus_info_is_there_when_every_bonus_comes_to_zero():
    env = scripted_env(shutout_multiplier=2)
    steps = step_all(env, KNOCK_BY_1_ACTIONS + GIN_ACTIONS)
    assert steps[-1][0] == [74.0, -74.0]
    assert steps[-1][1]["player_0"][MATCH_BONUS_INFO]["points"] == [0, 0]
    assert env.scores == {"player_0": 74, "player_1": 38}


def test_defaults_add_no_info_key():
    env = scripted_env()
    steps = step_all(env, KNOCK_BY_1_ACTIONS + GIN_ACTIONS)
    assert steps[-1][0] == [74.0, -74.0]
    assert set(steps[-1][1]["player_0"]) == {"round_outcome"}
    assert env.scores == {"player_0": 74, "player_1": 38}


def test_a_round_episode_that_ends_the_match_pays_the_bonus_too():
    env = okgin_env.raw_env(target_score=50, episode="round", box_bonus=20)
    env.reset(options={"deck": deck(GIN_BY_1), "dealer": 0})
    steps = step_all(env, GIN_ACTIONS)
    assert steps[-1][0] == [-74.0 - 20.0, 74.0 + 20.0]
    assert env.scores == {"player_0": 0, "player_1": 94}
    # A round that does not end the match pays only the round.
    env.reset(options={"deck": deck(KNOCK_BY_1), "dealer": 0})
    steps = step_all(env, KNOCK_BY_1_ACTIONS)
    assert steps[-1][0] == [-38.0, 38.0] and MATCH_BONUS_INFO not in steps[-1][1]["player_0"]
    assert env.scores == {"player_0": 0, "player_1": 38}


def test_a_match_truncated_at_max_rounds_gets_no_bonus():
    env = scripted_env(max_rounds=1, box_bonus=25, game_bonus=100)
    steps = step_all(env, KNOCK_BY_1_ACTIONS)
    assert all(env.truncations.values()) and not any(env.terminations.values())
    assert steps[-1][0] == [-38.0, 38.0] and MATCH_BONUS_INFO not in steps[-1][1]["player_0"]
    assert env.scores == {"player_0": 0, "player_1": 38}


def test_gym_env_passes_the_reward_and_info_through():
    from okgin_env.gym_env import GymEnv

    class Scripted:
        def __init__(self, actions):
            self.actions = list(actions)

        def act(self, observation):
            return self.actions.pop(0)

    # The learner at seat 1 passes the upcard, the opponent passes it too, the learner draws and goes gin.
    env = GymEnv(opponents=[Scripted([PASS])], learner_seat=1, target_score=50, game_bonus=30)
    env.reset(options={"deck": deck(GIN_BY_1), "dealer": 0})
    for action in (PASS, DRAW_STOCK):
        _, reward, terminated, _, _ = env.step(action)
        assert reward == 0.0 and not terminated
    _, reward, terminated, _, info = env.step(knock("5H"))
    assert terminated and reward == 74.0 + 30.0
    assert info[MATCH_BONUS_INFO]["scores"] == [0, 104]


# ----------------------------------------------------------------------------- batch engine


@pytest.mark.parametrize("reward", ["points", "win"])
def test_the_batch_engine_agrees_with_the_aec_env(reward):
    options = dict(
        rules="classic", reward=reward, target_score=30, spade_double=True, box_bonus=10, game_bonus=50, shutout_multiplier=2
    )
    num_games, seed = 10, 41
    batch = BatchEnv(num_games, **options)
    envs = [okgin_env.raw_env(**options) for _ in range(num_games)]
    result = batch.reset(seed=seed)
    for i, env in enumerate(envs):
        env.reset(seed=seed + i)
    rng = random.Random(seed)
    totals = [[0.0, 0.0] for _ in range(num_games)]
    shutouts = ended = 0
    for t in range(700):
        actions = []
        for i, env in enumerate(envs):
            view = env.observe(env.agent_selection)
            assert AGENTS[result.seats[i]] == env.agent_selection, (t, i)
            assert np.array_equal(view["observation"], result.observations[i]), (t, i)
            actions.append(int(simple_action_for_state(env.round_state, rng)))
        result = batch.step(np.array(actions))
        bonuses = result.infos.get(MATCH_BONUS_INFO)
        for i, env in enumerate(envs):
            env.step(actions[i])
            expected = np.array([env.rewards[a] for a in AGENTS], dtype=np.float32)
            assert np.array_equal(result.rewards[i], expected), (t, i, result.rewards[i], expected)
            totals[i] = [x + r for x, r in zip(totals[i], expected.tolist())]
            done = all(env.terminations.values())
            assert done == bool(result.dones[i]), (t, i)
            info = env.infos["player_0"]
            if MATCH_BONUS_INFO in info:
                assert done and result.infos["_" + MATCH_BONUS_INFO][i], (t, i)
                assert bonuses[i] == info[MATCH_BONUS_INFO], (t, i)
                assert bonuses[i]["scores"] == [env.scores[a] for a in AGENTS]
            else:
                assert bonuses is None or not result.infos["_" + MATCH_BONUS_INFO][i], (t, i)
            if done:
                assert MATCH_BONUS_INFO in info  # every match ends by the rules here, with its bonuses
                scores = [env.scores[a] for a in AGENTS]
                assert scores == info[MATCH_BONUS_INFO]["scores"]
                shutouts += info[MATCH_BONUS_INFO]["shutout"]
                ended += 1
                if reward == "points":
                    assert totals[i] == [scores[0] - scores[1], scores[1] - scores[0]], (t, i)
                final = result.infos["final_obs"][i]
                for seat, agent in enumerate(AGENTS):
                    assert np.array_equal(env.observe(agent)["observation"], final[seat]), (t, i, seat)
                totals[i] = [0.0, 0.0]
                env.reset()
            else:
                assert batch.matches[i].scores == [env.scores[a] for a in AGENTS], (t, i)
    assert ended >= 15 and 0 < shutouts < ended


def test_the_vector_env_reports_the_final_bonus_in_final_info():
    from okgin_env.bots.random_bot import random_legal_actions
    from okgin_env.vector import VectorGymEnv

    vector = VectorGymEnv(4, opponents="simple", target_score=30, box_bonus=10, game_bonus=50)
    _, infos = vector.reset(seed=3)
    rng = np.random.default_rng(1)
    ended = 0
    for _ in range(400):
        _, rewards, terminated, truncated, infos = vector.step(random_legal_actions(infos["action_mask"], rng))
        for i in np.flatnonzero(terminated):
            bonus = infos["final_info"][i][MATCH_BONUS_INFO]
            assert bonus["game"] == [50 if s == bonus["scores"].index(max(bonus["scores"])) else 0 for s in range(2)]
            assert bonus["box"] == [10 * won for won in bonus["rounds_won"]]
            ended += 1
    assert ended >= 2
