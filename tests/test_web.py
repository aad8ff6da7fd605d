"""okgin-web without a browser: what a player is sent, the check of every move, sessions, replays,
the server's defences and limits, the command.

The hidden-card tests play whole matches through the HTTP API (Flask's test client) and check
every JSON answer against the true game: no card the player has never seen face up (the stock,
the other hands, another seat's knock discard) may appear in it, and its fields are only the
documented ones. The defence tests play the adversary: requests from another site, bodies nested
thousands deep, records that would replay into huge answers, idle and stalled connections.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

flask = pytest.importorskip("flask", reason="okgin-web needs Flask: pip install -e '.[web]'")

from helpers import build_deck  # noqa: E402

from okgin_env.bots import BOT_NAMES  # noqa: E402
from okgin_env.evaluate import evaluate  # noqa: E402
from okgin_env.rules.actions import DISCARD_BASE, DRAW_STOCK, KNOCK_BASE, PASS, TAKE_DISCARD  # noqa: E402
from okgin_env.rules.cards import FULL_DECK_MASK, card_id, card_str, from_mask  # noqa: E402
from okgin_env.web import server  # noqa: E402
from okgin_env.web.game import GameStore, WebGame  # noqa: E402
from okgin_env.web.replay import ReplayStore, read_record_file  # noqa: E402

STATIC = Path(server.__file__).resolve().parent / "static"
NDJSON = "application/x-ndjson"  # the content type of a record file sent to POST /api/records
CARD_TEXT = re.compile(r"\b[A2-9TJQK][SHDC]\b")
#: A first deal in which the person (seat 0, the bot deals) can knock on the second turn:
#: pass, draw QD, discard KC, then draw 2D and knock with QD (deadwood 2, limit 5).
QUICK_KNOCK = build_deck(["AS 2S 3S 4H 5H 6H 7D 7C 7S KC", "2C 4C 6D 8D TD QH 9S JS 3H 5D"], "5C", "QD 9C 2D", dealer=1)
#: Every field a play answer may hold (list entries collapsed): a new field must be added here on purpose.
PLAY_FIELDS = {
    "game_id", "seat", "num_players", "players", "rules", "target_score", "round", "log", "log.seat", "log.move",
    "log.card", "match_over", "truncated", "winner", "scores", "showdown", "table",
    "showdown.kind", "showdown.knocker", "showdown.winner", "showdown.knock_card", "showdown.scores_after",
    "showdown.seats", "showdown.seats.seat", "showdown.seats.melds", "showdown.seats.layoffs",
    "showdown.seats.deadwood_cards", "showdown.seats.deadwood", "showdown.seats.points",
    "table.phase", "table.to_act", "table.dealer", "table.hand", "table.hand.melds", "table.hand.deadwood_cards",
    "table.hand.deadwood", "table.hand.count", "table.taken_card", "table.discard_top", "table.discard_pile",
    "table.upcard", "table.knock_limit", "table.stock_size", "table.reshuffles", "table.opponents",
    "table.opponents.seat", "table.opponents.name", "table.opponents.cards", "table.opponents.known",
    "table.opponents.passed", "table.moves", "table.moves.action", "table.moves.name", "table.moves.kind",
    "table.moves.card", "table.moves.deadwood_after",
}


def make_client(**store_options):
    games = GameStore(**store_options)
    return server.create_app(games).test_client(), games


def field_names(value, prefix=""):
    names = set()
    if isinstance(value, dict):
        for key, item in value.items():
            name = f"{prefix}.{key}" if prefix else key
            names |= {name} | field_names(item, name)
    elif isinstance(value, list):
        for item in value:
            names |= field_names(item, prefix)
    return names


def seen_by(state, seat: int) -> int:
    """Cards ``seat`` has seen face up or held this round (a mask)."""
    seen = state.hands[seat] | 1 << state.upcard
    for card in state.discard_pile:
        seen |= 1 << card
    for mask in state.passed + state.known:
        seen |= mask
    return seen


def hidden_cards(game: WebGame) -> set[str]:
    """Cards the person may not be shown now: never seen face up, and (at a showdown) not laid out."""
    if game.showdown is not None:
        state = game.finished_round
        shown = seen_by(state, game.seat)
        for mask in state.hands:
            shown |= mask
        if state.outcome.knock_card is not None and state.outcome.knocker == game.seat:
            shown |= 1 << state.outcome.knock_card  # the person's own knock discard; another seat's stays face down
    else:
        state = game.env.round_state
        shown = seen_by(state, game.seat)
    return {card_str(c) for c in from_mask(FULL_DECK_MASK & ~shown)}


def leaks(answer: dict, game: WebGame) -> set[str]:
    # The game id is a random token (secrets.token_urlsafe), not game content: it can spell a card
    # ("am-JD-F9L..."), so it is left out of the text scanned for card names.
    sent = {key: value for key, value in answer.items() if key != "game_id"}
    return set(CARD_TEXT.findall(json.dumps(sent))) & hidden_cards(game)


def check_answer(answer: dict, games: GameStore) -> WebGame:
    game = games.get(answer["game_id"])
    assert not leaks(answer, game), f"hidden cards sent: {leaks(answer, game)}"
    assert field_names(answer) <= PLAY_FIELDS, field_names(answer) - PLAY_FIELDS
    if answer["showdown"] is None and not answer["match_over"]:
        hidden = hidden_cards(game)
        state = game.env.round_state
        # The check has teeth: the stock and the other hands (less what was taken face up) are
        # in it, until a reshuffle (penalty preset) puts cards already seen back into the stock.
        if state.reshuffles == 0:
            assert {card_str(c) for c in state.stock} <= hidden
            for seat, hand in enumerate(state.hands):
                if seat != game.seat:
                    assert {card_str(c) for c in from_mask(hand & ~state.known[seat])} <= hidden
    return game


def play_through(client, games, rng: random.Random, matches: int, opponent=None, knock_rate=0.8,
                 max_answers=None) -> dict[str, int]:
    """Play whole matches with random legal moves (a knock, when legal, with ``knock_rate``),
    checking every answer; stops early after ``max_answers``. Returns counts."""
    counts = {"answers": 0, "rounds": 0, "hidden_checked": 0, "reshuffles": 0}
    for _ in range(matches):
        answer = client.post("/api/games", json={} if opponent is None else {"opponent": opponent}).get_json()
        while counts["answers"] != max_answers:
            game = check_answer(answer, games)
            counts["answers"] += 1
            counts["hidden_checked"] += len(hidden_cards(game))
            counts["reshuffles"] = max(counts["reshuffles"], (game.finished_round or game.env.round_state).reshuffles)
            counts["rounds"] += answer["showdown"] is not None
            if answer["match_over"]:
                break
            if answer["showdown"] is not None:
                answer = client.post(f"/api/games/{answer['game_id']}/next", json={}).get_json()
                continue
            moves = answer["table"]["moves"]
            knocks = [m for m in moves if m["kind"] in ("knock", "gin")]
            others = [m for m in moves if m not in knocks]  # never empty: a knock card may also be discarded
            choice = rng.choice(knocks) if knocks and rng.random() < knock_rate else rng.choice(others)
            response = client.post(f"/api/games/{answer['game_id']}/move", json={"action": choice["action"]})
            assert response.status_code == 200, response.get_json()
            answer = response.get_json()
    return counts


# ----------------------------------------------------------------------------- hidden cards


def test_no_hidden_card_reaches_the_player_in_whole_classic_matches():
    client, games = make_client(opponent="simple", seed=5, target_score=60)
    counts = play_through(client, games, random.Random(1), matches=3)
    assert counts["rounds"] >= 3 and counts["answers"] > 60 and counts["hidden_checked"] > 1000


def test_no_hidden_card_reaches_the_player_with_three_players():
    client, games = make_client(opponent="simple", seed=9, rules="penalty", num_players=3, target_score=40)
    counts = play_through(client, games, random.Random(2), matches=2)
    assert counts["rounds"] >= 2 and counts["answers"] > 40


def test_no_hidden_card_reaches_the_player_after_stock_reshuffles():
    # Random players who never knock: the penalty preset's stock runs out and is rebuilt from the pile.
    client, games = make_client(opponent="random", seed=2, rules="penalty", num_players=3)
    counts = play_through(client, games, random.Random(3), matches=1, knock_rate=0.0, max_answers=150)
    assert counts["reshuffles"] >= 1 and counts["answers"] == 150


def test_the_leak_check_catches_a_hand_or_the_stock():
    game = WebGame("simple", seed=3)
    answer = game.state()
    state = game.env.round_state
    assert not leaks(answer, game)
    assert leaks({**answer, "extra": card_str(state.stock[-1])}, game)
    other = from_mask(state.hands[1])
    assert leaks({**answer, "extra": " ".join(map(card_str, other))}, game) == {card_str(c) for c in other}


def test_the_player_sees_their_hand_melds_the_upcard_offer_and_only_legal_moves():
    game = WebGame("simple", seed=0, deck=QUICK_KNOCK, dealer=1)
    table = game.state()["table"]
    assert table["phase"] == "offer" and table["to_act"] == 0 and table["dealer"] == 1
    assert table["hand"] == {"melds": [["AS", "2S", "3S"], ["7S", "7D", "7C"], ["4H", "5H", "6H"]],
                             "deadwood_cards": ["KC"], "deadwood": 10, "count": 10}
    assert (table["upcard"], table["discard_top"], table["knock_limit"], table["stock_size"]) == ("5C", "5C", 5, 31)
    assert [(m["action"], m["name"], m["card"]) for m in table["moves"]] == [(1, "take discard", "5C"), (2, "pass", "5C")]
    assert table["opponents"] == [{"seat": 1, "name": "simple", "cards": 10, "known": [], "passed": []}]


def test_a_scripted_round_reaches_the_showdown_and_the_next_round():
    game = WebGame("simple", seed=11, deck=QUICK_KNOCK, dealer=1)
    game.move(PASS)
    assert [m["name"] for m in game.state()["table"]["moves"]] == ["draw stock"]  # everybody passed
    game.move(DRAW_STOCK)
    assert game.state()["log"][-1] == {"seat": 0, "move": "draw stock", "card": "QD"}  # own draw: named to the drawer
    game.move(DISCARD_BASE + card_id("KC"))
    log = game.state()["log"]
    assert log[-2] == {"seat": 1, "move": "draw stock", "card": None}  # the bot's draw stays hidden
    game.move(DRAW_STOCK)
    moves = {m["name"]: m for m in game.state()["table"]["moves"]}
    assert moves["knock QD"]["kind"] == "knock" and moves["knock QD"]["deadwood_after"] == 2
    assert [name for name in moves if name.startswith("knock")] == ["knock QD"]
    game.move(KNOCK_BASE + card_id("QD"))
    answer = game.state()
    showdown = answer["showdown"]
    assert answer["table"] is None and showdown["kind"] == "knock" and showdown["knocker"] == 0
    you, bot = showdown["seats"]
    assert you["melds"] == [["AS", "2S", "3S"], ["7S", "7D", "7C"], ["4H", "5H", "6H"]] and you["deadwood"] == 2
    assert bot["layoffs"] == ["3H"] and you["points"] == bot["deadwood"] - 2 == answer["scores"][0]
    game.next_round()
    answer = game.state()
    assert answer["round"] == 2 and answer["showdown"] is None and answer["table"]["stock_size"] <= 31


def test_a_knock_that_leaves_no_deadwood_is_offered_as_gin():
    from okgin_env.rules.cards import to_mask
    from okgin_env.web.payload import move

    hand = to_mask(card_id(c) for c in "AS 2S 3S 4H 5H 6H 7D 8D 9D TD KD".split())
    assert move(KNOCK_BASE + card_id("KD"), hand, -1) == {
        "action": KNOCK_BASE + card_id("KD"), "name": "knock KD", "card": "KD", "kind": "gin", "deadwood_after": 0}
    assert move(KNOCK_BASE + card_id("TD"), hand, -1)["kind"] == "knock"  # leaves KD: deadwood 10
    assert move(TAKE_DISCARD, hand, card_id("9H")) == {"action": 1, "name": "take discard", "card": "9H", "kind": "take"}


def test_a_knock_by_another_seat_is_logged_without_its_card():
    from okgin_env.web.payload import table_event

    assert table_event(1, KNOCK_BASE + 5, card_seen=5, private=False) == {"seat": 1, "move": "knock", "card": None}
    assert table_event(0, KNOCK_BASE + 5, card_seen=5, private=True) == {"seat": 0, "move": "knock 6S", "card": "6S"}


def test_the_knock_discard_stays_face_down_at_the_showdown_except_to_the_knocker():
    # The person knocks with QD: their own showdown names it, as their log does.
    mine = WebGame("simple", seed=11, deck=QUICK_KNOCK, dealer=1)
    for action in (PASS, DRAW_STOCK, DISCARD_BASE + card_id("KC"), DRAW_STOCK, KNOCK_BASE + card_id("QD")):
        mine.move(action)
    assert mine.state()["showdown"]["knock_card"] == "QD"
    # The bot knocks (simple knocks as soon as it may): its face-down card is sent to nobody,
    # as describe_outcome never tells it; the hands shown, the points and the kind are all there.
    from okgin_env.text import describe_outcome

    rng = random.Random(4)
    for seed in range(40):
        game = WebGame("simple", seed=seed)
        while game.showdown is None:
            moves = [m["action"] for m in game.state()["table"]["moves"] if m["kind"] not in ("knock", "gin")]
            game.move(rng.choice(moves))
        outcome = game.finished_round.outcome
        if outcome.knocker == 1 and outcome.knock_card is not None:
            break
    else:  # pragma: no cover
        pytest.fail("the bot never knocked")
    showdown = game.state()["showdown"]
    assert showdown["knocker"] == 1 and showdown["knock_card"] is None
    assert card_str(outcome.knock_card) not in json.dumps(game.state())
    assert card_str(outcome.knock_card) not in describe_outcome(outcome, seat=0)


# ----------------------------------------------------------------------------- refused moves


def test_illegal_moves_are_refused_with_a_clear_message_and_change_nothing():
    client, games = make_client(opponent="simple", seed=1, deck=QUICK_KNOCK, dealer=1)
    answer = client.post("/api/games", json={}).get_json()
    url = f"/api/games/{answer['game_id']}"
    before = client.get(url).get_json()
    response = client.post(f"{url}/move", json={"action": DRAW_STOCK})
    assert response.status_code == 409
    assert response.get_json()["error"] == "move 0 (draw stock) is not legal now; legal: 1 (take discard), 2 (pass)"
    discard_held = client.post(f"{url}/move", json={"action": DISCARD_BASE + card_id("KC")})
    assert discard_held.status_code == 409 and "discard KC" in discard_held.get_json()["error"]
    for bad in ("x", 1.0, True, None, -1, 107, [1]):
        response = client.post(f"{url}/move", json={"action": bad})
        assert response.status_code == 400, bad
        assert "action id (an int in 0..106)" in response.get_json()["error"] and "legal now: 1 (take discard)" in response.get_json()["error"]
    response = client.post(f"{url}/move", json={})
    assert response.status_code == 400 and '{"action": id}' in response.get_json()["error"]
    response = client.post(f"{url}/move", json={"move": 1})  # a misspelt field is named, not ignored
    assert response.status_code == 400 and response.get_json()["error"] == "unknown field(s) ['move']; allowed: action"
    response = client.post(f"{url}/move", data="not json", content_type="application/json")
    assert response.status_code == 400 and "JSON object" in response.get_json()["error"]
    response = client.post(f"{url}/next", json={})
    assert response.status_code == 409 and "still being played" in response.get_json()["error"]
    assert client.get(url).get_json() == before


def test_moves_during_a_showdown_and_after_the_match_are_refused():
    game = WebGame("simple", seed=11, deck=QUICK_KNOCK, dealer=1, target_score=10)
    for action in (PASS, DRAW_STOCK, DISCARD_BASE + card_id("KC"), DRAW_STOCK, KNOCK_BASE + card_id("QD")):
        game.move(action)
    assert game.showdown is not None and game.match_over  # 61 points: the match to 10 is won
    with pytest.raises(ValueError, match="the match is over; start a new match") as refused:
        game.move(DRAW_STOCK)
    assert refused.value.status == 409
    with pytest.raises(ValueError, match="the match is over"):
        game.next_round()
    assert game.state()["winner"] == 0
    long_match = WebGame("simple", seed=11, deck=QUICK_KNOCK, dealer=1)
    for action in (PASS, DRAW_STOCK, DISCARD_BASE + card_id("KC"), DRAW_STOCK, KNOCK_BASE + card_id("QD")):
        long_match.move(action)
    with pytest.raises(ValueError, match="the round is over: see the showdown, then ask for the next round"):
        long_match.move(DRAW_STOCK)


def test_unknown_games_opponents_and_pages_are_refused():
    client, games = make_client(opponent="simple", seed=1)
    response = client.get("/api/games/nope")
    assert response.status_code == 404 and "no game 'nope'" in response.get_json()["error"]
    response = client.post("/api/games", json={"opponent": "/etc/passwd.pt"})
    assert response.status_code == 400
    allowed = ", ".join(dict.fromkeys(["simple", *BOT_NAMES]))  # the server's --opponent, then every bot name
    assert response.get_json()["error"] == f"unknown opponent '/etc/passwd.pt'; choose one of: {allowed}"
    assert client.get("/api/nothing").status_code == 404 and client.get("/api/games").status_code == 405
    rebound = client.get("/api/info", headers={"Host": "attacker.example"})  # DNS rebinding
    assert rebound.status_code == 400 and rebound.get_json()["error"].startswith(
        "bad request: Host 'attacker.example' is not trusted. Bound to a loopback address, okgin-web answers only "
        "Host localhost or a loopback address")
    assert client.get("/api/info", headers={"Host": "127.0.0.1:8000"}).status_code == 200


# ----------------------------------------------------------------------------- sessions


def test_sessions_are_independent():
    client, games = make_client(opponent="simple", seed=4, deck=QUICK_KNOCK, dealer=1)
    first = client.post("/api/games", json={}).get_json()
    second = client.post("/api/games", json={"opponent": "random"}).get_json()
    assert first["game_id"] != second["game_id"] and len(games) == 2
    assert second["players"] == ["you", "random"] and first["players"] == ["you", "simple"]
    assert first["table"]["hand"] == second["table"]["hand"]  # the same injected first deal
    moved = client.post(f"/api/games/{first['game_id']}/move", json={"action": PASS}).get_json()
    assert moved["table"]["phase"] == "draw"
    assert client.get(f"/api/games/{second['game_id']}").get_json() == second
    # The other session's move ids are checked against its own state, not the first game's.
    response = client.post(f"/api/games/{second['game_id']}/move", json={"action": DRAW_STOCK})
    assert response.status_code == 409


def test_sessions_played_at_once_from_threads_stay_apart():
    client, games = make_client(opponent="simple", seed=6, target_score=30)
    failures: list[str] = []

    # The apps are built here: Flask compiles its routes with ast.parse, which CPython 3.11 does not
    # make safe across threads ("AST constructor recursion depth mismatch"); the sessions run in threads.
    clients = [server.create_app(games).test_client() for _ in range(3)]

    def worker(index: int) -> None:
        try:
            play_through(clients[index], games, random.Random(index), matches=1)
        except AssertionError as error:  # pragma: no cover - reported below
            failures.append(str(error))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures and len(games) == 3


def test_the_oldest_game_is_dropped_past_max_games():
    client, games = make_client(opponent="random", seed=1, max_games=2)
    ids = [client.post("/api/games", json={}).get_json()["game_id"] for _ in range(3)]
    assert client.get(f"/api/games/{ids[0]}").status_code == 404
    assert "at most 2 games are kept" in client.get(f"/api/games/{ids[0]}").get_json()["error"]
    assert all(client.get(f"/api/games/{i}").status_code == 200 for i in ids[1:])


def test_new_sessions_do_not_push_out_a_match_in_progress():
    client, games = make_client(opponent="random", seed=1, max_games=4)
    victim = client.post("/api/games", json={}).get_json()
    move = victim["table"]["moves"][0]["action"]
    assert client.post(f"/api/games/{victim['game_id']}/move", json={"action": move}).status_code == 200
    # 70 new sessions nobody plays (a page opened again and again, a script): they push out each
    # other, never the match in progress, however long it has been idle.
    fresh = [client.post("/api/games", json={}).get_json()["game_id"] for _ in range(70)]
    assert client.get(f"/api/games/{victim['game_id']}").status_code == 200 and len(games) == 4
    assert [client.get(f"/api/games/{i}").status_code for i in fresh[-3:]] == [200, 200, 200]
    assert client.get(f"/api/games/{fresh[0]}").status_code == 404
    # When every kept match is in progress, the least recently used one goes.
    for game_id in fresh[-3:]:
        state = client.get(f"/api/games/{game_id}").get_json()
        client.post(f"/api/games/{game_id}/move", json={"action": state["table"]["moves"][0]["action"]})
    client.get(f"/api/games/{victim['game_id']}")  # the victim is used again: now the most recent
    client.post("/api/games", json={})
    assert client.get(f"/api/games/{victim['game_id']}").status_code == 200
    assert client.get(f"/api/games/{fresh[-3]}").status_code == 404


def test_a_seeded_store_deals_each_match_from_its_own_seed():
    first = GameStore("simple", seed=20).create().state()
    again = GameStore("simple", seed=20).create().state()
    store = GameStore("simple", seed=20)
    store.create()
    second = store.create().state()
    strip = lambda s: {k: v for k, v in s.items() if k != "game_id"}  # noqa: E731
    assert strip(first) == strip(again) and strip(first)["table"] != strip(second)["table"]


def test_bad_store_options_are_refused():
    with pytest.raises(ValueError, match="unknown player 'nobot'"):
        GameStore("nobot")
    with pytest.raises(ValueError, match="unknown setting"):
        GameStore("search:rolouts=3")
    with pytest.raises(ValueError, match="num_players=5"):
        GameStore("simple", rules="penalty", num_players=5)
    with pytest.raises(ValueError, match="seed=-1 is not allowed; expected a non-negative int"):
        GameStore("simple", seed=-1)
    with pytest.raises(ValueError, match="max_games"):
        GameStore("simple", max_games=0)


# ----------------------------------------------------------------------------- replays


@pytest.fixture(scope="module")
def record_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("records") / "games.jsonl"
    evaluate({"simple": "simple", "random": "random"}, matches=1, seed=3, workers=1, record=path, progress=False)
    return path


def round_by_round(client, set_id: str, index: int) -> tuple[dict, list[dict]]:
    """A recorded game's outline and all its frames, fetched one round at a time as the page does."""
    response = client.get(f"/api/records/{set_id}/games/{index}")
    assert response.status_code == 200, response.get_json()
    outline = response.get_json()
    frames = []
    for entry in outline["rounds"]:
        answer = client.get(f"/api/records/{set_id}/games/{index}/rounds/{entry['round']}").get_json()
        assert answer["round"] == entry["round"] and len(answer["frames"]) == entry["steps"]
        frames += answer["frames"]
    return outline, frames


