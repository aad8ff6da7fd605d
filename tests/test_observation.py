"""What a seat observes (okgin_env/observation/ through the env).

The no-leak property is tested directly: two deals that differ only in cards a player has not
seen must give that player identical observations at every step of the same action sequence,
while the seats whose own cards differ do see the difference. ``decode`` is checked against
the engine's state at every step of random matches, and the showdown reveals the hands.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import okgin_env
from okgin_env import card_id, card_str, parse_cards
from okgin_env.observation import (
    PackedEncoder, decode, encode, hand_from_observation, layout_for, seat_view, to_text, view, view_of_state,
)
from okgin_env.rules.cards import from_mask, to_mask
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS
from okgin_env.rules.round import Phase

PRESETS = [
    pytest.param({"rules": "classic", "num_players": 2}, id="classic-2"),
    pytest.param({"rules": "penalty", "num_players": 2}, id="penalty-2"),
    pytest.param({"rules": "penalty", "num_players": 3}, id="penalty-3"),
    pytest.param({"rules": "penalty", "num_players": 4}, id="penalty-4"),
]


def make_deck(hands, upcard, stock=(), dealer=0) -> list[int]:
    """The deck (top first) that deals ``hands[seat]`` to each seat, then ``upcard``, then ``stock``."""
    hands = [parse_cards(h) for h in hands]
    n = len(hands)
    deck = [hands[(dealer + 1 + i) % n][i // n] for i in range(n * len(hands[0]))]
    deck.append(card_id(upcard))
    deck += parse_cards(stock)
    assert len(set(deck)) == len(deck)
    return deck + [c for c in range(52) if c not in deck]


def new_env(kwargs, deck, dealer=0, seed=0):
    env = okgin_env.env(episode="round", **kwargs)
    env.reset(seed=seed, options={"deck": deck, "dealer": dealer})
    return env


def observations(env) -> dict[str, tuple[bytes, bytes]]:
    raw = env.unwrapped
    return {
        agent: (raw.observe(agent)["observation"].tobytes(), raw.observe(agent)["action_mask"].tobytes())
        for agent in raw.agents
    }


def replay(kwargs, deck, actions, dealer=0, seed=0) -> list[dict[str, tuple[bytes, bytes]]]:
    """Every agent's observation before the first action and after each action."""
    env = new_env(kwargs, deck, dealer, seed)
    trace = [observations(env)]
    for action in actions:
        env.step(action)
        trace.append(observations(env))
    assert not any(env.terminations.values()), "the sequence must not end the round (that reveals hands)"
    return trace


def random_quiet_sequence(kwargs, deck, rng: random.Random, max_steps: int, dealer=0, seed=0):
    """Random legal actions that never knock, stopped before the round ends.

    Returns the actions and, per seat, every card that seat has seen: its own hands over time and
    every card that was ever on the discard pile (the upcard included).
    """
    env = new_env(kwargs, deck, dealer, seed)
    raw = env.unwrapped
    n = len(env.agents)
    seen = [set(raw.hand(f"player_{s}")) | set(raw.discard_pile) for s in range(n)]
    actions = []
    for _ in range(max_steps):
        legal = [a for a in raw.round_state.legal_actions() if a < KNOCK_BASE]
        action = legal[rng.randrange(len(legal))]
        env.step(action)
        if any(env.terminations.values()):
            break  # this action ended the round (the wall): leave it out
        actions.append(action)
        for s in range(n):
            seen[s] |= set(raw.hand(f"player_{s}")) | set(raw.discard_pile)
    return actions, seen


def permute_hidden(deck, hidden, rng: random.Random) -> list[int]:
    """The deck with the ``hidden`` cards shuffled among the positions they occupy."""
    positions = [i for i, c in enumerate(deck) if c in hidden]
    cards = [deck[i] for i in positions]
    shuffled = cards[:]
    while len(cards) > 1 and shuffled == cards:
        rng.shuffle(shuffled)
    other = list(deck)
    for i, c in zip(positions, shuffled):
        other[i] = c
    return other


