"""Analysis: pure functions on samples and summaries -- statistics, comparisons, quality warnings, caveats, native
ratios.  Imports the measuring core and the evidence layer, never the harness or a renderer.  Everything the runner
needs from here is standard library only; ``compare`` imports numpy and scipy lazily."""
