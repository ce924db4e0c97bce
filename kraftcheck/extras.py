"""Optional extras: which third-party modules come only with an extra, and how to say so.

Spark, pandas and pyarrow are heavy and only the Spark analysis (``kraftcheck aggregate``, ``--engine
spark``) and the Parquet export need them, so they are the ``spark`` extra of ``pyproject.toml``
(``scripts/install`` installs it). The core commands never import them; a command that needs them and
finds them missing ends with one line naming the install command instead of a traceback.
"""

from __future__ import annotations

# Top-level module -> the extra of pyproject.toml that installs it.
EXTRA_OF_MODULE = {"pyspark": "spark", "py4j": "spark", "pandas": "spark", "pyarrow": "spark"}


def missing_extra(exc: ImportError) -> str | None:
    """The extra to install when ``exc`` says a module of one is missing, else None."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    return EXTRA_OF_MODULE.get(exc.name.partition(".")[0])


def install_hint(exc: ImportError) -> str | None:
    """One line saying which missing module an extra provides and how to install it, else None."""
    extra = missing_extra(exc)
    if extra is None:
        return None
    return (f"{exc.name} is not installed; it comes with the optional '{extra}' extra: "
            f"pip install -e '.[{extra}]' (scripts/install installs it)")
