"""The command line shared by the node processes: ``python -m reference_impl.server.<role> --config FILE``."""

from __future__ import annotations

import argparse
import logging
import sys

from reference_impl.server.config import NodeConfig, load_or_exit


def parse_node_argv(argv: list[str] | None, role: str) -> tuple[NodeConfig, str]:
    """Parse ``--config FILE`` for the ``role`` process (``broker`` or ``controller``), load and validate the
    file (exit 2 with the message on an invalid one, or one written for the other role) and send logging to
    stderr tagged with the node's name. Returns the config and its path (the controller re-reads it on
    SIGHUP)."""
    parser = argparse.ArgumentParser(prog=f"reference_impl.server.{role}")
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    config = load_or_exit(args.config, role)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format=f"%(asctime)s [{config.name}] %(name)s %(message)s")
    return config, args.config
