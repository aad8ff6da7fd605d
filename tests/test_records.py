"""okgin_env/records/: game records written by evaluation and terminal play replay exactly;
corrupted records are refused with the place named."""

from __future__ import annotations

import copy
import json
import os
import re

import numpy as np
import pytest
from gymnasium.utils import seeding

from okgin_env import eval_cli, play, play_cli
from okgin_env.bots import SimpleBot, make_bot
from okgin_env.evaluate import evaluate
from okgin_env.match_loop import play_match
from okgin_env.records import (
    FORMAT,
    VERSION,
    GameRecord,
    RecordMismatch,
    game_record,
    main as records_main,
    read_records,
    replay,
    replay_steps,
    write_records,
)
from okgin_env.rules.actions import DISCARD_BASE, KNOCK_BASE, PASS
from okgin_env.rules.config import make_config
from okgin_env.rules.round import RoundState

TABLES = [("classic", 2), ("penalty", 2), ("penalty", 3), ("penalty", 4)]


def evaluated(tmp_path, rules, players, matches=8, policies=("random", "simple"), **options):
    path = tmp_path / f"{rules}{players}.jsonl"
    results = evaluate(list(policies), matches=matches, rules=rules, num_players=players, seed=5,
                       progress=False, record=path, **options)  # fmt: skip
    return results, read_records(path)


@pytest.fixture(scope="module")
def penalty_4p(tmp_path_factory):
    """Records of 4-player penalty matches (random players make long rounds: reshuffles)."""
    _, records = evaluated(tmp_path_factory.mktemp("records"), "penalty", 4)
    assert any("reshuffles" in entry for record in records for entry in record.rounds)
    return records


def reshuffling(records):
    return next(r for r in records if any("reshuffles" in entry for entry in r.rounds))


# ----------------------------------------------------------------------------- evaluation


@pytest.mark.parametrize(("rules", "players"), TABLES)
def test_every_round_of_an_evaluation_replays(tmp_path, rules, players):
    results, records = evaluated(tmp_path, rules, players, matches=12)
    assert len(records) == len(results.records) == 12  # every game a line, mirrored deals apart
    for index, (record, result) in enumerate(zip(records, results.records)):
        assert record.format == FORMAT and record.version == VERSION
        assert record.env["rules"] == rules and record.env["num_players"] == players
        assert record.env["episode"] == "match" and record.env["max_rounds"] == 200
        a_seat = record.extras["evaluation"]["a_seat"]
        assert record.players == ["random" if s == a_seat else "simple" for s in range(players)]
        assert record.scores == result["scores"] == record.rounds[-1]["scores_after"]
        assert len(record.rounds) == result["rounds"]
        outcomes = replay(record, game=index)
        assert len(outcomes) == len(record.rounds)
        assert [o.kind for o in outcomes] == [entry["outcome"]["kind"] for entry in record.rounds]
    # The games of a mirrored deal start from the same deal.
    by_deal = {}
    for record in records:
        by_deal.setdefault(record.extras["evaluation"]["deal"], []).append(record.rounds[0]["deck"])
    assert all(len(decks) == players and all(d == decks[0] for d in decks) for decks in by_deal.values())


def test_rounds_with_stock_reshuffles_replay(penalty_4p):
    for index, record in enumerate(penalty_4p):
        replay(record, game=index)
    record = reshuffling(penalty_4p)
    entry = next(e for e in record.rounds if "reshuffles" in e)
    assert all(len(order) == len(set(order)) > 0 for order in entry["reshuffles"])


def test_one_round_episodes_truncated_matches_and_workers(tmp_path):
    _, records = evaluated(tmp_path, "classic", 2, matches=4, episode="round")
    assert all(len(r.rounds) == 1 and r.env["episode"] == "round" for r in records)
    _, records = evaluated(tmp_path, "penalty", 3, matches=3, max_rounds=1, workers=2)
    assert sum(r.extras["truncated"] for r in records) >= 1
    for index, record in enumerate(records):
        replay(record, game=index)


