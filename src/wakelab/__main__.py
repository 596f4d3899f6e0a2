"""``python -m wakelab``: the same as the ``wakelab`` command."""

import sys

try:
    from wakelab.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python loads wakelab: one line, no traceback
    sys.stderr.write("wakelab: interrupted\n")
    sys.exit(130)  # wakelab.commands.EXIT_INTERRUPTED

if __name__ == "__main__":
    sys.exit(main())
