"""The bots (okgin_env/bots): legal play everywhere, simple's documented choices, reproducibility.

Positions come from the environment itself: thousands of states reached by mixed random/simple
play in both presets and every player count, and scripted positions dealt by deck injection
(``env.reset(options={"deck": [...], "dealer": 0})``).
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

import okgin_env
from okgin_env.bots import BOT_NAMES, RandomBot, SearchBot, SearchSettings, SimpleBot, make_bot, view
from okgin_env.bots import search as search_module
from okgin_env.bots.belief import stock_draws
from okgin_env.bots.search import playout
from okgin_env.bots.simple import simple_action_for_state
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from okgin_env.rules.cards import card_id, from_mask, parse_cards, to_mask
from okgin_env.rules.config import make_config
from okgin_env.rules.infoset import InfoSet
from okgin_env.rules.layouts import candidate_melds_of_mask
from okgin_env.rules.melds import deadwood_of_mask, in_some_meld
from okgin_env.rules.round import Phase

TABLES = [("classic", 2), ("penalty", 2), ("penalty", 3), ("penalty", 4)]
FAST_SEARCH = {"rollouts": 6, "max_discards": 3}


# ----------------------------------------------------------------------------- positions


def reached_states(rules: str, num_players: int, count: int, seed: int):
    """``count`` (observation, round state) pairs where an agent must act, by mixed random/simple play."""
    env = okgin_env.raw_env(rules=rules, num_players=num_players, episode="round")
    rng = random.Random(seed)
    movers = [RandomBot(seed=seed), SimpleBot(seed=seed + 1)]
    found = []
    game = 0
    while len(found) < count:
        env.reset(seed=seed * 1000 + game)
        game += 1
        mix = rng.choice((0.0, 0.5, 0.9, 1.0))  # random play reaches the wall, simple play knocks
        while not any(env.terminations.values()):
            agent = env.agent_selection
            observation = env.observe(agent)
            found.append((observation, env.round_state.clone()))
            mover = movers[1] if rng.random() < mix else movers[0]
            env.step(mover.act(observation))
    return found[:count]


@pytest.fixture(scope="module")
def positions():
    return {table: reached_states(*table, count=1500, seed=7 + i) for i, table in enumerate(TABLES)}


def legal(observation) -> set[int]:
    return {int(a) for a in np.flatnonzero(observation["action_mask"])}


# ----------------------------------------------------------------------------- legality


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
@pytest.mark.parametrize("name", ["random", "simple"])
def test_bot_plays_only_legal_actions(positions, table, name):
    bot = make_bot(name, seed=3)
    kinds = set()
    for observation, _ in positions[table]:
        action = bot.act(observation)
        assert action in legal(observation)
        kinds.add("knock" if action >= KNOCK_BASE else "discard" if action >= DISCARD_BASE else action)
    assert {"discard", DRAW_STOCK, PASS} <= kinds


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_search_plays_only_legal_actions(positions, table):
    rules, num_players = table
    bot = SearchBot(seed=3, rules=rules, **FAST_SEARCH)
    for observation, _ in positions[table][::10]:
        assert bot.act(observation) in legal(observation)


def test_positions_cover_every_phase_and_knocks(positions):
    phases, knock_legal = set(), 0
    for table_positions in positions.values():
        for observation, state in table_positions:
            phases.add(state.phase)
            knock_legal += any(a >= KNOCK_BASE for a in legal(observation))
    assert phases == {Phase.OFFER, Phase.DRAW, Phase.DISCARD}
    assert knock_legal >= 20


def test_bots_refuse_an_observation_with_no_legal_action():
    env = okgin_env.raw_env()
    env.reset(seed=0)
    idle = env.observe("player_0" if env.agent_selection == "player_1" else "player_1")
    for name in BOT_NAMES:
        with pytest.raises(ValueError, match="no legal action"):
            make_bot(name, seed=0).act(idle)


def test_random_bot_is_also_the_batched_random_policy(positions):
    """One uniform-random policy: ``act`` (random.Random(seed)), ``act_batch`` (numpy, seeded alike)
    and, on a shared generator, ``act`` drawing ``generator.integers`` (GymEnv's default opponent)."""
    from okgin_env.bots.random_bot import random_legal_actions

    observations = [o for o, _ in positions[("penalty", 3)][:200]]
    masks = np.stack([o["action_mask"] for o in observations])
    flat = np.stack([o["observation"] for o in observations])
    assert np.array_equal(RandomBot(seed=4).act_batch(flat, masks), random_legal_actions(masks, np.random.default_rng(4)))
    shared = RandomBot(generator=np.random.default_rng(8))
    twin = np.random.default_rng(8)
    for observation in observations:
        legal = np.flatnonzero(observation["action_mask"])
        assert shared.act(observation) == legal[twin.integers(legal.size)]
    seeded = RandomBot(seed=2)
    draws = random.Random(2)
    for observation in observations:
        legal = np.flatnonzero(observation["action_mask"])
        assert seeded.act(observation) == legal[draws.randrange(legal.size)]
    with pytest.raises(ValueError, match="generator"):
        RandomBot(generator=7)


# ----------------------------------------------------------------------------- observation view


def test_view_reads_back_what_the_engine_holds(positions):
    for (rules, num_players), table_positions in positions.items():
        for observation, state in table_positions[::25]:
            v = view(observation)
            seat = state.current
            assert v.num_players == num_players
            assert v.hand == state.hands[seat]
            assert v.stock_size == len(state.stock)
            assert v.knock_limit == state.knock_limit
            assert v.upcard == state.upcard
            assert v.phase is state.phase
            assert v.discard_top == state.discard_top
            assert v.discard_pile == to_mask(state.discard_pile)
            assert v.acting_seat == 0
            assert v.seat_from_dealer == (seat - state.dealer) % num_players
            assert v.legal == state.legal_actions()
            for k in range(1, num_players):
                assert v.opponent_known[k - 1] == state.known[(seat + k) % num_players]


# ----------------------------------------------------------------------------- simple's rules


def test_in_some_meld_matches_the_melds_of_hand_plus_card():
    rng = random.Random(5)
    for _ in range(3000):
        cards = rng.sample(range(52), rng.choice([7, 10, 11]))
        card, hand = cards[0], to_mask(cards[1:])
        expected = any(meld >> card & 1 for meld in candidate_melds_of_mask(hand | 1 << card))
        assert in_some_meld(hand, card) == expected, (from_mask(hand), card)


def test_state_policy_is_the_observation_policy(positions):
    """The rollout policy of ``search`` makes the same choice as ``SimpleBot`` (same tie-break)."""
    for table_positions in positions.values():
        for i, (observation, state) in enumerate(table_positions[::3]):
            bot = SimpleBot(seed=i)
            assert bot.act(observation) == simple_action_for_state(state, random.Random(i))


def test_rollout_policy_only_plays_legal_actions_so_playouts_may_skip_the_check(positions):
    """``playout`` applies simple's actions unchecked: from every reached state (all tables), a
    checked playout with the same tie-breaks plays the same, legal, game."""
    for table_positions in positions.values():
        for i, (_, state) in enumerate(table_positions[::5]):
            fast, checked = state.clone(), state.clone()
            playout(fast, random.Random(i))
            rng = random.Random(i)
            while not checked.is_over:
                checked.apply(simple_action_for_state(checked, rng))  # raises on an illegal action
            assert fast.history == checked.history
            assert fast.outcome.to_dict() == checked.outcome.to_dict()


def deal(player_0: str, player_1: str, upcard: str, stock_top: str = "") -> list[int]:
    """A deck for ``dealer=0``: player_1 gets the first card, then alternately; upcard; stock top first."""
    p0, p1 = parse_cards(player_0), parse_cards(player_1)
    assert len(p0) == len(p1) == 10
    deck = [c for pair in zip(p1, p0) for c in pair] + [card_id(upcard)] + parse_cards(stock_top)
    deck += [c for c in range(52) if c not in deck]
    return deck


def scripted(player_0: str, player_1: str, upcard: str, stock_top: str = ""):
    env = okgin_env.env()
    env.reset(options={"deck": deal(player_0, player_1, upcard, stock_top), "dealer": 0})
    return env


P0_PLAIN = "5S 6S TS 3H TH JH 8D QD JC KS"  # melds with none of the cards below
P1_RUNS = "7H 8H AS 2S 3S 5D 9C 6D KC 2D"


def test_simple_takes_an_upcard_that_melds():
    p1 = "7C 8C AS 2S 3S 5D 9D 6D KC 2D"
    env = scripted(P0_PLAIN, p1, "9C")
    assert env.agent_selection == "player_1"
    assert SimpleBot(seed=0).act(env.observe("player_1")) == TAKE_DISCARD


def test_simple_passes_an_upcard_that_does_not_meld_and_draws_when_it_must():
    env = scripted(P0_PLAIN, "7C 8C AS 2S 3S 5D 9D 6D KC 2D", "QS")
    bot = SimpleBot(seed=0)
    assert bot.act(env.observe("player_1")) == PASS
    env.step(PASS)
    assert env.agent_selection == "player_0"
    assert bot.act(env.observe("player_0")) == PASS
    env.step(PASS)
    observation = env.observe("player_1")
    assert legal(observation) == {DRAW_STOCK}
    assert bot.act(observation) == DRAW_STOCK


def test_the_dealer_takes_the_upcard_that_the_other_passed_if_it_melds():
    env = scripted("QH QC 9S 3H 7H JH 4D 8D 5C KC", "7C 8C AS 2S 3S 5D 9D 6D KH 2D", "QS")
    bot = SimpleBot(seed=0)
    assert bot.act(env.observe("player_1")) == PASS
    env.step(PASS)
    assert bot.act(env.observe("player_0")) == TAKE_DISCARD


def test_simple_knocks_with_the_card_leaving_least_deadwood():
    # After taking 9H: 7H 8H 9H, AS 2S 3S, 5D 5C 5H; loose KC and 2D. Knock limit 9.
    env = scripted(P0_PLAIN, "7H 8H AS 2S 3S 5D 5C 5H KC 2D", "9H")
    env.step(TAKE_DISCARD)
    observation = env.observe("player_1")
    assert KNOCK_BASE + card_id("KC") in legal(observation)
    assert SimpleBot(seed=0).act(observation) == KNOCK_BASE + card_id("KC")


def test_simple_discards_the_card_leaving_least_deadwood_never_the_taken_card():
    # After taking 9H: 7H 8H 9H, AS 2S 3S; loose 5D 9C 6D KC 2D (32) -> discard KC (22) uniquely.
    env = scripted(P0_PLAIN, P1_RUNS, "9H")
    env.step(TAKE_DISCARD)
    observation = env.observe("player_1")
    assert not any(a >= KNOCK_BASE for a in legal(observation))
    for seed in range(5):
        assert SimpleBot(seed=seed).act(observation) == DISCARD_BASE + card_id("KC")


def test_simple_breaks_discard_ties_at_random():
    # Loose 5D 9C QC KC 2D: discarding QC or KC both leave 26.
    env = scripted(P0_PLAIN, "7H 8H AS 2S 3S 5D 9C QC KC 2D", "9H")
    env.step(TAKE_DISCARD)
    observation = env.observe("player_1")
    choices = {SimpleBot(seed=seed).act(observation) for seed in range(40)}
    assert choices == {DISCARD_BASE + card_id("QC"), DISCARD_BASE + card_id("KC")}


def test_simple_draws_a_discard_only_if_it_melds():
    env = scripted("KS KH 9S 3H 6H JH 4D 8D QD 2C", P1_RUNS.replace("KC", "KD"), "9H")
    env.step(TAKE_DISCARD)
    env.step(DISCARD_BASE + card_id("KD"))  # player_1 throws KD: player_0 holds KS KH
    assert env.agent_selection == "player_0"
    assert SimpleBot(seed=0).act(env.observe("player_0")) == TAKE_DISCARD
    env2 = scripted("KS QH 9S 3H 6H JH 4D 8D QD 2C", P1_RUNS.replace("KC", "KD"), "9H")
    env2.step(TAKE_DISCARD)
    env2.step(DISCARD_BASE + card_id("KD"))
    assert SimpleBot(seed=0).act(env2.observe("player_0")) == DRAW_STOCK


# ----------------------------------------------------------------------------- search


def test_search_samples_states_consistent_with_the_observation(positions):
    for (rules, num_players), table_positions in positions.items():
        bot = SearchBot(seed=1, rules=rules)
        config = bot.config_for(num_players)
        for observation, state in table_positions[::15]:
            v = view(observation)
            sample = bot.determinize(v, config)
            assert sample.cards_accounted() == 52
            assert sample.hands[0] == state.hands[state.current]
            for k in range(1, num_players):
                true_hand = state.hands[(state.current + k) % num_players]
                assert sample.hands[k].bit_count() == true_hand.bit_count()
                assert sample.hands[k] & v.opponent_known[k - 1] == v.opponent_known[k - 1]
            assert len(sample.stock) == len(state.stock)
            assert sample.discard_top == state.discard_top
            assert sorted(sample.discard_pile) == sorted(state.discard_pile)
            assert sample.phase is state.phase and sample.current == 0
            assert sample.knock_limit == state.knock_limit
            assert sample.legal_actions() == state.legal_actions()
            assert sample.dealer == (state.dealer - state.current) % num_players
            # The search builds its states unchecked: they pass every check, and show the observer what it saw.
            info = InfoSet.from_view(v, config)
            assert InfoSet.of_state(sample) == info
            info.state(sample.hands[1:], sample.stock, random.Random(0), validate=True)
            playout(sample, random.Random(0))
            assert sample.is_over


def test_search_gives_every_card_an_opponent_took_a_meld():
    """Players take face-up cards to meld them, so sampled hands hold a meld for each known card
    (checked where the true hand has one: simple players, who take only cards that meld)."""
    checked = missing = 0
    for rules, num_players in TABLES:
        env = okgin_env.raw_env(rules=rules, num_players=num_players, episode="round")
        bots = [SimpleBot(seed=i) for i in range(num_players)]
        search = SearchBot(seed=2, rules=rules, infer_takes=True)
        config = search.config_for(num_players)
        for game in range(15):
            env.reset(seed=100 + game)
            while not any(env.terminations.values()):
                agent = env.agent_selection
                observation = env.observe(agent)
                v = view(observation)
                state = env.round_state
                if any(v.opponent_known):
                    sample = search.determinize(v, config)
                    for k in range(1, num_players):
                        true_hand = state.hands[(state.current + k) % num_players]
                        for card in from_mask(v.opponent_known[k - 1]):
                            if in_some_meld(true_hand & ~(1 << card), card):
                                checked += 1
                                missing += not in_some_meld(sample.hands[k] & ~(1 << card), card)
                env.step(bots[env.agent_name_mapping[agent]].act(observation))
    assert checked > 100
    assert missing <= 0.03 * checked


def test_the_last_discard_constraint_holds_for_simple_players():
    """search assumes the card the previous player just threw was one of their least-deadwood discards:
    exactly what ``simple`` does (bar the rare turn where the best discard was the card it had taken)."""
    from okgin_env.rules.melds import best_discard_deadwood_of_mask

    held = broken = 0
    for rules, num_players in TABLES:
        env = okgin_env.raw_env(rules=rules, num_players=num_players, episode="round")
        bots = [SimpleBot(seed=i) for i in range(num_players)]
        for game in range(12):
            env.reset(seed=game)
            while not any(env.terminations.values()):
                agent = env.agent_selection
                observation = env.observe(agent)
                card = SearchBot._last_discard(view(observation))
                state = env.round_state
                if card >= 0:
                    previous = state.hands[(state.current - 1) % num_players]
                    if deadwood_of_mask(previous) <= best_discard_deadwood_of_mask(previous | 1 << card):
                        held += 1
                    else:
                        broken += 1
                env.step(bots[env.agent_name_mapping[agent]].act(observation))
    assert held > 500
    assert broken <= 0.01 * held


def test_inconsistencies_count_a_hand_that_could_knock_and_passed_cards_it_melds():
    # player_1 (dealer 0 deals, player_1 is offered first) passes the 9H upcard; player_0 looks.
    env = scripted(P0_PLAIN, P1_RUNS, "9H")
    env.step(PASS)
    v = view(env.observe("player_0"))
    assert v.phase is Phase.OFFER and v.opponent_passed[0] == 1 << card_id("9H")
    assert SearchBot.inconsistencies(v, [v.hand, to_mask(parse_cards("9S 9D 2C 3C 4C 5H 6H JD QD KD"))]) == 1
    assert SearchBot.inconsistencies(v, [v.hand, to_mask(parse_cards("7H 8H 2C 3C 4C 5H 6H JD QD KD"))]) == 1
    assert SearchBot.inconsistencies(v, [v.hand, to_mask(parse_cards("9S 2C 3C 4C 5H 6H JD QD KD TC"))]) == 0
    # Once it has had a turn, a hand within the knock limit (9) counts 3: it would have knocked.
    env.step(PASS)  # player_0 passes too; player_1 must draw, then throws
    env.step(DRAW_STOCK)
    env.step(DISCARD_BASE + card_id("KC"))
    v = view(env.observe("player_0"))
    assert v.phase is Phase.DRAW and v.knock_limit == 9
    low = to_mask(parse_cards("AS 2S 3S 5D 6D 7D 2D 2H 2C AC"))  # deadwood 1
    assert deadwood_of_mask(low) <= 9
    assert SearchBot.inconsistencies(v, [v.hand, low]) == 3
    high = to_mask(parse_cards("AS 2S 3S 5D 6D 7D QC JS 8C 4H"))
    assert deadwood_of_mask(high) > 9
    assert SearchBot.inconsistencies(v, [v.hand, high]) == 0


def test_consistency_tries_make_samples_agree_with_what_opponents_did(positions):
    """Drawing several hands and keeping the most consistent one lowers the count of ``inconsistencies``
    (true hands of mixed random/simple players have few)."""
    totals = {1: 0, 8: 0}
    true_total = 0
    table_positions = positions[("classic", 2)][::4]
    for tries in totals:
        bot = SearchBot(seed=4, consistency_tries=tries, infer_takes=True)
        config = bot.config_for(2)
        for observation, state in table_positions:
            v = view(observation)
            hands, stock = bot._sample_hands(v, config)
            assert len(stock) == len(state.stock) and hands[1].bit_count() == state.hands[1 - state.current].bit_count()
            totals[tries] += SearchBot.inconsistencies(v, hands)
    for observation, state in table_positions:
        true_total += SearchBot.inconsistencies(view(observation), [0, state.hands[1 - state.current]])
    assert totals[8] < 0.8 * totals[1]
    assert true_total < totals[1]


def test_round_state_from_parts_plays_like_the_engine():
    config = okgin_env.make_config("classic")
    rng = np.random.default_rng(3)
    original = okgin_env.RoundState(config, rng.permutation(52).tolist(), 1, rng)
    rebuilt = okgin_env.RoundState.from_parts(
        config,
        hands=original.hands,
        stock=original.stock,
        discard_pile=original.discard_pile,
        upcard=original.upcard,
        knock_limit=original.knock_limit,
        dealer=original.dealer,
        current=original.current,
        phase=original.phase,
    )
    a, b = playout(original, random.Random(9)), playout(rebuilt, random.Random(9))
    assert a.history == b.history
    assert a.outcome.to_dict() == b.outcome.to_dict()


def test_search_returns_the_only_legal_action_and_goes_gin_at_once():
    env = scripted(P0_PLAIN, "6H 7H 8H AS 2S 3S 9D 9C 9S 4C", "9H", stock_top="5H")
    bot = SearchBot(seed=0, rollouts=10_000)  # a huge budget: these choices must not search
    env.step(PASS)
    env.step(PASS)
    assert bot.act(env.observe("player_1")) == DRAW_STOCK  # must draw: one legal action
    env.step(DRAW_STOCK)  # 5H extends 6H 7H 8H: gin by discarding 4C
    observation = env.observe("player_1")
    gin = [a for a in legal(observation) if a >= KNOCK_BASE and deadwood_of_mask(view(observation).hand & ~(1 << (a - KNOCK_BASE))) == 0]
    assert gin
    assert bot.act(observation) in gin
    assert bot.last_values == {}


def test_search_prefers_a_winning_knock_to_a_hopeless_wait():
    # player_1 can knock with 2 deadwood (limit 9) against a hand full of high cards.
    env = scripted("KS KH QD JC 9S 8C 6H 4D QS JD", "7H 8H AS 2S 3S 5D 5C 5H KC 2D", "9H")
    env.step(TAKE_DISCARD)
    bot = SearchBot(seed=0, rollouts=500)
    assert bot.act(env.observe("player_1")) == KNOCK_BASE + card_id("KC")
    assert KNOCK_BASE + card_id("KC") in bot.last_values


def test_search_rejects_bad_options():
    with pytest.raises(ValueError):
        SearchBot(rollouts=0)
    with pytest.raises(ValueError):
        SearchBot(opponent_model="psychic")
    with pytest.raises(ValueError, match="consistency_tries"):
        SearchBot(consistency_tries=0)
    with pytest.raises(ValueError):
        SearchBot(no_such_rule=1)


def test_search_settings_are_one_frozen_checked_dataclass():
    defaults = SearchSettings()
    assert dataclasses.asdict(defaults) == {
        "rollouts": 480, "max_discards": 4, "max_knocks": 2, "time_limit": None, "opponent_model": "greedy",
        "model_scale": 0.5, "max_model_draws": 12, "infer_discard": True, "max_repair": 12, "default_bonus": 1.0,
        "max_resamples": 1, "infer_takes": True, "consistency_tries": 8, "policy": None,
    }  # fmt: skip
    assert SearchBot().settings == defaults
    with pytest.raises(dataclasses.FrozenInstanceError):
        defaults.rollouts = 3
    bot = SearchBot(seed=1, settings=SearchSettings(rollouts=64), max_discards=3)  # names override the object
    assert bot.settings == SearchSettings(rollouts=64, max_discards=3)
    assert SearchSettings(rollouts=np.int64(5), model_scale=1).rollouts == 5  # numpy scalars become Python ones
    assert type(SearchSettings(rollouts=np.int64(5)).rollouts) is int
    with pytest.raises(ValueError, match=r"\['rollout'\] .*did you mean 'rollouts'.*rollouts \(an int in 1\.\.10000000; default 480\)"):
        SearchSettings(rollout=3)
    with pytest.raises(ValueError, match=r"rollouts=0 is not allowed; expected an int in 1\.\.10000000"):
        dataclasses.replace(defaults, rollouts=0)


def test_search_settings_as_an_object_or_by_name_play_alike(positions):
    by_name = make_bot("search", seed=5, **FAST_SEARCH)
    as_object = SearchBot(seed=5, settings=SearchSettings(**FAST_SEARCH))
    for observation, _ in positions[("classic", 2)][:300:10]:
        assert by_name.act(observation) == as_object.act(observation)


CONFIG = make_config("classic")
BAD_SETTINGS = [
    ("search", {"rules": CONFIG, "rollout": 64}, r"unknown setting\(s\) \['rollout'\] for bot 'search'"),
    ("search", {"rules": "classic", "rollout": 64}, r"unknown setting\(s\) \['rollout'\] for bot 'search'"),
    ("search", {"rollouts": "abc"}, r"rollouts='abc' is not allowed; expected an int in 1\.\.10000000"),
    ("search", {"time_limit": "abc"}, r"time_limit='abc' is not allowed; expected a number > 0 and <= 3600, or None"),
    ("search", {"time_limit": 0}, r"time_limit=0 is not allowed"),
    ("search", {"rollouts": 1.5}, r"rollouts=1.5 is not allowed"),
    ("search", {"rollouts": True}, r"rollouts=True is not allowed"),
    ("search", {"max_discards": 0}, r"max_discards=0 is not allowed; expected an int in 1\.\.52"),
    ("search", {"max_resamples": 0}, r"max_resamples=0 is not allowed"),
    ("search", {"infer_takes": "yes"}, r"infer_takes='yes' is not allowed; expected True or False"),
    ("search", {"default_bonus": float("nan")}, r"default_bonus=nan is not allowed; expected a number"),
    ("search", {"opponent_model": "psychic"}, r"opponent_model='psychic' is not allowed; expected 'greedy' or 'uniform'"),
    ("search", {"num_players": 3}, r"num_players is not a search setting"),
    ("search", {"settings": {"rollouts": 3}}, r"settings must be a SearchSettings"),
    ("search", {"gin_bonus": -1}, r"gin_bonus=-1 is not allowed"),
    ("search", {"rules": "bogus"}, r"rules='bogus' is not allowed; expected a preset name"),
    ("search", {"seed": "abc"}, r"seed='abc' is not allowed; expected a non-negative int \(Python or numpy\) or None"),
    ("random", {"rollouts": 3}, r"unknown setting\(s\) \['rollouts'\] for bot 'random'; its settings: seed"),
    ("random", {"seed": 2.5}, r"seed=2.5 is not allowed"),
    ("random", {"rules": 3}, r"rules=3 is not allowed"),
    ("simple", {"rule": "classic"}, r"for bot 'simple' \('rule': did you mean 'rules'\?\); its settings: seed"),
    ("simple", {"seed": "3"}, r"seed='3' is not allowed"),
]


def test_every_numeric_setting_has_an_upper_bound():
    """An absurd budget (search:rollouts=10**22) is refused when the bot is made, not run for ever."""
    from okgin_env.bots import LookaheadSettings

    for settings in (SearchSettings, LookaheadSettings):
        for f in dataclasses.fields(settings):
            meta = f.metadata
            if meta["kind"] not in (int, float):
                continue
            high = meta["high"]
            assert high is not None and (f.default is None or f.default <= high)
            settings(**{f.name: meta["kind"](high)})  # the bound itself is allowed
            for above in (high + 1, 10**22, 10**400):
                with pytest.raises(ValueError, match=rf"^{f.name}=\S+ is not allowed; expected (an int|a number) (in {meta['low']}\.\.|> 0 and <= ){high}\b"):
                    settings(**{f.name: above})
    with pytest.raises(ValueError, match=r"rollouts=10000000000000000000000 is not allowed; expected an int in 1\.\.10000000"):
        make_bot("search", rollouts=10**22)


@pytest.mark.parametrize("name, settings, message", BAD_SETTINGS, ids=[f"{n}-{','.join(s)}" for n, s, _ in BAD_SETTINGS])
def test_make_bot_checks_every_setting(name, settings, message):
    with pytest.raises(ValueError, match=message) as error:
        make_bot(name, **settings)
    if "unknown setting" in message and name == "search":
        text = str(error.value)
        assert "rollouts (an int in 1..10000000; default 480)" in text and "time_limit (a number > 0 and <= 3600, or None" in text
        assert "undercut_bonus" not in text  # the bot's settings, not the list of rule options


def test_every_bot_accepts_the_table_rules_and_numpy_seeds():
    """What ``okgin_env.evaluate`` passes: a seed (maybe a numpy integer) and the table's RulesConfig."""
    env = okgin_env.raw_env()
    env.reset(seed=4)
    observation = env.observe(env.agent_selection)
    for name in BOT_NAMES:
        settings = FAST_SEARCH if name == "search" else {}
        bot = make_bot(name, seed=np.int64(3), rules=CONFIG, **settings)
        assert bot.act(observation) == make_bot(name, seed=3, **settings).act(observation)


def test_search_rule_options_change_its_rules():
    assert SearchBot(rules="penalty", gin_bonus=30).config_for(3) == make_config("penalty", num_players=3, gin_bonus=30)
    assert SearchBot(gin_bonus=30).config_for(2) == make_config("classic", gin_bonus=30)
    # With a RulesConfig the options apply on top of it (they used to be dropped without a word).
    assert SearchBot(rules=CONFIG, spade_double=True).config_for(2) == make_config(CONFIG, spade_double=True)


# ----------------------------------------------------------------------------- time budget


def knock_position() -> dict:
    """player_1 to discard with two knocks and several discards: both stages of the search run."""
    env = scripted("KS KH QD JC 9S 8C 6H 4D QS JD", "7H 8H AS 2S 3S 5D 5C 5H KC 2D", "9H")
    env.step(TAKE_DISCARD)
    observation = env.observe("player_1")
    assert len(SearchBot().candidates(view(observation))) > 2
    return observation


def test_no_sample_or_playout_starts_once_the_time_is_spent(monkeypatch):
    """Past the deadline neither stage starts anything: the bot plays what simple would."""
    clock = iter([0.0])  # the first reading sets the deadline; every later one is far past it
    monkeypatch.setattr(search_module, "perf_counter", lambda: next(clock, 1e9))
    playouts = []
    monkeypatch.setattr(search_module, "playout", lambda state, rng: playouts.append(state) or playout(state, rng))
    observation = knock_position()
    bot = SearchBot(seed=0, rollouts=10**6, time_limit=0.05)
    assert bot.act(observation) == SimpleBot(seed=0).act(observation) == KNOCK_BASE + card_id("KC")
    assert playouts == [] and bot.last_values == {}


def test_the_finalists_get_their_share_of_the_time(monkeypatch):
    """The first stage may use half the time left, so the two finalists are compared on many
    samples (with one shared deadline the first stage took it all and left them one)."""
    ticks = iter(range(10**9))  # a clock that advances one unit per reading
    monkeypatch.setattr(search_module, "perf_counter", lambda: float(next(ticks)))
    bot = SearchBot(seed=0, rollouts=10**6, time_limit=400)
    samples_per_stage = []
    simulate = bot._simulate

    def counting(v, config, actions, determinizations, deadline):
        before = len(drawn)
        result = simulate(v, config, actions, determinizations, deadline)
        samples_per_stage.append((len(actions), len(drawn) - before))
        return result

    drawn = []
    determinize = bot.determinize
    monkeypatch.setattr(bot, "determinize", lambda v, config: drawn.append(1) or determinize(v, config))
    monkeypatch.setattr(bot, "_simulate", counting)
    bot.act(knock_position())
    (candidates, first), (finalists, second) = samples_per_stage
    assert candidates > 2 and finalists == 2
    assert first >= 10 and second >= 10


@pytest.mark.parametrize("table", [("classic", 2), ("penalty", 4)], ids=["classic-2p", "penalty-4p"])
def test_search_with_a_time_limit_stops_before_its_rollouts_run_out(positions, table, monkeypatch):
    """A budget no search finishes in time (10**6 rollouts, 0.02 s): every decision is legal and
    stops on the clock, long before its rollouts budget (a slower machine only samples less). How
    close a decision stays to its time limit is measured in benchmarks/, not asserted here."""
    bot = SearchBot(seed=0, rules=table[0], rollouts=10**6, time_limit=0.02)
    drawn = []
    determinize = bot.determinize
    monkeypatch.setattr(bot, "determinize", lambda v, config: drawn.append(1) or determinize(v, config))
    searched = 0
    for observation, _ in positions[table][::60]:
        drawn.clear()
        action = bot.act(observation)
        assert action in legal(observation)
        assert len(drawn) < 10**4
        searched += bool(bot.last_values)
    assert searched >= 5


# ----------------------------------------------------------------------------- registry, seeds


def test_make_bot_names_and_errors():
    assert BOT_NAMES == ("random", "simple", "search", "lookahead", "aggressor", "defender")
    assert isinstance(make_bot("random"), RandomBot)
    assert isinstance(make_bot("simple", seed=1), SimpleBot)
    bot = make_bot("search", seed=1, rules="penalty", rollouts=12)
    assert isinstance(bot, SearchBot) and bot.settings.rollouts == 12
    assert isinstance(make_bot("simple", rules="classic"), SimpleBot)  # unused options are ignored
    with pytest.raises(ValueError, match="unknown bot"):
        make_bot("clever")


def play_round(bots, rules="classic", num_players=2, seed=0) -> list[int]:
    env = okgin_env.raw_env(rules=rules, num_players=num_players, episode="round")
    env.reset(seed=seed)
    actions = []
    while not any(env.terminations.values()):
        agent = env.agent_selection
        action = bots[env.agent_name_mapping[agent]].act(env.observe(agent))
        actions.append(action)
        env.step(action)
    return actions


@pytest.mark.parametrize("name", BOT_NAMES)
def test_seeded_bots_are_reproducible(name):
    kw = FAST_SEARCH if name == "search" else {}
    runs = []
    for _ in range(2):
        bots = [make_bot(name, seed=11, **kw), make_bot(name, seed=12, **kw)]
        runs.append([play_round(bots, seed=s) for s in range(3)])
    assert runs[0] == runs[1]
    if name == "random":
        other = [play_round([make_bot(name, seed=13), make_bot(name, seed=12)], seed=s) for s in range(3)]
        assert other != runs[0]


def test_seeded_search_is_reproducible_with_four_players():
    runs = [play_round([make_bot("search", seed=s, **FAST_SEARCH) for s in range(4)], "penalty", 4, seed=2) for _ in range(2)]
    assert runs[0] == runs[1]


def load_benchmark(name: str):
    """A script of benchmarks/ as a module (the folder is not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script, args, named", [
    ("bench_engine.py", ["--seconds", "nan"], "--seconds"),
    ("bench_engine.py", ["--seed", "-5"], "--seed"),
    ("bench_vector.py", ["--batch-sizes", "abc"], "--batch-sizes"),
    ("bench_vector.py", ["--memory-games", "0"], "--memory-games"),
    ("bench_solver.py", ["--seed", "-3"], "--seed"),
    ("bench_labelling.py", ["--checkpoint", "missing.pt"], "--checkpoint missing.pt"),
    ("bench_bots.py", ["--pairs", "simple-random", "--matches", "simple-randm=2"], "not one of the pairs played"),
    ("bench_bots.py", ["--pairs", "search-rnd"], "unknown pair"),
    ("bench_bots.py", ["--search", "bogus=1"], "--search"),
    ("search_ablation.py", ["--deals", "1", "rollouts=8", "--out", "/dev/null/x"], "--out"),
    ("search_ablation.py", ["--deals", "1", "rollouts=0"], "rollouts=0 is not allowed"),
    ("search_regret.py", ["--truth-rollouts", "0", "base:"], "--truth-rollouts"),
    ("search_regret.py", ["--record-options", "bogus=1", "base:"], "unknown setting"),
])
def test_benchmark_scripts_refuse_bad_arguments_before_any_work(script, args, named):
    """Exit 2 and a last line naming the problem, before a measurement: these were tracebacks, runs
    that never ended (--seconds nan), output paths found only after the run, and a misspelt pair
    silently played at the default count."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, f"benchmarks/{script}", *args], cwd=root, capture_output=True, text=True,
                          timeout=120)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and done.stdout == "" and "error: " in last and named in last, done.stderr[-500:]