def check_frames_against_replay(frames: list[dict], record) -> None:
    from okgin_env.records import replay_steps
    from okgin_env.web.payload import showdown

    steps = list(replay_steps(record))
    assert len(frames) == len(steps)
    n = len(record.players)
    for frame, step in zip(frames, steps):
        assert (frame["round"], frame["step"], frame["seat"]) == (step.round_index, step.step_index, step.seat)
        held = [sorted(c for part in hand["melds"] for c in part) + hand["deadwood_cards"] for hand in frame["hands"]]
        assert [sorted(h) for h in held] == [sorted(card_str(c) for c in step.state.hand(s)) for s in range(n)]
        assert frame["discard_pile"] == [card_str(c) for c in step.state.discard_pile]
        assert frame["stock_size"] == len(step.state.stock) and frame["scores"] == step.scores_before
        if step.outcome is None:
            assert frame["showdown"] is None
        else:
            assert frame["showdown"] == showdown(step.outcome, record.rounds[step.round_index]["scores_after"])


def test_a_record_file_replays_round_by_round_with_every_hand(record_file):
    from okgin_env.records import read_records

    records = ReplayStore()
    records.add("games.jsonl", read_record_file(record_file), set_id="records")
    client = server.create_app(GameStore("simple"), records).test_client()
    info = client.get("/api/info").get_json()
    (listed,) = info["records"]
    assert listed["id"] == "records" and [g["players"] for g in listed["games"]] == [["simple", "random"], ["random", "simple"]]
    record = read_records(record_file)[1]
    assert listed["games"][1]["actions"] == sum(len(entry["actions"]) for entry in record.rounds)
    outline, frames = round_by_round(client, "records", 1)
    assert outline["players"] == ["random", "simple"] and outline["scores"] == record.scores
    assert [r["steps"] for r in outline["rounds"]] == [len(entry["actions"]) + 1 for entry in record.rounds]
    assert [r["scores_after"] for r in outline["rounds"]] == [entry["scores_after"] for entry in record.rounds]
    check_frames_against_replay(frames, record)
    ends = [f for f in frames if f["showdown"] is not None]
    assert len(ends) == len(record.rounds) and ends[-1]["showdown"]["scores_after"] == record.scores
    assert frames[0]["move"] is None and frames[1]["move"] in ("take discard", "pass")
    assert client.get("/api/records/records/games/2").status_code == 404
    last = len(record.rounds)
    missing = client.get(f"/api/records/records/games/1/rounds/{last}")
    assert missing.status_code == 404 and f"it holds rounds 0..{last - 1}" in missing.get_json()["error"]


