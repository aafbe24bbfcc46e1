"""Solvers: pure functions over arrays and structures; no scikit-learn here."""
