"""One module per ``kraftcheck`` subcommand owned by the harness; each exposes ``main(argv) -> exit code``.

``run`` (a whole fault-injection run), ``analyze`` (re-check a stored, possibly partial, run), ``cluster``
(``up``/``down``/``status`` of a cluster for manual work, owned by a detached keeper process) and
``clean`` (stop the manual cluster, then remove everything kraftcheck left behind). Heavy imports happen
inside ``main`` so that ``kraftcheck --help`` stays instant. (``image`` belongs to the hosts engineer.)
"""