def initial_hands(kwargs, deck, dealer=0):
    env = new_env(kwargs, deck, dealer)
    return [set(env.unwrapped.hand(a)) for a in env.agents]


# ----------------------------------------------------------------------------- no leak


@pytest.mark.parametrize("kwargs", PRESETS)
def test_unseen_cards_do_not_change_the_observation(kwargs):
    """Property: shuffle every card seat ``s`` has not seen (opponents' hands, the stock) and
    replay the same actions: seat ``s`` observes exactly the same arrays at every step."""
    rng = random.Random(2024)
    n = kwargs["num_players"]
    trials = 0
    for trial in range(6 if n == 2 else 4):
        deck = list(range(52))
        rng.shuffle(deck)
        dealer = rng.randrange(n)
        actions, seen = random_quiet_sequence(kwargs, deck, rng, rng.randrange(10, 150), dealer, seed=trial)
        trace_a = replay(kwargs, deck, actions, dealer, seed=trial)
        for observer in range(n):
            hidden = set(range(52)) - seen[observer]
            if len(hidden) < 2:
                continue  # after stock reshuffles (penalty) a seat may have seen nearly every card
            other = permute_hidden(deck, hidden, rng)
            assert other != deck
            trace_b = replay(kwargs, other, actions, dealer, seed=trial)
            agent = f"player_{observer}"
            for step, (obs_a, obs_b) in enumerate(zip(trace_a, trace_b)):
                assert obs_a[agent] == obs_b[agent], f"{agent} tells the deals apart at step {step}"
            # Conversely, a seat whose own dealt hand changed sees it at once.
            hands_a, hands_b = initial_hands(kwargs, deck, dealer), initial_hands(kwargs, other, dealer)
            for s in range(n):
                if hands_a[s] != hands_b[s]:
                    assert trace_a[0][f"player_{s}"][0] != trace_b[0][f"player_{s}"][0]
            trials += 1
    assert trials >= 8


def draw_and_throw(env, steps: int) -> list[int]:
    """Everybody declines the upcard, then each turn draws from the stock and throws the drawn card."""
    raw = env.unwrapped
    actions = [PASS] * len(env.agents)
    for action in actions:
        env.step(action)
    for _ in range(steps):
        top = raw.round_state.stock[-1]
        for action in (DRAW_STOCK, DISCARD_BASE + top):
            env.step(action)
            actions.append(action)
    return actions


@pytest.mark.parametrize("kwargs", PRESETS)
def test_swapping_an_opponent_card_with_a_stock_card_is_invisible(kwargs):
    n = kwargs["num_players"]
    size = 10 if n == 2 else 7
    deck = list(range(52))
    random.Random(n).shuffle(deck)
    steps = 12
    deep = len(deck) - 1  # the bottom of the stock: nobody draws it in 12 turns
    for observer in range(n):
        opponent = (observer + 1) % n
        # The first card dealt to ``opponent`` (dealer 0: card i goes to seat (1 + i) % n).
        position = next(i for i in range(n * size) if (1 + i) % n == opponent)
        other = list(deck)
        other[position], other[deep] = other[deep], other[position]
        actions = draw_and_throw(new_env(kwargs, deck), steps)
        trace_a, trace_b = replay(kwargs, deck, actions), replay(kwargs, other, actions)
        for step, (obs_a, obs_b) in enumerate(zip(trace_a, trace_b)):
            for s in range(n):
                agent = f"player_{s}"
                if s == opponent:
                    assert obs_a[agent][0] != obs_b[agent][0], "the opponent's own hand differs"
                else:
                    assert obs_a[agent] == obs_b[agent], (agent, step)


@pytest.mark.parametrize("kwargs", PRESETS)
def test_stock_order_is_invisible(kwargs):
    n = kwargs["num_players"]
    deck = list(range(52))
    random.Random(7 + n).shuffle(deck)
    dealt = n * (10 if n == 2 else 7) + 1
    steps = 8
    drawn = steps  # one card per turn: the top ``drawn`` stock cards are drawn and thrown; permute the rest
    other = deck[: dealt + drawn] + deck[dealt + drawn :][::-1]
    assert other != deck
    actions = draw_and_throw(new_env(kwargs, deck), steps)
    trace_a, trace_b = replay(kwargs, deck, actions), replay(kwargs, other, actions)
    assert trace_a == trace_b


