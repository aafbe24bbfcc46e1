"""sklearn_struct: structured prediction with the scikit-learn estimator API."""

__version__ = "0.1.0.dev0"

from ._numba_cache import drop_stale_caches  # noqa: E402

drop_stale_caches()  # before anything compiles or loads a cached kernel

from . import datasets, metrics, preprocessing  # noqa: E402
from .crfsuite import CRF  # noqa: E402
from .eg import EGCRF, EGStructuredSVM, eg_path  # noqa: E402
from .elastic_net import ElasticNetChainCRF  # noqa: E402
from .extragradient import DualExtragradientMatcher  # noqa: E402
from .l1m3n import L1M3N, l1m3n_min_C, l1m3n_path  # noqa: E402
from .perceptron import StructuredPerceptron  # noqa: E402
from .sm import SMAdaBoostClassifier, SMLogisticRegression, fit_log_linear  # noqa: E402
from .structures import (  # noqa: E402
    BaseStructure,
    ChainStructure,
    DependencyTreeStructure,
    MatchingStructure,
    MinCutStructure,
    MulticlassStructure,
    SemiMarkovStructure,
    SiblingDependencyStructure,
    TreeStructure,
    UnsupportedOperation,
    WeightedCFGStructure,
)

__all__ = [
    "BaseStructure",
    "ChainStructure",
    "CRF",
    "datasets",
    "DependencyTreeStructure",
    "DualExtragradientMatcher",
    "eg_path",
    "EGCRF",
    "EGStructuredSVM",
    "ElasticNetChainCRF",
    "fit_log_linear",
    "L1M3N",
    "l1m3n_min_C",
    "l1m3n_path",
    "MatchingStructure",
    "metrics",
    "MinCutStructure",
    "MulticlassStructure",
    "preprocessing",
    "SemiMarkovStructure",
    "SiblingDependencyStructure",
    "SMAdaBoostClassifier",
    "SMLogisticRegression",
    "StructuredPerceptron",
    "TreeStructure",
    "UnsupportedOperation",
    "WeightedCFGStructure",
    "__version__",
]