def drawn_record(rounds: int, rules: str = "classic", num_players: int | None = None, seed: int = 1):
    """A valid record of ``rounds`` drawn rounds: random players who never knock (the stock runs out)."""
    from okgin_env.env import raw_env
    from okgin_env.records import game_record

    env = raw_env(rules=rules, num_players=num_players, max_rounds=rounds)
    env.reset(seed=seed)
    rng = random.Random(seed)
    played = [env.round_state]
    while not (all(env.terminations.values()) or any(env.truncations.values())):
        state = env.round_state
        env.step(rng.choice([a for a in state.legal_actions() if a < KNOCK_BASE]))
        if env.round_state is not played[-1] and not (all(env.terminations.values()) or any(env.truncations.values())):
            played.append(env.round_state)
    assert len(played) == rounds and all(state.outcome.kind == "draw" for state in played)
    names = [f"never-knocks-{s}" for s in range(env.config.num_players)]
    return game_record(env.config, names, played, list(env.match.scores), max_rounds=rounds, truncated=True)


def upload(client, records, name: str = "games.jsonl", **headers):
    text = "".join(json.dumps(r.to_dict()) + "\n" for r in records)
    return client.post(f"/api/records?name={name}", data=text, content_type=NDJSON, headers=headers), len(text)


def test_a_round_whose_stock_was_reshuffled_replays_from_its_own_deal():
    record = drawn_record(3, rules="penalty", num_players=3)
    assert any(entry.get("reshuffles") for entry in record.rounds)
    records = ReplayStore()
    records.add("penalty.jsonl", [record], set_id="records")
    client = server.create_app(GameStore("simple"), records).test_client()
    _, frames = round_by_round(client, "records", 0)
    check_frames_against_replay(frames, record)


