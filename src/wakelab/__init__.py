"""wakelab: how long does it take to wake a waiter in Python?

Layering (data flows one way, and imports point the same way; ``tests/test_layers.py``
enforces it)::

    core      measuring core: arms, drivers, placement, signal guards, the C floor
    evidence  the bundle's schema, writers, loaders; the history database
    analysis  statistics, comparisons, quality warnings, caveats (pure functions)
    labs      presets: which arms, which parameters, the lab's words
    harness   calibration, worker processes, conditions, grids, the runner
    report / export   renderers: lay out what analysis computed
    commands / cli / progress   the only code that prints or picks exit codes

``core`` imports nothing from the rest of wakelab and only the standard library, on
Python 3.9+, so that any interpreter on the machine can measure from a plain
``PYTHONPATH``.  What the runner needs from ``evidence`` and ``analysis`` is standard
library only too; third-party libraries (jsonschema and rich, and the extras' numpy,
scipy, plotly and pyperf: see ``wakelab.extras``) are imported lazily by the commands that
need them.  ``errors``, ``formatting``, ``percentile`` and ``extras`` are leaves that any
layer above the core may use.
"""

__version__ = "0.2.0"

__all__ = ["__version__"]