@pytest.mark.parametrize("kwargs", PRESETS)
def test_own_hand_changes_the_observation(kwargs):
    n = kwargs["num_players"]
    deck = list(range(52))
    random.Random(3).shuffle(deck)
    for observer in range(n):
        position = (observer - 1) % n  # dealer 0: card i goes to seat (1 + i) % n
        other = list(deck)
        other[position], other[-1] = other[-1], other[position]
        obs_a = new_env(kwargs, deck).unwrapped.observe(f"player_{observer}")["observation"]
        obs_b = new_env(kwargs, other).unwrapped.observe(f"player_{observer}")["observation"]
        assert decode(obs_a)["hand"] != decode(obs_b)["hand"]
        hand = layout_for(n).slices["hand"]
        assert not np.array_equal(obs_a[hand], obs_b[hand])
        np.testing.assert_array_equal(np.delete(obs_a, np.r_[hand]), np.delete(obs_b, np.r_[hand]))


# ----------------------------------------------------------------------------- decode


def check_decode(env) -> None:
    raw = env.unwrapped
    st = raw.round_state
    n = len(raw.possible_agents)
    target = raw.config.target_score
    scores = raw.match.scores
    for agent in raw.agents:
        seat = raw.agent_name_mapping[agent]
        obs = raw.observe(agent)["observation"]
        parts = decode(obs)
        assert parts == decode(obs, num_players=n)
        assert parts["hand"] == [card_str(c) for c in raw.hand(agent)]
        assert hand_from_observation(obs) == raw.hand(agent)
        assert parts["discard_top"] == ([card_str(st.discard_pile[-1])] if st.discard_pile else [])
        assert parts["discard_pile"] == [card_str(c) for c in sorted(raw.discard_pile)]
        assert parts["upcard"] == [card_str(st.upcard)]
        assert parts["knock_limit"] == raw.knock_limit
        assert parts["stock_size"] == raw.stock_size
        assert parts["scores"] == [scores[(seat + k) % n] for k in range(n)]
        assert parts["target_score"] == target
        assert parts["phase"] == st.phase.name.lower()
        assert parts["seat_from_dealer"] == (seat - st.dealer) % n
        assert parts["acting_seat"] == (None if st.is_over else (st.current - seat) % n)
        assert parts["reshuffles"] == st.reshuffles
        taken = st.taken_card >= 0 and st.current == seat and not st.is_over
        assert parts["taken_card"] == ([card_str(st.taken_card)] if taken else [])
        for k in range(1, n):
            other = (seat + k) % n
            assert parts[f"opponent_{k}_known"] == [card_str(c) for c in from_mask(st.known[other])]
            assert set(parse_cards(parts[f"opponent_{k}_known"])) <= set(st.hand(other))


@pytest.mark.parametrize("kwargs", PRESETS)
def test_decode_round_trips_the_state(kwargs):
    env = okgin_env.env(target_score=40, **kwargs)
    env.reset(seed=5)
    rng = random.Random(5)
    raw = env.unwrapped
    phases = set()
    for _ in range(700):
        observation, _, terminated, _, _ = env.last()
        if terminated:
            env.reset(seed=rng.randrange(1000))
            continue
        check_decode(env)
        phases.add(raw.round_state.phase)
        legal = np.flatnonzero(observation["action_mask"])
        knocks = legal[legal >= KNOCK_BASE]
        action = int(knocks[0]) if len(knocks) and rng.random() < 0.5 else int(legal[rng.randrange(len(legal))])
        env.step(action)
    assert phases == {Phase.OFFER, Phase.DRAW, Phase.DISCARD}


def test_decode_scores_mid_match():
    env = okgin_env.env(target_score=200)
    env.reset(seed=1)
    raw = env.unwrapped
    rng = random.Random(1)
    for _ in range(20_000):
        if any(raw.match.scores) and raw.round_state.history:
            break
        legal = raw.round_state.legal_actions()
        env.step(legal[-1] if legal[-1] >= KNOCK_BASE else legal[rng.randrange(len(legal))])
    assert any(raw.match.scores)
    for seat, agent in enumerate(env.agents):
        parts = decode(env.observe(agent)["observation"])
        assert parts["scores"] == [raw.match.scores[seat], raw.match.scores[1 - seat]]
        assert parts["target_score"] == 200


