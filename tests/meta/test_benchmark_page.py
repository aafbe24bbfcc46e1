"""The README's headline table, the Benchmarks page and its figures agree with the records.

``benchmarks/benchmark_page.py`` computes every headline number from the records in
``benchmarks/results/``; these tests recompute them and compare with what the README and
``doc/benchmarks.rst`` say, and with the digest of the records stamped into each figure.
When one fails, re-run ``cd benchmarks && python benchmark_page.py`` (or restore the record).
"""

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def page():
    spec = importlib.util.spec_from_file_location(
        "benchmark_page", ROOT / "benchmarks" / "benchmark_page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def headlines(page):
    return page.headlines()


def test_readme_headline_numbers_agree_with_the_records(page, headlines):
    readme = (ROOT / "README.md").read_text()
    assert page.readme_table(headlines) in readme, (
        "README.md's headline table differs from the records: run "
        "`cd benchmarks && python benchmark_page.py`")


def test_benchmarks_page_agrees_with_the_records(page, headlines):
    assert (ROOT / "doc" / "benchmarks.rst").read_text() == page.page_text(headlines)


def test_each_figure_was_drawn_from_the_current_record(page, headlines):
    for item in headlines:
        figure = page.FIGURES / f"{item.name}.png"
        assert figure.is_file(), f"{figure.name} is missing"
        assert figure.stat().st_size < 150_000, f"{figure.name} is too large for the repository"
        assert page.png_digest(figure) == item.digest(), (
            f"{figure.name} was drawn from other records than the current ones")


def test_a_changed_record_number_fails_the_check(page, headlines, tmp_path, monkeypatch):
    shutil.copytree(ROOT / "benchmarks" / "results", tmp_path / "results")
    record = tmp_path / "results" / "eg_conll.md"
    seconds = headlines[0].data["seconds"]["EGCRF (1 core)"]
    text = record.read_text()
    assert f"| {seconds} |" in text
    record.write_text(text.replace(f"| {seconds} |", f"| {seconds + 1} |", 1))
    original = page.read_record
    monkeypatch.setattr(page, "read_record",
                        lambda topic: original(topic, tmp_path / "results"))
    changed = page.headlines()
    assert page.readme_table(changed) not in (ROOT / "README.md").read_text()
    assert changed[0].digest() != headlines[0].digest()
