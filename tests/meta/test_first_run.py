"""numba compiles once: a second process loads every kernel from the on-disk cache,
and structures share the specialized loops they can."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from numba import njit
from numba.core import event

from sklearn_struct.__main__ import _CompileNotice
from sklearn_struct.solvers._eg_kernels import online_epoch
from sklearn_struct.structures import ChainStructure, MulticlassStructure
from sklearn_struct.structures._generic_kernels import batch_marginals
from sklearn_struct.structures._kernel import specialize

REPO = Path(__file__).resolve().parents[2]

# A short chain fit and prediction on the embedded OCR letters: the kernels of
# ``python -m sklearn_struct`` with the same argument types.  Prints the numba
# functions it compiled (numba fires "numba:compile" only on a cache miss).
CHILD = textwrap.dedent("""
    import json
    from numba.core import event

    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass

    event.register("numba:compile", Count())
    from sklearn_struct.datasets import load_ocr_default
    from sklearn_struct.eg import EGCRF

    data = load_ocr_default()
    X = [data.X[i] for i in range(6)]
    y = [data.target_names[data.y[i]] for i in range(6)]
    EGCRF(C=0.3, max_iter=2).fit(X, y).predict(X)
    print(json.dumps(compiled))
""")


def _compiled_in_a_new_process():
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_compiles_nothing():
    _compiled_in_a_new_process()  # compiles what the cache lacks (nothing once warm)
    assert _compiled_in_a_new_process() == []


def test_compile_notice_is_said_once(capsys):
    with event.install_listener("numba:compile", _CompileNotice()):
        assert njit(lambda x: x + 1)(1) == 2
        assert njit(lambda x: x * 2.0)(1.5) == 3.0
    err = capsys.readouterr().err
    assert err.count("compiling numba kernels") == 1
    assert len(err.splitlines()) == 1


def test_no_notice_without_compilation(capsys):
    add_one = njit(lambda x: x + 1)
    add_one(1)
    with event.install_listener("numba:compile", _CompileNotice()):
        assert add_one(2) == 3  # already compiled for int64
    assert capsys.readouterr().err == ""


def test_structures_share_the_loops_that_call_the_same_operations():
    # chains and multiclass differ only by ``project``, which the EG epoch never calls
    chain_epoch = specialize(online_epoch, ChainStructure.kernel_ops)
    multiclass_epoch = specialize(online_epoch, MulticlassStructure.kernel_ops)
    assert chain_epoch.py_func.__name__ == multiclass_epoch.py_func.__name__
    assert chain_epoch is specialize(online_epoch, ChainStructure.kernel_ops)
    # a loop that calls an operation the other set lacks gets its own name
    ops = MulticlassStructure.kernel_ops
    assert (specialize(batch_marginals, ops).py_func.__name__
            != specialize(batch_marginals, ops.without("marginals")).py_func.__name__)
