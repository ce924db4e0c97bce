"""One module per ``kraftcheck`` subcommand owned by the harness; each exposes ``main(argv)``."""
