"""``python -m sklearn_struct.cli``: the ``sklearn-struct`` command line."""

import sys

from . import main

sys.exit(main())
