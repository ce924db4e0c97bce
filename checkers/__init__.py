"""Checkers: pure functions of a history (and traces) that return a verdict with the ops that prove it."""