def test_okgin_eval_record(tmp_path, capsys):
    path = tmp_path / "games.jsonl"
    args = ["simple", "random", "--matches", "4", "--rules", "penalty", "--num-players", "2", "--no-progress"]
    assert eval_cli.main([*args, "--record", str(path)]) == 0
    assert f"wrote {path} (4 game records)" in capsys.readouterr().out
    records = read_records(path)
    assert len(records) == 4 and all(len(json.dumps(r.to_dict())) > 100 for r in records)
    for index, record in enumerate(records):
        replay(record, game=index)


@pytest.mark.parametrize("where", ["file/games.jsonl", ".", "folder/"])
def test_okgin_eval_refuses_a_bad_record_path_before_any_game(tmp_path, monkeypatch, capsys, where):
    monkeypatch.setattr("okgin_env.evaluate.play_game", lambda task: pytest.fail("a game was played"))
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("")  # a path through a file: its folder cannot be made
    path = tmp_path / where if where != "folder/" else f"{tmp_path}/folder/"
    assert eval_cli.main(["simple", "random", "--matches", "2", "--no-progress", "--record", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("okgin-eval: error: cannot write game records to ") and "Traceback" not in err


# ----------------------------------------------------------------------------- terminal play


def bot_input(game_holder, seed=0):
    """A human stand-in that answers every prompt with a simple bot's move, in the play words."""
    from okgin_env.rules.actions import action_str

    bot = SimpleBot(seed=seed)

    def answer(prompt=""):
        game = game_holder[0]
        name = action_str(bot.act(game.env.observe(game.human)))
        short = {"draw stock": "d", "take discard": "t", "pass": "p"}.get(name)
        if short:
            return short
        word, card = name.split()
        return f"k {card}" if word == "knock" else card

    return answer


def test_a_played_match_replays(tmp_path):
    holder = []
    game = play.Game(opponent="simple", seed=3, rules="penalty", num_players=3, seat=1, target_score=60,
                     input_fn=bot_input(holder), print_fn=lambda *parts: None)  # fmt: skip
    holder.append(game)
    assert game.run()["finished"]
    record = game.record()
    assert record.players == ["simple", "human", "simple"] and record.extras["seed"] == 3
    assert record.finished and record.extras["winner"] == game.env.match.winner
    assert len(record.rounds) == game.env.match.rounds_played >= 2
    write_records(tmp_path / "play.jsonl", [record])
    (again,) = read_records(tmp_path / "play.jsonl")
    assert again.to_dict() == record.to_dict()
    replay(again)


def test_okgin_play_record_of_a_whole_match(tmp_path, monkeypatch, capsys):
    def answer(prompt=""):  # the words a player types: pass the upcard, draw, knock when one may
        if "Take the upcard" in prompt:
            return "p"
        if "d = draw" in prompt:
            return "d"
        knock = re.search(r"you may knock with: (\S+)", prompt)
        return f"k {knock.group(1)}" if knock else re.search(r"e\.g\. (\S\S)", prompt).group(1)

    monkeypatch.setattr("builtins.input", answer)
    path = tmp_path / "mine.jsonl"
    assert play_cli.main(["--opponent", "simple", "--seed", "4", "--target-score", "40", "--record", str(path)]) == 0
    assert f"Game record written to {path}." in capsys.readouterr().out
    (record,) = read_records(path)
    assert record.players == ["human", "simple"] and record.env["target_score"] == 40
    assert record.finished and max(record.scores) >= 40
    replay(record)


def test_okgin_play_record_of_a_game_left_midway(tmp_path, monkeypatch):
    answers = iter(["p", "d"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers, "q"))
    path = tmp_path / "left.jsonl"
    assert play_cli.main(["--opponent", "random", "--seed", "2", "--record", str(path)]) == 0  # left with q: the player's choice
    (record,) = read_records(path)
    assert not record.finished and record.rounds[-1]["outcome"] is None
    assert record.rounds[-1]["scores_after"] == record.scores == [0, 0]
    assert len(record.rounds[-1]["actions"]) >= 2
    replay(record)
    steps = list(replay_steps(record))
    assert not steps[-1].state.is_over and steps[-1].outcome is None
    data = record.to_dict()
    data["finished"] = True
    with pytest.raises(ValueError, match=r"rounds\[0\]\.outcome"):
        GameRecord.from_dict(data)


def test_okgin_play_refuses_a_bad_record_path_before_the_game(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", lambda prompt="": pytest.fail("the game started"))
    (tmp_path / "file").write_text("")
    assert play_cli.main(["--record", str(tmp_path / "file" / "game.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("okgin-play: error: cannot write game records to ") and "is not a folder" in err
    assert err.count("\n") == 1


def test_record_paths_get_their_folder_as_out_does(tmp_path):
    from okgin_env.records import check_record_path

    path = tmp_path / "new" / "deeper" / "games.jsonl"
    assert check_record_path(path) == str(path)
    assert path.parent.is_dir() and not path.exists()
    from okgin_env.evaluate import evaluate

    results = evaluate(["simple", "random"], matches=2, progress=False,
                       record=tmp_path / "out" / "eval.jsonl")
    assert len(results.records) == 2 and (tmp_path / "out" / "eval.jsonl").read_text().count("\n") == 2


# ----------------------------------------------------------------------------- corrupted records


@pytest.fixture(scope="module")
def classic(tmp_path_factory):
    """A classic record of several rounds (its data as a plain dict)."""
    _, records = evaluated(tmp_path_factory.mktemp("classic"), "classic", 2, matches=2, policies=("simple", "simple"))
    record = next(r for r in records if len(r.rounds) >= 3)
    replay(record)
    return record.to_dict()


def mismatch(data, game=0) -> RecordMismatch:
    with pytest.raises(RecordMismatch) as caught:
        replay(GameRecord.from_dict(data), game=game)
    return caught.value


def test_an_illegal_action_is_named(classic):
    data = copy.deepcopy(classic)
    actions = data["rounds"][1]["actions"]
    k = next(i for i, a in enumerate(actions) if a >= DISCARD_BASE and i > 3)
    actions[k] = PASS  # never legal while discarding
    error = mismatch(data, game=7)
    assert (error.game_index, error.round_index, error.action_index) == (7, 1, k)
    assert str(error).startswith(f"game 7, round 1, action {k}: action 2 (pass) is not legal for player ")


def test_another_legal_action_is_found_by_the_round_s_end(classic):
    data = copy.deepcopy(classic)
    entry = data["rounds"][0]
    replayed = list(replay_steps(GameRecord.from_dict(data)))
    k = next(i for i, a in enumerate(entry["actions"]) if DISCARD_BASE <= a < KNOCK_BASE)
    state = replayed[k].state  # before action k
    other = next(a for a in state.legal_actions() if DISCARD_BASE <= a < KNOCK_BASE and a != entry["actions"][k])
    entry["actions"][k] = other
    error = mismatch(data)
    assert error.round_index == 0 and error.action_index >= k


def test_a_wrong_deck_is_found(classic):
    data = copy.deepcopy(classic)
    deck = data["rounds"][2]["deck"]
    deck[0], deck[1] = deck[1], deck[0]  # two cards change hands
    assert mismatch(data).round_index == 2
    deck[1] = deck[0]
    with pytest.raises(ValueError, match=r"field rounds\[2\]\.deck: not a permutation of the card ids 0\.\.51; missing"):
        GameRecord.from_dict(data)


@pytest.mark.parametrize(
    ("change", "where", "words"),
    [
        (lambda d: d["rounds"][1]["scores_after"].__setitem__(0, 1 + d["rounds"][1]["scores_after"][0]), (1, -1), "scores_after"),
        (lambda d: d["rounds"][0]["outcome"].__setitem__("kind", "draw"), (0, -1), "outcome kind"),
        (lambda d: d["rounds"][1].__setitem__("dealer", 1 - d["rounds"][1]["dealer"]), (1, None), "dealer"),
        (lambda d: d["rounds"][1]["actions"].pop(), (1, -1), "not over after its"),
        (lambda d: d["rounds"][1]["actions"].append(0), (1, -1), "the round ended at action"),
        (lambda d: d.__setitem__("scores", [s + 1 for s in d["scores"]]), (-1, -1), "final scores"),
        (lambda d: d.__setitem__("winner", 1 - d["winner"]), (-1, -1), "winner"),
        (lambda d: d["rounds"].pop(), (-1, -1), "the match goes on"),
        (lambda d: d["rounds"].append(copy.deepcopy(d["rounds"][-1])), (-1, None), "the game ended after round"),
    ],
)
def test_a_corrupted_record_names_the_first_difference(classic, change, where, words):
    data = copy.deepcopy(classic)
    change(data)
    error = mismatch(data)
    rounds = len(data["rounds"])
    round_index = where[0] % rounds
    actions = len(data["rounds"][round_index]["actions"])
    action_index = None if where[1] is None else where[1] % actions
    assert (error.round_index, error.action_index) == (round_index, action_index), str(error)
    assert words in str(error)
    assert str(error).startswith(f"game 0, round {round_index}")


def test_a_reshuffle_order_is_checked(penalty_4p):
    data = reshuffling(penalty_4p).to_dict()
    r = next(i for i, e in enumerate(data["rounds"]) if "reshuffles" in e)
    del data["rounds"][r]["reshuffles"]
    error = mismatch(data)
    assert error.round_index == r and "reshuffled (1. time), but the record gives 0" in str(error)
    assert data["rounds"][r]["actions"][error.action_index] >= DISCARD_BASE  # the discard that emptied the stock
    data = reshuffling(penalty_4p).to_dict()
    data["rounds"][r]["reshuffles"][0][0] = next(c for c in range(52) if c not in data["rounds"][r]["reshuffles"][0])
    assert "the discard pile under its top holds" in str(mismatch(data))


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("{not json", "line 2: not valid JSON"),
        ("[1, 2]", "line 2: a record is a JSON object"),
        ('{"format": "okgin.game", "version": 2}', "line 2: field version: this okgin reads version 1, got 2; a newer okgin"),
        ('{"format": "other", "version": 1}', "line 2: field format: expected 'okgin.game'"),
    ],
)
def test_malformed_lines_are_refused_with_the_line_named(tmp_path, classic, line, words):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(classic) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, {words}")):
        read_records(path)


def test_a_truncated_file_is_refused(tmp_path, classic):
    path = tmp_path / "cut.jsonl"
    text = json.dumps(classic) + "\n"
    path.write_text(text + text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"line 2: not valid JSON: .* \(column \d+\); a truncated line\?"):
        read_records(path)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d["rounds"][0].__setitem__("dealer", "0"), r"rounds\[0\]\.dealer: expected an int in 0\.\.1"),
        (lambda d: d["rounds"][0]["actions"].__setitem__(3, 107), r"rounds\[0\]\.actions\[3\]: expected an int in 0\.\.106"),
        (lambda d: d["rounds"][0]["actions"].__setitem__(0, 1.0), r"rounds\[0\]\.actions\[0\]"),
        (lambda d: d["rounds"][1]["deck"].pop(), r"rounds\[1\]\.deck: expected 52 entries, got 51"),
        (lambda d: d["rounds"][1].pop("scores_after"), r"rounds\[1\]\.scores_after: missing"),
        (lambda d: d.__setitem__("players", ["simple"]), r"players: expected a list of 2 names"),
        (lambda d: d.__setitem__("scores", [True, 0]), r"scores\[0\]"),
        (lambda d: d["env"].__setitem__("gin_bonus", -1), r"env: gin_bonus=-1 is not allowed"),
        (lambda d: d["env"].__setitem__("rules", "poker"), r"env\.rules: expected one of classic, standard, penalty"),
        (lambda d: d["env"].__setitem__("joker", True), r"env: unknown option\(s\) \['joker'\] \(from a newer okgin\?\)"),
        (lambda d: d.__setitem__("rounds", []), r"rounds: expected a non-empty list"),
        (lambda d: d.__setitem__("finished", "yes"), r"finished: expected true or false"),
    ],
)
def test_wrong_types_name_the_field(classic, change, field):
    data = copy.deepcopy(classic)
    change(data)
    with pytest.raises(ValueError, match="field " + field):
        GameRecord.from_dict(data)


# ----------------------------------------------------------------------------- writing and reading


def test_round_trip_append_and_a_bad_record_writes_nothing(tmp_path, classic, penalty_4p):
    path = tmp_path / "games.jsonl"
    records = [GameRecord.from_dict(classic), *penalty_4p[:2]]
    assert write_records(path, records) == 3
    assert [r.to_dict() for r in read_records(path)] == [r.to_dict() for r in records]
    assert write_records(path, [classic], append=True) == 1
    assert len(read_records(path)) == 4 and path.read_text().count("\n") == 4
    before = path.read_bytes()
    broken = copy.deepcopy(classic)
    broken["rounds"][0]["dealer"] = 9
    with pytest.raises(ValueError, match=r"record 1: field rounds\[0\]\.dealer"):
        write_records(path, [classic, broken])
    assert path.read_bytes() == before
    extras = GameRecord.from_dict({**classic, "note": {"by": "me"}, "seed": np.int64(3)})
    write_records(path, [extras])
    assert read_records(path)[0].extras["note"] == {"by": "me"} and read_records(path)[0].extras["seed"] == 3


def test_the_records_command(tmp_path, classic, capsys):
    path = tmp_path / "games.jsonl"
    write_records(path, [classic, classic])
    assert records_main([str(path)]) == 0
    assert "2 games" in capsys.readouterr().out
    broken = copy.deepcopy(classic)
    broken["rounds"][1]["scores_after"] = [0, 0]
    write_records(path, [classic, broken])
    assert records_main([str(path)]) == 1
    assert ": game 1, round 1, action " in capsys.readouterr().err
    path.write_text("{\n")
    assert records_main([str(path)]) == 2 and "line 1: not valid JSON" in capsys.readouterr().err


def test_a_record_of_a_given_deck_keeps_it():
    config = make_config("classic")
    deck = list(range(51, -1, -1))
    rounds = []
    rng, _ = seeding.np_random(1)
    result = play_match(config, [make_bot("simple", seed=1), make_bot("simple", seed=2)], rng, deck=deck, dealer=1,
                        on_round=lambda match, outcome: rounds.append(match.round))  # fmt: skip
    record = game_record(config, ["a", "b"], rounds, result.scores, winner=result.winner)
    assert record.rounds[0]["deck"] == deck and record.rounds[0]["dealer"] == 1
    assert len(rounds) == result.rounds and all(state.is_over for state in rounds)
    assert [state.outcome for state in rounds] == result.outcomes
    replay(record)


# ----------------------------------------------------------------------------- replay_steps


def test_replay_steps_show_every_state(penalty_4p):
    record = reshuffling(penalty_4p)
    steps = list(replay_steps(record, game=3))
    n = record.env["num_players"]
    assert len(steps) == sum(len(entry["actions"]) + 1 for entry in record.rounds)
    scores = [0] * n
    for r, entry in enumerate(record.rounds):
        round_steps = [s for s in steps if s.round_index == r]
        assert [s.step_index for s in round_steps] == list(range(len(entry["actions"]) + 1))
        assert [s.action for s in round_steps] == [None, *entry["actions"]]
        assert round_steps[0].seat is None and list(round_steps[0].state.deck) == entry["deck"]
        for step in round_steps:
            state = step.state
            assert state.cards_accounted() == 52 and step.scores_before == scores
            assert len(state.history) == step.step_index
            if step.action is not None:
                assert state.history[-1] == (step.seat, step.action)
            assert (step.outcome is not None) == (step.step_index == len(entry["actions"]))
        sizes = [len(round_steps[0].state.hand(seat)) for seat in range(n)]
        assert sizes == [7] * n  # every hand visible
        final = round_steps[-1]
        assert final.state.is_over and final.outcome.points == entry["outcome"]["points"]
        scores = [s + p for s, p in zip(scores, final.outcome.points)]
        assert scores == entry["scores_after"]
    # Each state is a copy: the first deal is still the first deal.
    assert len(steps[0].state.history) == 0 and steps[0].state.stock != steps[-1].state.stock
    assert any(s.state.reshuffles for s in steps)


def test_the_round_state_keeps_its_deck_and_reshuffles():
    config = make_config("penalty", num_players=4)
    rng = np.random.default_rng(4)
    deck = rng.permutation(52).tolist()
    state = RoundState(config, deck, 0, rng)
    assert state.deck == tuple(deck)
    play_rng = np.random.default_rng(0)
    drawn_after = {}
    while not state.is_over:
        legal = [a for a in state.legal_actions() if a < KNOCK_BASE]
        before = state.reshuffles
        state.apply(int(play_rng.choice(legal)))
        if state.reshuffles > before:
            drawn_after[before] = list(reversed(state.stock))  # the stock, next card first
            copy_ = state.copy()
            assert copy_.reshuffle_orders == state.reshuffle_orders
    assert len(state.reshuffle_orders) == state.reshuffles > 0
    for k, order in enumerate(state.reshuffle_orders):
        stock = drawn_after[k]
        assert stock[len(stock) - len(order):] == list(order)  # after the cards left in the stock
    parts = RoundState.from_parts(config, hands=state.hands, stock=[], discard_pile=[], upcard=0, dealer=0,
                                  current=0, phase=state.phase, validate=False)  # fmt: skip
    assert parts.deck is None and parts.reshuffle_orders == ()


def test_match_end_bonuses_count_in_the_last_round_s_totals(tmp_path):
    _, records = evaluated(tmp_path, "classic", 2, matches=2, box_bonus=25, game_bonus=100)
    for index, record in enumerate(records):
        replay(record, game=index)
        round_points = [sum(e["outcome"]["points"][s] for e in record.rounds) for s in range(2)]
        assert record.rounds[-1]["scores_after"] == record.scores != round_points  # the bonuses are in


def test_a_stopped_evaluation_writes_the_games_that_finished(tmp_path):
    from okgin_env.evaluate import EvaluationInterrupted

    class StopsLater:
        """Plays as `simple`, then stops the run as Ctrl-C would, after 400 decisions."""

        def __init__(self):
            self.bot, self.decisions = SimpleBot(seed=0), 0

        def act(self, observation):
            self.decisions += 1
            if self.decisions > 400:
                raise KeyboardInterrupt
            return self.bot.act(observation)

    path = tmp_path / "stopped.jsonl"
    with pytest.raises(EvaluationInterrupted) as stop:
        evaluate({"stops": StopsLater(), "simple": "simple"}, matches=20, progress=False, record=path)
    finished = stop.value.results.records
    records = read_records(path)
    assert 0 < len(records) == len(finished) < 20
    assert [r.scores for r in records] == [game["scores"] for game in finished]
    assert all(r.players[r.extras["evaluation"]["a_seat"]] == "StopsLater" for r in records)
    for index, record in enumerate(records):
        replay(record, game=index)


# ----------------------------------------------------------------------------- hostile files (issue 42)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(("depth", "words"), [(2000, "JSON nested too deeply to read"),
                                              (500, "field note: nests lists and objects more than 100 levels deep")])