def test_a_long_recorded_game_is_sent_a_round_at_a_time_and_nothing_is_kept(monkeypatch):
    # The adversary's upload: one valid game of drawn rounds (each ~65 steps, four full hands a
    # step). Sent whole as frames it was ~70 times its size; now the game's answer is its outline,
    # smaller than the upload, and each round's answer is bounded by MAX_ROUND_ACTIONS.
    from okgin_env.web import replay

    record = drawn_record(30)
    records = ReplayStore()
    client = server.create_app(GameStore("simple"), records).test_client()
    response, size = upload(client, [record], "drawn.jsonl")
    assert response.status_code == 201
    set_id = response.get_json()["id"]
    outline = client.get(f"/api/records/{set_id}/games/0")
    assert outline.status_code == 200 and "frames" not in outline.get_json()
    assert len(outline.data) < size / 4
    largest = max(len(client.get(f"/api/records/{set_id}/games/0/rounds/{r}").data) for r in range(30))
    assert largest < 100_000  # ~65 frames; MAX_ROUND_ACTIONS + 1 frames at most
    record_set = records.get(set_id)
    assert record_set.size_bytes < size and not [name for name in vars(record_set) if "frame" in name]
    # Past the limits a game is refused whole, saying which limit and how to check it anyway.
    monkeypatch.setattr(replay, "MAX_GAME_ACTIONS", 1_000)
    refused = client.get(f"/api/records/{set_id}/games/0/rounds/29")
    assert refused.status_code == 422
    actions = sum(len(entry["actions"]) for entry in record.rounds)
    assert refused.get_json()["error"] == (
        f"drawn.jsonl: game 0 holds {actions:,} recorded actions: okgin-web replays games of at most 1,000 "
        "recorded actions and rounds of at most 2,000; python -m okgin_env.records FILE checks a longer one")
    monkeypatch.setattr(replay, "MAX_GAME_ACTIONS", 100_000)
    monkeypatch.setattr(replay, "MAX_ROUND_ACTIONS", 10)
    refused = client.get(f"/api/records/{set_id}/games/0")
    assert refused.status_code == 422 and "drawn.jsonl: game 0, round 0 holds" in refused.get_json()["error"]


