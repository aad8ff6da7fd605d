"""Rendering (okgin_env/render.py): the three render modes, mid-round and at the showdown."""

from __future__ import annotations

import random
import re
import sys

import numpy as np
import pytest

import okgin_env
from okgin_env import card_id, parse_cards
from okgin_env.render import render_rgb, render_text
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD
from okgin_env.rules.cards import card_symbol, from_mask

KNOCKER = "AS 2S 3S 4H 5H 6H 7D 8D 9D 5C"
DEFENDER = "4S TD 2C 4C 6C 8C TC JH QH 9S"  # lays off 4S and TD on a knock
SYMBOL = re.compile(r"[A2-9TJQK][♠♥♦♣]")


def make_deck(hands, upcard, stock=(), dealer=0) -> list[int]:
    hands = [parse_cards(h) for h in hands]
    n = len(hands)
    deck = [hands[(dealer + 1 + i) % n][i // n] for i in range(n * len(hands[0]))]
    deck.append(card_id(upcard))
    deck += parse_cards(stock)
    return deck + [c for c in range(52) if c not in deck]


def scripted(render_mode, episode="round", **kwargs):
    env = okgin_env.env(render_mode=render_mode, episode=episode, **kwargs)
    env.reset(options={"deck": make_deck([DEFENDER, KNOCKER], "KH", ["QC"]), "dealer": 0})
    return env


def knock_round(env) -> None:
    for action in (PASS, PASS, DRAW_STOCK, KNOCK_BASE + card_id("QC")):
        env.step(action)


def check_image(image) -> None:
    assert isinstance(image, np.ndarray)
    assert image.dtype == np.uint8
    assert image.ndim == 3 and image.shape[2] == 3
    assert image.shape[0] >= 200 and image.shape[1] >= 400
    pixels = image.reshape(-1, 3)
    assert (pixels == 255).all(axis=1).any(), "white card faces"
    red = (pixels[:, 0] > 150) & (pixels[:, 1] < 80) & (pixels[:, 2] < 80)
    assert red.any(), "red suits"
    dark = (pixels < 40).all(axis=1)
    assert dark.any(), "black suits and text"


# ----------------------------------------------------------------------------- ansi


def test_ansi_mid_round_shows_the_acting_players_view():
    env = scripted("ansi")
    text = env.render()
    assert isinstance(text, str)
    assert "To act: player_1" in text and "upcard offer" in text
    assert "[A♠ 2♠ 3♠] [4♥ 5♥ 6♥] [7♦ 8♦ 9♦] 5♣" in text  # melds grouped, deadwood last
    assert "deadwood 5" in text
    assert "Knock limit: 10 or less (upcard K♥)" in text
    assert "stock 31 cards" in text
    assert "Discard top: K♥" in text
    assert "player_0: 10 cards" in text
    assert "player_0 0 | player_1 0" in text and "target 100" in text
    env.step(PASS)
    env.step(TAKE_DISCARD)  # seat 0 takes the K upcard
    text = env.render()
    assert "To act: player_0" in text and "discard or knock" in text
    assert "took K♥" in text
    assert "[J♥ Q♥ K♥]" in text
    assert "Discard top: -" in text


def test_the_taken_card_note_follows_the_rules():
    """With ``allow_discard_taken`` the card just taken may be thrown: the table does not say otherwise."""
    for allow, note in ((False, True), (True, False)):
        env = scripted("ansi", allow_discard_taken=allow)
        env.step(PASS)
        env.step(TAKE_DISCARD)  # seat 0 takes the K upcard
        assert ("took K♥ from the pile: it may not be thrown this turn" in env.render()) is note
        check_image(render_rgb(env))


def test_ansi_hides_what_the_viewer_may_not_see():
    """Every card symbol on the text view is the acting player's, on the pile, or known to be held."""
    for kwargs in ({}, {"rules": "penalty", "num_players": 3}):
        env = okgin_env.env(render_mode="ansi", episode="round", **kwargs)
        env.reset(seed=4)
        raw = env.unwrapped
        rng = random.Random(4)
        for _ in range(60):
            st = raw.round_state
            visible = set(st.hand(st.current)) | set(st.discard_pile) | {st.upcard}
            for seat in range(st.num_players):
                visible |= set(from_mask(st.known[seat]))
            shown = set(SYMBOL.findall(env.render()))
            assert shown <= {card_symbol(c) for c in visible}
            legal = [a for a in st.legal_actions() if a < KNOCK_BASE]
            env.step(legal[rng.randrange(len(legal))])


def test_ansi_showdown_knock_with_layoffs():
    env = scripted("ansi")
    knock_round(env)
    text = env.render()
    assert "Knock by player_1: player_1 scores 54." in text
    assert "knock discard (face down): Q♣" in text
    assert "player_1 (knocker): melds [A♠ 2♠ 3♠] [4♥ 5♥ 6♥] [7♦ 8♦ 9♦] | deadwood 5♣ = 5 | points 54 *winner*" in text
    assert "player_0: melds - | laid off 4♠ T♦ | deadwood" in text and "= 59 | points 0" in text
    assert "player_0 0 | player_1 54" in text


@pytest.mark.parametrize(
    "hands,upcard,stock,actions,headline",
    [
        (
            ["KS KD 2C 4C 6C 8C TC JH QH 9S", "AS 2S 3S 4H 5H 6H 7D 8D 9D KC"],
            "QS",
            ["TD"],
            [PASS, PASS, DRAW_STOCK, KNOCK_BASE + card_id("KC")],
            "Gin by player_1: player_1 scores 104.",
        ),
        (
            ["TS JS QS TH JH QH TC JC QC 3D", KNOCKER],
            "KD",
            ["KC"],
            [PASS, PASS, DRAW_STOCK, KNOCK_BASE + card_id("KC")],
            "player_1 knocked and was undercut: player_0 scores 12.",
        ),
    ],
)
def test_ansi_showdown_gin_and_undercut(hands, upcard, stock, actions, headline):
    env = okgin_env.env(render_mode="ansi", episode="round")
    env.reset(options={"deck": make_deck(hands, upcard, stock), "dealer": 0})
    for action in actions:
        env.step(action)
    text = env.render()
    assert headline in text
    check_image(render_rgb(env))


def test_ansi_showdown_draw():
    env = okgin_env.env(render_mode="ansi", episode="round")
    env.reset(options={"deck": make_deck([DEFENDER, KNOCKER], "KH"), "dealer": 0})
    raw = env.unwrapped
    env.step(PASS)
    env.step(PASS)
    while not any(env.terminations.values()):
        top = raw.round_state.stock[-1]
        env.step(DRAW_STOCK)
        env.step(DISCARD_BASE + top)
    text = env.render()
    assert "Drawn round" in text
    assert "player_1 (knocker)" not in text
    assert "[A♠ 2♠ 3♠]" in text  # every hand is shown with its melds
    check_image(render_rgb(env))


def test_match_mode_shows_the_last_round_after_the_next_deal():
    env = scripted("ansi", episode="match")
    knock_round(env)
    assert not any(env.terminations.values())
    text = env.render()
    assert "Last round:" in text and "Knock by player_1" in text
    assert "round 2" in text and "dealer player_1" in text  # the winner deals next
    assert "To act: player_0" in text


def test_match_over_is_announced():
    env = scripted("ansi", episode="match", target_score=50)
    knock_round(env)
    assert all(env.terminations.values())
    assert "Match over: player_1 wins" in env.render()


# ----------------------------------------------------------------------------- human


def test_human_prints_once_per_step(capsys):
    env = scripted("human")
    assert env.render() is None
    assert "To act: player_1" in capsys.readouterr().out
    knock_round(env)
    out = capsys.readouterr().out
    assert out.count("Oklahoma Gin ·") == 4  # one table per step, the last one the showdown
    assert "Knock by player_1" in out.split("Oklahoma Gin ·")[-1]


# ----------------------------------------------------------------------------- rgb_array


def test_rgb_mid_round_and_showdown(tmp_path):
    env = scripted("rgb_array")
    image = env.render()
    check_image(image)
    knock_round(env)
    showdown = env.render()
    check_image(showdown)
    assert showdown.shape[1] == image.shape[1]
    # layoffs are outlined in orange
    pixels = showdown.reshape(-1, 3)
    assert ((pixels[:, 0] > 240) & (pixels[:, 1] > 150) & (pixels[:, 1] < 190) & (pixels[:, 2] < 30)).any()


@pytest.mark.parametrize("num_players", [2, 3, 4])
def test_rgb_and_ansi_through_random_penalty_rounds(num_players):
    env = okgin_env.env(rules="penalty", num_players=num_players, render_mode="rgb_array", episode="round")
    env.reset(seed=num_players)
    raw = env.unwrapped
    rng = random.Random(num_players)
    shapes = set()
    step = 0
    while not any(env.terminations.values()):
        if step % 25 == 0:
            image = env.render()
            check_image(image)
            shapes.add(image.shape)
            assert isinstance(render_text(env), str)
        legal = raw.round_state.legal_actions()
        env.step(legal[-1] if legal[-1] >= KNOCK_BASE and rng.random() < 0.3 else legal[rng.randrange(len(legal))])
        step += 1
    check_image(env.render())
    assert "round" in render_text(env)
    assert len(shapes) == 1  # the picture keeps its size during a round


def test_render_functions_accept_the_wrapped_env():
    env = scripted(None)
    assert render_text(env) == render_text(env.unwrapped)
    np.testing.assert_array_equal(render_rgb(env), render_rgb(env.unwrapped))


def test_no_render_mode_warns_and_returns_none():
    env = scripted(None)
    with pytest.warns(UserWarning, match="render"):
        assert env.render() is None


def test_rgb_without_pillow_says_how_to_install(monkeypatch):
    env = scripted("rgb_array")
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=r"okgin\[render\]"):
        env.render()
    assert isinstance(render_text(env), str)  # text needs no Pillow


def test_the_single_agent_env_draws_the_table_from_its_learners_side(capsys):
    """``GymEnv(render_mode="human")`` printed the table at every opponent turn from that seat:
    the opponent's whole hand. It now draws it after reset and step, from the learner's seat, and
    never shows a card of another hand that the learner may not see."""
    from okgin_env.gym_env import GymEnv

    for learner in (0, 1):
        env = GymEnv(opponents="simple", render_mode="human", learner_seat=learner)
        capsys.readouterr()
        observation, info = env.reset(seed=3)
        raw = env.aec
        for _ in range(12):
            printed = capsys.readouterr().out
            assert printed.count("'s hand:") == 1 and f"player_{learner}'s hand:" in printed, printed
            if raw.round_state.is_over:
                break
            other = 1 - learner
            hidden = set(raw.round_state.hand(other)) - set(from_mask(raw.round_state.known[other]))
            shown_cards = set(re.findall(r"\S+", printed.split("'s hand:")[1].splitlines()[0]))
            assert not {card_symbol(c) for c in hidden} & {w.strip("[]") for w in shown_cards}
            observation, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
            if terminated or truncated:
                break
    # The same view as text and as a picture, through render() (the AEC env's default is the acting seat's).
    env = GymEnv(opponents="simple", render_mode="ansi", learner_seat=1)
    env.reset(seed=5)
    assert "player_1's hand:" in env.render() and env.render() == render_text(env.aec, seat=1)


def test_a_seat_view_hides_the_acting_players_hand():
    env = scripted("ansi")
    raw = env.unwrapped
    acting = raw.round_state.current
    other = 1 - acting
    text = render_text(env, seat=other)
    assert f"player_{other}'s hand:" in text and f"player_{acting}'s hand:" not in text and "Legal:" not in text
    assert f"To act: player_{acting}" in text
    assert render_text(env, seat=acting) == render_text(env)
    assert render_rgb(env, seat=other).shape == render_rgb(env).shape
