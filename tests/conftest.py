"""Shared fixtures: repository root on sys.path so tests import tests.support and tests.oracles."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