def test_decode_rejects_wrong_sizes_and_prints():
    with pytest.raises(ValueError, match="layout"):
        decode(np.zeros(17, dtype=np.float32))
    obs = new_env({"rules": "classic", "num_players": 2}, list(range(52))).unwrapped.observe("player_0")["observation"]
    with pytest.raises(ValueError):
        decode(obs, num_players=3)
    text = to_text(obs)
    assert "hand" in text and "knock_limit" in text
    assert all(layout_for(n).size == obs.shape[0] + 104 * (n - 2) + 3 * (n - 2) for n in (2, 3, 4))


def test_public_knowledge_planes():
    """The upcard declined is 'passed'; a card taken from the pile is 'known' until thrown."""
    knocker = "AS 2S 3S 4H 5H 6H 7D 8D 9D 5C"
    loose = "KS KD 2C 4C 6C 8C TC JH QH 9S"
    env = new_env({"rules": "classic", "num_players": 2}, make_deck([loose, knocker], "7H", ["QC"]))
    env.step(PASS)  # seat 1 declines 7H
    parts = decode(env.observe("player_0")["observation"])
    assert parts["opponent_1_passed"] == ["7H"]
    env.step(1)  # seat 0 takes 7H
    parts = decode(env.observe("player_1")["observation"])
    assert parts["opponent_1_known"] == ["7H"]
    assert decode(env.observe("player_0")["observation"])["taken_card"] == ["7H"]
    assert decode(env.observe("player_1")["observation"])["taken_card"] == []
    env.step(DISCARD_BASE + card_id("KS"))
    parts = decode(env.observe("player_1")["observation"])
    assert parts["opponent_1_known"] == ["7H"]
    assert "KS" in parts["opponent_1_passed"] and parts["discard_top"] == ["KS"]


# ----------------------------------------------------------------------------- the showdown


def test_round_end_reveals_hands_two_players():
    knocker = "AS 2S 3S 4H 5H 6H 7D 8D 9D 5C"
    loose = "KS KD 2C 4C 6C 8C TC JH QH 9S"
    env = new_env({"rules": "classic", "num_players": 2}, make_deck([loose, knocker], "KH", ["QC"]))
    before = decode(env.observe("player_0")["observation"])
    assert before["opponent_1_known"] == []
    for action in (PASS, PASS, DRAW_STOCK, KNOCK_BASE + card_id("QC")):
        env.step(action)
    assert all(env.terminations.values())
    for observer, opponent_hand in (("player_0", knocker), ("player_1", loose)):
        parts = decode(env.observe(observer)["observation"])
        assert parts["phase"] == "over"
        assert parts["acting_seat"] is None
        assert sorted(parse_cards(parts["opponent_1_known"])) == sorted(parse_cards(opponent_hand))
    outcome = env.infos["player_0"]["round_outcome"]
    for seat, agent in enumerate(env.possible_agents):
        parts = decode(env.observe(agent)["observation"])
        assert parts["opponent_1_known"] == [card_str(c) for c in outcome["hands"][1 - seat]]


def test_round_end_reveals_hands_four_players_after_a_draw():
    kwargs = {"rules": "penalty", "num_players": 4, "max_reshuffles": 0}
    deck = list(range(52))
    random.Random(4).shuffle(deck)
    env = new_env(kwargs, deck)
    raw = env.unwrapped
    while not any(env.terminations.values()):
        legal = [a for a in raw.round_state.legal_actions() if a < KNOCK_BASE]
        env.step(legal[0])
    outcome = env.infos["player_0"]["round_outcome"]
    assert outcome["kind"] == "draw"
    for seat, agent in enumerate(env.possible_agents):
        parts = decode(env.observe(agent)["observation"])
        for k in range(1, 4):
            assert parts[f"opponent_{k}_known"] == [card_str(c) for c in outcome["hands"][(seat + k) % 4]]


