"""The published site and a run report as a reader sees them: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium; no browser download).

What is asserted is what is on screen: the matrix cells and their badges, every link of every page
resolving to a file (and its anchor) as the browser resolved it, the plots decoded and drawn, the live
server's pages. Skipped only when the browser or its driver is not installed (``scripts/install`` installs
both).
"""

import shutil
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from reports.publish import publish
from reports.server import LiveSite, make_server
from reports.site import PAGES, Aggregate

from .store_fixture import INVALID_RUN, KILLED_RUN, LRS_KIP966, LRS_V35, VALID_RUN, build_store

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
webdriver = pytest.importorskip("selenium.webdriver")
pytestmark = pytest.mark.skipif(not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
                                reason="Debian's chromium and chromium-driver are not installed")


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-background-networking", "--disable-gpu",
                "--disable-dev-shm-usage", "--window-size=1300,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = build_store(tmp_path_factory.mktemp("store"))
    out = tmp_path_factory.mktemp("site")
    publish(root, out, Aggregate(None, "left out (--no-aggregate)"))
    return root, out


def shown_cells(browser):
    """(row, column) -> (cell status, badge texts, badge link targets) of the matrix on screen."""
    cells = {}
    for td in browser.find_elements("css selector", "#matrix td.cell"):
        badges = td.find_elements("css selector", ".badge")
        cells[(td.get_attribute("data-row"), td.get_attribute("data-column"))] = (
            td.get_attribute("data-status"), [b.text for b in badges], [b.get_attribute("href") for b in badges])
    return cells


def file_of(url: str) -> Path:
    return Path(unquote(urlsplit(url).path))


def test_matrix_cells_as_a_reader_sees_them(browser, site):
    _, out = site
    browser.get((out / "index.html").as_uri())
    assert browser.title == "kraftcheck: Matrix"
    cells = shown_cells(browser)
    assert len(cells) == 2 * 4  # rows x columns, empty cells included
    status, texts, links = cells[("last-replica-standing", "v3.5 / disk+partition / local")]
    assert (status, texts) == ("expected failure", ["expected failure"])
    assert file_of(links[0]) == out / "runs" / LRS_V35 / "report.html"
    assert cells[("queue", "v3.5 / partition / local")][:2] == ("invalid", ["invalid"])
    assert cells[("queue", "kip966 / kill / local")][:2] == ("unknown", ["valid", "unknown"])
    assert cells[("last-replica-standing", "kip966 / disk+partition / local")][:2] == ("valid", ["valid"])
    assert cells[("queue", "v3.5 / disk+partition / local")] == ("", [], [])
    assert browser.find_element("css selector", "td.cell[data-status='']").text == "not run"
    # the colour a reader sees follows the cell's status
    invalid = browser.find_element("css selector", "td.cell[data-status='invalid']")
    assert invalid.value_of_css_property("background-color") == "rgba(255, 235, 233, 1)"


def test_every_link_resolves(browser, site):
    _, out = site
    pages = [out / name for name in PAGES] + [out / "runs" / rel / "report.html"
                                               for rel in (VALID_RUN, INVALID_RUN, LRS_V35, LRS_KIP966, KILLED_RUN)]
    checked = 0
    for page in pages:
        browser.get(page.as_uri())
        hrefs = [a.get_attribute("href") for a in browser.find_elements("css selector", "a[href]")]
        assert hrefs, page
        for href in hrefs:
            assert href.startswith("file://"), (page, href)  # nothing leaves the file system
            target = file_of(href)
            assert target.is_file(), (page, href)
            anchor = urlsplit(href).fragment
            if anchor:
                assert f"id='{anchor}'" in target.read_text(), (page, href)
            checked += 1
    assert checked > 50


def test_clicking_a_cell_opens_the_run_report_with_its_plots(browser, site):
    _, out = site
    browser.get((out / "index.html").as_uri())
    browser.find_element("css selector", "td.cell[data-status='invalid'] a.badge").click()
    assert file_of(browser.current_url) == out / "runs" / INVALID_RUN / "report.html"
    assert browser.find_element("css selector", "p.verdict").text == "invalid"
    plots = {img.get_attribute("alt"): browser.execute_script(
        "return [arguments[0].complete, arguments[0].naturalWidth, arguments[0].getBoundingClientRect().width]", img)
        for img in browser.find_elements("css selector", "img.plot")}
    assert set(plots) == {"throughput", "latency", "partition timeline"}
    for alt, (complete, natural, width) in plots.items():
        assert complete and natural >= 800 and width > 300, alt  # decoded and drawn
    files = browser.find_elements("xpath", "//tr[th='files' or td='files']//a")
    assert [a.text for a in files][:3] == ["spec.json", "results.json", "history.jsonl"]
    files[2].click()
    assert '"type":' in browser.find_element("tag name", "body").text  # the history itself


def test_known_issue_page_explains_and_gives_the_command(browser, site):
    _, out = site
    browser.get((out / "known-issues.html").as_uri())
    text = browser.find_element("tag name", "body").text
    assert "Last Replica Standing: an acknowledged write is lost (v3.5)" in text
    assert "which rule allows it" in text and "B3" in text and "KIP-966" in text
    assert "kraftcheck scenario last-replica-standing --backend local --variant v3.5 --seed 11" in text
    assert "The same reproduction where it did not happen" in text


def test_the_live_server_in_the_browser(browser, tmp_path):
    root = build_store(tmp_path / "store")
    for rel in (LRS_V35, LRS_KIP966, INVALID_RUN):
        shutil.rmtree(root / rel)
    server = make_server(LiveSite(root), 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        host, port = server.server_address[:2]
        browser.get(f"http://{host}:{port}/")
        cells = shown_cells(browser)
        assert list(cells) == [("queue", "kip966 / kill / local")]
        browser.find_elements("css selector", "td.cell a.badge")[0].click()
        assert browser.current_url == f"http://{host}:{port}/runs/{VALID_RUN}/report.html"
        assert browser.find_element("css selector", "p.verdict").text == "valid"
        assert len(browser.find_elements("css selector", "img.plot")) == 3
    finally:
        server.shutdown()
        server.server_close()
