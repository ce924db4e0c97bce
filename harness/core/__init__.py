"""The harness's contracts: what the checkers, nemeses, workloads, reports and Spark jobs rely on.

Nothing here imports a package above it (``lint-imports`` enforces it): the history schema and its I/O
(``history``), the typed run spec (``spec``), the run store's layout (``store``), the small protocols a
host, cluster and client implement (``interfaces``), the hosts themselves (``hosts``), generators and
the interpreter that executes them (``generator``, ``interpreter``), the reference cluster handle that
launches nodes by module name (``cluster``), cleanup of everything a run can leave behind, the fault
vocabulary and fault intervals (``faults``), and the one function that decides a run's verdict and the
table of exit codes (``verdict``).
The application that drives a run lives in ``harness.app``.
"""
