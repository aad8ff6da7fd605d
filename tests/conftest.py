"""Shared test setup: the repository root on ``sys.path``, so that test files import their helpers
as ``tests.helpers`` and ``tests.golden`` however pytest is started (pyproject's ``pythonpath``
does the same when pytest reads it), and fixtures several test files use."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


@pytest.fixture
def full_disk(monkeypatch):
    """Every records file write fails as on a full disk (ENOSPC, at the flush to disk)."""

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("okgin_env.records.files.os.fsync", disk_full)
