"""``python -m wakelab``: the same as the ``wakelab`` command."""

import sys

try:
    from wakelab.cli import console_main
except KeyboardInterrupt:  # Ctrl-C while Python loads wakelab: one line, no traceback
    import os

    sys.stderr.write("wakelab: interrupted\n")
    sys.stderr.flush()
    os._exit(130)  # wakelab.commands.EXIT_INTERRUPTED, at once (see wakelab.cli.console_main)

if __name__ == "__main__":
    console_main()