def test_deep_nesting_is_refused_with_the_line_named(tmp_path, classic, capsys, depth, words):
    """A line nested 2,000 deep, or a record with an extra nested 500 deep (~1 KB): a ValueError
    naming the file and line (the web's upload reads through it), exit 2 from the command."""
    path = tmp_path / "deep.jsonl"
    line = json.dumps(classic)[:-1] + ', "note": ' + nested(depth) + "}"
    path.write_text(json.dumps(classic) + "\n" + line + "\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 2: {words}")):
        read_records(path)
    assert records_main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}, line 2: {words}" in err
    deep = {**classic, "note": json.loads(nested(500))}
    with pytest.raises(ValueError, match=r"record 1: field note: nests lists and objects more than 100"):
        write_records(tmp_path / "out.jsonl", [classic, deep])
    with pytest.raises(ValueError, match=r"field rounds\[0\]\.note: nests"):  # a round's own extra field too
        GameRecord.from_dict({**classic, "rounds": [{**classic["rounds"][0], "note": json.loads(nested(500))}]})
    assert not (tmp_path / "out.jsonl").exists()


def test_a_number_of_more_than_4300_digits_names_the_line(tmp_path, classic):
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps(classic) + "\n" + json.dumps(classic)[:-1] + ', "seed": ' + "9" * 5000 + "}\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 2: a number of more than 4300 digits")):
        read_records(path)


