"""``python -m sklearn_struct.cli``: the ``sklearn-struct`` command line."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
