"""Helpers for tests that load wakelab's pages in a real headless browser."""
