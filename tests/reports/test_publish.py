"""``kraftcheck publish`` on a synthetic store: the site's files, links, matrix and summary.json."""

import json
import re
import shutil
from pathlib import Path

import pytest

from kraftcheck import cli
from reports.catalog import SITE_MARKER
from reports.publish import SiteError, prepare_site_dir, publish
from reports.site import PAGES, Aggregate

from .store_fixture import INVALID_RUN, KILLED_RUN, LRS_KIP966, LRS_V35, VALID_RUN, build_store

HREF = re.compile(r"href='([^']+)'")
IDS = re.compile(r"id='([^']+)'")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = build_store(tmp_path_factory.mktemp("store"))
    out = tmp_path_factory.mktemp("site")
    published = publish(root, out, Aggregate(None, "left out (--no-aggregate)"))
    return root, out, published


def broken_links(page: Path) -> list[str]:
    """Relative links of a page whose file (or #anchor) does not exist."""
    broken = []
    for href in HREF.findall(page.read_text()):
        target, _, anchor = href.partition("#")
        path = page if not target else (page.parent / target)
        if not path.is_file():
            broken.append(href)
        elif anchor and f"id='{anchor}'" not in path.read_text():
            broken.append(href)
    return broken


def test_pages_summary_and_run_copies_exist(site):
    root, out, published = site
    assert set(published.pages) == set(PAGES)
    for name in [*PAGES, "summary.json", SITE_MARKER]:
        assert (out / name).is_file(), name
    for rel in (VALID_RUN, INVALID_RUN, LRS_V35, LRS_KIP966, KILLED_RUN):
        assert (out / "runs" / rel / "report.html").is_file()
        assert (out / "runs" / rel / "history.jsonl").read_bytes() == (root / rel / "history.jsonl").read_bytes()
    assert not (root / VALID_RUN / "report.html").exists()  # the store is only read


def test_every_link_of_every_page_and_run_report_resolves(site):
    _, out, _ = site
    pages = [out / name for name in PAGES] + sorted(out.glob("runs/**/report.html"))
    assert len(pages) == len(PAGES) + 5
    for page in pages:
        assert broken_links(page) == [], page


def test_summary_json_matrix_and_known_issue(site):
    root, out, _ = site
    data = json.loads((out / "summary.json").read_text())
    assert data["counts"] == {"valid": 2, "invalid": 1, "unknown": 1, "expected failure": 1}
    cells = {(c["row"], c["variant"], c["fault_mix"], c["backend"]): (c["status"], c["runs"])
             for c in data["matrix"]["cells"]}
    assert cells[("last-replica-standing", "v3.5", "disk+partition", "local")] == ("expected failure", [LRS_V35])
    assert cells[("queue", "kip966", "kill", "local")] == ("unknown", [VALID_RUN, KILLED_RUN])
    assert cells[("queue", "v3.5", "partition", "local")] == ("invalid", [INVALID_RUN])
    assert len(cells) == 4
    (lrs,) = data["known_issues"]
    assert [r["run"] for r in lrs["runs"]] == [LRS_V35]
    assert lrs["runs"][0]["lost"] == [[0, 1], [1, 2]]
    assert lrs["runs"][0]["reproduce"] == ("kraftcheck scenario last-replica-standing --backend local "
                                           "--variant v3.5 --seed 11")
    kinds = {(a["checker"], a["kind"]): a for a in data["anomalies"]}
    assert kinds[("queue", "int-poll-skip")]["cells"] == ["queue | v3.5 / partition / local"]
    assert data["aggregate"] is None and data["aggregate_note"] == "left out (--no-aggregate)"
    assert data["environment"]["runs"]["git_commit"] == {"0123456789abcdef0123456789abcdef01234567": 5}


def test_index_matrix_cells_link_to_the_runs(site):
    _, out, _ = site
    index = (out / "index.html").read_text()
    cell = re.search(r"<td class='cell' data-row='queue' data-column='v3.5 / partition / local' "
                     r"data-status='invalid'[^>]*>(.*?)</td>", index)
    assert cell and f"href='runs/{INVALID_RUN}/report.html'" in cell.group(1)
    assert "data-status='expected failure'" in index
    assert "<a href='known-issues.html#last-replica-standing'>" in index
    assert "Not computed: left out (--no-aggregate)." in (out / "tables.html").read_text()


def test_the_first_proof_shows_the_ops_it_names(site):
    _, out, _ = site
    anomalies = (out / "anomalies.html").read_text()
    section = anomalies.split("<h2 id='queue-int-poll-skip'>")[1].split("<h2")[0]
    assert f"First proof, in <a href='runs/{INVALID_RUN}/report.html'>" in section
    assert re.search(r"<td>op \d+</td><td><code>#\d+ ok p\d poll", section)


def test_publishing_again_replaces_the_site(site, tmp_path):
    root, _, _ = site
    store_copy = tmp_path / "store"
    shutil.copytree(root, store_copy, symlinks=True)
    for rel in (INVALID_RUN, LRS_V35, LRS_KIP966):  # two runs are enough here (each report costs ~1 s)
        shutil.rmtree(store_copy / rel)
    out = tmp_path / "site"
    publish(store_copy, out)
    assert (out / "runs" / KILLED_RUN).is_dir()
    shutil.rmtree(store_copy / KILLED_RUN)
    (store_copy / "latest").unlink()
    publish(store_copy, out)
    assert not (out / "runs" / KILLED_RUN).exists()
    assert KILLED_RUN not in (out / "index.html").read_text()


def test_an_output_that_is_not_a_site_is_refused_and_kept(site, tmp_path):
    root, _, _ = site
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(SiteError, match="not empty and not a kraftcheck site"):
        prepare_site_dir(mine, root)
    assert (mine / "notes.txt").read_text() == "keep me" and not (mine / SITE_MARKER).exists()
    with pytest.raises(SiteError, match="is the store itself"):
        prepare_site_dir(root, root)
    with pytest.raises(SiteError, match="inside the run directory"):
        prepare_site_dir(root / VALID_RUN / "site", root)


def test_cli_publish_exit_codes(site, tmp_path, capsys):
    root, _, _ = site
    assert cli.main(["publish", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "STORE" in capsys.readouterr().err
    out = tmp_path / "o2"
    assert cli.main(["publish", str(root), "--out", str(out), "--no-aggregate", "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == str(out / "index.html")
    with pytest.raises(SystemExit) as exc:
        cli.main(["publish", str(root), "--out", str(out), "--no-aggregate", "--master", "local[2]"])
    assert exc.value.code == 2
