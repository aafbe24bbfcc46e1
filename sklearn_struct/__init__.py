"""sklearn_struct: structured prediction with the scikit-learn estimator API."""

__version__ = "0.1.0.dev0"

from . import datasets, metrics, preprocessing  # noqa: E402
from .sm import SMAdaBoostClassifier, SMLogisticRegression, fit_log_linear  # noqa: E402
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
    "SMAdaBoostClassifier",
    "SMLogisticRegression",
    "UnsupportedOperation",
    "__version__",
    "datasets",
    "fit_log_linear",
    "metrics",
    "preprocessing",
]