def test_an_endless_or_huge_file_is_refused(tmp_path, classic, monkeypatch, capsys):
    """/dev/zero is one endless line: refused once a line passes MAX_LINE_BYTES, not read into memory."""
    monkeypatch.setattr("okgin_env.records.files.MAX_LINE_BYTES", 2**20)
    if os.path.exists("/dev/zero"):
        with pytest.raises(ValueError, match=r"^/dev/zero, line 1: longer than 1,048,576 bytes, the most a record line"):
            read_records("/dev/zero")
        assert records_main(["/dev/zero"]) == 2 and capsys.readouterr().err.count("\n") == 1
    path = tmp_path / "big.jsonl"
    path.write_text((json.dumps(classic) + "\n") * 3)
    monkeypatch.setattr("okgin_env.records.files.MAX_FILE_BYTES", path.stat().st_size - 1)
    with pytest.raises(ValueError, match=r"big\.jsonl: \d[\d,]* bytes; a record file may hold at most"):
        read_records(path)


HAND_BUILT = [
    (lambda r: setattr(r, "rounds", []), None, None, r"field rounds: expected a non-empty list"),
    (lambda r: r.rounds[1].pop("actions"), 1, None, r"field rounds\[1\]\.actions: missing"),
    (lambda r: r.rounds[0]["actions"].__setitem__(2, "1"), 0, 2, r"field rounds\[0\]\.actions\[2\]: expected an int"),
    (lambda r: r.rounds[2]["actions"].__setitem__(4, 999), 2, 4, r"actions\[4\]: expected an int in 0\.\.106, got 999"),
    (lambda r: setattr(r, "extras", ["not", "a", "dict"]), None, None, r"not a record"),
]


