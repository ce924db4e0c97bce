"""``kraftcheck publish`` with its cross-run tables computed by the Spark aggregation (a local session)."""

import json
import re

import pytest

from kraftcheck import cli

from .store_fixture import build_store
from .test_publish import broken_links

pytestmark = pytest.mark.slow  # a Spark session and one aggregation over five runs: about a minute


def test_publish_with_spark_tables(tmp_path, capsys):
    root = build_store(tmp_path / "store")
    out = tmp_path / "site"
    assert cli.main(["publish", str(root), "--out", str(out), "--master", "local[2]"]) == 0
    data = json.loads((out / "summary.json").read_text())
    aggregate = data["aggregate"]
    assert aggregate["runs"] == 5 and data["aggregate_note"].startswith("Spark on local[2]")
    mixes = {(r["fault_mix"], r["variant"]): r["runs"] for r in aggregate["by_mix"]}
    assert mixes == {("kill", "kip966"): 2, ("partition", "v3.5"): 1, ("disk+partition", "v3.5"): 1,
                     ("disk+partition", "kip966"): 1}
    tables = (out / "tables.html").read_text()
    assert broken_links(out / "tables.html") == []
    by_mix = tables.split("id='by-mix'>")[1].split("</table>")[0]
    assert len(re.findall("<tr>", by_mix)) == 1 + 4
    states = {r["state"] for r in aggregate["availability"] if r["fault_mix"] == "kill"}
    assert states == {"fault", "healthy"}
    recovery = {(r["fault_mix"], r["variant"]): r["heals"] for r in aggregate["recovery"]}
    assert recovery[("kill", "kip966")] == 1 and recovery[("partition", "v3.5")] == 1
