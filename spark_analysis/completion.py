"""The op completion rule as Spark column expressions, read from ``harness.history.COMPLETED_FIELDS``.

The Python readers complete each op with ``harness.history.complete_op``; a Spark job cannot call it per
row without leaving the JVM, so it builds the same rule from the same table. The jobs pair ops with a
window per run and process in file order, each row holding the row before it as a struct column
``prev``: a completion row whose ``prev`` is its invocation is *paired* (the invocation's fields are
``prev.<column>``, the completion's the row's own); an invocation row with no completion after it never
completed (its fields are the row's own, and there is no completion). ``completed(field, paired)`` gives
a field of the completed op on both kinds of rows; ``invocation_struct`` the ``prev`` struct it needs.

Column names are those of ``spark_analysis.read`` (``seek`` and ``rebalance`` for the history's
``seek_to_beginning`` and ``rebalance_log``); every optional field is raw JSON text there, so "says
true" is the text ``true``. Spark reads an absent field and a null one alike, which the Python rule
does too for these fields (a completion's null ``hwm`` is its ``hwm``).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from harness.history import COMPLETED_FIELDS, FROM_COMPLETION, FROM_EITHER, FROM_INVOCATION

# History fields whose op column has another name (spark_analysis.read.OPS_COLUMNS).
COLUMN_OF = {"seek_to_beginning": "seek", "rebalance_log": "rebalance"}


def _column(field: str) -> str:
    return COLUMN_OF.get(field, field)


def invocation_struct(fields: tuple[str, ...], extra: tuple[str, ...] = ("type",)) -> Column:
    """The struct of the op columns ``completed`` reads from the invocation (``prev``) for ``fields``,
    plus ``extra`` (the pairing test reads ``prev.type``)."""
    names = list(extra)
    for field in fields:
        source, name, _ = COMPLETED_FIELDS[field]
        if source in (FROM_INVOCATION, FROM_EITHER) and _column(name) not in names:
            names.append(_column(name))
    return F.struct(*names)


def completed(field: str, paired: Column) -> Column:
    """``field`` of the completed op (``harness.history.COMPLETED_FIELDS``) on a paired completion row
    (``paired`` true) or on an invocation row that never completed (``paired`` false)."""
    source, name, missing = COMPLETED_FIELDS[field]
    col = _column(name)
    own, invoked = F.col(col), F.col(f"prev.{col}")
    if source == FROM_INVOCATION:
        return F.when(paired, invoked).otherwise(own)
    if source == FROM_EITHER:
        said = F.when(paired, (invoked == "true") | (own == "true")).otherwise(own == "true")
        return F.coalesce(said, F.lit(False))  # a boolean: false when neither says anything
    if source != FROM_COMPLETION:
        raise ValueError(f"completed field {field}: unknown source {source!r}")
    if missing == FROM_INVOCATION:
        return own  # the completion's on a paired row, the invocation's (the row itself) otherwise
    if missing is None:
        return F.when(paired, own)  # null, of the column's type, when nothing came back
    return F.when(paired, own).otherwise(F.lit(missing))
