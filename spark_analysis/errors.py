"""Errors of the Spark analysis, each carrying a message a user can act on."""

from __future__ import annotations


class SparkAnalysisError(Exception):
    """Base class: something prevented the analysis from running (not an anomaly in the history)."""


class JavaMissing(SparkAnalysisError):
    """No usable Java runtime (Spark needs one): neither ``JAVA_HOME`` nor ``java`` on PATH works."""


class BadMasterURL(SparkAnalysisError):
    """The ``--master`` URL is malformed, or names a standalone master that does not answer."""


class CorruptInput(SparkAnalysisError):
    """An input that cannot be checked: lines that are not history ops (``problems`` holds ``(path, line,
    reason)``), a key or value that is not an integer, or a columnar history that does not match its JSONL."""

    def __init__(self, message: str, problems: list[tuple[str, int, str]] | None = None):
        super().__init__(message)
        self.problems = list(problems or [])


class SessionConflict(SparkAnalysisError):
    """A second SparkSession with a different master was requested in the same process."""
