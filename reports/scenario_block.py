"""The run report's scenario block: what a scripted reproduction expected, the decisive facts, the steps.

Rendered from the ``scenario`` section a scripted run stores in ``results.json``
(``kraftcheck.scenarios.script``), so any renderer of a stored run (the runner, ``kraftcheck report``,
``kraftcheck publish``) shows it the same way.
"""

from __future__ import annotations

from typing import Any

from reports.html import esc


def scenario_html(section: dict[str, Any]) -> str:
    """The scenario block: expectation, the named checks, decisive facts and the step timeline."""
    met = section.get("expectation_met")
    color = "#1a7f37" if met else "#cf222e"
    parts = [f"<h2 id='scenario'>Scenario: {esc(str(section.get('name')))} ({esc(str(section.get('variant')))})"
             "</h2>",
             f"<p>{esc(str(section.get('recipe', '')))}</p>",
             f"<p style='color:{color}'><b>Expectation {'met' if met else 'NOT met'}:</b> "
             f"{esc(str(section.get('expectation', '')))}</p>"]
    if section.get("label"):
        parts.append(f"<p><b>{esc(str(section['label']))}</b></p>")
    checks = section.get("checks") or []
    if checks:
        parts.append("<h3>Checks</h3><table><tr><th></th><th>check</th><th>rule</th><th>expected</th>"
                     "<th>observed</th></tr>")
        for c in checks:
            mark = "&#10003;" if c.get("ok") else "&#10007;"
            parts.append(f"<tr><td>{mark}</td><td>{esc(str(c.get('name')))}</td><td>{esc(str(c.get('rule', '')))}"
                         f"</td><td><code>{esc(c.get('expected'))}</code></td>"
                         f"<td><code>{esc(c.get('observed'))}</code></td></tr>")
        parts.append("</table>")
    facts = section.get("facts") or {}
    if facts:
        parts.append("<h3>Decisive facts</h3><table>")
        for key, value in facts.items():
            parts.append(f"<tr><th>{esc(key)}</th><td><code>{esc(value)}</code></td></tr>")
        parts.append("</table>")
    parts.append("<h3>Steps</h3><table><tr><th>#</th><th>t (s)</th><th>step</th><th>what happened</th></tr>")
    for i, entry in enumerate(section.get("steps") or [], start=1):
        t = entry.get("time")
        shown_t = f"{t / 1e9:.2f}" if isinstance(t, int | float) else ""
        parts.append(f"<tr><td>{i}</td><td>{shown_t}</td><td>{esc(str(entry.get('step')))}</td>"
                     f"<td>{esc(str(entry.get('summary')))}</td></tr>")
    parts.append("</table>")
    return "\n".join(parts)
