#!/usr/bin/env python3
"""Reproduce Lab 135 (signal vs threading.Event wakeup) from a clone, with nothing installed.

    python3 lab-evidence/135-signal-vs-event-wakeup/results/run_lab.py

Runs the original lab's arms with its original parameters (200 one-shot
wakes per latency arm; 7 rounds of 20000 handler installs) and writes
summary.json, summary.txt and samples/ beside this script, replacing the
previous evidence here.  Extra arguments are passed to ``wakelab run``
(for example ``--note "my laptop"``).  Needs only the standard library:
the package is imported from this clone's src/ folder.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.normpath(os.path.join(HERE, "..", "..", "..", "src"))

if sys.version_info < (3, 9):
    sys.exit("run_lab.py: error: wakelab needs Python 3.9 or newer, this is %d.%d" % sys.version_info[:2])

sys.path.insert(0, SRC)

from wakelab.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["run", "--lab", "135-signal-vs-event-wakeup", "--output", HERE] + sys.argv[1:]))
