"""okgin_env/eval_cli.py: exit status 2 before any game on bad input; Ctrl-C and SIGTERM end cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from okgin_env.eval_cli import main

pytestmark = pytest.mark.long  # one of the default suite's long modules: -m "not slow and not long" skips it


@pytest.fixture
def no_games(monkeypatch):
    def no_game(task):
        raise AssertionError("a game was played before the input was checked")

    monkeypatch.setattr("okgin_env.evaluate.play_game", no_game)


@pytest.mark.parametrize(
    ("policy", "named"),
    [
        ("search:rolouts=32", "rolouts"),
        ("search:rollouts=abc", "rollouts"),
        ("search:rollouts=10000000000000000000000", "rollouts=10000000000000000000000 is not allowed"),
        ("random:seed=3", "seed"),
        ("search:time_limit=abc", "time_limit"),
        ("search:rollouts=4,rollouts=8", "rollouts"),
        ("search:rollouts", "search:rollouts"),
        ("clever", "clever"),
    ],
)
def test_a_bad_policy_exits_2_naming_the_setting(policy, named, no_games, capsys):
    assert main([policy, "simple", "--matches", "2", "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("okgin-eval: error: ") and named in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


@pytest.mark.parametrize(
    "options",
    [["--matches", "0"], ["--workers", "0"], ["--max-rounds", "0"], ["--num-players", "3"], ["--target-score", "-5"],
     ["--seed", "-1"], ["--workers", "100000"]],
)
def test_bad_options_exit_2(options, no_games, capsys):
    assert main(["simple", "random", "--no-progress", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith("okgin-eval: error: ") and err.count("\n") == 1


def test_more_workers_than_games_are_capped_and_the_summary_says_so(monkeypatch, capsys):
    from okgin_env import evaluate as evaluate_module

    started = []
    run = evaluate_module._run
    monkeypatch.setattr(evaluate_module, "_run", lambda tasks, workers, *rest: started.append(workers) or run(tasks, 1, *rest))
    assert main(["simple", "random", "--matches", "2", "--workers", "12", "--episode", "round", "--no-progress"]) == 0
    assert started == [2]
    assert "; 2 worker processes, one per game, not 12)" in capsys.readouterr().out


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device whose writes fail: disk full)")
def test_a_record_that_cannot_be_written_keeps_the_results(capsys):
    """--record /dev/full: every game is played, the table printed, then one line names the failure (exit 2)."""
    args = ["simple", "random", "--matches", "2", "--episode", "round", "--no-progress", "--record", "/dev/full"]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "simple vs random" in captured.out and "(2 games per pair" in captured.out
    assert captured.err == "okgin-eval: error: cannot write game records to '/dev/full': No space left on device\n"


def test_a_full_disk_leaves_the_old_record_file_and_the_out_files_are_still_written(tmp_path, full_disk, capsys):
    path = tmp_path / "games.jsonl"
    path.write_text("the old records\n")
    args = ["simple", "random", "--matches", "2", "--episode", "round", "--no-progress", "--record", str(path),
            "--out", str(tmp_path / "res")]  # fmt: skip
    assert main(args) == 2
    captured = capsys.readouterr()
    assert "simple vs random" in captured.out and f"wrote {tmp_path / 'res'}.json" in captured.out
    assert captured.err == f"okgin-eval: error: cannot write game records to {str(path)!r}: No space left on device\n"
    assert path.read_text() == "the old records\n" and sorted(os.listdir(tmp_path)) == ["games.jsonl", "res.csv", "res.json"]


def test_an_unwritable_out_is_found_before_the_run(tmp_path, no_games, capsys):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    (tmp_path / "taken.json").mkdir()
    for prefix in (a_file / "results", a_file / "deeper" / "results", tmp_path / "taken"):
        assert main(["simple", "random", "--matches", "2", "--no-progress", "--out", str(prefix)]) == 2
        assert "cannot write results to" in capsys.readouterr().err
    # A folder that exists but takes no file is not called missing (probe 5: "/proc: No such file").
    if os.path.isdir("/proc"):  # (procfs takes no new file, even from root)
        assert main(["simple", "random", "--matches", "2", "--no-progress", "--record", "/proc/okgin.jsonl"]) == 2
        assert "cannot create a file in folder '/proc'" in capsys.readouterr().err


def test_outputs_that_are_one_file_or_an_input_are_refused_before_the_run(tmp_path, no_games, capsys):
    """--record coll.json --out coll wrote the results over the game records and reported both
    written; --record victim.pt replaced the policy file being evaluated; --out DIR/ wrote hidden files."""
    victim = tmp_path / "victim.py"
    victim.write_text("from okgin_env.bots import SimpleBot as Agent\n")
    for extra, message in ((["--record", str(tmp_path / "coll.json"), "--out", str(tmp_path / "coll")],
                            "is also a file of --out"),
                           (["--record", str(victim)], "is a file being evaluated"),
                           (["--out", str(tmp_path / "dir") + os.sep], "ends in a folder: give a file prefix")):
        assert main([f"{victim}:Agent", "random", "--matches", "2", "--no-progress", *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1
    assert victim.read_text().startswith("from okgin_env") and sorted(os.listdir(tmp_path)) == ["victim.py"]


def test_an_output_that_a_bots_settings_read_is_refused_and_okgin_play_refuses_its_opponents_file(tmp_path, capsys):
    """Probe 5: ``search:policy=FILE.pt`` read a network that ``--record FILE.pt`` then replaced;
    okgin-play --record wrote the game over its opponent's policy or agent file."""
    import shutil

    from okgin_env.play_cli import main as play_main

    network = tmp_path / "net.pt"
    shutil.copy("checkpoints/okgin_classic.pt", network)
    before = network.read_bytes()
    assert main([f"search:policy={network},rollouts=2", "random", "--matches", "2", "--no-progress",
                 "--record", str(network)]) == 2
    assert "is a file being evaluated" in capsys.readouterr().err
    agent = tmp_path / "agent.py"
    agent.write_text("from okgin_env.bots import SimpleBot as Agent\n")
    for opponent, victim in ((str(network), network), (f"{agent}:Agent", agent)):
        assert play_main(["--opponent", opponent, "--record", str(victim), "--seed", "1"]) == 2
        err = capsys.readouterr().err
        assert "is a file being evaluated (a player reads it)" in err and err.count("\n") == 1
    assert network.read_bytes() == before and agent.read_text().startswith("from okgin_env")


