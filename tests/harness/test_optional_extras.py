"""The core commands work without the optional 'spark' extra (pyspark, pandas, pyarrow), and a command that
needs it says how to install it.

The extra's absence is simulated in a fresh interpreter by a meta-path finder that refuses its modules,
so the check covers every import made on the way, whatever is installed in this environment."""

import json
import subprocess
import sys
import textwrap

from kraftcheck.extras import install_hint, missing_extra
from tests.support.synth import synth_history

SCRIPT = textwrap.dedent("""
    import importlib, importlib.abc, json, sys

    ABSENT = {"pyspark", "py4j", "pandas", "pyarrow"}

    class Absent(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in ABSENT:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Absent())
    from kraftcheck import cli

    for module, _ in cli.SUBCOMMANDS.values():
        importlib.import_module(module)
    history, run, store, out = sys.argv[1:5]
    codes = {
        "check": cli.main(["check", "--history", history, "--no-linear"]),
        "analyze": cli.main(["analyze", run, "--no-report"]),
        "report": cli.main(["report", run]),
        "check --engine spark": cli.main(["check", "--history", history, "--engine", "spark"]),
        "aggregate": cli.main(["aggregate", store]),
        "export --format parquet": cli.main(["export", "--history", history, "--format", "parquet",
                                             "--out", out]),
    }
    print(json.dumps({"codes": codes, "loaded": sorted(m for m in sys.modules if m.partition(".")[0] in ABSENT)}))
""")


def test_core_commands_run_without_the_spark_extra_and_spark_commands_say_how_to_get_it(tmp_path):
    run = tmp_path / "store" / "queue" / "20260101T000000.000Z"
    run.mkdir(parents=True)
    history = run / "history.jsonl"
    history.write_text("".join(json.dumps(op) + "\n" for op in synth_history(200, seed=3)))
    (run / "spec.json").write_text(json.dumps({"test_name": "queue"}))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(history), str(run), str(tmp_path / "store"),
                           str(tmp_path / "h.parquet")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["loaded"] == []
    codes = got["codes"]
    assert codes["check"] == codes["analyze"] == 0 and codes["report"] == 0
    assert (run / "report.html").is_file() and (run / "results.json").is_file()
    for command in ("check --engine spark", "aggregate", "export --format parquet"):
        assert codes[command] == 255, command
    hints = [line for line in proc.stderr.splitlines() if "pip install -e '.[spark]'" in line]
    assert [h.split(":")[0] for h in hints] == ["kraftcheck check", "kraftcheck aggregate", "kraftcheck export"]
    assert not (tmp_path / "h.parquet").exists()


def test_the_hint_names_only_modules_of_an_extra():
    assert missing_extra(ModuleNotFoundError("No module named 'pyspark.sql'", name="pyspark.sql")) == "spark"
    assert missing_extra(ModuleNotFoundError("No module named 'kafka'", name="kafka")) is None
    assert missing_extra(ImportError("cannot import name 'x' from 'pandas'", name="pandas")) is None
    hint = install_hint(ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow"))
    assert hint is not None and "pyarrow" in hint and "pip install -e '.[spark]'" in hint
