"""Every Python block of the README and of docs/ runs, as a file, from the repository root; every
``bash`` block of the README runs too, in bash, from a copy of the checkout's root (its own
``runs/``), with okgin's commands on the PATH and no terminal on stdin.

Markers, HTML comments on the line before a fenced block (invisible on GitHub and on the site):

- ``<!-- fragment: REASON -->`` before a ``python`` block: the block cannot run alone (REASON says
  why, e.g. it continues the block above); it is compiled, not run.
- ``<!-- prints -->`` before a ``text`` block: that text is what the Python block just above it
  prints; the test compares the two (trailing spaces and blank lines aside). ``<!-- prints-end -->``:
  the text is how that output ends.
- ``<!-- not-run: REASON -->`` before a README ``bash`` block: the block is not run (REASON says
  why: it clones or installs, serves until stopped, is the test suite, or takes long).
- ``<!-- run-with: OLD => NEW; OLD2 => NEW2 -->`` before a README ``bash`` block: it runs with each
  OLD replaced by NEW (a smaller budget, stated where the reader sees the command).

The README's first block is also run twice by ``tests/test_reliability.py`` (same seed, same match).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.long  # one of the default suite's long modules: -m "not slow and not long" skips it

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*(fragment|prints-end|prints|not-run|run-with)\b:?\s*(.*?)\s*-->\s*$")
MARKER_WORDS = ("fragment", "prints", "not-run", "run-with")


@dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    marker: str  # "", "fragment", "prints", "prints-end", "not-run" or "run-with"
    note: str = ""  # what the marker says after its name: a reason, or run-with's replacements
    expected_output: str | None = None  # the text of a following <!-- prints --> block
    output_is_end: bool = False  # <!-- prints-end -->: the expected text is how the output ends

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def fenced_blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        found.append(Block(page, text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2),
                           marker.group(1) if marker else "", marker.group(2) if marker else ""))
    return found


def blocks_of(page: Path) -> list[Block]:
    found = fenced_blocks(page)
    python: list[Block] = []
    for index, block in enumerate(found):
        if block.marker in ("prints", "prints-end"):
            previous = found[index - 1] if index else None
            if previous is None or previous.language != "python":
                raise AssertionError(f"{block.name}: a <!-- {block.marker} --> block must follow a python block")
            previous.expected_output = block.code
            previous.output_is_end = block.marker == "prints-end"
        if block.language == "python":
            python.append(block)
    return python


BLOCKS = [block for page in PAGES for block in blocks_of(page)]
SHELL_BLOCKS = [block for block in fenced_blocks(ROOT / "README.md") if block.language == "bash"]


def normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def test_there_are_examples_and_markers_are_known():
    assert len(BLOCKS) >= 20, "the README and docs lost their Python examples?"
    for page in PAGES:
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith("<!--") and any(word in line for word in MARKER_WORDS):
                assert MARKER.search(line), f"{page}: unreadable marker {line!r}"
    for block in (b for page in PAGES for b in fenced_blocks(page)):
        if block.marker in ("not-run", "run-with"):
            assert block.page.name == "README.md" and block.language == "bash", f"{block.name}: <!-- {block.marker} --> " \
                "is for the README's bash blocks"
            assert block.note, f"{block.name}: <!-- {block.marker} --> needs its reason or replacements"


def test_the_readme_links_point_at_files_of_the_checkout():
    # The site build checks the links of docs/ (mkdocs build --strict); the README is outside it.
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [target for target in targets if "://" not in target]
    assert local, "the README links into docs/"
    missing = [target for target in local if not (ROOT / target).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_the_reference_page_documents_every_member_it_lists():
    """docs/reference.md lists members for mkdocstrings, which leaves out any without a docstring
    (the AEC env's reset, step, observe and last once went missing that way)."""
    import importlib

    text = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    listed = re.findall(r"^::: ([\w.]+)\n    options:\n      members: \[([^\]]*)\]", text, re.M)
    assert ("okgin_env.env.raw_env", "reset, step, observe, last, state, hand, scores, round_state") in listed
    for target, members in listed:
        module, _, name = target.rpartition(".")
        try:
            owner = getattr(importlib.import_module(module), name)
        except ImportError:  # a module itself
            owner = importlib.import_module(target)
        undocumented = [m for m in members.split(", ") if not (getattr(owner, m).__doc__ or "").strip()]
        assert not undocumented, f"{target}: no docstring for {undocumented}"


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_python_block_runs(block: Block, tmp_path: Path):
    if block.marker == "fragment":
        compile(block.code, block.name, "exec")  # a fragment is still valid Python
        return
    script = tmp_path / "example.py"
    script.write_text(block.code, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{block.name} failed:\n{done.stderr[-3000:]}"
    if block.expected_output is not None:
        printed, expected = normalised(done.stdout), normalised(block.expected_output)
        matches = printed.endswith(expected) if block.output_is_end else printed == expected
        assert matches, f"{block.name} printed:\n{done.stdout}"


def with_replacements(block: Block) -> str:
    """The block's commands with its ``run-with`` replacements made (each must occur in it)."""
    code = block.code
    if block.marker == "run-with":
        for rule in block.note.split(";"):
            old, arrow, new = (part.strip() for part in rule.partition("=>"))
            assert arrow and old and old in code, f"{block.name}: run-with {rule.strip()!r} does not match the block"
            code = code.replace(old, new)
    return code


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=[block.name for block in SHELL_BLOCKS])
def test_readme_shell_block_runs(block: Block, tmp_path: Path):
    if block.marker == "not-run":
        pytest.skip(f"not run: {block.note}")
    checkout = tmp_path / "okgin"  # the checkout's files, linked, and a runs/ of its own
    checkout.mkdir()
    for entry in ROOT.iterdir():
        if not entry.name.startswith(".") and entry.name not in ("runs", "out", "site", "build"):
            (checkout / entry.name).symlink_to(entry)
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                   "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", with_replacements(block)], cwd=checkout,
                          env=environment, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{block.name} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


def test_every_readme_shell_block_runs_or_says_why_not():
    assert len(SHELL_BLOCKS) >= 8
    assert all(block.marker in ("", "not-run", "run-with") for block in SHELL_BLOCKS)
    clone = next(block for block in SHELL_BLOCKS if "git clone" in block.code)
    assert clone.marker == "not-run"


@pytest.mark.parametrize("script", ["sb3_maskable_ppo", "tianshou_multiagent", "rllib_selfplay", "torchrl_ppo"])
def test_a_framework_example_says_what_to_install(script: str):
    """``--help`` of a framework example without its framework was a ModuleNotFoundError traceback:
    it prints its usage when the framework is there, else one line naming the extra to install."""
    done = subprocess.run([sys.executable, f"examples/{script}.py", "--help"], capture_output=True, text=True,
                          timeout=300, check=False, cwd=ROOT)
    if done.returncode == 0:
        assert "usage:" in done.stdout
    else:
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"{script}.py: error: this example needs ") and 'pip install -e ".[' in done.stderr


def test_the_examples_requirement_check_names_what_is_missing(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from _common import require

    require(("numpy",), "dev")  # installed: nothing happens
    monkeypatch.setattr(sys, "argv", ["demo.py"])
    with pytest.raises(SystemExit) as stop:
        require(("numpy", "okgin_no_such_module"), "sb3")
    assert stop.value.code == 2
    assert capsys.readouterr().err == ('demo.py: error: this example needs okgin_no_such_module (not installed): '
                                       'pip install -e ".[sb3]" from the checkout root\n')