def test_uploads_are_kept_within_a_byte_budget_and_the_startup_file_stays(record_file):
    loaded = read_record_file(record_file)
    one = len(json.dumps(loaded[0].to_dict()))  # an upload of that game is kept as this line, as sent
    records = ReplayStore(max_sets=16, max_bytes=3 * one)
    records.add("games.jsonl", loaded, set_id="records")
    client = server.create_app(GameStore("simple"), records).test_client()
    ids = [upload(client, loaded[:1], f"up{k}.jsonl")[0].get_json()["id"] for k in range(5)]
    assert records.uploaded_bytes() <= 3 * one and len(records) == 4  # the start-up file and the last 3 uploads
    assert client.get(f"/api/records/{ids[0]}/games/0").status_code == 404
    assert all(client.get(f"/api/records/{i}/games/0").status_code == 200 for i in ids[-3:])
    assert client.get("/api/records/records/games/1").status_code == 200
    # Viewing keeps an upload: the least recently used one goes first.
    client.get(f"/api/records/{ids[2]}/games/0")
    upload(client, loaded[:1], "up5.jsonl")
    assert client.get(f"/api/records/{ids[2]}/games/0").status_code == 200
    assert client.get(f"/api/records/{ids[3]}/games/0").status_code == 404


def test_an_uploaded_record_file_is_read_and_a_bad_one_is_refused_by_line(record_file):
    client = server.create_app(GameStore("simple")).test_client()
    text = record_file.read_text(encoding="utf-8")
    response = client.post("/api/records?name=mine.jsonl", data=text, content_type=NDJSON)
    assert response.status_code == 201
    summary = response.get_json()
    assert summary["name"] == "mine.jsonl" and len(summary["games"]) == 2
    assert client.get(f"/api/records/{summary['id']}/games/0").status_code == 200
    assert client.get("/api/info").get_json()["records"] == []  # uploads are not listed to other pages
    lines = text.splitlines()
    response = client.post("/api/records?name=bad.jsonl", data=lines[0] + "\n{not json\n", content_type=NDJSON)
    assert response.status_code == 400
    assert response.get_json()["error"].startswith("cannot read bad.jsonl: bad.jsonl, line 2: not valid JSON")
    assert client.post("/api/records", data="", content_type=NDJSON).status_code == 400
    assert client.post("/api/records", data=b"\xff\xfe", content_type=NDJSON).status_code == 400


def test_a_record_that_does_not_replay_names_the_game_round_and_action(record_file):
    data = json.loads(record_file.read_text(encoding="utf-8").splitlines()[0])
    actions = data["rounds"][0]["actions"]
    actions[0] = DRAW_STOCK if actions[0] != DRAW_STOCK else TAKE_DISCARD  # not legal during the upcard offer
    records = ReplayStore()
    from okgin_env.records import GameRecord

    records.add("broken.jsonl", [GameRecord.from_dict(data)], set_id="records")
    client = server.create_app(GameStore("simple"), records).test_client()
    response = client.get("/api/records/records/games/0")
    assert response.status_code == 422
    assert response.get_json()["error"].startswith("broken.jsonl: game 0, round 0, action 0: action 0 (draw stock) is not legal")


# ----------------------------------------------------------------------------- the server's defences


