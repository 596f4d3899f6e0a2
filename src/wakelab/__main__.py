"""``python -m wakelab``: the same as the ``wakelab`` command."""

import sys

from wakelab.cli import main

if __name__ == "__main__":
    sys.exit(main())
