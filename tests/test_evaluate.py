"""okgin_env/evaluate.py: intervals, mirrored deals, reproducibility, policy specs and the CLI."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import types

import pytest
from gymnasium.utils import seeding

import okgin_env
from okgin_env.bots import SimpleBot
from okgin_env.evaluate import (
    EvalResults,
    evaluate,
    main,
    make_tasks,
    parse_spec,
    play_game,
    wilson_interval,
)
from okgin_env.rules.match import MatchState

QUICK = {"episode": "round", "progress": False}


def strip_timing(records):
    return [{k: v for k, v in rec.items() if not k.startswith("seconds")} for rec in records]


# ----------------------------------------------------------------------------- statistics


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        (50, 100, 0.403832, 0.596168),  # textbook values for p = 0.5, n = 100
        (0, 10, 0.0, 0.277533),  # z^2 / (n + z^2)
        (10, 10, 0.722467, 1.0),
    ],
)
def test_wilson_interval_known_values(successes, trials, low, high):
    assert wilson_interval(successes, trials) == pytest.approx((low, high), abs=1e-6)


@pytest.mark.parametrize(("successes", "trials"), [(1, 2), (3, 7), (81, 263), (120, 200), (999, 1000)])
def test_wilson_interval_is_where_the_score_test_is_on_the_edge(successes, trials):
    """Wilson's interval: the p with (p_hat - p)^2 = z^2 p (1 - p) / n, the roots of a quadratic."""
    z2 = 1.959963984540054**2
    n, p_hat = trials, successes / trials
    a, b, c = 1 + z2 / n, -(2 * p_hat + z2 / n), p_hat * p_hat
    root = math.sqrt(b * b - 4 * a * c)
    assert wilson_interval(successes, trials) == pytest.approx(((-b - root) / (2 * a), (-b + root) / (2 * a)))


def test_wilson_interval_edge_cases():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(5, 4)


def test_parse_spec():
    assert parse_spec("search") == ("search", {})
    assert parse_spec("search:rollouts=64,opponent_model=uniform") == (
        "search",
        {"rollouts": 64, "opponent_model": "uniform"},
    )
    with pytest.raises(ValueError):
        parse_spec("search:rollouts")


# ----------------------------------------------------------------------------- fairness


def test_every_deal_is_played_from_both_seats():
    config = okgin_env.make_config("classic")
    tasks = make_tasks([("a", "simple"), ("b", "random")], 6, config, "match", seed=4)
    assert len(tasks) == 6
    for first, second in zip(tasks[::2], tasks[1::2]):
        assert first.env_seed == second.env_seed and first.deal == second.deal
        assert (first.a_seat, second.a_seat) == (0, 1)
        assert first.specs == ["simple", "random"] and second.specs == ["random", "simple"]
    assert len({t.env_seed for t in tasks}) == 3


def test_games_deal_like_env_reset_with_the_same_seed():
    config = okgin_env.make_config("classic")
    task = make_tasks([("a", "simple"), ("b", "simple")], 2, config, "round", seed=9)[0]
    env = okgin_env.env(episode="round")
    env.reset(seed=task.env_seed)
    rng, _ = seeding.np_random(task.env_seed)
    match = MatchState(config, rng)
    assert env.unwrapped.dealer == f"player_{match.round.dealer}"
    for seat in range(2):
        assert env.unwrapped.hand(f"player_{seat}") == match.round.hand(seat)
    assert env.unwrapped.discard_pile == match.round.discard_pile


def test_three_players_play_each_deal_with_a_in_every_seat():
    results = evaluate(["simple", "random"], matches=3, rules="penalty", num_players=3, seed=1, **QUICK)
    assert [rec["a_seat"] for rec in results.records] == [0, 1, 2]
    pair = results.pairs[0]
    assert pair.games == 3 and pair.wins_a + pair.wins_b + pair.draws == 3


# ----------------------------------------------------------------------------- results


def test_results_are_reproducible_for_a_seed():
    first = evaluate(["simple", "random"], matches=6, seed=5, **QUICK)
    second = evaluate(["simple", "random"], matches=6, seed=5, **QUICK)
    assert strip_timing(first.records) == strip_timing(second.records)
    other = evaluate(["simple", "random"], matches=6, seed=6, **QUICK)
    assert strip_timing(other.records) != strip_timing(first.records)


def test_worker_processes_give_the_same_results():
    inline = evaluate(["simple", "search:rollouts=4"], matches=4, seed=2, workers=1, **QUICK)
    pooled = evaluate(["simple", "search:rollouts=4"], matches=4, seed=2, workers=2, **QUICK)
    assert strip_timing(inline.records) == strip_timing(pooled.records)


def test_pair_statistics_add_up():
    results = evaluate(["simple", "random"], matches=10, seed=0, **QUICK)
    pair = results.pair("simple", "random")
    records = results.records
    assert pair.games == 10 == len(records)
    assert pair.wins_a + pair.wins_b + pair.draws == pair.games
    decided = pair.wins_a + pair.wins_b
    assert (pair.ci_low, pair.ci_high) == wilson_interval(pair.wins_a, decided)
    assert pair.rounds == 10  # one round per game
    assert pair.points_per_round_a == pytest.approx(sum(r["a_points"] for r in records) / 10)
    rates = pair.gin_rate_a + pair.gin_rate_b + pair.knock_rate_a + pair.knock_rate_b
    rates += pair.undercut_rate_a + pair.undercut_rate_b + pair.draw_rate
    assert rates == pytest.approx(1.0)
    assert pair.decisions_per_game_a > 0 and pair.ms_per_decision_a >= 0
    assert pair.win_rate_a >= 0.5  # simple knocks, random almost never does