# ----------------------------------------------------------------------------- the env's dict, the typed view, the packed encoder


def test_decode_and_to_text_take_the_dict_that_env_last_returns():
    env = okgin_env.env(rules="penalty", num_players=3)
    env.reset(seed=2)
    observation, *_ = env.last()
    parts = decode(observation)
    assert parts == {**decode(observation["observation"]), "legal": ["take discard", "pass"]}
    text = to_text(observation)
    assert "hand" in text and "legal: take discard, pass" in text
    assert hand_from_observation(observation) == env.unwrapped.hand(env.agent_selection)
    with pytest.raises(ValueError, match="'observation'"):
        decode({"action_mask": observation["action_mask"]})


def test_view_gives_numbers_in_their_units():
    env = okgin_env.env(target_score=200)
    env.reset(seed=1)
    raw = env.unwrapped
    rng = random.Random(1)
    while not (any(raw.match.scores) and raw.round_state.history):
        legal = raw.round_state.legal_actions()
        env.step(legal[-1] if legal[-1] >= KNOCK_BASE else legal[rng.randrange(len(legal))])
    observation = env.observe(env.agent_selection)
    v = view(observation)
    parts = decode(observation)
    seat = raw.agent_name_mapping[env.agent_selection]
    assert v.scores == parts["scores"] == [raw.match.scores[seat], raw.match.scores[1 - seat]]
    assert all(type(s) is int for s in v.scores)
    assert (v.target_score, v.knock_limit, v.stock_size) == (200, raw.knock_limit, raw.stock_size)
    assert v.legal == raw.round_state.legal_actions()
    with pytest.raises(ValueError, match="action_mask"):
        view({"observation": observation["observation"]})


def valid_numbers(layout, phase=Phase.DISCARD):
    """An all-zero observation with its numeric parts valid (one-hots set, target 100); the card planes empty."""
    s = layout.slices
    obs = np.zeros(layout.size, dtype=np.float32)
    obs[s["phase"].start + int(phase)] = 1.0
    if phase is not Phase.OVER:
        obs[s["acting_seat"].start] = 1.0
    obs[s["seat_from_dealer"].start] = 1.0
    obs[s["target_score"].start] = 1.0
    return obs


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_view_cuts_the_card_block_into_exact_planes(num_players):
    """view() packs the whole card block at once and cuts it into planes: each plane comes back
    alone (no bit of a neighbour plane, whatever it holds), and a card counts when above 0.5."""
    layout = layout_for(num_players)
    s = layout.slices
    rng = random.Random(num_players)
    no_action = np.zeros(107, dtype=np.int8)
    single = ("taken_card", "discard_top", "upcard")

    def planes_of(v):
        singles = {"taken_card": v.taken_card, "discard_top": v.discard_top, "upcard": v.upcard}
        masks = {"hand": v.hand, "discard_pile": v.discard_pile, **{k: 0 if c < 0 else 1 << c for k, c in singles.items()}}
        for k in range(1, num_players):
            masks[f"opponent_{k}_known"] = v.opponent_known[k - 1]
            masks[f"opponent_{k}_passed"] = v.opponent_passed[k - 1]
        return masks

    for full in layout.card_planes:  # one plane holds every card (a single-card plane its last card), the upcard 2C
        obs = valid_numbers(layout)
        obs[s["upcard"].start + 1] = 1.0
        obs[s[full]] = 1.0 if full not in single else [0.0] * 51 + [1.0]
        expected = dict.fromkeys(layout.card_planes, 0)
        expected["upcard"] = 1 << 1
        expected[full] = 1 << 51 if full in single else (1 << 52) - 1
        assert planes_of(view({"observation": obs, "action_mask": no_action})) == expected
    for _ in range(50):  # every plane random at once, values on both sides of 0.5
        obs = valid_numbers(layout)
        expected = {}
        for name in layout.card_planes:
            width = 1 if name in single else rng.randrange(53)
            cards = rng.sample(range(52), width)
            obs[s[name].start + np.array(cards, dtype=int)] = rng.choice([1.0, 0.75])
            faint = [c for c in rng.sample(range(52), 5) if c not in cards]
            obs[s[name].start + np.array(faint, dtype=int)] = 0.25
            expected[name] = to_mask(cards)
        assert planes_of(view({"observation": obs, "action_mask": no_action})) == expected


