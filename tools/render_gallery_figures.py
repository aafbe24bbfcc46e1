"""Pre-render the figures of the gallery examples that the documentation build does not run.

Those examples train on the shared corpora (``../shared/data``, not shipped) for minutes, so
``doc/conf.py`` leaves them out of execution and their pages show the figure and printed
output written here: ``doc/prerendered/<example>.png`` (a palette PNG, kept under 150 KB)
and ``doc/prerendered/<example>.txt``.  The PNG is also the example's gallery thumbnail.

Usage (from the repository root; the examples' defaults find the corpora)::

    python tools/render_gallery_figures.py examples/plot_eg_chunking.py [...]
"""

import contextlib
import io
import os
import runpy
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from PIL import Image  # noqa: E402  (a dependency of matplotlib)

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "doc" / "prerendered"
MAX_BYTES = 150_000


class _Tee(io.StringIO):
    """Collects what the example prints and still shows it."""

    def write(self, text):
        sys.__stdout__.write(text)
        return super().write(text)


def _save_small_png(figure, path):
    """Save ``figure`` as a 256-colour PNG, lowering the resolution until it fits."""
    for dpi in (90, 80, 70, 60):
        buffer = io.BytesIO()
        figure.savefig(buffer, dpi=dpi, format="png")
        buffer.seek(0)
        image = Image.open(buffer).convert("RGB").quantize(colors=256)
        image.save(path, optimize=True)
        if path.stat().st_size < MAX_BYTES:
            return dpi
    raise RuntimeError(f"{path}: {path.stat().st_size} bytes even at dpi {dpi}")


def render(script):
    script = Path(script).resolve()
    plt.close("all")
    output = _Tee()
    saved_argv, saved_show = sys.argv, plt.show
    sys.argv, plt.show = [str(script)], lambda *args, **kwargs: None
    try:
        # in a scratch folder, so that nothing the script writes lands in the source tree
        with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch), \
                contextlib.redirect_stdout(output):
            runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv, plt.show = saved_argv, saved_show
    numbers = plt.get_fignums()
    if len(numbers) != 1:
        raise RuntimeError(f"{script.name} drew {len(numbers)} figures; one is shown per page")
    png = TARGET / f"{script.stem}.png"
    dpi = _save_small_png(plt.figure(numbers[0]), png)
    (TARGET / f"{script.stem}.txt").write_text(output.getvalue(), encoding="utf-8")
    print(f"{png}: {png.stat().st_size} bytes at dpi {dpi}", file=sys.stderr)


if __name__ == "__main__":
    TARGET.mkdir(exist_ok=True)
    os.environ.setdefault("SKLEARN_STRUCT_SHARED_DATA", str(ROOT.parent / "shared" / "data"))
    for name in sys.argv[1:]:
        render(name)
