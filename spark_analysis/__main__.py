"""``python -m spark_analysis {aggregate,check,convert}``."""

import sys

from spark_analysis.cli import dispatch

sys.exit(dispatch())
