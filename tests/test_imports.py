"""okgin_env/__init__.py and okgin_env/registration.py: what each import loads, and the env ids.

Every check runs in a fresh interpreter, since this test process has long loaded everything.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "okgin_env"
RL_LIBRARIES = ("gymnasium", "pettingzoo", "torch")


def run(code: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done


def loaded(*names: str) -> str:
    """Code that prints which of ``names`` (top-level modules) are imported."""
    return f"import sys; print(sorted(m for m in {names!r} if m in sys.modules))"


@pytest.mark.parametrize(
    "module", ["okgin_env", "okgin_env.rules", "okgin_env.rules.melds", "okgin_env.observation", "okgin_env.bots",
               "okgin_env.match_loop", "okgin_env.policy_loaders", "okgin_env.registration"]
)
def test_the_rules_and_the_bots_load_no_rl_library(module):
    assert run(f"import {module}\n{loaded(*RL_LIBRARIES)}").stdout.strip() == "[]"


@pytest.mark.parametrize("name", ["GymEnv", "VectorGymEnv", "BatchEnv", "env", "raw_env"])
def test_the_environments_never_load_torch(name):
    out = run(f"import okgin_env\nokgin_env.{name}\n{loaded('gymnasium', 'torch', 'training', 'okgin_training')}").stdout
    assert out.strip() == "['gymnasium']"


def test_no_module_of_okgin_env_imports_training_and_only_the_tensor_engine_imports_torch():
    for path in PACKAGE.rglob("*.py"):
        forbidden = ("training", "okgin_training") if path.parent.name == "tensor" else ("training", "okgin_training", "torch")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            assert not [n for n in names if n.split(".")[0] in forbidden], path


def test_the_tensor_engine_loads_torch_and_nothing_of_training():
    out = run(f"import okgin_env.tensor\n{loaded('torch', 'training', 'okgin_training')}").stdout
    assert out.strip() == "['torch']"


def test_every_public_name_is_there_and_is_the_modules_own():
    run(
        "import okgin_env, importlib\n"
        "from okgin_env import _PUBLIC\n"
        "for name in okgin_env.__all__:\n"
        "    module, attribute = _PUBLIC[name]\n"
        "    want = importlib.import_module(module)\n"
        "    want = want if attribute is None else getattr(want, attribute)\n"
        "    assert getattr(okgin_env, name) is want, name\n"
        "assert set(okgin_env.__all__) <= set(dir(okgin_env)) and '__version__' in dir(okgin_env)\n"
        "from okgin_env import GymEnv, RoundState, env, raw_env\n"
        "assert okgin_env.observation.encode and okgin_env.rules.melds.best_melds\n"
        "try:\n"
        "    okgin_env.no_such_name\n"
        "except AttributeError as error:\n"
        "    assert 'no_such_name' in str(error)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )


def test_env_stays_the_function_after_the_submodule_is_imported():
    run(
        "import okgin_env\n"
        "import okgin_env.env\n"
        "from okgin_env.env import raw_env\n"
        "import okgin_env.gym_env\n"
        "assert callable(okgin_env.env) and okgin_env.env.__module__ == 'okgin_env.env'\n"
        "assert okgin_env.env().unwrapped.metadata['name'] == 'oklahoma_gin_v0'\n"
    )


def test_version_is_the_installed_distributions():
    from importlib.metadata import version

    assert run("import okgin_env; print(okgin_env.__version__)").stdout.strip() == version("okgin")


GYM = "gymnasium.make('OklahomaGin-v0')"
AEC = "pettingzoo.make('aec', 'okgin/oklahoma_gin_v0')"


@pytest.mark.parametrize(
    "code",
    [
        f"import gymnasium, okgin_env; {GYM}",  # gymnasium first: import okgin_env registers
        f"import gymnasium, okgin_env, pettingzoo; {AEC}",  # sorted imports
        f"import pettingzoo, okgin_env; {AEC}",
        f"import okgin_env, gymnasium, pettingzoo; okgin_env.register_envs(); {GYM}; {AEC}",
        f"import okgin_env, gymnasium; okgin_env.GymEnv; {GYM}",  # an env module registers
        "import gymnasium; gymnasium.make('okgin_env:OklahomaGin-v0')",  # not imported yet: the import registers
        "import okgin_env, gymnasium; gymnasium.make('okgin_env.gym_env:OklahomaGin-v0')",  # always
        "import gymnasium; gymnasium.make_vec('okgin_env.gym_env:OklahomaGin-v0', num_envs=2, "
        "vectorization_mode='vector_entry_point')",
        "import okgin_env, gymnasium, pettingzoo; okgin_env.register_envs(); okgin_env.register_envs()",  # no warning
    ],
)
def test_the_env_ids_work_as_documented(code):
    run(code)


def test_importing_okgin_env_first_registers_nothing_until_asked():
    code = (
        "import okgin_env, gymnasium\n"
        "assert 'OklahomaGin-v0' not in gymnasium.registry\n"
        "okgin_env.register_envs()\n"
        "assert 'OklahomaGin-v0' in gymnasium.registry\n"
    )
    run(code)


def test_the_package_pickles_by_reference():
    # Ray's cloudpickle pickles the module objects a shipped function refers to (the RLlib example).
    import pickle

    import okgin_env

    assert pickle.loads(pickle.dumps(okgin_env)) is okgin_env


# ----------------------------------------------------------------------------- no import circle


def import_graph() -> dict[str, set[str]]:
    """Every module of okgin_env and training and the modules of both it imports, anywhere in its
    code (an import inside a function counts as much as one at the top), with the packages
    Python runs on the way (importing ``a.b.c`` runs ``a`` and ``a.b`` first)."""
    root = PACKAGE.parent
    modules: dict[str, Path] = {}
    for package in ("okgin_env", "training"):
        for path in (root / package).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def with_parents(name: str) -> set[str]:
        name = name.replace("okgin_training", "training")
        while name and name not in modules:
            name = name.rpartition(".")[0]
        parts = name.split(".") if name else []
        return {".".join(parts[:k]) for k in range(1, len(parts) + 1)}

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found |= with_parents(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    found |= with_parents(f"{target}.{alias.name}") | with_parents(target)
        ancestors = with_parents(name) - {name}  # a module's own packages are running already
        graph[name] = found - ancestors - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_lazy_imports_counted():
    graph = import_graph()
    assert "okgin_env.rules.round" in graph and "training.train" in graph
    assert "okgin_env.observation" in graph["okgin_env.features.planes"]  # the graph sees the imports
    assert circles(graph) == []


def test_the_circle_check_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# ----------------------------------------------------------------------------- the floors of docs/architecture.md


def architecture_floors() -> list[tuple[str, list[str]]]:
    """The floors table of docs/architecture.md, lowest first: (floor, its paths as module prefixes)."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    floors = []
    for line in text.split("\n## ")[0].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) < 3 or cells[0] == "floor":  # (a pipe may sit in the text)
            continue
        paths = []
        for path in re.findall(r"`([^`]+)`", cells[1]):
            path = path if path.startswith(("okgin_env/", "training/")) else f"okgin_env/{path}"
            path = path.rstrip("/").removesuffix(".py").removesuffix("/__init__")
            paths.append(path.replace("/", "."))
        floors.append((cells[0], paths))
    return floors


