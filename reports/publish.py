"""Write a published conformance report: a static site readable offline, from a file system.

Layout of the output directory::

    index.html anomalies.html known-issues.html runs.html tables.html environment.html   (reports.site)
    summary.json                      the same content as data
    runs/<run path>/report.html       each run's report, rendered afresh from the store
    runs/<run path>/<files>           the run's files (spec, results, history, trace, logs), hard-linked
                                      from the store when it is on the same file system, else copied
    aggregate/                        the Spark aggregation's Parquet, CSV and summary.json (when computed)
    .kraftcheck-site                  marks the directory as a site (the catalog never reads it as runs)

Every link is relative, so the directory can be moved, archived or served as it is. The store is only
read. Publishing again into the same directory replaces its pages and run copies (a directory that is
not empty and not a site is refused, so nothing of the user's is overwritten).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import store
from reports.catalog import SITE_MARKER, Catalog, RunRecord, read_catalog
from reports.environment import describe
from reports.run_report import write_report
from reports.site import Aggregate, render_site, summary

RUNS_DIR = "runs"
AGGREGATE_DIR = "aggregate"
SKIPPED = {store.REPORT, "node-dirs"}
"""Not copied from a run directory: the report is rendered afresh; node data directories can be large
and only ``kraftcheck analyze`` of a partial run reads them."""


class SiteError(Exception):
    """The output directory cannot hold a site (the message names it and why)."""


@dataclass(frozen=True)
class Published:
    """What ``publish`` wrote."""

    out: Path
    catalog: Catalog
    pages: tuple[str, ...]


def prepare_site_dir(out: str | os.PathLike, store_root: str | os.PathLike) -> Path:
    """Create ``out`` (or accept an earlier site there); refuse the store itself, a run directory and a
    non-empty directory that is not a site."""
    out = Path(out).resolve()
    root = Path(store_root).resolve()
    if out == root:
        raise SiteError(f"--out {out}: is the store itself; choose a directory of its own")
    if out.is_file():
        raise SiteError(f"--out {out}: is a file")
    for parent in (out, *out.parents):
        if (parent / store.SPEC).is_file() and not (parent / SITE_MARKER).exists():
            raise SiteError(f"--out {out}: inside the run directory {parent}")
    if out.is_dir() and any(out.iterdir()) and not (out / SITE_MARKER).is_file():
        raise SiteError(f"--out {out}: not empty and not a kraftcheck site; choose an empty directory")
    out.mkdir(parents=True, exist_ok=True)
    (out / SITE_MARKER).write_text("kraftcheck published site\n", encoding="utf-8")
    return out


def publish(store_root: str | os.PathLike, out: str | os.PathLike, aggregate: Aggregate | None = None,
            progress: Callable[[str], None] | None = None) -> Published:
    """Write the site for every run of ``store_root`` into ``out`` (see the module docstring)."""
    out = prepare_site_dir(out, store_root)
    catalog = read_catalog(store_root, exclude=[out])
    runs_root = out / RUNS_DIR
    if runs_root.exists():
        shutil.rmtree(runs_root)
    for i, record in enumerate(catalog.runs, start=1):
        copy_run(record, runs_root / record.path)
        write_report(record.run_dir, runs_root / record.path / store.REPORT)
        if progress:
            progress(f"run {i}/{len(catalog.runs)} {record.path}: {record.status}")
    environment = describe([r.spec for r in catalog.runs])
    aggregate = aggregate or Aggregate(None, "not requested")
    pages = render_site(catalog, aggregate, environment)
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
    data = summary(catalog, aggregate, environment)
    (out / "summary.json").write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n",
                                      encoding="utf-8")
    return Published(out, catalog, tuple(pages))


def copy_run(record: RunRecord, dest: Path) -> None:
    """The run's files under ``dest`` (hard links when possible; the report is rendered separately)."""
    for src in sorted(record.run_dir.rglob("*")):
        rel = src.relative_to(record.run_dir)
        if rel.parts[0] in SKIPPED or not src.is_file() or src.is_symlink():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, target)
        except OSError:  # another file system, or links not allowed: a copy reads the same
            shutil.copy2(src, target)
    dest.mkdir(parents=True, exist_ok=True)