@pytest.mark.parametrize(("change", "round_index", "action", "words"), HAND_BUILT)
def test_a_record_built_by_hand_is_checked_by_the_replay(classic, change, round_index, action, words):
    """A GameRecord made without from_dict (or changed after) is checked when replayed: a
    RecordMismatch naming game, round and action, not an IndexError, KeyError or TypeError."""
    record = GameRecord(**{k: copy.deepcopy(v) for k, v in vars(GameRecord.from_dict(classic)).items()})
    change(record)
    for run in (lambda: replay(record, game=3), lambda: list(replay_steps(record, game=3))):
        with pytest.raises(RecordMismatch, match=words) as caught:
            run()
        error = caught.value
        assert (error.game_index, error.round_index, error.action_index) == (3, round_index, action)
        assert str(error).startswith("game 3")


def test_a_failed_write_leaves_the_file_as_it_was(tmp_path, classic, monkeypatch):
    """Records are written beside the file and renamed over it: a full disk changes nothing."""
    path = tmp_path / "games.jsonl"
    write_records(path, [classic])
    path.chmod(0o640)
    before = path.read_bytes()

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("okgin_env.records.files.os.fsync", disk_full)
    for append in (False, True):
        with pytest.raises(OSError, match=r"cannot write game records to .*games\.jsonl'?: No space left on device"):
            write_records(path, [classic, classic], append=append)
        assert path.read_bytes() == before and os.listdir(tmp_path) == ["games.jsonl"]
    monkeypatch.undo()
    assert write_records(path, [classic], append=True) == 1 and len(read_records(path)) == 2
    assert path.stat().st_mode & 0o777 == 0o640  # the replaced file keeps its permissions
    if os.path.exists("/dev/full"):  # a device is written in place, and its failure named
        with pytest.raises(OSError, match=r"cannot write game records to '/dev/full': No space left on device"):
            write_records("/dev/full", [classic])


