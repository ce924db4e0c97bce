"""Small HTML building blocks shared by the run report and the published site (no external assets).

Everything a page needs is inline: one style sheet (``CSS``), status colours, tables. Values are
escaped here (``esc``), so callers pass plain text and JSON-able values, never markup, except through
the ``raw`` cells of ``table``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any

STATUS_COLORS = {"valid": "#1a7f37", "invalid": "#cf222e", "unknown": "#9a6700",
                 "expected failure": "#8250df"}
STATUS_BACKGROUNDS = {"valid": "#dafbe1", "invalid": "#ffebe9", "unknown": "#fff8c5",
                      "expected failure": "#fbefff"}

CSS = (
    "body{font-family:system-ui,sans-serif;margin:1.5em 2em;max-width:1200px;color:#1f2328}"
    "h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #d0d7de}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #d0d7de;padding:3px 8px;"
    "font-size:13px;text-align:left;vertical-align:top}th{background:#f6f8fa}"
    "code,pre{font-size:12px;font-family:ui-monospace,monospace}pre{white-space:pre-wrap}"
    ".verdict{font-size:2em;font-weight:bold}nav a,nav b{margin-right:1.2em}nav{margin-bottom:1em}"
    ".badge{display:inline-block;padding:1px 6px;margin:1px;border-radius:10px;font-size:12px;"
    "text-decoration:none;color:#fff}.cell{min-width:7em}.flag{color:#cf222e;font-weight:bold}"
    "mark{background:#ffd33d}.muted{color:#656d76}details{margin:.4em 0}.num{text-align:right}"
)


def esc(value: Any) -> str:
    """Text for HTML: strings as they are, anything else as compact JSON, escaped."""
    if not isinstance(value, str):
        value = json.dumps(value, default=str)
    return html.escape(value)


def badge(status: str, text: str | None = None, href: str | None = None, title: str = "") -> str:
    """A coloured pill for a status word (a link when ``href`` is given)."""
    color = STATUS_COLORS.get(status, "#656d76")
    tag = "a" if href else "span"
    attrs = f" href='{esc(href)}'" if href else ""
    attrs += f" title='{esc(title)}'" if title else ""
    return (f"<{tag} class='badge' data-status='{esc(status)}' style='background:{color}'{attrs}>"
            f"{esc(text if text is not None else status)}</{tag}>")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], raw: Iterable[int] = (),
          attrs: str = "") -> str:
    """A table; cells are escaped except the columns listed in ``raw`` (already markup). With only empty
    headers it has no header row (a key / value table)."""
    raw = set(raw)
    out = [f"<table{' ' + attrs if attrs else ''}>"]
    if any(headers):  # key / value tables have no header row
        out.append("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>")
    for row in rows:
        cells = []
        for i, value in enumerate(row):
            shown = value if i in raw else esc("" if value is None else value)
            cells.append(f"<td>{shown}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def page(title: str, body: Iterable[str], nav: str = "", head: str = "") -> str:
    """A whole HTML document with the shared style sheet."""
    return "\n".join(["<!doctype html><html><head><meta charset='utf-8'>", f"<title>{esc(title)}</title>",
                      f"<style>{CSS}</style>{head}</head><body>", nav, *body, "</body></html>"])


def png_img(data: str | None, alt: str, missing: str) -> str:
    """An embedded base64 PNG, or the ``missing`` sentence when there is no plot."""
    if not data:
        return f"<p class='muted'>{esc(missing)}</p>"
    return f"<img alt='{esc(alt)}' class='plot' src='data:image/png;base64,{data}'>"
