"""The command that repeats a stored run, as a report prints it.

A scripted scenario is repeated by naming it with the backend, variant and seed it ran with (the
script is the same every time); a randomized run by replaying its stored ``spec.json``
(``kraftcheck run --replay``, which takes every option and the seed from it).
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from harness.spec import replay_command


def reproduction(spec: dict[str, Any], run_dir: str | os.PathLike | None = None) -> str:
    """``kraftcheck scenario NAME --backend B --variant V --seed N`` for a scenario run, else ``kraftcheck run
    --replay RUN_DIR/spec.json`` (the full argument list when the run directory is not known)."""
    name = spec.get("scenario")
    if name:
        argv = ["kraftcheck", "scenario", str(name)]
        for flag, key in (("--backend", "backend"), ("--variant", "variant"), ("--seed", "seed")):
            if spec.get(key) is not None:
                argv += [flag, str(spec[key])]
        return shlex.join(argv)
    return replay_command(spec, os.path.join(run_dir, "spec.json") if run_dir is not None else None)
