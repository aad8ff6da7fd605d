"""pyproject.toml: what a wheel installs (okgin_env and okgin_training, no top-level ``training``)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def packages_on_disk() -> set[str]:
    """Every package folder, named as installed (training/ is okgin_training)."""
    found = set()
    for folder, installed in (("okgin_env", "okgin_env"), ("training", "okgin_training")):
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((installed, *parts)))
    return found


def test_every_package_folder_is_listed():
    assert set(SETUPTOOLS["packages"]) == packages_on_disk()
    assert SETUPTOOLS["package-dir"] == {"okgin_training": "training"}


def test_the_license_is_an_spdx_expression_with_its_file():
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Copyright (c) 2026 the okgin developers" in text


def test_the_base_install_has_the_progress_bar_and_the_checkpoint_loader():
    project = PYPROJECT["project"]
    assert any(dep.startswith("tqdm") for dep in project["dependencies"])
    assert project["entry-points"]["okgin.policy_loaders"] == {"pt": "okgin_training:load_policy"}
    assert project["scripts"]["okgin-eval"] == "okgin_env.eval_cli:main"


def test_training_imports_itself_only_relatively():
    """Installed as okgin_training, an absolute ``import training...`` inside it would break."""
    for path in (ROOT / "training").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            assert not [n for n in names if n.split(".")[0] in ("training", "okgin_training")], (path, node.lineno)


def test_a_wheel_holds_no_top_level_training(tmp_path):
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip("building needs setuptools >= 77 (PEP 639 license fields)")
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("okgin_env", "training"):
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-v", "-w", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "deprecated" not in (done.stdout + done.stderr).lower()  # e.g. a TOML-table project.license
    (wheel,) = tmp_path.glob("okgin-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"okgin_env", "okgin_training", next(n.split("/")[0] for n in names if ".dist-info/" in n)}
    assert "okgin_training/policy.py" in names and "okgin_env/rules/melds.py" in names
    assert {f"okgin_env/web/static/{page}" for page in ("index.html", "app.js", "style.css")} <= set(names)  # okgin-web
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    from okgin_env.pretrained import PRETRAINED  # pretrained:NAME: its files, as files, and nothing more

    shipped = {info.filename: info.file_size for info in zipfile.ZipFile(wheel).infolist() if info.filename.endswith(".pt")}
    assert shipped == {f"okgin_env/pretrained/{file}": (ROOT / "checkpoints" / file).stat().st_size for file in PRETRAINED.values()}
    assert wheel.stat().st_size < 5_000_000  # a few MB: the five policies and the code


def test_the_package_links_to_the_shipped_policies():
    """okgin_env/pretrained/ holds links to checkpoints/, so that the checkout keeps one copy of each
    file (a new okgin_standard.pt replaces the file the link names) and a wheel holds the files."""
    from okgin_env.pretrained import PRETRAINED

    folder = ROOT / "okgin_env" / "pretrained"
    assert sorted(path.name for path in folder.glob("*.pt")) == sorted(PRETRAINED.values())
    for file in PRETRAINED.values():
        assert (folder / file).is_symlink() and (folder / file).resolve() == (ROOT / "checkpoints" / file).resolve()
    readme = (ROOT / "checkpoints" / "README.md").read_text(encoding="utf-8")
    assert all(f"`pretrained:{name}` | `{file}`" in readme for name, file in PRETRAINED.items())


#: The largest file git may track outside checkpoints/ (the shipped policies and their history).
MAX_TRACKED_BYTES = 2_000_000


def test_no_large_file_is_tracked_outside_checkpoints():
    """A stray wheel or data dump (a 10.6 MB ruff wheel was once committed at the root) fails CI."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    large = [f"{name} ({(ROOT / name).stat().st_size:,} bytes)" for name in listed.split("\0")
             if name and not name.startswith("checkpoints/") and (ROOT / name).is_file()
             and not (ROOT / name).is_symlink() and (ROOT / name).stat().st_size > MAX_TRACKED_BYTES]
    assert not large, f"tracked files over {MAX_TRACKED_BYTES:,} bytes outside checkpoints/: {', '.join(large)}"