def test_view_reads_one_hots_and_refuses_what_is_not_one():
    layout = layout_for(3)
    s = layout.slices
    obs = valid_numbers(layout, Phase.DISCARD)
    obs[s["upcard"].start] = 1.0
    obs[s["acting_seat"]] = [0.0, 0.0, 1.0]
    obs[s["seat_from_dealer"]] = [0.0, 1.0, 0.0]
    obs[s["target_score"].start] = 0.5
    obs[s["scores"]] = [0.5, 0.2, 0.0]
    no_action = np.zeros(107, dtype=np.int8)
    v = view({"observation": obs, "action_mask": no_action})
    assert (v.phase, v.acting_seat, v.seat_from_dealer, v.scores, v.target_score, v.legal) == (
        Phase.DISCARD, 2, 1, [25, 10, 0], 50, [])
    assert all(type(x) is int for x in (v.seat_from_dealer, *v.scores, v.target_score, v.knock_limit, v.stock_size))
    over = obs.copy()
    over[s["phase"]], over[s["acting_seat"]] = [0.0, 0.0, 0.0, 1.0], 0.0
    assert view({"observation": over, "action_mask": no_action}).acting_seat is None  # nobody acts once the round is over
    for part, values, words in [
        ("seat_from_dealer", [0.0, 1.0, 1.0], "exactly one 1"),
        ("phase", [0.0, 0.0, 0.0, 0.0], "exactly one 1"),
        ("phase", [0.0, 0.0, 0.5, 0.5], "exactly one 1"),
        ("acting_seat", [0.0, 0.0, 0.0], "a seat is to act unless the round is over"),
        ("acting_seat", [1.0, 0.0, 1.0], "one 1 \\(or all 0 once the round is over\\)"),
    ]:
        bad = obs.copy()
        bad[s[part]] = values
        with pytest.raises(ValueError, match=rf"^observation part '{part}': .*{words}"):
            view({"observation": bad, "action_mask": no_action})


@pytest.mark.parametrize("kwargs", PRESETS)
def test_packed_encoder_is_encode_and_the_legal_mask_for_every_seat(kwargs):
    """The batch encoder, without BatchEnv: every seat of states reached by random play."""
    env = okgin_env.env(episode="round", max_turns=40, **kwargs)  # short rounds: some end in the 400 steps
    env.reset(seed=9)
    raw = env.unwrapped
    n = len(raw.possible_agents)
    encoder = PackedEncoder(n, raw.config.target_score)
    rng = random.Random(9)
    rounds, scores, states = [], [], 0
    for _ in range(400):
        rounds.append(raw.round_state.clone())
        scores.append([rng.randrange(100) for _ in range(n)])  # any match totals
        if any(env.terminations.values()):  # the round is over (hands shown): a fresh one
            env.reset(seed=rng.randrange(1000))
            continue
        legal = raw.round_state.legal_actions()
        knocks = [a for a in legal if a >= KNOCK_BASE]
        env.step(knocks[0] if knocks else legal[rng.randrange(len(legal))])
    assert any(st.is_over for st in rounds)
    assert all(st.pile_mask == to_mask(st.discard_pile) for st in rounds)  # kept in step by the rules core
    games = list(range(len(rounds)))
    for seat in range(n):
        words = encoder.pack_seats(rounds, games, [seat] * len(games))
        obs = np.empty((len(games), encoder.size), np.float32)
        masks = np.empty((len(games), 107), np.int8)
        acting = encoder.unpack(words, np.array(scores, dtype=np.float64), obs, masks, viewers=np.full(len(games), seat))
        for g, st in enumerate(rounds):
            assert np.array_equal(obs[g], encode(st, scores[g], raw.config.target_score, seat)), (g, seat)
            expected = st.legal_mask() if st.current == seat else np.zeros(107, np.int8)
            assert np.array_equal(masks[g], expected), (g, seat)
            assert acting[g] == st.current
            states += 1
    live = [g for g in games if not rounds[g].is_over]  # what BatchEnv packs: a seat is to act
    assert encoder.pack_acting(rounds, live) == encoder.pack_seats(rounds, live, [rounds[g].current for g in live])
    assert states == n * 400