def test_round_draws_are_counted_apart():
    results = evaluate(["random", "random"], matches=6, seed=0, **QUICK)
    pair = results.pairs[0]
    assert pair.a == "random" and pair.b == "random#2"
    assert pair.draws >= 1  # random play mostly reaches the wall
    assert pair.draw_rate == pytest.approx(pair.draws / pair.rounds)
    if pair.wins_a + pair.wins_b == 0:
        assert math.isnan(pair.win_rate_a) and (pair.ci_low, pair.ci_high) == (0.0, 1.0)


def test_full_matches_always_have_a_winner():
    results = evaluate(["simple", "random"], matches=2, seed=0, progress=False, target_score=30)
    pair = results.pairs[0]
    assert pair.draws == 0 and pair.wins_a + pair.wins_b == 2
    for rec in results.records:
        assert max(rec["scores"]) >= 30


def test_round_robin_has_every_pair():
    results = evaluate({"r": "random", "s": "simple", "t": SimpleBot}, matches=2, seed=0, **QUICK)
    assert [(p.a, p.b) for p in results.pairs] == [("r", "s"), ("r", "t"), ("s", "t")]
    assert "s vs t" in results.table()


def test_policy_specs_factories_objects_and_checkpoints(tmp_path, monkeypatch):
    seeds = []

    def factory(seed):
        seeds.append(seed)
        return SimpleBot(seed=seed)

    evaluate([factory, SimpleBot(seed=1)], matches=2, seed=0, **QUICK)
    assert len(seeds) == 2 and seeds[0] != seeds[1]

    checkpoint = tmp_path / "policy.pt"
    checkpoint.write_bytes(b"not really a checkpoint")
    fake = types.ModuleType("training.policy")
    loaded = []
    fake.load_policy = lambda path: loaded.append(path) or SimpleBot(seed=0)
    monkeypatch.setitem(sys.modules, "training.policy", fake)
    results = evaluate([str(checkpoint), "random"], matches=2, seed=0, **QUICK)
    assert loaded == [str(checkpoint)]  # loaded once, cached
    assert results.pairs[0].a == str(checkpoint)

    monkeypatch.setitem(sys.modules, "training.policy", None)  # import fails
    monkeypatch.setattr("okgin_env.evaluate._CHECKPOINTS", {})
    with pytest.raises(ImportError, match="training.policy.load_policy is not importable"):
        evaluate([str(checkpoint), "random"], matches=2, **QUICK)
    with pytest.raises(FileNotFoundError):
        evaluate([str(tmp_path / "missing.pt"), "random"], matches=2, **QUICK)


def test_bad_arguments_fail_early():
    with pytest.raises(ValueError, match="unknown policy"):
        evaluate(["simple", "clever"], matches=2, **QUICK)
    with pytest.raises(ValueError, match="at least two"):
        evaluate(["simple"], **QUICK)
    with pytest.raises(ValueError):
        evaluate(["simple", "random"], episode="season", progress=False)
    with pytest.raises(ValueError):
        evaluate(["simple", "random"], matches=0, progress=False)


def test_play_game_reports_from_policy_a_side():
    config = okgin_env.make_config("classic")
    for task in make_tasks([("a", "simple"), ("b", "random")], 4, config, "round", seed=3):
        rec = play_game(task)
        assert rec["a_seat"] == task.a_seat
        assert rec["result"] in ("a", "b", "draw")
        if rec["result"] == "a":
            assert rec["a_points"] > 0


# ----------------------------------------------------------------------------- output and CLI


def test_write_json_and_csv(tmp_path):
    results = evaluate(["simple", "random"], matches=2, seed=0, **QUICK)
    paths = results.write(str(tmp_path / "sub" / "out"))
    data = json.loads((tmp_path / "sub" / "out.json").read_text())
    assert data["pairs"][0]["a"] == "simple" and data["settings"]["episode"] == "round"
    with open(tmp_path / "sub" / "out.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 1 and rows[0]["b"] == "random" and "ci_low" in rows[0]
    assert len(paths) == 2
    assert isinstance(results, EvalResults)


def test_cli_main_end_to_end(tmp_path, capsys):
    prefix = tmp_path / "res"
    code = main(["simple", "random", "--matches", "2", "--episode", "round", "--no-progress", "--out", str(prefix)])
    assert code == 0
    out = capsys.readouterr().out
    assert "A win% [95% CI]" in out and "simple vs random" in out
    assert (tmp_path / "res.json").exists() and (tmp_path / "res.csv").exists()
    assert main(["simple", "nobody", "--matches", "2", "--no-progress"]) == 2


def test_cli_module_runs_as_a_program(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "okgin_env.evaluate", "random", "simple", "--matches", "2", "--episode", "round",
         "--target-score", "20", "--no-progress"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "random vs simple" in done.stdout