def floor_of(module: str, floors: list[tuple[str, list[str]]]) -> int | None:
    """The floor whose most specific path holds ``module`` (a package's own name holds only itself)."""
    best, length = None, -1
    for number, (_, paths) in enumerate(floors):
        for path in paths:
            holds = module == path or (path != "okgin_env" and module.startswith(path + "."))
            if holds and len(path) > length:
                best, length = number, len(path)
    return best


def test_every_module_sits_on_a_floor_of_the_architecture_page_and_imports_none_above_it():
    """docs/architecture.md's floors are the code's: every module of okgin_env and training is
    placed on one, and no import (lazy ones counted) reaches a higher floor."""
    floors = architecture_floors()
    assert [name for name, _ in floors][:2] == ["utilities", "rules"] and floors[-1][0] == "training"
    graph = import_graph()
    unplaced = sorted(module for module in graph if floor_of(module, floors) is None)
    assert not unplaced, f"modules on no floor of docs/architecture.md: {unplaced}"
    upward = [f"{module} ({floors[floor_of(module, floors)][0]}) -> {other} ({floors[floor_of(other, floors)][0]})"
              for module in sorted(graph) for other in sorted(graph[module])
              if floor_of(other, floors) > floor_of(module, floors)]
    assert not upward, upward


def test_the_floor_check_sees_an_upward_import():
    floors = [("utilities", ["okgin_env"]), ("rules", ["okgin_env.rules"]), ("tools", ["okgin_env.play"])]
    assert floor_of("okgin_env.rules.round", floors) == 1 and floor_of("okgin_env.play", floors) == 2
    assert floor_of("okgin_env.bots", floors) is None  # the package's own name holds only itself
