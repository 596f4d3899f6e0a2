"""The measuring core: everything a worker process runs, and nothing else.

Standard library only, Python 3.9+ (and PyPy), importing nothing from the rest
of wakelab, so that any interpreter on the machine can measure from a plain
``PYTHONPATH`` and no analysis or rendering code is ever loaded beside a
measurement.  Read it in this order:

* :mod:`~wakelab.core.model` -- what an arm is (name, waiter state, scope,
  ``t0``, ``t1``), the parameters it takes, and the raw record it returns;
* :mod:`~wakelab.core.drivers` -- one driver per way of waiting (a waiter
  thread, the main thread, an event loop, a child process, the C floor).  A
  driver owns the whole wake loop: handshake, settle, ``t0``, planted delay,
  notify, ``t1``, lost wakes, open and closed loop.  ``t0`` is taken only
  there;
* :mod:`~wakelab.core.families` -- one module per family, holding only its
  primitives' moves (reset / wait / notify), its declaration (``FAMILY``) and
  its table of arms, each arm with its own facts (C floor, ``t1`` shape,
  guidance roles);
* :mod:`~wakelab.core.registry` -- finds the family modules, derives the
  tables everything else reads (families, titles, colours, "vs C", roles)
  from their declarations, and looks arms up;
* :mod:`~wakelab.core.placement` and :mod:`~wakelab.core.sigstate` -- the
  guards that pin threads and restore signal state.

Everything above (harness, analysis, evidence, renderers, CLI) imports the
core; the core imports none of it (``tests/test_layers.py`` enforces this).
"""
