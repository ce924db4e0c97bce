"""The published pages served live from a store, over loopback, re-rendered as runs are added.

``serve`` answers the same paths as a published site (``reports.publish``): the pages of
``reports.site`` and ``summary.json`` are rendered from the store at each request (the catalog is read
again only when a run directory or a ``results.json`` changed); ``runs/<run path>/report.html`` is
rendered from the run's stored files (again only when they changed); ``runs/<run path>/<file>`` is the
run's own file, read from the store. Nothing is written into the store.

The cross-run tables come from an ``aggregate`` callable (the Spark aggregation, supplied by the
command, writing its files into ``aggregate_dir``, served as ``aggregate/<file>``) run on a background
thread whenever the set of runs changed; pages show the last tables computed and say when they are
being brought up to date. The server binds 127.0.0.1 only: a store holds
logs and configuration that are not meant for the network.
"""

from __future__ import annotations

import json
import mimetypes
import os
import threading
import urllib.parse
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from harness import store
from reports.catalog import Catalog, read_catalog, run_dirs
from reports.environment import describe
from reports.run_report import report_text
from reports.site import PAGES, Aggregate, render_site, summary

LOOPBACK = "127.0.0.1"
AggregateFn = Callable[[Path], Aggregate]


class LiveSite:
    """The store's pages, rendered on demand and cached until the store changes."""

    def __init__(self, store_root: str | os.PathLike, aggregate: AggregateFn | None = None,
                 aggregate_dir: str | os.PathLike | None = None):
        self.root = Path(store_root).resolve()
        self.aggregate_fn = aggregate
        self.aggregate_dir = Path(aggregate_dir).resolve() if aggregate_dir else None
        self._lock = threading.Lock()
        self._fingerprint: tuple | None = None
        self._catalog: Catalog | None = None
        self._environment: dict[str, Any] = {}
        self._aggregate = Aggregate(None, "not requested" if aggregate is None else "being computed")
        self._aggregated_for: tuple | None = None
        self._aggregating = False
        self._reports: dict[str, tuple[tuple, str]] = {}

    # -- state ----------------------------------------------------------------------------------------

    def fingerprint(self) -> tuple:
        """What identifies the store's content for the pages: each run directory and the modification
        times of its spec.json and results.json."""
        marks = []
        for run_dir in run_dirs(self.root):
            marks.append((str(run_dir), *(_mtime(run_dir / name) for name in (store.SPEC, store.RESULTS))))
        return tuple(marks)

    def catalog(self) -> Catalog:
        """The catalog, read again when the store changed; starts an aggregation when needed."""
        fingerprint = self.fingerprint()
        with self._lock:
            if fingerprint != self._fingerprint or self._catalog is None:
                self._catalog = read_catalog(self.root)
                self._environment = describe([r.spec for r in self._catalog.runs])
                self._fingerprint = fingerprint
            catalog = self._catalog
            if self.aggregate_fn is not None and fingerprint != self._aggregated_for and not self._aggregating:
                self._aggregating = True
                threading.Thread(target=self._aggregate_now, args=(fingerprint,), daemon=True,
                                 name="kraftcheck-serve-aggregate").start()
        return catalog

    def _aggregate_now(self, fingerprint: tuple) -> None:
        try:
            result = self.aggregate_fn(self.root)  # type: ignore[misc]
        except Exception as exc:  # the pages go on without tables and say why
            result = Aggregate(None, f"aggregation failed: {type(exc).__name__}: {exc}")
        with self._lock:
            self._aggregate = result
            self._aggregated_for = fingerprint
            self._aggregating = False

    def current_aggregate(self) -> Aggregate:
        """The last tables computed, with a note while newer ones are being computed."""
        with self._lock:
            aggregate, busy = self._aggregate, self._aggregating
        if busy:
            note = (aggregate.note + "; " if aggregate.note else "") + "newer runs are being aggregated"
            return Aggregate(aggregate.summary, note, aggregate.files)
        return aggregate

    # -- responses ------------------------------------------------------------------------------------

    def page(self, name: str) -> str:
        """One page of ``reports.site`` (``index.html`` and the others), rendered now."""
        catalog = self.catalog()
        return render_site(catalog, self.current_aggregate(), self._environment, live=True)[name]

    def summary_json(self) -> str:
        """``summary.json`` rendered now."""
        catalog = self.catalog()
        return json.dumps(summary(catalog, self.current_aggregate(), self._environment), indent=2,
                          sort_keys=True, default=str)

    def run_file(self, rel: str) -> tuple[Path | None, str | None]:
        """(file to send, or None) and (rendered report text, or None) for ``runs/<rel>``."""
        catalog = self.catalog()
        for record in catalog.runs:
            prefix = record.path + "/"
            if not rel.startswith(prefix):
                continue
            name = rel[len(prefix):]
            if name == store.REPORT:
                return None, self.report(record.run_dir)
            target = (record.run_dir / name).resolve()
            if record.run_dir in target.parents and target.is_file():
                return target, None
        return None, None

    def aggregate_file(self, name: str) -> Path | None:
        """A file the aggregation wrote (``aggregate/<name>``), or None."""
        if self.aggregate_dir is None:
            return None
        target = (self.aggregate_dir / name).resolve()
        return target if self.aggregate_dir in target.parents and target.is_file() else None

    def report(self, run_dir: Path) -> str:
        """A run's report, rendered again when any of its stored files changed."""
        key = tuple(_mtime(run_dir / n) for n in (store.SPEC, store.RESULTS, store.HISTORY, store.TRACE))
        cached = self._reports.get(str(run_dir))
        if cached and cached[0] == key:
            return cached[1]
        text = report_text(run_dir)
        self._reports[str(run_dir)] = (key, text)
        return text


def make_handler(site: LiveSite) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``site``."""

    class Handler(BaseHTTPRequestHandler):
        server_version = "kraftcheck-serve"

        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path).lstrip("/") or "index.html"
            try:
                if path in PAGES:
                    self._send(site.page(path).encode(), "text/html; charset=utf-8")
                elif path == "summary.json":
                    self._send(site.summary_json().encode(), "application/json")
                elif path.startswith("runs/"):
                    file, text = site.run_file(path[len("runs/"):])
                    if text is not None:
                        self._send(text.encode(), "text/html; charset=utf-8")
                    elif file is not None:
                        self._send(file.read_bytes(), _content_type(file))
                    else:
                        self.send_error(HTTPStatus.NOT_FOUND, "no such run file")
                elif path.startswith("aggregate/") and (file := site.aggregate_file(path[len("aggregate/"):])):
                    self._send(file.read_bytes(), _content_type(file))
                else:
                    self.send_error(HTTPStatus.NOT_FOUND, "no such page")
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
            pass

    return Handler


def make_server(site: LiveSite, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for ``site`` on 127.0.0.1:``port`` (0: a free port); call ``serve_forever``."""
    server = ThreadingHTTPServer((LOOPBACK, port), make_handler(site))
    server.daemon_threads = True
    return server


def _content_type(file: Path) -> str:
    if file.suffix in (".jsonl", ".log", ".txt", ".properties"):  # shown in the browser, not downloaded
        return "text/plain; charset=utf-8"
    return mimetypes.guess_type(file.name)[0] or "application/octet-stream"


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None
