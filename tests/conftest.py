"""Shared test setup: the repository root on ``sys.path``, so that test files import their helpers
as ``tests.helpers`` and ``tests.golden`` however pytest is started (pyproject's ``pythonpath``
does the same when pytest reads it)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
