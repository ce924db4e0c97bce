"""One module per ``kraftcheck`` subcommand owned by the harness; each exposes ``main(argv) -> exit code``.

``run`` (a whole fault-injection run), ``analyze`` (re-check a stored, possibly partial, run), ``check``
(check any history file), ``cluster`` (``up``/``down``/``status`` of a cluster for manual work, owned by a
detached keeper process), ``scenario`` (named scripted reproductions), ``image`` (the docker backend's node
image), ``clean`` (stop the manual cluster, then remove everything kraftcheck left behind), ``publish`` (a
whole store as a static conformance report) and ``serve`` (the same pages live over loopback).
``preflight`` holds the checks several commands make before they start anything (is Docker reachable).
The dispatcher imports a command's module only when that command runs, so ``kraftcheck --help`` stays
instant.
"""
