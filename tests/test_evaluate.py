"""okgin_env/evaluate.py: intervals, mirrored deals, reproducibility, policy specs and the CLI."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import pytest
from gymnasium.utils import seeding

import okgin_env
from okgin_env.bots import SimpleBot, make_bot
from okgin_env.eval_cli import main
from okgin_env.players import parse_bot_spec
from okgin_env import policy_loaders
from okgin_env.evaluate import (
    EvalResults,
    EvaluationInterrupted,
    PolicyLoadError,
    evaluate,
    make_tasks,
    play_game,
    register_policy_loader,
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


def test_parse_bot_spec():
    assert parse_bot_spec("search") == ("search", {})
    assert parse_bot_spec("search:rollouts=64,opponent_model=uniform") == (
        "search",
        {"rollouts": 64, "opponent_model": "uniform"},
    )
    with pytest.raises(ValueError):
        parse_bot_spec("search:rollouts")


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


@pytest.fixture
def no_loaders(monkeypatch):
    """No registered loader and no entry point: each test registers what it needs."""
    monkeypatch.setattr(policy_loaders, "_LOADERS", {})
    monkeypatch.setattr(policy_loaders, "_LOADED", {})
    monkeypatch.setattr(policy_loaders, "_entry_points", dict)


class FirstLegal:
    """A deterministic policy: the lowest legal action (it never knocks)."""

    def __init__(self, seed=None):
        pass

    def act(self, observation):
        return int(observation["action_mask"].argmax())


def first_legal_from_file(path):
    """A policy loader at module level, so that worker processes can unpickle it."""
    return FirstLegal()


def test_policy_specs_factories_and_objects():
    seeds = []

    def factory(seed):
        seeds.append(seed)
        return SimpleBot(seed=seed)

    evaluate([factory, SimpleBot(seed=1)], matches=2, seed=0, **QUICK)
    assert len(seeds) == 2 and seeds[0] != seeds[1]  # a factory is called per game only


def test_checkpoints_load_through_the_registered_loader(tmp_path, no_loaders):
    checkpoint = tmp_path / "policy.pt"
    checkpoint.write_bytes(b"not really a checkpoint")
    loaded = []
    register_policy_loader(".pt", lambda path: loaded.append(path) or SimpleBot(seed=0))
    results = evaluate([str(checkpoint), "random"], matches=2, seed=0, **QUICK)
    assert loaded == [str(checkpoint)]  # loaded once (checked in this process, then reused)
    assert results.pairs[0].a == str(checkpoint)
    with pytest.raises(FileNotFoundError):
        evaluate([str(tmp_path / "missing.pt"), "random"], matches=2, **QUICK)


def test_a_checkpoint_without_a_loader_says_what_to_install(tmp_path, no_loaders):
    checkpoint = tmp_path / "policy.pt"
    checkpoint.write_bytes(b"x")
    with pytest.raises(PolicyLoadError, match=r"no policy loader handles '\.pt' files; install the training extras: pip install -e '\.\[train\]'"):
        evaluate([str(checkpoint), "random"], matches=2, **QUICK)
    assert main([str(checkpoint), "random", "--matches", "2", "--no-progress"]) == 2


def test_checkpoints_load_through_the_entry_point(tmp_path, no_loaders, monkeypatch):
    checkpoint = tmp_path / "policy.pt"
    checkpoint.write_bytes(b"x")

    class Point:
        value = "somewhere:load_policy"

        def __init__(self, loader):
            self.loader = loader

        def load(self):
            return self.loader()

    monkeypatch.setattr(policy_loaders, "_entry_points", lambda: {".pt": Point(lambda: first_legal_from_file)})
    assert evaluate([str(checkpoint), "random"], matches=2, **QUICK).pairs[0].games == 2

    def missing_torch():
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    monkeypatch.setattr(policy_loaders, "_LOADED", {})
    monkeypatch.setattr(policy_loaders, "_entry_points", lambda: {".pt": Point(missing_torch)})
    with pytest.raises(PolicyLoadError, match=r"somewhere:load_policy cannot be imported \(No module named 'torch'\); install"):
        evaluate([str(checkpoint), "random"], matches=2, **QUICK)


def test_the_installed_entry_point_names_the_training_loader():
    from importlib.metadata import entry_points

    points = {point.name: point.value for point in entry_points(group="okgin.policy_loaders")}
    assert points.get("pt") == "okgin_training:load_policy"


def test_a_loader_that_fails_is_reported_with_the_file(tmp_path, no_loaders):
    checkpoint = tmp_path / "broken.pt"
    checkpoint.write_bytes(b"x")

    def broken(path):
        raise RuntimeError("bad magic number")

    register_policy_loader(".pt", broken)
    with pytest.raises(PolicyLoadError, match=r"broken\.pt'.*RuntimeError: bad magic number"):
        evaluate([str(checkpoint), "random"], matches=2, **QUICK)
    register_policy_loader(".pt", lambda path: object())
    with pytest.raises(PolicyLoadError, match="has no act"):
        evaluate([str(checkpoint), "random"], matches=2, **QUICK)
    for suffix, loader in (("pt", broken), (".", broken), (".pt", "not callable")):
        with pytest.raises(ValueError):
            register_policy_loader(suffix, loader)


def test_a_loader_missing_its_dependencies_says_how_to_install_them(tmp_path, no_loaders):
    checkpoint = tmp_path / "policy.pt"
    checkpoint.write_bytes(b"x")

    def needs_torch(path):
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    register_policy_loader(".pt", needs_torch)
    with pytest.raises(PolicyLoadError, match=r"policy\.pt'.*No module named 'torch'.*pip install -e '\.\[train\]'"):
        evaluate([str(checkpoint), "random"], matches=2, **QUICK)


def test_a_loader_is_told_the_rules_of_the_game(tmp_path, no_loaders):
    checkpoint = tmp_path / "policy.pt"
    checkpoint.write_bytes(b"x")
    told = []
    register_policy_loader(".pt", lambda path, rules=None: told.append(rules) or FirstLegal())
    evaluate([str(checkpoint), "random"], matches=3, rules="penalty", num_players=3, **QUICK)
    assert told == [okgin_env.make_config("penalty", num_players=3)]  # checked, then reused


def test_the_table_names_policy_files_by_their_file_name_when_unambiguous(tmp_path, no_loaders):
    register_policy_loader(".pt", first_legal_from_file)
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "best.pt").write_bytes(b"x")
    one, two = str(tmp_path / "one" / "best.pt"), str(tmp_path / "two" / "best.pt")
    table = evaluate([one, "random"], matches=2, **QUICK).table()
    assert "best.pt vs random" in table and str(tmp_path) not in table
    both = evaluate([one, two], matches=2, **QUICK)
    assert f"{one} vs {two}" in both.table() and both.pairs[0].a == one


def test_worker_processes_get_the_registered_loaders(tmp_path, no_loaders):
    checkpoint = tmp_path / "policy.pt"
    checkpoint.write_bytes(b"x")
    register_policy_loader(".pt", first_legal_from_file)
    inline = evaluate([str(checkpoint), "random"], matches=2, seed=1, workers=1, **QUICK)
    pooled = evaluate([str(checkpoint), "random"], matches=2, seed=1, workers=2, **QUICK)
    assert strip_timing(inline.records) == strip_timing(pooled.records)


def test_evaluate_never_imports_training():
    code = (
        "import sys, okgin_env.evaluate, okgin_env.play, okgin_env.play_cli\n"
        "from okgin_env.evaluate import evaluate\n"
        "evaluate(['simple', 'random'], matches=2, episode='round', progress=False)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('training', 'okgin_training', 'torch'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def seeds_of(seed, matches=4):
    tasks = make_tasks([("a", "simple"), ("b", "random")], matches, okgin_env.make_config("classic"), "match", seed)
    return [(t.env_seed, *t.bot_seeds) for t in tasks]


def test_seeds_below_2_32_derive_as_before_and_no_two_seeds_alias():
    """Published results depend on the deals of seeds below 2**32; wider seeds used to alias
    modulo 2**32 (seed 0 and 2**32 played the same deals)."""
    assert seeds_of(0)[:2] == [(1484405855, 336614359, 1305426746), (1484405855, 655124788, 1924786124)]
    assert seeds_of(2**32 - 1)[0] == (996212484, 454001755, 1850239782)
    wide = [2**32, 2**32 + 1, 2**33, 2**64, 2**64 + 2**32, 2**100]
    derived = []
    for seed in (0, 1, 2, *wide):
        games = seeds_of(seed, matches=40)
        derived += [env_seed for env_seed, *_ in games[::2]] + [bot for _, *bots in games for bot in bots]  # a deal is two games
    assert len(set(derived)) == len(derived)
    assert all(0 <= seed < 2**31 for seed in derived)


@pytest.mark.parametrize("seed", [-1, None, True, 1.0, "3"])
def test_a_seed_follows_the_envs_rule(seed, monkeypatch):
    monkeypatch.setattr("okgin_env.evaluate.play_game", lambda task: pytest.fail("a game was played"))
    with pytest.raises(ValueError, match=r"seed=.* is not allowed.* expected a non-negative int"):
        evaluate(["simple", "random"], matches=2, seed=seed, **QUICK)


def test_workers_are_capped_at_the_games_and_absurd_counts_refused(monkeypatch):
    from okgin_env import evaluate as evaluate_module

    started = []
    run = evaluate_module._run
    monkeypatch.setattr(evaluate_module, "_run", lambda tasks, workers, *rest: started.append(workers) or run(tasks, 1, *rest))
    results = evaluate(["simple", "random"], matches=2, workers=12, **QUICK)
    assert started == [2] and results.settings["workers"] == 2 and results.settings["workers_requested"] == 12
    assert "workers_requested" not in evaluate(["simple", "random"], matches=2, workers=2, **QUICK).settings
    for workers in (0, evaluate_module.MAX_WORKERS + 1, 10**9):
        with pytest.raises(ValueError, match=rf"workers must be an int in 1\.\.{evaluate_module.MAX_WORKERS}"):
            evaluate(["simple", "random"], matches=2, workers=workers, **QUICK)
    assert len(started) == 2


def test_bad_arguments_fail_early():
    with pytest.raises(ValueError, match="unknown player"):
        evaluate(["simple", "clever"], matches=2, **QUICK)
    with pytest.raises(ValueError, match="at least two"):
        evaluate(["simple"], **QUICK)
    with pytest.raises(ValueError):
        evaluate(["simple", "random"], episode="season", progress=False)
    with pytest.raises(ValueError):
        evaluate(["simple", "random"], matches=0, progress=False)


def test_a_setting_given_twice_or_owned_by_the_game_is_refused():
    with pytest.raises(ValueError, match="'rollouts' is given twice"):
        parse_bot_spec("search:rollouts=4,rollouts=8")
    for spec, name in (("random:seed=3", "seed"), ("search:rules='penalty'", "rules"), ("simple:gin_bonus=30", "gin_bonus")):
        with pytest.raises(ValueError, match=f"'{name}' cannot be set in a player spec"):
            evaluate([spec, "simple"], matches=2, **QUICK)


def test_every_spec_is_built_before_any_game(monkeypatch):
    def no_game(task):
        raise AssertionError("a game was played before the specs were checked")

    monkeypatch.setattr("okgin_env.evaluate.play_game", no_game)
    for spec in ("search:rolouts=32", "search:rollouts=abc", "search:time_limit=abc", "random:seed=3", "search:rollouts"):
        with pytest.raises(ValueError, match="rolouts|rollouts|time_limit|seed"):
            evaluate(["simple", spec], matches=2, **QUICK)


def test_max_rounds_ends_an_endless_match_as_a_draw():
    results = evaluate([FirstLegal, FirstLegal], matches=2, seed=0, progress=False, max_rounds=3)  # never knock
    pair = results.pairs[0]
    assert (pair.games, pair.draws, pair.rounds) == (2, 2, 6)
    assert results.settings["max_rounds"] == 3
    assert [rec["rounds"] for rec in results.records] == [3, 3]
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="max_rounds"):
            evaluate(["simple", "random"], matches=2, max_rounds=bad, progress=False)


class StopAtGame:
    """A factory whose third policy is stopped by Ctrl-C in its first decision."""

    def __init__(self):
        self.made = 0

    def __call__(self, seed):
        self.made += 1
        if self.made < 3:
            return SimpleBot(seed=seed)
        stopped = SimpleBot(seed=seed)
        stopped.act = lambda observation: (_ for _ in ()).throw(KeyboardInterrupt)
        return stopped


def test_ctrl_c_keeps_the_games_that_finished():
    with pytest.raises(EvaluationInterrupted) as caught:
        evaluate([StopAtGame(), "random"], matches=6, seed=0, **QUICK)
    stop = caught.value
    assert isinstance(stop, KeyboardInterrupt) and stop.signal_name == "SIGINT"
    results = stop.results
    assert results.settings["interrupted"] == "SIGINT"
    assert (results.settings["games_finished"], results.settings["games_planned"]) == (2, 6)
    assert results.pairs[0].games == 2 == len(results.records)


def test_the_default_table_fits_100_columns_and_wide_has_every_column():
    results = evaluate(["search:rollouts=2", "simple", "random"], matches=2, seed=0, **QUICK)
    narrow, wide = results.table(), results.table(wide=True)
    assert max(len(line) for line in narrow.splitlines()) <= 100
    assert "A win% [95% CI]" in narrow and "ms/decision A/B" in narrow and "gin% A/B" not in narrow
    for column in ("rounds/game", "gin% A/B", "knock% A/B", "undercut% A/B", "draw%", "decisions/game A/B"):
        assert column in wide
    assert len(wide.splitlines()) == len(narrow.splitlines()) == 2 + 3


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
        [sys.executable, "-m", "okgin_env.eval_cli", "random", "simple", "--matches", "2", "--episode", "round",
         "--target-score", "20", "--no-progress"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "random vs simple" in done.stdout


def _synthetic_record(result: str, rounds: int, a_penalty: int, b_penalty: int) -> dict:
    record = {"result": result, "rounds": rounds, "a_points": 0.0, "round_draws": 0, "num_players": 3,
              "penalty_scoring": True, "a_penalty": a_penalty, "b_penalty": b_penalty,
              "decisions_a": 10, "decisions_b": 20, "seconds_a": 0.01, "seconds_b": 0.02}
    record.update({f"{kind}_{side}": 0 for kind in ("gin", "knock", "undercut") for side in "ab"})
    return record


def test_multi_player_win_share_interval_parity_and_penalties_on_a_synthetic_case():
    from okgin_env.eval_results import PairResult

    # 40 wins of 100 three-player matches: Wilson 95% interval [30.9%, 49.8%] (computed by hand:
    # centre (0.4 + 1.92/100) / 1.0384 = 0.40370, half 1.96 * sqrt(0.0024 + 0.000096) / 1.0384 = 0.09432).
    records = [_synthetic_record("a", 2, 10, 60) for _ in range(40)] + [_synthetic_record("b", 2, 30, 40) for _ in range(60)]
    pair = PairResult.from_records("policy", "simple", records)
    assert pair.win_rate_a == 0.4 and pair.parity == pytest.approx(1 / 3) and pair.num_players == 3
    assert pair.ci_low == pytest.approx(0.3094, abs=1e-4) and pair.ci_high == pytest.approx(0.4980, abs=1e-4)
    # Per round: A is charged (40*10 + 60*30) / 200 = 11; each of the two field seats (40*60 + 60*40) / 200 / 2 = 12.
    assert pair.penalty_per_round_a == pytest.approx(11.0) and pair.penalty_per_round_field == pytest.approx(12.0)


def test_three_player_evaluation_plays_every_deal_in_every_seat_and_shows_parity_and_penalties():
    results = evaluate({"simple": "simple", "random": "random"}, matches=9, rules="penalty", num_players=3,
                       seed=3, workers=1, progress=False)
    pair = results.pairs[0]
    seats = sorted((r["deal"], r["a_seat"]) for r in results.records)
    assert seats == [(deal, seat) for deal in range(3) for seat in range(3)]
    assert pair.games == 9 and pair.parity == pytest.approx(1 / 3)
    # Random players almost never knock: they are charged far more than simple.
    assert pair.penalty_per_round_a < pair.penalty_per_round_field
    table = results.table()
    assert "parity%" in table and "33.3" in table and "penalty/round A/field" in table
    classic = evaluate({"simple": "simple", "random": "random"}, matches=2, seed=3, workers=1, progress=False)
    for wide in (False, True):
        assert "parity%" not in classic.table(wide) and "penalty/round" not in classic.table(wide)
        assert "nan" not in classic.table(wide)
    assert "gin% A/B" in classic.table(wide=True) and "penalty/round A/field" in results.table(wide=True)
    assert math.isnan(classic.pairs[0].penalty_per_round_a)


def test_matches_are_also_counted_per_hand_draws_not_won():
    results = evaluate(["simple", "random"], matches=6, seed=3, progress=False, max_rounds=30)
    pair = results.pair("simple", "random")
    won = sum(rec[f"{kind}_a"] for rec in results.records for kind in ("gin", "knock", "undercut"))
    lost = sum(rec[f"{kind}_b"] for rec in results.records for kind in ("gin", "knock", "undercut"))
    draws = sum(rec["round_draws"] for rec in results.records)
    assert pair.rounds == won + lost + draws and pair.rounds_won_a == won
    assert pair.round_win_rate_a == won / pair.rounds
    assert pair.round_ci_low <= pair.round_win_rate_a <= pair.round_ci_high
    assert "A round% [95% CI]" in results.table()
    assert "A round%" not in evaluate(["simple", "random"], matches=2, episode="round", progress=False).table()


def test_a_pair_without_a_finished_game_shows_no_nan():
    from okgin_env.eval_results import EvalResults, PairResult

    results = EvalResults([PairResult.from_records("simple", "random", [])], {"episode": "match"})
    table = results.table(wide=True)
    assert "nan" not in table and "[0.0, 100.0]" not in table
    assert table.splitlines()[2].split()[:4] == ["simple", "vs", "random", "0"]


def test_a_text_of_names_and_a_policy_no_worker_can_receive_are_named():
    """Probe 6: evaluate('simple random') said "unknown player 's'"; a lambda with workers=2 was
    the pool's pickling traceback."""
    with pytest.raises(ValueError, match="policies must be a list or a dict of players, got the text 'simple random'"):
        evaluate("simple random", matches=2, progress=False)
    with pytest.raises(ValueError, match="with workers > 1 each policy is sent to worker processes"):
        evaluate({"a": lambda seed=None: make_bot("simple", seed=seed), "b": "random"}, matches=2, workers=2,
                 progress=False)
