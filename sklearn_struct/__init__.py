"""sklearn_struct: structured prediction with the scikit-learn estimator API."""

__version__ = "0.1.0.dev0"

from .structures import BaseStructure, UnsupportedOperation  # noqa: E402

__all__ = [
    "BaseStructure",
    "UnsupportedOperation",
    "__version__",
]
