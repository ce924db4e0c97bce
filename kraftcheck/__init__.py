"""The application: what drives a run end to end on top of every other package.

``runner`` executes one run (cluster up, workload and nemesis through the interpreter, final phase,
checks, report, teardown on every exit path); ``commands`` are the ``kraftcheck`` subcommands that
``cli`` dispatches to; ``scenarios`` are scripted reproductions; ``pytest_plugin`` exposes runs and
clusters to tests. This is the one layer allowed to import everything; nothing imports it.
"""
