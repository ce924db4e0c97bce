"""PySpark jobs over stored histories: one run too big for memory, or thousands of runs."""
