"""The keyed pass (spark_analysis/keyed.py) sends each (run, key) group whole to the partition the packing
chose: with as many partitions as groups, every partition holds exactly one group."""

import json

from checkers.history.parquet import write_history_parquet
from spark_analysis import columnar, keyed

from .planted import planted_history


def _partition_contents(has_final, options, graph=None):
    def report(batches):
        import pyarrow as pa

        groups: dict = {}
        for b in batches:
            for run, key in zip(b.column("run").to_pylist(), b.column("key").to_pylist(), strict=True):
                groups[(run, key)] = groups.get((run, key), 0) + 1
        yield pa.RecordBatch.from_pylist(
            [{"run": "", "kind": json.dumps(sorted([k, n] for (_, k), n in groups.items())), "key": 0, "n": 0,
              "row": ""}],
            schema=pa.schema([("run", pa.string()), ("kind", pa.string()), ("key", pa.int64()),
                              ("n", pa.int32()), ("row", pa.string())]))
    return report


def test_every_group_lands_whole_in_the_partition_chosen_for_it(spark, tmp_path, monkeypatch):
    runs = []
    for n in range(2):
        run = tmp_path / f"run{n}"
        run.mkdir()
        with open(run / "history.jsonl", "w") as fh:
            fh.writelines(json.dumps(op) + "\n" for op in planted_history(300, seed=n))
        runs.append(str(write_history_parquet(run / "history.jsonl").path))
    table = columnar.key_table(spark, runs)
    facts = keyed.run_facts(table)
    groups = {(run, key): rows for run, f in facts.items() for key, rows in f.keys.items()}
    assert len(groups) == 8  # 2 runs x 4 keys
    monkeypatch.setattr(keyed, "TARGET_ROWS", 1)  # as many partitions as groups
    monkeypatch.setattr(keyed, "_checker", _partition_contents)
    contents = [json.loads(r["kind"]) for r in keyed.key_pass(spark, table, facts).collect()]
    assert len(contents) == len(groups) and all(len(c) == 1 for c in contents)
    assert sorted(rows for c in contents for _, rows in c) == sorted(groups.values())
