"""Same seed, same schedule, same run, byte for byte: in one process and across processes (whose string
hashing differs), through the CLI's output and the schedule file it writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from simulator import SimOptions, generate, run_schedule

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _dump(result) -> str:
    return json.dumps({"trace": result.trace, "ops": result.ops, "steps": result.steps,
                       "finding": result.finding and result.finding.to_dict()}, sort_keys=True, default=str)


def test_a_seed_gives_the_same_schedule_and_the_same_run():
    options = SimOptions(variant="kip966")
    assert generate(5, options).to_json() == generate(5, options).to_json()
    assert generate(5, options).to_json() != generate(6, options).to_json()
    first = run_schedule(generate(5, options), keep_trace=True)
    second = run_schedule(generate(5, options), keep_trace=True)
    assert first.trace and first.ops
    assert _dump(first) == _dump(second)


def _cli(tmp_path, name: str, hash_seed: str) -> tuple[str, bytes]:
    out = tmp_path / name
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED=hash_seed)
    proc = subprocess.run([sys.executable, "-m", "simulator.cli", "--seed", "0", "--schedules", "5",
                           "--shrink-runs", "60", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    files = sorted(os.listdir(out))
    assert len(files) == 1
    return proc.stdout.replace(str(out), "OUT"), (out / files[0]).read_bytes()


def test_the_cli_prints_and_writes_the_same_bytes_in_another_process(tmp_path):
    first = _cli(tmp_path, "a", "1")
    second = _cli(tmp_path, "b", "2")
    assert first == second
    assert b'"found"' in first[1]
