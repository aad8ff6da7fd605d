"""okgin_env/play.py: terminal play, driven by scripted input."""

from __future__ import annotations

import pytest

from okgin_env.bots import SimpleBot
from okgin_env.play import Game, hand_text, parse_move, play
from okgin_env.play_cli import main
from okgin_env.rules.actions import action_str
from okgin_env.rules.cards import card_id, card_str, parse_cards


def deal(player_0: str, player_1: str, upcard: str, stock_top: str = "") -> list[int]:
    """A deck for ``dealer=0``: player_1 gets the first card, then alternately; upcard; stock top first."""
    p0, p1 = parse_cards(player_0), parse_cards(player_1)
    deck = [c for pair in zip(p1, p0) for c in pair] + [card_id(upcard)] + parse_cards(stock_top)
    return deck + [c for c in range(52) if c not in deck]


def move_text(action: int) -> str:
    """The text a player would type for an action id."""
    name = action_str(action)
    short = {"draw stock": "d", "take discard": "t", "pass": "p"}.get(name)
    if short:
        return short
    word, card = name.split()
    return f"k {card}" if word == "knock" else card


class Script:
    """Input: first the given lines, then a simple bot's moves; records prompts and output."""

    def __init__(self, lines=(), seed=0):
        self.lines = list(lines)
        self.prompts: list[str] = []
        self.output: list[str] = []
        self.bot = SimpleBot(seed=seed)
        self.game: Game | None = None

    def input(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.lines:
            return self.lines.pop(0)
        env = self.game.env
        return move_text(self.bot.act(env.observe(self.game.human)))

    def print(self, *parts) -> None:
        self.output.append(" ".join(str(p) for p in parts))

    @property
    def text(self) -> str:
        return "\n".join(self.output)


def run(script: Script, **kw) -> dict:
    game = Game(input_fn=script.input, print_fn=script.print, **kw)
    script.game = game
    return game.run()


def test_parse_move():
    assert parse_move("d") == ("draw", None) == parse_move(" Draw ") == parse_move("s") == parse_move("stock")
    assert parse_move("t") == ("take", None) == parse_move("TAKE")
    assert parse_move("p") == ("pass", None)
    assert parse_move("TD") == ("discard", card_id("TD")) == parse_move("10d") == parse_move("discard td")
    assert parse_move("k TD") == ("knock", card_id("TD")) == parse_move("knock 10D")
    assert parse_move("?") == ("help", None) and parse_move("help") == ("help", None)
    assert parse_move("q") == ("quit", None)
    assert parse_move("k ZZ") == ("knock", None)
    assert parse_move("hello there")[0] == "bad" and parse_move("")[0] == "bad"


def test_hand_text_groups_melds_and_counts_deadwood():
    text = hand_text(parse_cards("3H 4H 5H 7S 7D 7C KS 2D AC QC"))
    assert text.startswith("[3H 4H 5H] [7S 7D 7C] | ") or text.startswith("[7S 7D 7C] [3H 4H 5H] | ")
    assert "KS" in text and "(deadwood 23)" in text


def test_a_whole_round_against_simple():
    script = Script()
    result = run(script, opponent="simple", seed=3, episode="round")
    assert result["finished"]
    text = script.text
    assert "=== Round 1 ===" in text
    assert "Your hand: " in text
    assert "Knock limit" in text and "stock" in text and "discard top" in text and "scores:" in text
    assert "Match score:" in text
    assert "player_1 discards" in text or "player_1 knocks" in text
    assert any("round" in line for line in script.output[-1:])


def test_a_short_match_ends_with_a_winner():
    script = Script(seed=1)
    result = run(script, opponent="simple", seed=5, episode="match", target_score=25)
    assert result["finished"] and result["winner"] in (0, 1)
    assert max(result["scores"].values()) >= 25
    assert "the match." in script.output[-1]
    assert script.text.count("=== Round") >= 1


def test_a_match_truncated_at_max_rounds_ends_the_game():
    script = Script(seed=1)
    result = run(script, opponent="simple", seed=5, episode="match", max_rounds=1)
    assert result["finished"] and result["winner"] is None and result["truncated"]
    assert script.text.count("=== Round") == 1
    assert "undecided after 1 round (max_rounds)" in script.output[-1]


P0 = "7H 8H AS 2S 3S 5D 5C 5H KC 2D"  # the human (player_0, the dealer)
P1 = "5S 6S TS 3H 4C QH 8D QD JC KS"  # 9H and KD meld with none of these


def test_illegal_input_is_explained_and_asked_again():
    # player_1 passes on 9H (it melds with none of its cards); player_0 is offered it next.
    lines = [
        "zz",  # unreadable
        "d",  # cannot draw during the offer
        "?",  # help
        "t",  # take 9H: 7H 8H 9H
        "9H",  # may not discard the card just taken
        "QS",  # not held
        "d",  # already took a card
        "k 2D",  # leaves 10 > 9
        "k KC",  # a legal knock: 2 deadwood
    ]
    script = Script(lines)
    result = run(script, opponent="simple", episode="round", deck=deal(P0, P1, "9H"), dealer=0)
    text = script.text
    assert "player_1 passes on the upcard 9H." in text
    assert "Not allowed: cannot read 'zz'" in text
    assert "Not allowed: the upcard 9H is offered: take it (t) or pass (p)" in text
    assert "Moves:" in text
    assert "you just took 9H from the discard pile" in text
    assert "you do not hold QS" in text
    assert "you already have your card this turn" in text
    assert "knocking with 2D leaves 10 deadwood; the knock limit is 9" in text
    assert "You knock." in text
    assert "Knock: You score" in text or "Undercut: player_1 scores" in text
    assert result["finished"] and not script.lines
    assert any("you may knock with: KC" in prompt for prompt in script.prompts)


def test_drawing_shows_the_card_and_passing_is_only_for_the_offer():
    lines = ["p", "p", "d"]  # player_0 passes; then (after player_1's turn) tries to pass, then draws
    script = Script(lines)
    run(script, opponent="simple", episode="round", deck=deal(P0, P1, "KD", stock_top="4S 9D"), dealer=0)
    text = script.text
    assert "player_1 passes on the upcard KD." in text
    assert "player_1 draws from the stock." in text
    assert "passing is only for the upcard offer" in text
    assert "You draw 9D." in text


def test_the_showdown_shows_melds_layoffs_deadwood_and_points():
    script = Script(["t", "k KC"])
    run(script, opponent="simple", episode="round", deck=deal(P0, P1, "9H"), dealer=0)
    showdown = script.text.split("--- You knock. ---")[1]
    assert "You: [" in showdown and "| deadwood 2" in showdown
    assert "player_1:" in showdown and "unmelded" in showdown
    assert "Match score: you" in showdown


def test_end_of_input_leaves_the_game():
    def no_input(prompt):
        raise EOFError

    output = []
    result = play("random", seed=1, episode="round", input_fn=no_input, print_fn=output.append)
    assert not result["finished"] and output[-1] == "Game left."


def test_quit_and_penalty_with_three_players():
    script = Script(["q"])
    result = run(script, opponent="simple", seed=2, rules="penalty", num_players=3, seat=1)
    assert not result["finished"]


def test_bad_options_and_cli(monkeypatch, capsys):
    with pytest.raises(ValueError):
        Game(opponent="nobody")
    with pytest.raises(ValueError):
        Game(seat=2)
    monkeypatch.setattr("builtins.input", lambda prompt="": "q")
    assert main(["--opponent", "random", "--seed", "1"]) == 0  # left with q: the player's choice
    assert main(["--opponent", "nobody"]) == 2
    assert "okgin-play: error" in capsys.readouterr().err
    assert main(["--opponent", "random", "--rule", "gin_bonus=20", "--rule", "spade_double=true"]) == 0
    for bad, message in ((["--rule", "gin_bonus"], "expected NAME=VALUE"), (["--rule", "gin_bonus=x"], "VALUE must be"),
                         (["--rule", "gin_bonus=-1"], "gin_bonus=-1 is not allowed"),
                         (["--rule", "gin_bonus=1", "--rule", "gin_bonus=2"], "given twice"),
                         (["--rule", "target_score=50", "--target-score", "60"], "both given")):
        assert main(["--opponent", "random", *bad]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_a_policy_file_opponent_is_announced_while_it_loads(monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", lambda prompt="": "q")
    for spec in ("checkpoints/okgin_classic.pt", "pretrained:classic"):
        assert main(["--opponent", spec, "--seed", "1"]) == 0
        assert f"Loading the opponent {spec}" in capsys.readouterr().out
    # A malformed setting is refused before the announcement, and a huge spec is not echoed whole.
    assert main(["--opponent", "pretrained:classic:suit_symmetric=True,suit_symmetric=False"]) == 2
    out, err = capsys.readouterr()
    assert "Loading" not in out and "given twice" in err and err.count("\n") == 1
    assert main(["--opponent", "pretrained:classic:suit_symmetric=" + "a" * 100_000]) == 2
    out, err = capsys.readouterr()
    assert len(out) < 1_000 and len(err) < 1_000 and "suit_symmetric must be True, False or None" in err


def test_taking_from_the_pile_says_which_card():
    script = Script(["t", "k KC"])  # take the upcard 9H, then knock
    run(script, opponent="simple", episode="round", deck=deal(P0, P1, "9H"), dealer=0)
    assert "You take the upcard 9H." in script.output
    # player_1 passes on KD, player_0 passes, player_1 draws and discards; then player_0 takes that discard
    script = Script(["p", "t"])
    run(script, opponent="simple", episode="round", deck=deal(P0, P1, "KD", stock_top="4S 9D"), dealer=0)
    discarded = next(line for line in script.output if line.startswith("player_1 discards "))
    card = discarded.removeprefix("player_1 discards ").rstrip(".")
    assert f"You take {card} from the discard pile." in script.output
    assert not any(line.startswith("You takes") for line in script.output)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--seed", "-1"], "seed"),
        (["--seat", "5"], "seat"),
        (["--opponent", "search:rolouts=2"], "rolouts"),
        (["--opponent", "search:rollouts=abc"], "rollouts"),
        (["--opponent", "search:time_limit=abc"], "time_limit"),
        (["--opponent", "random:seed=3"], "seed"),
        (["--opponent", "search:rollouts=2,rollouts=3"], "rollouts"),
        (["--opponent", "missing.pt"], "missing.pt"),
        (["--target-score", "0"], "target_score"),
    ],
)
def test_bad_cli_options_exit_2_before_the_game(options, named, monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", lambda prompt="": pytest.fail("the game started"))
    assert main(options) == 2
    err = capsys.readouterr().err
    assert err.startswith("okgin-play: error: ") and named in err and "Traceback" not in err


# ----------------------------------------------------------------------------- the record on every way out (issue 42)


def answers_then(stop, moves=4):
    """Input for main(): a few moves (pass the upcard, then draw or discard the example card), then ``stop()``."""
    import re

    given = []

    def answer(prompt=""):
        if len(given) >= moves:
            return stop()  # raises, or gives the last line
        given.append(prompt)
        if "Take the upcard" in prompt:
            return "p"
        if "d = draw" in prompt:
            return "d"
        return re.search(r"e\.g\. (\S\S)", prompt).group(1)

    return answer


def ctrl_c():
    raise KeyboardInterrupt


def sigterm():
    import os
    import signal

    os.kill(os.getpid(), signal.SIGTERM)  # the handler main() installs raises here


@pytest.mark.parametrize(("stop", "code"), [(ctrl_c, 130), (sigterm, 143)], ids=["ctrl-c", "sigterm"])
def test_a_game_stopped_midway_is_still_recorded(stop, code, tmp_path, monkeypatch, capsys):
    """docs/records.md: the record is written "also when you leave it halfway", Ctrl-C included."""
    from okgin_env.records import read_records, replay

    monkeypatch.setattr("builtins.input", answers_then(stop))
    path = tmp_path / "stopped.jsonl"
    assert main(["--opponent", "simple", "--seed", "3", "--record", str(path)]) == code
    assert f"Game record written to {path}." in capsys.readouterr().out
    (record,) = read_records(path)
    assert not record.finished and record.rounds[-1]["outcome"] is None and len(record.rounds[-1]["actions"]) >= 4
    replay(record)


@pytest.mark.parametrize("returned, named", [(None, "played None"), (999, "played 999"), (1.9, "played 1.9"),
                                             ("1", "played '1'"), (KeyError("x"), "failed to move: KeyError"),
                                             (RuntimeError("boom\nmore"), "failed to move: RuntimeError: boom")])
def test_an_opponent_move_that_is_no_legal_action_id_ends_in_one_line_unannounced(returned, named, tmp_path,
                                                                                 monkeypatch, capsys):
    """A user's policy that returns None (a TypeError traceback, exit 1), a float or text (played as
    action 1, or announced before the refusal) or raises: exit 2, one line, nothing announced."""
    (tmp_path / "agent.py").write_text(
        "class Agent:\n"
        "    def act(self, observation):\n"
        f"        value = {returned!r}\n"
        "        if isinstance(value, Exception):\n"
        "            raise value\n"
        "        return value\n")
    monkeypatch.setattr("builtins.input", answers_then(lambda: "p"))
    assert main(["--opponent", f"{tmp_path / 'agent.py'}:Agent", "--seed", "1", "--seat", "1"]) == 2
    captured = capsys.readouterr()
    assert named in captured.err and captured.err.count("\n") == 1
    assert "player_0 " not in captured.out.split("Your hand")[-1]  # the refused move was not announced


def test_a_game_whose_move_fails_is_still_recorded(tmp_path, monkeypatch, capsys):
    """A terminal that fails (OSError) ends in one line, exit 2; an unexpected error is raised;
    both after the record is written."""
    from okgin_env.records import read_records

    def terminal_gone():
        raise OSError(5, "Input/output error")

    def broken():
        raise RuntimeError("a broken terminal")

    path = tmp_path / "broken.jsonl"
    monkeypatch.setattr("builtins.input", answers_then(terminal_gone))
    assert main(["--opponent", "simple", "--seed", "3", "--record", str(path)]) == 2
    assert capsys.readouterr().err == "okgin-play: error: [Errno 5] Input/output error\n"
    (record,) = read_records(path)
    assert not record.finished
    path.unlink()
    monkeypatch.setattr("builtins.input", answers_then(broken))
    with pytest.raises(RuntimeError, match="a broken terminal"):
        main(["--opponent", "simple", "--seed", "3", "--record", str(path)])
    (record,) = read_records(path)
    assert not record.finished


def test_a_record_that_cannot_be_written_is_named_in_one_line(tmp_path, monkeypatch, full_disk, capsys):
    """A full disk: the game is played, then one line names the failure (exit 2) and an old file is kept."""
    path = tmp_path / "mine.jsonl"
    path.write_text("my old games\n")
    monkeypatch.setattr("builtins.input", answers_then(lambda: "q", moves=2))
    assert main(["--opponent", "simple", "--seed", "3", "--record", str(path)]) == 2
    captured = capsys.readouterr()
    assert "Game left." in captured.out and "Game record written" not in captured.out
    assert captured.err == f"okgin-play: error: cannot write game records to {str(path)!r}: No space left on device\n"
    assert path.read_text() == "my old games\n"
    import os

    if os.path.exists("/dev/full"):
        monkeypatch.undo()
        monkeypatch.setattr("builtins.input", answers_then(lambda: "q", moves=2))
        assert main(["--opponent", "simple", "--seed", "3", "--record", "/dev/full"]) == 2
        assert capsys.readouterr().err == "okgin-play: error: cannot write game records to '/dev/full': No space left on device\n"


def test_the_knocks_offered_follow_the_hand_as_it_is_shown():
    from okgin_env.text import hand_order

    cards = [card_id(c) for c in "KS 2D 3H 4H 5H 7S 7D 7C AC QC".split()]
    order = hand_order(cards)
    assert sorted(order) == sorted(cards)
    shown = hand_text(cards)
    assert " ".join(card_str(c) for c in order) == shown.replace("[", "").replace("]", "").replace(" |", "").split("   ")[0]
