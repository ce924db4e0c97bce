"""``kraftcheck serve``'s live site on loopback: the published pages, rendered from the store per request."""

import json
import shutil
import threading
import urllib.error
import urllib.request

import pytest

from reports.server import LiveSite, make_server
from reports.site import Aggregate

from .store_fixture import INVALID_RUN, KILLED_RUN, LRS_KIP966, LRS_V35, VALID_RUN, build_store


@pytest.fixture()
def live(tmp_path):
    root = build_store(tmp_path / "store")
    for rel in (LRS_V35, LRS_KIP966):
        shutil.rmtree(root / rel)
    calls = []

    def aggregate(store_root):
        calls.append(store_root)
        return Aggregate({"runs": 3, "kinds": [], "by_mix": [], "availability": [], "recovery": []}, "test tables")

    site = LiveSite(root, aggregate)
    server = make_server(site, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield root, f"http://{host}:{port}", calls
    server.shutdown()
    server.server_close()


def get(url):
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.headers.get("Content-Type"), resp.read().decode()


def test_binds_loopback_only(live):
    _, base, _ = live
    assert base.startswith("http://127.0.0.1:")


def test_pages_reports_and_files_are_served(live):
    root, base, _ = live
    status, kind, index = get(base + "/")
    assert status == 200 and kind.startswith("text/html")
    assert f"href='runs/{INVALID_RUN}/report.html'" in index and "http-equiv='refresh'" in index
    _, _, report = get(f"{base}/runs/{INVALID_RUN}/report.html")
    assert "<h1>kraftcheck run: queue</h1>" in report and "id='profile-table'" in report
    _, kind, history = get(f"{base}/runs/{INVALID_RUN}/history.jsonl")
    assert kind.startswith("text/plain") and history == (root / INVALID_RUN / "history.jsonl").read_text()
    data = json.loads(get(base + "/summary.json")[2])
    assert [r["path"] for r in data["runs"]] == [VALID_RUN, INVALID_RUN, KILLED_RUN]


def test_runs_added_later_show_up(live):
    root, base, _ = live
    assert "last-replica-standing" not in get(base + "/index.html")[2]
    build_store(root.parent / "more")
    shutil.copytree(root.parent / "more" / LRS_V35, root / LRS_V35)
    index = get(base + "/index.html")[2]
    assert f"href='runs/{LRS_V35}/report.html'" in index and "data-status='expected failure'" in index


def test_nothing_outside_a_run_directory_is_served(live):
    _, base, _ = live
    for path in (f"/runs/{INVALID_RUN}/../../../etc/passwd", f"/runs/{INVALID_RUN}/%2e%2e/spec.json",
                 "/runs/nope/report.html", "/etc/passwd", "/aggregate/../index.html"):
        with pytest.raises(urllib.error.HTTPError) as exc:
            get(base + path)
        assert exc.value.code == 404, path


def test_tables_come_from_the_background_aggregation(live):
    _, base, calls = live
    get(base + "/index.html")
    for _ in range(100):
        page = get(base + "/tables.html")[2]
        if "test tables" in page and "being aggregated" not in page:
            break
        threading.Event().wait(0.05)
    assert "Computed by the Spark aggregation over 3 runs" in page
    assert len(calls) == 1  # the store did not change: not aggregated again


def test_the_serve_command_prints_its_loopback_url_and_serves(tmp_path):
    import os
    import subprocess
    import sys

    root = build_store(tmp_path / "store")
    proc = subprocess.Popen([sys.executable, "-m", "kraftcheck.cli", "serve", str(root), "--port", "0",
                             "--no-aggregate"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"kraftcheck serve: {root} at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        status, _, index = get(url)
        assert status == 200 and "id='matrix'" in index and "left out" not in index
        assert "Not computed: not requested" in get(url + "tables.html")[2]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_serve_command_rejects_a_missing_store_and_a_bad_port(tmp_path, capsys):
    from kraftcheck import cli

    assert cli.main(["serve", str(tmp_path / "nope")]) == 2
    assert "STORE" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["serve", str(tmp_path), "--port", "70000"])
    assert exc.value.code == 2