def test_out_creates_its_folder(tmp_path, capsys):
    prefix = tmp_path / "new" / "folder" / "res"
    assert main(["simple", "random", "--matches", "2", "--episode", "round", "--no-progress", "--out", str(prefix)]) == 0
    assert (tmp_path / "new" / "folder" / "res.json").exists()
    assert "wrote" in capsys.readouterr().out


# ----------------------------------------------------------------------------- signals


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _as_in_a_terminal() -> None:
    # A shell starts background jobs with Ctrl-C ignored, and an ignored signal stays ignored across
    # exec (rightly: a background run is not the terminal's to stop). The run under test gets
    # the disposition a command typed in a terminal has, however pytest itself was started.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_long_run(workers: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "okgin_env.eval_cli", "simple", "random", "--matches", "20000", "--workers",
         str(workers), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=_as_in_a_terminal,
    )


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_workers(run: subprocess.Popen, count: int) -> list[int]:
    """The run's child processes, once ``count`` of them have worked long enough to finish some games.

    Waiting on the workers' CPU time rather than the clock keeps this right on a loaded machine,
    where importing okgin_env alone can take seconds of wall time."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = children(run.pid)
        # (a multiprocessing resource tracker may be among the children; it does no work)
        if sum(cpu_seconds(pid) >= 3.0 for pid in found) >= count:
            return found
        time.sleep(0.2)
    run.kill()
    pytest.fail(f"the workers did not start and play: {run.communicate()}")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
@pytest.mark.parametrize(
    ("signum", "to_group", "code"),
    [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)],
    ids=["ctrl-c-in-the-terminal", "kill-pid"],
)
def test_a_signal_stops_the_workers_and_prints_what_finished(signum, to_group, code):
    run = start_long_run(workers=2)
    workers = wait_for_workers(run, 2)
    # Ctrl-C in a terminal signals the whole foreground process group; `kill PID` only the parent.
    (os.killpg if to_group else os.kill)(run.pid, signum)
    out, err = run.communicate(timeout=60)
    assert run.returncode == code, err
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if alive(pid)], "orphaned worker processes"
    assert "Traceback" not in err and "leaked" not in err, err
    assert "simple vs random" in out and f"interrupted by {signal.Signals(signum).name}" in out
    finished = int(out.split("interrupted by ")[1].split(": ")[1].split(" of ")[0])
    assert finished > 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")
def test_sigterm_of_an_inline_run_prints_what_finished():
    run = start_long_run(workers=1)
    time.sleep(5)
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=60)
    assert run.returncode == 143 and "Traceback" not in err, err
    assert "interrupted by SIGTERM" in out and "simple vs random" in out


def test_any_rule_option_through_rule(tmp_path, capsys):
    from okgin_env.eval_cli import main as eval_main

    out = tmp_path / "results"
    assert eval_main(["simple", "random", "--matches", "2", "--no-progress", "--rule", "gin_bonus=20",
                      "--rule", "box_bonus=25", "--out", str(out)]) == 0
    import json

    settings = json.loads((tmp_path / "results.json").read_text())["settings"]
    assert settings["rules"]["gin_bonus"] == 20 and settings["rules"]["box_bonus"] == 25
    assert eval_main(["simple", "random", "--rule", "nonsense=1"]) == 2
    assert "expected NAME=VALUE with NAME one of" in capsys.readouterr().err


def test_the_progress_bar_stays_off_a_stderr_that_is_no_terminal(capsys):
    """Issue 53: a log file or a pipe got the bar's every redraw."""
    assert main(["simple", "random", "--matches", "2", "--episode", "round"]) == 0
    assert capsys.readouterr().err == ""