def test_search_regret_refuses_a_cache_of_other_settings(tmp_path):
    module = load_benchmark("search_regret")
    common = ["--truth-rollouts", "2", "--record-options", "rollouts=4", "--cache", str(tmp_path / "c"), "base:"]
    assert module.main(["--deals", "1", *common]) == 0
    with pytest.raises(ValueError, match="holds positions of other settings"):
        module.main(["--deals", "2", *common])


def test_search_ablation_script_runs(tmp_path, capsys):
    """The development probe in benchmarks/ runs end to end, with and without the oracle."""
    import json

    module = load_benchmark("search_ablation")
    for extra in ([], ["--oracle"]):
        assert module.main(["--deals", "2", "rollouts=4", "consistency_tries=2", "--out", str(tmp_path / "r"), *extra]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["deals"] == 2 and report["oracle"] == bool(extra)
        assert set(json.loads((tmp_path / "r.json").read_text())["per_deal"]) == {"1000", "1001"}
    with pytest.raises(ValueError):
        module.main(["--deals", "1", "rollouts=0"])


def test_search_regret_script_runs(tmp_path, capsys):
    """The decision-level probe runs end to end (cached positions reused); regrets are never negative."""
    import json

    module = load_benchmark("search_regret")
    common = ["--deals", "1", "--truth-rollouts", "3", "--record-options", "rollouts=6", "--cache", str(tmp_path / "c")]
    for _ in range(2):  # the second run reads the cache
        assert module.main([*common, "rollouts=6", "rollouts=6,default_bonus=2.0", "--oracle", "--out", str(tmp_path / "r")]) == 0
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["positions"] > 0 and set(report["settings"]) == {"rollouts=6", "rollouts=6,default_bonus=2.0", "oracle"}
        for row in report["settings"].values():
            assert row["mean_regret"] >= 0
    assert "paired_difference" in report["settings"]["oracle"]
    capsys.readouterr()
    with pytest.raises(ValueError):
        module.main([*common, "rollouts=0"])


# ----------------------------------------------------------------------------- search: stock reshuffles (penalty)


@pytest.mark.parametrize("table", TABLES, ids=[f"{r}-{n}p" for r, n in TABLES])
def test_stock_draws_counts_every_draw_from_the_stock_across_reshuffles(positions, table):
    """The greedy opponent model's count of turns: exact from public counts, reshuffles included."""
    rules, num_players = table
    hand_size = make_config(rules, num_players=num_players).hand_size
    reshuffled = 0
    for _, state in positions[table]:
        drawn = sum(action == DRAW_STOCK for _, action in state.history)
        assert stock_draws(num_players, hand_size, len(state.stock), state.reshuffles) == drawn
        reshuffled += state.reshuffles > 0
    assert reshuffled > 0 or rules == "classic"  # penalty positions past a reshuffle are covered


def first_position_after_a_reshuffle() -> tuple[dict, object]:
    """Deck injection, 3 players (penalty): simple plays every seat until the first draw after the
    first stock reshuffle; returns that observation and the true round state."""
    env = okgin_env.raw_env(rules="penalty", num_players=3, episode="round")
    env.reset(seed=0, options={"deck": np.random.default_rng(0).permutation(52).tolist(), "dealer": 0})
    bots = {agent: SimpleBot(seed=i) for i, agent in enumerate(env.possible_agents)}
    while not any(env.terminations.values()):
        agent = env.agent_selection
        observation = env.observe(agent)
        v = view(observation)
        if v.reshuffles and v.phase is Phase.DRAW and len(v.legal) > 1:
            return observation, env.round_state.clone()
        env.step(bots[agent].act(observation))
    raise AssertionError("the scripted round ended before a reshuffle")


def test_search_models_the_opponents_of_a_reshuffled_round_as_players_who_have_played():
    """After a reshuffle the stock is back at its size after the deal; the turn count must not
    restart there. It did: the greedy model then dealt the opponents 7 fresh cards, exactly as
    the uniform model does (mean deadwood 30.4, against a true 10.0 here), so search thought
    them far from knocking and waited too long. Now they have had their greedy turns (19.5)."""
    observation, state = first_position_after_a_reshuffle()
    v = view(observation)
    assert v.reshuffles == 1 and v.stock_size == 30  # 52 - 3 * 7 - upcard: the size after the deal
    assert stock_draws(3, 7, v.stock_size, v.reshuffles) == 28

    def mean_sampled_deadwood(model: str) -> float:
        bot = SearchBot(seed=0, opponent_model=model)
        config = bot.config_for(3)
        samples = [bot.determinize(v, config) for _ in range(60)]
        return float(np.mean([deadwood_of_mask(hand) for sample in samples for hand in sample.hands[1:]]))

    true_deadwood = np.mean([deadwood_of_mask(state.hands[(state.current + k) % 3]) for k in (1, 2)])
    greedy, uniform = mean_sampled_deadwood("greedy"), mean_sampled_deadwood("uniform")
    assert greedy < uniform - 5
    assert abs(greedy - true_deadwood) < abs(uniform - true_deadwood) - 5
