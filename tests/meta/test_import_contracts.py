"""The layer rules of ARCHITECTURE.md hold: import-linter's contracts (``.importlinter``)
are kept."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept():
    pytest.importorskip("importlinter", reason="import-linter (the test extra) checks them")
    script = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    script = script or shutil.which("lint-imports")
    # the package of this checkout, not another one installed in editable mode
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    run = subprocess.run([script, "--no-cache", "--no-logo"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
