"""The code base stays flake8-clean (configuration in setup.cfg)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_flake8_finds_nothing():
    pytest.importorskip("flake8")
    run = subprocess.run(
        [sys.executable, "-m", "flake8", "sklearn_struct", "tests", "benchmarks", "examples"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