def test_requests_from_another_site_are_refused_and_change_nothing(record_file):
    games = GameStore("random", seed=1)
    records = ReplayStore()
    client = server.create_app(games, records).test_client()  # its Host: localhost
    text = record_file.read_text(encoding="utf-8")
    evil = {"Origin": "http://evil.example"}
    own = "okgin-web answers its API only to its own page, http://localhost/"
    # A cross-site "simple request" (no preflight): a POST with no body, a form post, text/plain.
    response = client.post("/api/games", headers=evil)
    assert response.status_code == 403
    assert response.get_json()["error"] == f"cross-site request refused (Origin http://evil.example): {own}"
    assert client.post("/api/games", data="opponent=simple", content_type="application/x-www-form-urlencoded",
                       headers=evil).status_code == 403
    assert client.post("/api/records", data=text, content_type="text/plain", headers=evil).status_code == 403
    for site in ("cross-site", "same-site"):  # same-site: another port or subdomain of this host
        response = client.post("/api/games", json={}, headers={"Sec-Fetch-Site": site})
        assert response.status_code == 403 and response.get_json()["error"] == (
            f"cross-site request refused (Sec-Fetch-Site: {site}): {own}")
    assert client.get("/api/info", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    # Without a JSON content type (which a page elsewhere cannot send without a preflight) nothing is written.
    response = client.post("/api/games")
    assert response.status_code == 415 and response.get_json()["error"] == (
        "send the body as JSON with Content-Type: application/json (an empty body is {}); got Content-Type none")
    assert client.post("/api/games", data="{}", content_type="text/plain").status_code == 415
    response = client.post("/api/records", data=text, content_type="text/plain")
    assert response.status_code == 415 and response.get_json()["error"] == (
        "send the record file's text with Content-Type: application/x-ndjson (or application/jsonl, "
        "application/json); got Content-Type 'text/plain'")
    assert len(games) == 0 and len(records) == 0
    # The page itself: same origin. A page may be opened from a link elsewhere (not the API).
    page = {"Origin": "http://localhost", "Sec-Fetch-Site": "same-origin"}
    assert client.post("/api/games", json={}, headers=page).status_code == 201
    assert upload(client, read_record_file(record_file), **page)[0].status_code == 201
    assert client.get("/", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200
    assert len(games) == 1 and len(records) == 1


def test_a_body_nested_thousands_deep_or_too_large_is_refused_in_json():
    client, games = make_client(opponent="random", seed=1)
    answer = client.post("/api/games", json={}).get_json()
    url = f"/api/games/{answer['game_id']}"
    nested_message = 'the JSON body is nested too deeply; send a flat JSON object, e.g. {"action": 3}'
    for deep in ("[" * 5000 + "]" * 5000, '{"action":' * 5000 + "1" + "}" * 5000):
        response = client.post(f"{url}/move", data=deep, content_type="application/json")
        assert response.status_code == 400 and response.get_json() == {"error": nested_message}
    for echoed in ({"action": "x" * 50_000}, {"action": json.loads("[" * 800 + "]" * 800)}):
        response = client.post(f"{url}/move", json=echoed)  # the message quotes it, cut short
        assert response.status_code == 400 and len(response.get_json()["error"]) < 300
    response = client.post("/api/games", json={"opponent": "y" * 50_000})
    assert response.status_code == 400 and len(response.get_json()["error"]) < 400
    response = client.post(f"{url}/move", data=b"\x81\x82", content_type="application/json")
    assert response.status_code == 400 and "not valid JSON" in response.get_json()["error"]
    response = client.post(f"{url}/move", json={"action": 1, "pad": "x" * 70_000})
    assert response.status_code == 413 and response.get_json() == {
        "error": "the request body is larger than 64 KiB, the most okgin-web reads"}
    assert client.get(url).get_json() == answer


def test_a_record_line_nested_thousands_deep_is_refused_naming_the_problem():
    client = server.create_app(GameStore("simple")).test_client()
    line = '{"format": "okgin.game", "version": 1, "deep": ' + "[" * 5000 + "]" * 5000 + "}\n"
    response = client.post("/api/records?name=deep.jsonl", data=line, content_type=NDJSON)
    assert response.status_code == 400
    assert response.get_json()["error"].startswith("cannot read deep.jsonl: deep.jsonl")
    assert "nested too deeply" in response.get_json()["error"]


@pytest.mark.parametrize("host, host_header", [("::1", "[::1]:8000"), ("127.0.0.2", "127.0.0.2:8000"),
                                               ("localhost", "localhost:8000"), ("127.0.0.1", "127.0.0.3")])
def test_a_loopback_server_answers_its_own_address_and_no_other_name(host, host_header):
    client = server.create_app(GameStore("simple"), host=host).test_client()
    assert client.get("/api/info", headers={"Host": host_header}).status_code == 200
    for other in ("attacker.example", "attacker.example:8000", "10.0.0.1:8000", "[fe80::1]:8000"):
        response = client.get("/api/info", headers={"Host": other})
        assert response.status_code == 400 and f"Host '{other}' is not trusted" in response.get_json()["error"]
    anywhere = server.create_app(GameStore("simple"), host="0.0.0.0").test_client()  # bound to every address
    assert anywhere.get("/api/info", headers={"Host": "attacker.example"}).status_code == 200


def test_every_answer_forbids_framing_and_api_answers_are_not_cached():
    client, _ = make_client()
    for path in ("/", "/static/app.js", "/api/info", "/api/nothing"):
        headers = client.get(path).headers
        assert headers["X-Frame-Options"] == "DENY", path
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"], path
        assert "default-src 'self'" in headers["Content-Security-Policy"], path
        assert headers["X-Content-Type-Options"] == "nosniff" and headers["Cross-Origin-Resource-Policy"] == "same-origin"
    assert client.get("/api/info").headers["Cache-Control"] == "no-store"


def start_command(*argv: str) -> tuple[subprocess.Popen, str]:
    """``okgin-web ARGV`` in a child process, and the address it prints."""
    process = subprocess.Popen([sys.executable, "-m", "okgin_env.web.server", *argv],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline()
    match = re.search(r"serving on (http://\S+/)", line)
    if not match:
        process.kill()
        raise AssertionError(line + process.stderr.read())
    return process, match.group(1)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover
        process.kill()
        process.wait(timeout=30)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc (Linux)")
def test_idle_connections_hold_no_thread_and_do_not_lock_others_out():
    import socket
    import urllib.request

    process, url = start_command("--port", "0", "--opponent", "random")
    idle = []
    try:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        with urllib.request.urlopen(url + "api/info", timeout=30) as response:  # the workers have started
            assert response.status == 200
        threads_before = len(list(Path(f"/proc/{process.pid}/task").iterdir()))
        for k in range(300):
            connection = socket.create_connection(("127.0.0.1", port), timeout=10)
            if k % 2:  # half send a request line and headers, then nothing: a body that never arrives
                connection.sendall(b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                   b"Content-Length: 100\r\n\r\n{")
            idle.append(connection)
        with urllib.request.urlopen(url + "api/info", timeout=10) as response:
            assert response.status == 200
        threads_after = len(list(Path(f"/proc/{process.pid}/task").iterdir()))
        assert threads_after <= threads_before + 1, (threads_before, threads_after)
    finally:
        for connection in idle:
            connection.close()
        stop(process)


def test_a_stalled_request_is_cut_off_after_the_read_timeout_and_holds_no_worker():
    import socket
    import time
    import urllib.request

    app = server.create_app(GameStore("random", seed=1))
    srv = server.make_server(app, "127.0.0.1", 0, threads=2, read_timeout=2)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    try:
        port = server.listening_address(srv)[1]
        stalled = []
        for _ in range(4):  # twice as many as there are workers
            connection = socket.create_connection(("127.0.0.1", port), timeout=15)
            connection.sendall(b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                               b"Content-Length: 100\r\n\r\n{")
            stalled.append(connection)
        started = time.monotonic()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/info", timeout=5) as response:
            assert response.status == 200  # the workers are free: a stalled body is read by no worker
        for connection in stalled:
            assert connection.recv(1024) == b""  # closed by the server, with no answer
            connection.close()
        assert time.monotonic() - started < 10
    finally:
        srv.close()
        thread.join(timeout=10)


# ----------------------------------------------------------------------------- the page and the command


def test_the_page_is_served_and_loads_nothing_from_elsewhere():
    client, _ = make_client()
    page = client.get("/")
    assert page.status_code == 200 and b"<script src=\"/static/app.js\">" in page.data
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200
    for path in [*STATIC.glob("*.html"), *STATIC.glob("*.js"), *STATIC.glob("*.css")]:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(src|href)=\"(https?:)?//|url\(\s*['\"]?(https?:)?//|@import", text), path
        assert "innerHTML" not in text, path  # server text is set as text, never parsed as HTML


def test_the_core_package_does_not_import_flask():
    code = ("import sys, okgin_env, okgin_env.web, okgin_env.web.game, okgin_env.web.replay, okgin_env.web.payload\n"
            "print('flask' in sys.modules or 'waitress' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--opponent", "nobot"], "unknown player 'nobot'"),
        (["--opponent", "missing.pt"], "missing.pt"),
        (["--port", "70000"], "--port must be in 0..65535"),
        (["--records", "/no/such/file.jsonl"], "No such file"),
        (["--rules", "classic", "--num-players", "3"], "num_players=3"),
        (["--max-games", "0"], "max_games"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    assert run_main(argv) == 2
    assert message in capsys.readouterr().err


def run_main(argv: list[str]) -> int:
    try:
        return server.main(argv)
    except SystemExit as exit_:  # argparse's own errors
        return exit_.code



def test_an_address_that_is_not_one_exits_2_with_one_line(capsys):
    assert server.main(["--host", "999.1.1.1", "--port", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.err == ("okgin-web: error: cannot listen on 999.1.1.1:0: not an address, or a name that does not "
                            "resolve; --host takes an address of this machine, e.g. 127.0.0.1, ::1 or 0.0.0.0\n")
    assert captured.out == ""


@pytest.mark.parametrize("host", ["127.0.0.2", "::1"])
def test_the_command_answers_on_any_loopback_address_it_is_given(host):
    import socket
    import urllib.request

    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.bind((host, 0))
    except OSError:  # pragma: no cover
        pytest.skip(f"{host} is not available here")
    process, url = start_command("--host", host, "--port", "0", "--opponent", "random")
    try:
        assert url.startswith(f"http://[{host}]:" if ":" in host else f"http://{host}:")
        with urllib.request.urlopen(url + "api/info", timeout=30) as response:
            assert json.load(response)["default_opponent"] == "random"
    finally:
        stop(process)


def test_a_bad_record_file_exits_2_naming_the_line(tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"format": "okgin.game", "version": 9}\n', encoding="utf-8")
    assert server.main(["--records", str(path)]) == 2
    assert "line 1" in capsys.readouterr().err


def test_without_flask_the_command_says_which_extra_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "flask", None)  # import flask now raises ImportError
    assert server.main([]) == 2
    assert "pip install okgin[web]" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "flask", flask)
    monkeypatch.setitem(sys.modules, "waitress.server", None)
    assert server.main([]) == 2
    assert "okgin-web needs Flask and Waitress: pip install okgin[web]" in capsys.readouterr().err


def test_a_port_in_use_exits_2_saying_port_in_one_line(capsys):
    """Issue 53: okgin-web and mkdocs serve both default to port 8000; the message names --port."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert server.main(["--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err == (f"okgin-web: error: port {port} on 127.0.0.1 is in use by another program; choose another with "
                   f"--port (e.g. --port {port + 1}; --port 0: any free port)\n")


def test_the_command_serves_the_page_on_loopback(tmp_path, record_file):
    import urllib.request

    process = subprocess.Popen(
        [sys.executable, "-m", "okgin_env.web.server", "--port", "0", "--opponent", "random", "--records", str(record_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = process.stdout.readline()
        match = re.search(r"serving on (http://127\.0\.0\.1:\d+/)", line)
        assert match, line + process.stderr.read()
        with urllib.request.urlopen(match.group(1) + "api/info", timeout=30) as response:
            info = json.load(response)
        assert info["default_opponent"] == "random" and len(info["records"][0]["games"]) == 2
    finally:
        process.terminate()
        process.wait(timeout=30)


def play_a_match(store: GameStore) -> WebGame:
    """A match of ``store`` played to its end by ``simple`` in the person's seat."""
    from okgin_env.bots import SimpleBot

    me = SimpleBot(seed=1)
    game = store.create()
    while not game.match_over:
        if game.showdown is not None:
            game.next_round()
            continue
        game.move(me.act(game.env.observe(game.human)))
    return game


def test_record_games_appends_every_finished_match_as_a_replayable_record(tmp_path):
    from okgin_env.records import replay

    path = tmp_path / "played" / "games.jsonl"
    store = GameStore("simple", seed=5, target_score=20, record_games=str(path))
    assert path.parent.is_dir() and not path.exists()  # made at start, written at a match's end
    for match in range(2):
        play_a_match(store)
        assert store.flush_records(timeout=30) == 0  # written by a background thread
        assert len(read_record_file(str(path))) == match + 1
    records = read_record_file(str(path))
    for record in records:
        assert record.finished and record.players[0] == "human" and max(record.scores) >= 20
        replay(record)  # every move of every round replays in the rules core


def test_a_fifo_as_the_record_file_is_refused_at_start(tmp_path):
    """Issue 52, 4: a FIFO nobody reads froze the server (the first finished match blocked in
    open(), holding the lock)."""
    import os

    fifo = tmp_path / "games.fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        GameStore("simple", record_games=str(fifo))
    assert server.main(["--record-games", str(fifo), "--port", "0"]) == 2
    assert server.main(["--record", str(fifo), "--port", "0"]) == 2  # the name okgin-play and okgin-eval use


def test_the_table_commands_write_records_with_the_same_flag():
    """okgin-eval, okgin-play and okgin-web all write game records with ``--record FILE``
    (okgin-web's older ``--record-games`` stays an alias); ``--records`` is okgin-web's file to replay."""
    from okgin_env import eval_cli, play_cli

    parsers = {"okgin-eval": eval_cli.build_parser(), "okgin-play": play_cli.build_parser(), "okgin-web": server.build_parser()}
    for name, parser in parsers.items():
        assert "--record" in parser._option_string_actions, name
    web = server.build_parser()
    assert web.parse_args(["--record", "a.jsonl"]).record_games == "a.jsonl"
    assert web.parse_args(["--record-games", "a.jsonl"]).record_games == "a.jsonl"
    assert web.parse_args(["--records", "b.jsonl"]).records == "b.jsonl"


def test_a_record_file_that_takes_no_writes_never_holds_up_a_request(tmp_path, monkeypatch):
    """Issue 52, 4: a write that hangs (a stalled disk) delays only the record, written by a
    background thread; the games and the server go on."""
    stalled, release = threading.Event(), threading.Event()

    def stuck_write(*_args, **_kwargs):
        stalled.set()
        release.wait(60)
        return 1

    monkeypatch.setattr("okgin_env.records.write_records", stuck_write)
    store = GameStore("simple", seed=5, target_score=20, record_games=str(tmp_path / "games.jsonl"))
    played = threading.Thread(target=lambda: [play_a_match(store), play_a_match(store)], daemon=True)
    try:
        played.start()
        played.join(timeout=60)
        assert not played.is_alive(), "a request waited on the record file"
        # the writer thread may reach the file after the games end; it then stalls there
        assert stalled.wait(30) and store.flush_records(timeout=0.1) == 2  # the records wait, not the games
        client = server.create_app(store).test_client()
        assert client.get("/api/info").status_code == 200
    finally:
        release.set()
    assert store.flush_records(timeout=30) == 0


def test_record_writers_on_one_file_lose_no_record(tmp_path):
    """Issue 52, 5: two servers appending to one --record-games file lost records (each append
    copied the file and renamed the copy over it); appends are O_APPEND under flock now."""
    from okgin_env.records import write_records

    record = play_a_match(GameStore("simple", seed=5, target_score=20)).record()
    path = tmp_path / "games.jsonl"
    writes = 12

    def write_many():  # as each server's record writer does
        for _ in range(writes):
            write_records(path, [record], append=True)

    threads = [threading.Thread(target=write_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(read_record_file(str(path))) == len(threads) * writes


def test_a_dangling_link_as_the_record_file_is_refused_at_start(tmp_path):
    """Issue 52, 6: a link to a file in a missing folder passed the start-up check, then every
    match was lost."""
    link = tmp_path / "games.jsonl"
    link.symlink_to(tmp_path / "gone" / "games.jsonl")
    with pytest.raises(ValueError, match=r"is a link to .*gone/games\.jsonl', which does not exist"):
        GameStore("simple", record_games=str(link))
    assert not (tmp_path / "gone").exists()


# ----------------------------------------------------------------------------- probe 7


def test_a_second_upload_is_refused_at_once_and_a_bad_byte_is_named_by_line(record_file, monkeypatch):
    """An upload waiting for the slot held a worker thread up to 10 s: nine of them stalled the
    game API. A byte that is no UTF-8 was Python's codec message with an offset in the whole file."""
    import time

    from okgin_env.web import replay as replay_module

    app = server.create_app(GameStore("simple"))
    client = app.test_client()
    text = record_file.read_text(encoding="utf-8")
    with app.extensions["okgin"]["upload_slot"]:  # another upload is being read
        start = time.monotonic()
        response = client.post("/api/records?name=b.jsonl", data=text, content_type=NDJSON)
        assert response.status_code == 503 and time.monotonic() - start < 2
    assert client.post("/api/records?name=b.jsonl", data=text, content_type=NDJSON).status_code == 201
    lines = text.encode("utf-8").splitlines(keepends=True)
    response = client.post("/api/records?name=bad.jsonl", data=lines[0] + b"\xe9\n", content_type=NDJSON)
    assert response.status_code == 400
    assert response.get_json()["error"].startswith("cannot read bad.jsonl: bad.jsonl, line 2: not UTF-8 text")
    monkeypatch.setattr(replay_module, "MAX_UPLOAD_GAMES", 1)
    response = client.post("/api/records?name=two.jsonl", data=text, content_type=NDJSON)
    assert response.status_code == 400 and "two.jsonl holds 2 games; an upload may hold at most 1" in response.get_json()["error"]


def test_unknown_fields_huge_numbers_and_negative_indexes_are_named(record_file):
    client = server.create_app(GameStore("simple")).test_client()
    response = client.post("/api/games", json={"oponent": "random"})  # a typo played the default opponent
    assert response.status_code == 400 and response.get_json()["error"] == "unknown field(s) ['oponent']; allowed: opponent"
    url = f"/api/games/{client.post('/api/games', json={}).get_json()['game_id']}"
    response = client.post(f"{url}/next", json={"round": 2})
    assert response.status_code == 400 and "allowed: none (send {})" in response.get_json()["error"]
    response = client.post(f"{url}/move", data='{"action": ' + "1" * 5000 + "}", content_type="application/json")
    assert response.status_code == 400 and "a number of more than" in response.get_json()["error"]
    summary = client.post("/api/records?name=g.jsonl", data=record_file.read_text(encoding="utf-8"),
                          content_type=NDJSON).get_json()
    for path in (f"/api/records/{summary['id']}/games/-1", f"/api/records/{summary['id']}/games/0/rounds/-1"):
        response = client.get(path)
        assert response.status_code == 404 and "it holds" in response.get_json()["error"], path


def test_the_command_line_refuses_a_pipe_to_replay_and_a_file_to_add_records_to_that_holds_none(tmp_path, record_file,
                                                                                                 capsys):
    """--records FIFO held the start forever; --record notes.txt added records after the notes."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert server.main(["--records", str(fifo), "--port", "0"]) == 2
    assert "is not a regular file (a folder, a pipe or a device)" in capsys.readouterr().err
    notes = tmp_path / "notes.txt"
    notes.write_text("My notes\nline two")
    assert server.main(["--record", str(notes), "--port", "0"]) == 2
    assert "cannot add game records to" in capsys.readouterr().err and notes.read_text() == "My notes\nline two"
    GameStore("simple", record_games=str(record_file))  # a record file takes more
