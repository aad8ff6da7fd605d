"""okgin_env.players: one grammar names a player everywhere a player is taken (issue 41)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from okgin_env import GymEnv, make_config
from okgin_env.bots import BOTS, HELD_OUT_BOTS, LookaheadBot, SearchBot, SimpleBot
from okgin_env.evaluate import evaluate
from okgin_env.players import bot_help, check_player, make_player, parse_bot_spec, player_label
from okgin_env.vector import VectorGymEnv

CLASSIC_FILE = "checkpoints/okgin_classic.pt"
SPECS = ["simple", "search:rollouts=8", CLASSIC_FILE]  # strings: every tool takes these


def policy_object():
    return LookaheadBot(seed=3)


def every_spec():
    return [*SPECS, policy_object()]


def test_the_grammar_parses_bots_with_settings_and_refuses_what_it_cannot_read():
    assert parse_bot_spec("search") == ("search", {})
    assert parse_bot_spec("search:rollouts=8,opponent_model=uniform,time_limit=None") == (
        "search", {"rollouts": 8, "opponent_model": "uniform", "time_limit": None})
    # true/false/none in any case, as --rule reads them; other text stays text
    assert parse_bot_spec("x:a=true,b=FALSE,c=none,d=True,e=truthy") == (
        "x", {"a": True, "b": False, "c": None, "d": True, "e": "truthy"})
    with pytest.raises(ValueError, match="expected name=value"):
        parse_bot_spec("search:rollouts")
    with pytest.raises(ValueError, match="given twice"):
        parse_bot_spec("search:rollouts=1,rollouts=2")
    bot = make_player("search:rollouts=8", seed=1, rules="classic")
    assert isinstance(bot, SearchBot) and bot.settings.rollouts == 8
    assert isinstance(make_player("simple", seed=1), SimpleBot)
    assert make_player(obj := policy_object()) is obj
    assert isinstance(make_player(lambda seed: LookaheadBot(seed=seed), seed=2), LookaheadBot)  # a factory
    assert player_label("search:rollouts=8") == "search:rollouts=8" and player_label(policy_object()) == "lookahead"
    for bad, message in ((3, "cannot make a player from 3"), ("nobody", "unknown player 'nobody'"),
                         ("simple_obs", "'simple' is one bot"), ("simple:seed=3", "'seed' cannot be set"),
                         ("search:rollouts=0", "rollouts=0 is not allowed"), ("search:speed=2", "unknown setting"),
                         # an unknown name is reported as one, not as the malformed setting after it
                         (" pretrained:classic", "unknown player ' pretrained:classic'"),
                         ("nobody:x", "unknown player 'nobody:x'"),
                         ("search:rollouts", "bad setting 'rollouts' in 'search:rollouts'; expected name=value")):
        with pytest.raises(ValueError, match=message):
            check_player(bad)
        with pytest.raises(ValueError, match=message):
            make_player(bad)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        check_player("nowhere/policy.pt")
    with pytest.raises(ValueError, match="purpose='train'"):
        check_player("simple", purpose="train")


@pytest.mark.parametrize("purpose", ["teach", "label"])
def test_training_purposes_refuse_held_out_bots_and_time_limits(purpose):
    for name in HELD_OUT_BOTS:
        check_player(name, purpose="play")
        with pytest.raises(ValueError, match="held-out bots"):
            check_player(f"{name}", purpose=purpose)
    check_player("search:time_limit=0.1", purpose="play")
    with pytest.raises(ValueError, match="time_limit makes play depend"):
        check_player("search:time_limit=0.1", purpose=purpose)
    for spec in every_spec():
        check_player(spec, purpose=purpose)


def test_help_lists_every_bot_from_the_registry():
    text = bot_help()
    assert all(name in text for name in BOTS)  # lookahead included: nothing written by hand
    assert all(name not in bot_help("teach") for name in HELD_OUT_BOTS)


def test_the_same_specs_work_in_evaluate_and_both_gym_envs():
    for spec in every_spec():
        results = evaluate({"a": spec, "b": "random"}, matches=2, seed=3, episode="round")
        assert results.pairs[0].games == 2
        env = GymEnv(opponents=spec, episode="round")
        _, info = env.reset(seed=1)
        env.step(int(np.flatnonzero(info["action_mask"])[0]))
        vector = VectorGymEnv(2, opponents=spec, episode="round")
        _, infos = vector.reset(seed=1)
        vector.step(np.array([int(np.flatnonzero(mask)[0]) for mask in infos["action_mask"]]))


def test_the_same_specs_work_in_the_command_line_tools(tmp_path, capsys):
    from okgin_env.eval_cli import main as eval_main
    from okgin_env.play import Game
    from okgin_env.web.game import GameStore
    from okgin_env.web.server import create_app

    for spec in SPECS:
        assert eval_main([spec, "random", "--matches", "2", "--episode", "round", "--no-progress"]) == 0
        assert "A vs B" in capsys.readouterr().out
    for spec in every_spec():
        game = Game(spec, seed=1, episode="round", input_fn=lambda _prompt: "q", print_fn=lambda *_: None)
        assert game.run()["finished"] is False  # the person left at once; the opponents were built
        client = create_app(GameStore(spec, seed=1)).test_client()
        assert client.post("/api/games", json={}).status_code == 201


def test_the_same_specs_work_as_pool_entries_teachers_and_labelling_opponents():
    pytest.importorskip("torch")
    from training.labelling import label_decisions
    from training.league import parse_pool
    from training.host_tables import Teacher

    config = make_config("classic")
    pool = parse_pool(" ".join(f"{spec}@{k + 1}" for k, spec in enumerate(SPECS)) + " self@0.5", config)
    assert pool == {"simple": 1.0, "search:rollouts=8": 2.0, CLASSIC_FILE: 3.0, "self": 0.5}
    tables = VectorGymEnv(2, opponents=[make_player(spec, seed=1, rules=config) for spec in SPECS[1:]])
    observations, infos = tables.reset(seed=2)
    for spec in every_spec():
        actions = Teacher(spec, 2, seed=4, config=config).actions(tables, observations, infos["action_mask"])
        assert all(infos["action_mask"][k][a] for k, a in enumerate(actions))
    for spec in SPECS:
        labels = label_decisions((CLASSIC_FILE, "classic", 5, 1, {"rollout": spec}))
        assert labels["q"].shape[0] == 1


def test_a_policy_path_that_is_no_policy_file_is_a_one_line_error_and_never_opened(tmp_path, capsys):
    """Issue 52, 2: a path without the .pt suffix, a folder, a FIFO or a device was a StopIteration
    (a traceback in every tool); a FIFO or a device must not even be opened (reading one blocks)."""
    import os

    from okgin_env.play_cli import main as play_main

    text = tmp_path / "model.pth"
    text.write_text("not a network")
    folder = tmp_path / "folder.pt"
    folder.mkdir()
    fifo = tmp_path / "fifo.pt"
    os.mkfifo(fifo)  # opening it for reading would block this test for ever
    for path, message in ((text, r"does not end in a policy-file suffix; allowed: \.pt"),
                          (folder, "is not a regular file"), (fifo, "is not a regular file"),
                          ("/dev/zero", "is not a regular file")):
        with pytest.raises(ValueError, match=message):
            check_player(f"search:policy={path}")
        with pytest.raises(ValueError, match=message):
            GymEnv(opponents=f"search:policy={path}")
    for path in (folder, fifo):  # a path ending in .pt is a policy file of its own
        with pytest.raises(ValueError, match="is not a regular file"):
            check_player(str(path))
    assert play_main(["--opponent", f"search:policy={text}"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_spec_errors_echo_a_shortened_spec_and_parsing_prints_no_warnings(recwarn):
    """Issue 52, 13: a 200,000-character spec made a 200 KB message; ``1if 1else 2`` printed
    SyntaxWarnings from ast.literal_eval before the error."""
    big = "x" * 200_000
    for spec in (f"nobody{big}", f"search:{big}", f"search:{big}=1", f"simple:seed={big}",
                 f"search:rollouts=1,rollouts={big}", f"{big}.pt", f"search:policy={big}.pt"):
        with pytest.raises((ValueError, FileNotFoundError)) as error:
            check_player(spec)
        assert len(str(error.value)) < 1000 and "..." in str(error.value)
    with pytest.raises(ValueError, match="rollouts='1if 1else 2' is not allowed"):
        check_player("search:rollouts=1if 1else 2")
    assert parse_bot_spec("search:rollouts=1if 1else 2") == ("search", {"rollouts": "1if 1else 2"})
    assert not [w for w in recwarn if issubclass(w.category, SyntaxWarning)]


def test_training_flags_echo_a_shortened_spec():
    """Issue 52, 13: --opponent-pool, --bc-teacher, --teacher and --policy name the spec once, shortened."""
    pytest.importorskip("torch")
    from training.league import check_training_player

    for spec in ("nobody" + "x" * 200_000, "simple:seed=" + "1" * 200_000):
        with pytest.raises(ValueError, match=r"^--teacher 'nobodyx+\.\.\.x+'|^--teacher 'simple:seed=1+\.\.\.1+': 'seed'") as error:
            check_training_player(spec, "--teacher", make_config("classic"))
        assert len(str(error.value)) < 1000


# ----------------------------------------------------------------------------- issue 53: pretrained:NAME and FILE.py:NAME

AGENT_FILE = '''
from helper_beside_it import lowest  # a module beside the file imports, as under python my_agent.py


class MyAgent:
    def __init__(self, seed=None, rules=None):
        self.seed, self.rules = seed, rules

    def act(self, observation):
        return lowest(observation)


def make():
    return MyAgent(seed=-1)


class NoAct:
    pass


ready = MyAgent(seed=-2)
number = 3
'''


@pytest.fixture
def agent_file(tmp_path):
    (tmp_path / "helper_beside_it.py").write_text(
        "import numpy as np\n\ndef lowest(observation):\n    return int(np.flatnonzero(observation['action_mask'])[0])\n")
    path = tmp_path / "my_agent.py"
    path.write_text(AGENT_FILE)
    (tmp_path / "broken.py").write_text("raise RuntimeError('no\\nsecond line')\n")
    return path


def test_a_shipped_policy_by_name_loads_from_any_folder(tmp_path, monkeypatch):
    from okgin_env.pretrained import PRETRAINED, pretrained_path

    monkeypatch.chdir(tmp_path)  # no checkpoints/ here: the names resolve in the installed package
    assert list(PRETRAINED) == ["classic", "standard", "standard-hands", "penalty-3p", "penalty-4p"]
    for name in PRETRAINED:
        assert Path(pretrained_path(f"pretrained:{name}")).is_file()
    pair = evaluate({"a": "pretrained:classic", "b": "random"}, matches=2, seed=3, episode="round").pair("a", "b")
    assert pair.games == 2
    check_player("pretrained:penalty-3p", make_config("penalty", num_players=3))
    GymEnv(opponents="search:rollouts=4,policy=pretrained:classic", episode="round").reset(seed=1)
    with pytest.raises(ValueError) as error:
        check_player("pretrained:clasic")
    assert str(error.value) == ("unknown pretrained policy 'clasic'; allowed: pretrained:classic, pretrained:standard, "
                                "pretrained:standard-hands, pretrained:penalty-3p, pretrained:penalty-4p")
    pytest.importorskip("torch")
    import okgin_training

    assert okgin_training.load_policy("pretrained:standard", rules="standard").act is not None
    with pytest.raises(ValueError, match="unknown pretrained policy 'nobody'; allowed: pretrained:classic"):
        okgin_training.load_policy("pretrained:nobody")
    for load in (okgin_training.load_policy, check_player):  # named by its spec, not the installed path
        with pytest.raises(ValueError, match=r"^checkpoint pretrained:standard was trained for rules='standard', not "):
            load("pretrained:standard")


def test_a_policy_file_spec_gives_its_loader_the_settings_it_declares(tmp_path, monkeypatch, capsys):
    """``FILE.pt:suit_symmetric=False`` (or ``pretrained:NAME:...``) plays the shipped file's network
    alone, as ``load_policy(..., suit_symmetric=False)`` does, in the API, inside a bot's settings and
    in okgin-eval; a setting the loader does not declare, or a value it refuses, is a one-line error
    naming it (exit 2 in the command line)."""
    pytest.importorskip("torch")
    from okgin_env.eval_cli import main as eval_main
    from okgin_env.policy_loaders import is_policy_file, split_policy_spec
    from training.policy import load_policy

    def symmetric(player):  # by name: the loader may be the installed okgin_training's, whose classes are its own
        return type(player.model).__name__ == "SuitSymmetricNet"

    monkeypatch.chdir(tmp_path)  # pretrained:NAME from any folder; a path relative to the checkout below
    path = str(Path(__file__).resolve().parents[1] / CLASSIC_FILE)
    assert split_policy_spec("pretrained:classic:suit_symmetric=False") == ("pretrained:classic", "suit_symmetric=False")
    assert split_policy_spec("search:policy=x.pt") == ("search:policy=x.pt", "")
    assert is_policy_file(f"{path}:suit_symmetric=False") and not is_policy_file("search:policy=x.pt")
    direct = load_policy(path, suit_symmetric=False)
    assert symmetric(make_player("pretrained:classic"))
    import okgin_env

    table = okgin_env.env()
    table.reset(seed=5)
    observations = []
    for _ in range(12):  # the first decisions of a round, both seats, the network playing both
        observations.append(table.observe(table.agent_selection))
        table.step(direct.act(observations[-1]))
    for spec in ("pretrained:classic:suit_symmetric=False", f"{path}:suit_symmetric=False"):
        player = make_player(spec)
        assert not symmetric(player)
        assert [player.act(o) for o in observations] == [direct.act(o) for o in observations]
    GymEnv(opponents="search:rollouts=2,policy=pretrained:classic:suit_symmetric=False", episode="round").reset(seed=1)
    assert eval_main(["pretrained:classic:suit_symmetric=False", "random", "--matches", "2", "--episode", "round",
                      "--no-progress"]) == 0
    capsys.readouterr()
    huge = "a" * 100_000
    for spec, message in (("pretrained:classic:greedy=False", "'greedy' is not a setting of a .pt policy file; "
                                                              "allowed: suit_symmetric"),
                          # a misspelt name is refused by name, not read as part of the file's name
                          ("pretrained:classic:suit-symmetric=False", "'suit-symmetric' is not a setting of a .pt "
                                                                      "policy file; allowed: suit_symmetric"),
                          (f"{path}:suit-symmetric=False", "'suit-symmetric' is not a setting"),
                          ("pretrained:classic:suit_symmetric=yes", "suit_symmetric must be True, False or None"),
                          ("pretrained:classic:suit_symmetric=False:suit_symmetric=True",
                           "settings are separated by commas, not colons"),
                          (f"pretrained:classic:suit_symmetric={huge}", "suit_symmetric must be True, False or None")):
        with pytest.raises(ValueError, match=message):
            check_player(spec)
        assert eval_main([spec, "random", "--matches", "2", "--no-progress"]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1 and message in error and len(error) < 1_000  # a huge value is not echoed whole
    # Where only a file is taken (--init-from, load_policy), settings are refused, not dropped.
    from okgin_env.policy_loaders import policy_file_path

    for spec in ("pretrained:classic:suit_symmetric=False", f"{path}:suit_symmetric=False"):
        with pytest.raises(ValueError, match=r"settings \('suit_symmetric=False'\) are taken only where a player is named"):
            policy_file_path(spec)
        with pytest.raises(ValueError, match="are taken only where a player is named"):
            load_policy(spec)


def test_a_loader_that_declares_its_settings_as_one_string_is_refused(tmp_path, monkeypatch):
    """``spec_settings = ("level")`` (a string: the comma forgotten) would allow ``l``, ``e``, ``v``;
    it is refused by name instead, and a long message from a loader is cut to one readable line."""
    from okgin_env.policy_loaders import PolicyLoadError, load_policy_file, register_policy_loader, registered_loaders

    def loader(path, level=1):
        raise ValueError("bad level " + "x" * 100_000)

    loader.spec_settings = "level"
    before = registered_loaders()
    monkeypatch.setattr("okgin_env.policy_loaders._LOADERS", dict(before))
    register_policy_loader(".pol", loader)
    (tmp_path / "a.pol").write_text("policy")
    with pytest.raises(PolicyLoadError, match=r"declares spec_settings 'level'; expected a tuple of setting names"):
        load_policy_file(str(tmp_path / "a.pol:l=2"))
    loader.spec_settings = ("level",)
    with pytest.raises(PolicyLoadError, match="bad level x") as error:
        load_policy_file(str(tmp_path / "a.pol:level=2"))
    assert len(str(error.value)) < 1_000 and "more characters" in str(error.value)


def test_an_agent_from_a_python_file_plays_in_every_tool(agent_file, monkeypatch, capsys):
    from okgin_env.eval_cli import main as eval_main
    from okgin_env.play import Game
    from okgin_env.web.game import GameStore
    from okgin_env.web.server import create_app

    monkeypatch.chdir(agent_file.parent)
    agent = make_player("my_agent.py:MyAgent", seed=5, rules="penalty")
    assert agent.seed == 5 and agent.rules.rules == "penalty"  # a class gets seed= and rules= where it takes them
    assert make_player("my_agent.py:make", seed=5).seed == -1  # a factory without parameters: called with none
    assert make_player("my_agent.py:ready").seed == -2  # an object with act: taken as it is
    assert make_player(f"{agent_file}:MyAgent") is not agent  # an absolute path; one instance per player
    assert eval_main(["my_agent.py:MyAgent", "simple", "--matches", "2", "--episode", "round", "--no-progress",
                      "--workers", "2"]) == 0
    assert "my_agent.py:MyAgent vs simple" in capsys.readouterr().out
    game = Game("my_agent.py:make", seed=1, episode="round", input_fn=lambda _prompt: "q", print_fn=lambda *_: None)
    assert game.run()["finished"] is False
    GymEnv(opponents="my_agent.py:MyAgent", episode="round").reset(seed=1)
    client = create_app(GameStore("my_agent.py:MyAgent", seed=1)).test_client()
    assert client.post("/api/games", json={}).status_code == 201
    refused = client.post("/api/games", json={"opponent": "my_agent.py:make"})  # a page never names a file
    assert refused.status_code == 400 and "unknown opponent" in refused.get_json()["error"]


def test_an_agent_file_that_cannot_serve_is_a_one_line_error(agent_file, monkeypatch, capsys):
    from okgin_env.eval_cli import main as eval_main
    from okgin_env.play_cli import main as play_main
    from okgin_env.web.server import main as web_main

    monkeypatch.chdir(agent_file.parent)
    for spec, message in (
        ("missing.py:MyAgent", "player 'missing.py:MyAgent': there is no file 'missing.py'"),
        ("my_agent.py:Nobody", "player 'my_agent.py:Nobody': 'my_agent.py' has no 'Nobody'; it defines MyAgent, make, "
                               "NoAct"),
        ("my_agent.py:number", "player 'my_agent.py:number': number is of type int, not a class, a factory or an object "
                               "with act(observation)"),
        ("my_agent.py:NoAct", "player 'my_agent.py:NoAct': NoAct() gave a NoAct object, which has no act(observation)"),
        ("broken.py:MyAgent", "player 'broken.py:MyAgent': importing 'broken.py' failed: RuntimeError: no"),
        ("my_agent.py", "unknown player 'my_agent.py' (an agent file needs the name of its class or factory: FILE.py:NAME)"),
    ):
        with pytest.raises((ValueError, FileNotFoundError)) as error:
            check_player(spec)
        assert str(error.value).startswith(message), str(error.value)
        for main, argv in ((eval_main, [spec, "simple"]), (play_main, ["--opponent", spec]),
                           (web_main, ["--opponent", spec, "--port", "0"])):
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and message in err, err
