"""One module per family of arms: the primitives' moves and the table of arms (see :mod:`wakelab.core`)."""