def test_write_records_makes_a_missing_folder(tmp_path):
    rng, _ = seeding.np_random(7)
    config = make_config("classic")
    rounds = []
    result = play_match(config, [make_bot("simple", seed=1), make_bot("random", seed=2)], rng,
                        on_round=lambda match, outcome: rounds.append(match.round))
    record = game_record(config, ["simple", "random"], rounds, result.scores, winner=result.winner,
                         truncated=result.truncated, seed=7)
    path = tmp_path / "new" / "deeper" / "games.jsonl"
    assert write_records(path, [record]) == 1
    (read,) = read_records(path)
    replay(read)
    (tmp_path / "plain").write_text("")
    with pytest.raises(OSError, match="cannot write game records to"):
        write_records(tmp_path / "plain" / "games.jsonl", [record])  # a file where the folder should be


# ----------------------------------------------------------------------------- probe 5


def test_json_has_no_nan_or_infinity_so_records_hold_none(classic, tmp_path):
    record = GameRecord.from_dict(classic)
    record.extras["note"] = float("nan")
    path = tmp_path / "nan.jsonl"
    with pytest.raises(ValueError, match="record 0: a number is NaN or infinite, which JSON cannot hold"):
        write_records(path, [record])
    assert not path.exists()
    line = json.dumps({**classic, "note": 0})
    for text, message in (("NaN", "NaN is no JSON number"), ("-Infinity", "-Infinity is no JSON number"),
                          ("1e999", "1e999 is too large for a number")):
        path.write_text(line.replace('"note": 0', f'"note": {text}') + "\n")
        with pytest.raises(ValueError, match=f"line 1: {re.escape(message)}"):
            read_records(path)


