"""sklearn_struct: structured prediction with the scikit-learn estimator API."""

__version__ = "0.1.0.dev0"

from . import datasets, metrics, preprocessing  # noqa: E402
from .structures import (  # noqa: E402
    BaseStructure,
    ChainStructure,
    MatchingStructure,
    MinCutStructure,
    MulticlassStructure,
    UnsupportedOperation,
)

__all__ = [
    "BaseStructure",
    "ChainStructure",
    "MatchingStructure",
    "MinCutStructure",
    "MulticlassStructure",
    "UnsupportedOperation",
    "__version__",
    "datasets",
    "metrics",
    "preprocessing",
]
