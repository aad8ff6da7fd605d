"""Every Python block of the README and of docs/ runs, as a file, from the repository root.

Two markers, HTML comments on the line before a fenced block (invisible on GitHub and on the site):

- ``<!-- fragment: REASON -->`` before a ``python`` block: the block cannot run alone (REASON says
  why, e.g. it continues the block above); it is compiled, not run.
- ``<!-- prints -->`` before a ``text`` block: that text is what the Python block just above it
  prints; the test compares the two (trailing spaces and blank lines aside). ``<!-- prints-end -->``:
  the text is how that output ends.

The README's first block is also run twice by ``tests/test_reliability.py`` (same seed, same match).
"""

from __future__ import annotations

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
MARKER = re.compile(r"<!--\s*(fragment|prints-end|prints)\b:?\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    marker: str  # "", "fragment", "prints" or "prints-end"
    expected_output: str | None = None  # the text of a following <!-- prints --> block
    output_is_end: bool = False  # <!-- prints-end -->: the expected text is how the output ends

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        found.append(Block(page, text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2),
                           marker.group(1) if marker else ""))
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


def normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def test_there_are_examples_and_markers_are_known():
    assert len(BLOCKS) >= 20, "the README and docs lost their Python examples?"
    for page in PAGES:
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith("<!--") and ("fragment" in line or "prints" in line):
                assert MARKER.search(line), f"{page}: unreadable marker {line!r}"


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
