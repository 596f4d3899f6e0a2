"""wakelab's public, versioned APIs.

* :mod:`wakelab.api.v1` -- declare your own arms (wake experiments) for
  ``wakelab run --arm-file PATH`` and the ``wakelab.arms`` entry-point group.
  Stable: names and meanings in ``v1`` do not change; a change that would
  break an arm file comes as ``wakelab.api.v2`` beside it.

This package sits on the measuring core's layer: standard library only,
Python 3.9+ and PyPy, importable in a worker started with ``python -S``.
Importing it imports nothing.
"""