def test_the_table_commands_share_their_table_flags():
    """okgin-eval, okgin-play and okgin-web take the same table flags with the same defaults
    (``okgin_env.table_cli``); okgin-web takes ``--rule`` too."""
    from okgin_env.eval_cli import build_parser as eval_parser
    from okgin_env.play_cli import build_parser as play_parser
    from okgin_env.table_cli import table_options
    from okgin_env.web.server import build_parser as web_parser

    table = ["--rules", "penalty", "--num-players", "3", "--target-score", "40", "--rule", "spade_double=true"]
    seen = []
    for parser, extra in ((eval_parser(), ["simple", "random"]), (play_parser(), []), (web_parser(), [])):
        defaults = parser.parse_args(extra)
        assert (defaults.rules, defaults.num_players, defaults.target_score, defaults.rule) == ("classic", None, None, [])
        seen.append(table_options(parser.parse_args(extra + table)))
    assert seen == [{"rules": "penalty", "num_players": 3, "target_score": 40, "spade_double": True}] * 3
    pytest.importorskip("flask")
    from okgin_env.web.game import GameStore

    game = GameStore("simple", seed=1, **table_options(web_parser().parse_args(["--rule", "spade_double=true"]))).create()
    assert game.env.config.spade_double  # the web table plays the option it was given


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_agent_that_fails_is_one_line_naming_it(tmp_path, capsys, workers):
    """Probe 5: an agent whose act raised ended okgin-eval in a 23-line traceback (exit 1), and an
    illegal move named 'player 0', not the spec that made it (in a mirrored pair either seat)."""
    agent = tmp_path / "agent.py"
    agent.write_text("class Fails:\n    def act(self, observation):\n        raise RuntimeError('boom\\nmore')\n\n"
                     "class Passes:\n    def act(self, observation):\n        return 2\n")
    for name, message in (("Fails", "'s policy raised RuntimeError: boom"),
                          ("Passes", "policy played an illegal move: action 2 (pass) is not legal")):
        assert main(["random", f"{agent}:{name}", "--matches", "2", "--no-progress", "--workers", workers]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"okgin-eval: error: '{agent}:{name}': ") and message in err, err