@pytest.mark.parametrize("kwargs", PRESETS)
def test_view_of_state_is_the_view_of_the_encoded_observation(kwargs):
    """What rollouts read from the state equals what the seat's observation decodes to, field by
    field, for every seat of states reached by random play (ended rounds, taken cards, knocks)."""
    env = okgin_env.env(episode="round", max_turns=40, **kwargs)
    env.reset(seed=21)
    raw = env.unwrapped
    n = len(raw.possible_agents)
    target = raw.config.target_score
    rng = random.Random(21)
    checked = over = 0
    for _ in range(300):
        st = raw.round_state
        scores = [rng.randrange(target) for _ in range(n)]
        for seat in range(n):
            mask = st.legal_mask() if st.current == seat and not st.is_over else np.zeros(107, np.int8)
            expected = view({"observation": encode(st, scores, target, seat), "action_mask": mask})
            assert view_of_state(st, scores, target, seat) == expected, (seat, st.phase)
            checked += 1
        if st.is_over:
            over += 1
            env.reset(seed=rng.randrange(1000))
            continue
        legal = st.legal_actions()
        knocks = [a for a in legal if a >= KNOCK_BASE]
        env.step(knocks[0] if knocks and rng.random() < 0.5 else legal[rng.randrange(len(legal))])
    assert over > 0 and checked >= 300 * n


# ----------------------------------------------------------------------------- malformed observations (issue 42)


def real_observation(num_players=2) -> dict:
    env = okgin_env.raw_env(rules="classic" if num_players == 2 else "penalty", num_players=num_players)
    env.reset(seed=7)
    env.step(PASS)
    return env.observe(env.agent_selection)


def changed(part, value, num_players=2):
    """A real observation dict with one slice (or the whole array, or the mask) replaced."""
    observation = real_observation(num_players)
    obs = observation["observation"].copy()
    if part == "array":
        return {**observation, "observation": value}
    if part == "mask":
        return {**observation, "action_mask": value}
    obs[layout_for(num_players).slices[part]] = value
    return {**observation, "observation": obs}


SIZE = layout_for(2).size
MALFORMED = [  # (part, value, the words of the error)
    ("array", np.full(SIZE, 7.0, dtype=np.float32), "observation part 'hand': a card plane holds 0 or 1 per card, got 7.0"),
    ("array", np.zeros((2, SIZE), dtype=np.float32), r"one flat \(1-d\) array, got an array of shape \(2, \d+\)"),
    ("array", np.array(["1"] * SIZE), "an observation holds numbers .* got dtype <U1"),
    ("array", np.array([None] * SIZE), "got dtype object"),
    ("array", np.zeros(SIZE - 1, dtype=np.float32), "matches no layout"),
    ("knock_limit", np.inf, r"observation part 'knock_limit': expected finite numbers, got \[inf\]"),
    ("scores", [np.nan, 0.0], "observation part 'scores': expected finite numbers"),
    ("discard_pile", -1.0, "observation part 'discard_pile': a card plane holds 0 or 1 per card, got -1.0"),
    ("opponent_1_passed", np.inf, "observation part 'opponent_1_passed'"),
    ("upcard", 1.0, "observation part 'upcard': exactly one card, got 52"),
    ("upcard", 0.0, "observation part 'upcard': exactly one card, got 0"),
    ("discard_top", 1.0, "observation part 'discard_top': at most one card, got 52"),
    ("knock_limit", 5.0, r"observation part 'knock_limit': expected 0\.\.10 in its units, got 50"),
    ("stock_size", -0.5, r"observation part 'stock_size': expected 0\.\.52 in its units, got -26"),
    ("target_score", 0.0, "observation part 'target_score': expected 1..inf in its units, got 0"),
    ("reshuffles", -1.0, "observation part 'reshuffles'"),
    ("phase", 7.0, "observation part 'phase': expected a one-hot"),
    ("seat_from_dealer", [1.0, 1.0], "observation part 'seat_from_dealer': expected a one-hot"),
    ("mask", np.full(107, 7, dtype=np.int8), "action_mask holds 0 and 1, got 7 for action 0"),
    ("mask", np.full(107, 0.5), "action_mask holds 0 and 1, got 0.5 for action 0"),
    ("mask", np.array(["1"] * 107), "action_mask holds 0 and 1 .* got dtype <U1"),
    ("mask", np.zeros((1, 107), dtype=np.int8), r"action_mask must have shape \(107,\)"),
]


