"""wakelab: how long does it take to wake a waiter in Python?

Layering (data flows one way)::

    labs (presets) -> harness.runner -> arms (one experiment each) -> raw samples
        -> stats -> evidence (summary.json, samples) -> report (summary.txt ...)

``arms``, ``harness``, ``stats``, ``evidence.bundle`` and ``report.text`` are
the measuring side: standard library only, Python 3.9+, so that any CPython on
the machine can run them from a plain ``PYTHONPATH``.  Everything that needs a
third-party library (the validating loader) imports it lazily.  ``cli`` is a
thin layer on top and the only module that prints or picks exit codes.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
