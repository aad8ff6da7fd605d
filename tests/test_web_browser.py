"""okgin-web in a real browser: headless Chromium (Debian's ``chromium``) driven by Playwright.

One whole round from a fixed deal (start, pass, draw, discard, draw, knock, showdown, next round),
an illegal move refused on the page, and a replay (step forward and back, jump to a round, all
hands visible, a file chosen in the page). The page runs under the server's Content-Security-Policy,
which allows no ``eval``: the tests wait with Playwright's ``expect``, never with a JavaScript
string (``wait_for_function``), and a CSP violation is a console error that fails the test.
Marked ``browser`` (CI: ``pytest -m browser``); skipped when chromium or Playwright is missing.
The screenshots go to a temporary folder, or to ``$OKGIN_SCREENSHOTS`` (``OKGIN_SCREENSHOTS=docs
python -m pytest -m browser tests/test_web_browser.py`` makes the pictures of docs/web.md).
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("OKGIN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (apt-get install chromium, or set OKGIN_CHROMIUM)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="needs Playwright for Python: pip install -e '.[web,browser]'")
pytest.importorskip("flask", reason="okgin-web needs Flask: pip install -e '.[web]'")

from test_web import QUICK_KNOCK  # noqa: E402

from okgin_env.evaluate import evaluate  # noqa: E402
from okgin_env.rules.cards import card_str, from_mask  # noqa: E402
from okgin_env.web.game import GameStore  # noqa: E402
from okgin_env.web.replay import ReplayStore, read_record_file  # noqa: E402
from okgin_env.web.server import create_app  # noqa: E402

TIMEOUT_MS = 20_000
expect = sync_api.expect
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def record_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("records") / "simple_vs_random.jsonl"
    evaluate({"simple": "simple", "random": "random"}, matches=1, seed=3, workers=1, record=path, progress=False)
    return path


@pytest.fixture(scope="module")
def site(record_file):
    """The app on a free loopback port, in a thread: the first round of every match is QUICK_KNOCK."""
    from werkzeug.serving import make_server

    games = GameStore("simple", seed=11, deck=QUICK_KNOCK, dealer=1)
    records = ReplayStore()
    records.add(record_file.name, read_record_file(record_file), set_id="records")
    server = make_server("127.0.0.1", 0, create_app(games, records), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/", games
    server.shutdown()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 760})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" and "409" not in message.text else None)
    yield page
    context.close()
    assert not errors, errors


@pytest.fixture
def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("OKGIN_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def move_names(page) -> list[str]:
    return page.eval_on_selector_all("#moves button", "buttons => buttons.map(b => b.dataset.name)")


def click_move(page, name: str) -> None:
    page.click(f'#moves button[data-name="{name}"]')


def test_a_whole_round_in_the_browser(page, site, shots):
    url, games = site
    page.goto(url)
    page.wait_for_selector('#moves button[data-kind="pass"]')
    assert move_names(page) == ["take discard", "pass"]
    assert page.locator("#hand .card").count() == 10 and page.locator("#hand .group.meld").count() == 3
    assert page.text_content("#deadwood").startswith("(deadwood 10")
    assert page.text_content("#knock-limit") == "knock limit 5" and page.text_content("#stock-size") == "31 cards"
    assert "offered to you" in page.text_content("#prompt")
    assert page.locator("#opponents .card.back").count() == 10
    # The page never holds a card of the other hand or of the stock.
    game = games.get(page.evaluate("sessionStorage.getItem('okgin-game')"))
    state = game.env.round_state
    secret = {card_str(c) for c in from_mask(state.hands[1])} | {card_str(c) for c in state.stock}
    shown = set(page.eval_on_selector_all("#play-view [data-card]", "cards => cards.map(c => c.dataset.card)"))
    assert shown and not shown & secret

    click_move(page, "pass")
    page.wait_for_selector('#moves button[data-kind="draw"]')
    assert move_names(page) == ["draw stock"] and "Everybody passed" in page.text_content("#prompt")
    click_move(page, "draw stock")
    page.wait_for_selector('#moves button[data-name="discard KC"]')
    assert page.locator("#hand .card").count() == 11 and "You: draw stock (QD)" in page.text_content("#log")
    # The hand's cards that may be thrown are buttons too: a click on the KC discards it.
    assert page.locator("#hand .card.playable").count() == 11
    page.click('#hand .card.playable[data-card="KC"]')
    expect(page.locator("#log")).to_contain_text("simple: discard")
    assert "simple: draw stock" in page.text_content("#log")
    click_move(page, "draw stock")
    knock = page.locator('#moves button[data-name="knock QD"]')
    knock.wait_for()
    assert knock.text_content() == "knock QD (deadwood 2)" and "or knock" in page.text_content("#prompt")
    page.screenshot(path=str(shots / "web_play.png"), full_page=True)

    knock.click()
    page.wait_for_selector("#showdown:not([hidden])")
    assert page.is_hidden("#play-table")
    assert page.text_content("#showdown-title") == "You knock."
    moves_shown = page.locator("#showdown-log li").all_text_contents()  # the round's moves, beside the showdown
    assert moves_shown and "knock" in moves_shown[-1].lower(), moves_shown
    assert page.locator("#showdown-seats .seat").count() == 2
    assert page.locator('#showdown-seats .card.laid[data-card="3H"]').count() == 1  # the bot lays off 3H
    result = page.text_content("#showdown-result")
    assert "Knock: you win the round (points: you 61)." in result and "you 61 \u2013 simple 0" in result
    page.screenshot(path=str(shots / "web_showdown.png"), full_page=True)

    page.click("#next-round")
    page.wait_for_selector("#play-table:not([hidden])")
    assert page.text_content("#match-info").startswith("Round 2")
    assert page.text_content("#score") == "you 61 \u2013 simple 0 (to 100)"
    assert page.locator("#moves button").count() >= 1 and page.locator("#hand .card").count() == 10


def test_cards_read_as_printed_and_a_taken_upcard_leaves_its_slot(page, site):
    url, _ = site
    page.goto(url)
    page.wait_for_selector('#moves button[data-kind="pass"]')
    assert page.evaluate("showRanks('discard TD')") == "discard 10D"
    assert page.evaluate("showRanks('knock TS (deadwood 3), THE END')") == "knock 10S (deadwood 3), THE END"
    assert page.evaluate("upcardShown({upcard: '5C', discard_pile: ['5C', '9D']})") == "5C"
    assert page.evaluate("upcardShown({upcard: '5C', discard_pile: ['9D']})") is None
    assert page.locator('#upcard .card[data-card="5C"]').count() == 1  # offered: still in the pile


def test_an_illegal_move_is_refused_on_the_page(page, site):
    url, _ = site
    page.goto(url)
    page.wait_for_selector('#moves button[data-kind="pass"]')
    page.evaluate("sendMove(0)")  # draw stock during the upcard offer: only take or pass are legal
    page.wait_for_selector("#message:not([hidden])")
    assert page.text_content("#message") == "move 0 (draw stock) is not legal now; legal: 1 (take discard), 2 (pass)"
    assert move_names(page) == ["take discard", "pass"]  # nothing changed


def test_a_recorded_game_step_by_step(page, site, record_file, shots):
    url, _ = site
    page.goto(url)
    page.click("#tab-replay")
    page.wait_for_selector("#replay-table:not([hidden])")
    assert page.locator("#replay-game option").count() == 2
    assert page.locator("#replay-seats .seat").count() == 2
    assert page.locator("#replay-seats .seat").nth(0).locator(".card").count() == 10  # every hand visible
    assert page.locator("#replay-seats .seat").nth(1).locator(".card").count() == 10
    assert "step 0 of" in page.text_content("#step-info") and "dealt" in page.text_content("#replay-move")
    assert page.locator("#replay-pile .card").count() == 1  # the upcard
    assert page.is_disabled("#step-back")
    for _ in range(3):
        page.click("#step-forward")
    assert "step 3 of" in page.text_content("#step-info")
    page.click("#step-back")
    assert "step 2 of" in page.text_content("#step-info")
    page.keyboard.press("ArrowRight")
    assert "step 3 of" in page.text_content("#step-info")
    moved = page.text_content("#replay-move")
    assert moved.startswith(("simple (seat", "random (seat"))

    rounds = page.locator("#replay-round option").count()
    assert rounds >= 2
    page.select_option("#replay-round", index=1)
    assert page.text_content("#step-info").startswith(f"Round 2 of {rounds}, step 0 of")
    for _ in range(8):
        page.click("#step-forward")
    page.screenshot(path=str(shots / "web_replay.png"), full_page=True)
    page.click("#step-last")
    page.wait_for_selector("#replay-showdown:not([hidden])")
    assert page.locator("#replay-showdown-seats .seat").count() == 2
    page.click("#step-first")
    assert "step 0 of" in page.text_content("#step-info") and page.is_hidden("#replay-showdown")

    # A file chosen in the page is uploaded and shown the same way.
    page.set_input_files("#record-file", str(record_file))
    expect(page.locator("#step-info")).to_have_text(re.compile(r"^Round 1 of"))
    assert page.locator("#replay-game option").count() == 2
    page.select_option("#replay-game", index=1)
    expect(page.locator("#replay-game")).to_have_value("1")
    assert page.locator("#replay-seats .seat").count() == 2
