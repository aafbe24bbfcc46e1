"""The classes a model file may name: an explicit allow-list.

Every public estimator and transformer of the package, every structure of
:mod:`sklearn_struct.structures`, and the objects they hold once fitted (target
codecs, label indexes, grammars, the places of weight views).  A class is
named in a file by its name alone, which is unique in this list; a name outside
it is refused before anything is built.

The list is written out rather than discovered: a class is rebuilt without its
``__init__`` (``__new__``, then its state), so a class whose methods act on the
world (a scratch folder removed by ``__del__``, a thread, a file handle) must
never be buildable from a file.  ``tests/estimators/test_persistence.py``
enumerates the package's public estimators, transformers and structures and
fails when one is missing here.
"""

from ..base import WeightView
from ..crfsuite import CRF
from ..eg import EGCRF, EGStructuredSVM
from ..elastic_net import ElasticNetChainCRF
from ..extragradient import DualExtragradientMatcher
from ..l1m3n import L1M3N
from ..parsing import DependencyPipeline
from ..perceptron import StructuredPerceptron
from ..preprocessing import DependencyTokenEncoder, SequenceDictVectorizer, TagDictionary
from ..sm import SMAdaBoostClassifier, SMLogisticRegression
from ..structures import (
    BinaryUnitCodec, ChainStructure, DependencyTreeStructure, FlatLabelCodec, Grammar,
    GraphStructure, HeadsCodec, MatchingStructure, MinCutStructure, MonotoneAlignmentStructure,
    MulticlassStructure, PrunedChainStructure, SemiMarkovStructure, SiblingDependencyStructure,
    TreeCodec, TreeStructure, UnitLabelCodec, WeightedCFGStructure)
from ..structures._targets import LabelIndex

__all__ = ["ALLOWED_CLASSES", "ESTIMATORS", "STRUCTURES", "TRANSFORMERS"]

#: The estimators (what :func:`~sklearn_struct.persistence.dump` is for).
ESTIMATORS = (EGCRF, EGStructuredSVM, L1M3N, DualExtragradientMatcher, StructuredPerceptron,
              SMLogisticRegression, SMAdaBoostClassifier, ElasticNetChainCRF, CRF,
              DependencyPipeline)
#: The transformers of :mod:`sklearn_struct.preprocessing`.
TRANSFORMERS = (SequenceDictVectorizer, DependencyTokenEncoder, TagDictionary)
#: Every structure of :mod:`sklearn_struct.structures`.
STRUCTURES = (ChainStructure, PrunedChainStructure, SemiMarkovStructure, MulticlassStructure,
              TreeStructure, DependencyTreeStructure, SiblingDependencyStructure,
              WeightedCFGStructure, MatchingStructure, MinCutStructure, GraphStructure,
              MonotoneAlignmentStructure)
#: What the fitted objects hold: target codecs, label indexes, grammars, weight views.
_HELD = (UnitLabelCodec, FlatLabelCodec, BinaryUnitCodec, HeadsCodec, TreeCodec, LabelIndex,
         Grammar, WeightView)
#: Class name -> class: every class a model file may name.
ALLOWED_CLASSES = {cls.__name__: cls for cls in ESTIMATORS + TRANSFORMERS + STRUCTURES + _HELD}
