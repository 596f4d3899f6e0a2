"""The measuring harness: timer calibration, global-state guards, the runner.

Measuring side: standard library only, Python 3.9+.
"""