def test_append_ends_a_last_line_left_without_its_newline(classic, tmp_path):
    path = tmp_path / "edited.jsonl"
    path.write_text(json.dumps(classic))  # edited by hand: no final newline
    assert write_records(path, [classic], append=True) == 1
    assert len(read_records(path)) == 2
    assert write_records(path, [classic], append=True) == 1 and len(read_records(path)) == 3


def test_one_record_instead_of_a_list_and_extras_named_like_fields_are_refused(classic, tmp_path):
    path = tmp_path / "one.jsonl"
    for one in (classic, GameRecord.from_dict(classic)):
        with pytest.raises(ValueError, match="got a single record: write \\[record\\]"):
            write_records(path, one)
    record = GameRecord.from_dict(classic)
    record.extras["scores"] = [0, 100]
    with pytest.raises(ValueError, match=r"extras \['scores'\] are named like a record's own fields"):
        write_records(path, [record])
    assert not path.exists()


def test_an_unfinished_game_claims_no_winner(classic, tmp_path, capsys):
    data = copy.deepcopy(classic)
    data["rounds"][-1]["actions"] = data["rounds"][-1]["actions"][:3]
    data["rounds"][-1].pop("outcome", None)
    data["rounds"][-1]["scores_after"] = data["rounds"][-2]["scores_after"]
    data.update(finished=False, winner=None, truncated=False, scores=data["rounds"][-2]["scores_after"])
    replay(GameRecord.from_dict(data))
    for key, value in (("winner", 1), ("truncated", True)):
        assert f"{key} {value!r} recorded, " in str(mismatch({**data, key: value}))


def test_the_checker_goes_through_every_file_and_refuses_an_empty_one(classic, tmp_path, capsys):
    good, empty, bad = tmp_path / "good.jsonl", tmp_path / "empty.jsonl", tmp_path / "bad.jsonl"
    write_records(good, [classic])
    empty.write_text("")
    bad.write_text("{}\n")
    assert records_main([str(good), str(empty), str(good)]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("every one replays exactly") == 2 and "no game records in it" in captured.err
    assert records_main([str(bad), str(good)]) == 2
    assert capsys.readouterr().out.count("every one replays exactly") == 1


def test_a_named_pipe_nobody_writes_to_reads_as_empty_and_one_with_data_as_usual(classic, tmp_path, capsys):
    """Probe 5: the checker waited without end on a named pipe that nobody opened for writing."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert read_records(fifo) == []
    assert records_main([str(fifo)]) == 1 and "no game records in it" in capsys.readouterr().err
    holder = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # keeps the pipe's data while the writer comes and goes
    try:
        with open(fifo, "wb") as pipe:
            pipe.write((json.dumps(classic) + "\n").encode())
        assert [record.to_dict() for record in read_records(fifo)] == [classic]
    finally:
        os.close(holder)