@pytest.mark.parametrize(("part", "value", "words"), MALFORMED, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(MALFORMED)])
def test_a_malformed_observation_is_one_value_error_naming_the_part(part, value, words):
    """No OverflowError, IndexError or UFuncTypeError from inside: one ValueError saying what is wrong."""
    observation = changed(part, value)
    for read in [view, decode, to_text] + ([hand_from_observation] if part == "array" else []):
        with pytest.raises(ValueError, match=words):
            read(observation)


def test_the_checks_accept_every_observation_of_real_games():
    """What the env gives is never refused (every seat, every step, 2 to 4 players, rounds that end)."""
    for num_players in (2, 3, 4):
        env = okgin_env.raw_env(rules="classic" if num_players == 2 else "penalty", num_players=num_players)
        env.reset(seed=num_players)
        rng = random.Random(num_players)
        for _ in range(600):
            for agent in env.possible_agents:
                observation = env.observe(agent)
                assert view(observation).num_players == num_players and decode(observation)
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.reset()
                continue
            env.step(rng.choice(np.flatnonzero(env.observe(agent)["action_mask"]).tolist()))
    observation = real_observation()
    as_float64 = {"observation": observation["observation"].astype(np.float64), "action_mask": observation["action_mask"].astype(bool)}
    assert view(as_float64) == view(observation)  # other number types read the same
    for dtype in (np.int64, np.uint8):
        view({"observation": observation["observation"].astype(dtype), "action_mask": observation["action_mask"]})
    negative_zero = observation["observation"].copy()
    negative_zero[negative_zero == 0] = -0.0
    assert view({**observation, "observation": negative_zero}) == view(observation)


def test_every_producer_reads_the_one_seat_view(monkeypatch):
    """What a seat may see is decided in ``observation.seat`` only: every producer calls
    ``seat_view`` rather than reading the state itself, so a changed rule (here: the seat's own
    hand hidden) changes ``encode``, both ``PackedEncoder`` paths, ``view_of_state`` and the
    network's facts alike."""
    import importlib

    from okgin_env.features.facts import facts_of_state

    env = okgin_env.env(rules="classic")
    env.reset(seed=5)
    st = env.unwrapped.round_state
    assert st.hands[st.current] and encode(st, [0, 0], 100, st.current)[:52].any()
    rule = seat_view

    def hand_hidden(state, seat):
        seen = rule(state, seat)
        return seen._replace(planes=(0, *seen.planes[1:]))

    # Each producer's module holds the name it calls (the package attribute ``encode`` is the function).
    for module in ("okgin_env.observation.seat", "okgin_env.observation.encode", "okgin_env.observation.views",
                   "okgin_env.features.facts"):
        monkeypatch.setattr(importlib.import_module(module), "seat_view", hand_hidden)
    layout = layout_for(2)
    assert not encode(st, [0, 0], 100, st.current)[layout.slices["hand"]].any()
    encoder = PackedEncoder(2, 100)
    for words in (encoder.pack_acting([st], [0]), encoder.pack_seats([st], [0], [st.current])):
        obs, masks = np.empty((1, encoder.size), np.float32), np.empty((1, 107), np.int8)
        encoder.unpack(words, np.zeros((1, 2)), obs, masks)
        assert not obs[0, layout.slices["hand"]].any()
    assert view_of_state(st, [0, 0], 100, st.current).hand == 0
    assert facts_of_state(st, st.current).hand == 0
