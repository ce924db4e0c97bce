"""The run report's plots, drawn with matplotlib and returned as base64 PNGs (so the report stays one file).

Every plot shares the x axis of the history (seconds since the run started) and shades the intervals
during which a fault was in place, each band labelled with what was done to which node
(``reports.run_facts.labelled_faults``), so latency, throughput and the partition states can be read
against the faults at a glance.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.faults import F_FAMILY
from reports.run_facts import ClientPair, LabelledFault, throughput
from reports.trace_timeline import PartitionTimeline

FAMILY_COLORS = {"kill": "tab:red", "stop": "tab:red", "pause": "tab:gray", "partition": "tab:orange",
                 "clock": "tab:purple", "disk": "tab:brown", "admin": "tab:cyan"}
OUTCOME_MARKERS = {"ok": "o", "fail": "x", "info": "^"}
MAX_PARTITIONS = 8
MIN_BAND_S = 0.05


@contextmanager
def _figure(rows: int, height: float, sharex: bool = True) -> Iterator[tuple[Any, list[Any], io.BytesIO]]:
    # matplotlib is imported here, not at the top: it is heavy and only report rendering needs it.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, 1, figsize=(11, height), dpi=100, sharex=sharex, squeeze=False)
    buf = io.BytesIO()
    try:
        yield fig, [a[0] for a in axes], buf
        fig.tight_layout()
        fig.savefig(buf, format="png")
    finally:
        plt.close(fig)


def _encoded(buf: io.BytesIO) -> str:
    return base64.b64encode(buf.getvalue()).decode("ascii")


def shade_faults(ax: Any, faults: list[LabelledFault], label: bool = True) -> None:
    """Shade each fault interval in its family's colour; with ``label``, write what was done at its start."""
    for fault in faults:
        color = FAMILY_COLORS.get(F_FAMILY.get(fault.f, ""), "tab:red")
        start, end = fault.start / 1e9, max(fault.end / 1e9, fault.start / 1e9 + MIN_BAND_S)
        ax.axvspan(start, end, color=color, alpha=0.13, lw=0)
        if label:
            ax.text(start, 0.98, " " + fault.label, transform=ax.get_xaxis_transform(), rotation=90,
                    va="top", ha="left", fontsize=7, color=color, clip_on=True)


def _colors(fs: list[str]) -> dict[str, Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {f: cmap(i % 10) for i, f in enumerate(fs)}


def latency_png(pairs: list[ClientPair], faults: list[LabelledFault]) -> str | None:
    """Latency of every completed client op over time: colour by op type, marker by outcome, log scale."""
    done = [p for p in pairs if p.complete_ns is not None]
    if not done:
        return None
    colors = _colors(sorted({p.f for p in done}))
    with _figure(1, 4.2) as (_fig, (ax,), buf):
        shade_faults(ax, faults)
        for f, color in colors.items():
            for outcome, marker in OUTCOME_MARKERS.items():
                mine = [p for p in done if p.f == f and p.type == outcome]
                if mine:
                    ax.scatter([p.invoke_ns / 1e9 for p in mine],
                               [max((p.complete_ns - p.invoke_ns) / 1e6, 0.01) for p in mine],
                               s=10 if outcome == "ok" else 22, marker=marker, color=color, alpha=0.7,
                               label=f"{f} {outcome} ({len(mine)})")
        ax.set_yscale("log")
        ax.set_xlabel("time since run start (s)")
        ax.set_ylabel("latency (ms)")
        ax.set_title("client op latency by op type (o ok, x fail, ^ info); shaded: faults in place")
        ax.legend(loc="upper right", fontsize=7, ncol=3)
        ax.grid(alpha=0.3)
    return _encoded(buf)


def throughput_png(pairs: list[ClientPair], faults: list[LabelledFault]) -> str | None:
    """Completions per second by op type: ok on top, fail and info below."""
    times, series = throughput(pairs)
    if not times:
        return None
    colors = _colors(sorted({f for f, _ in series}))
    with _figure(2, 5.2) as (_fig, (top, bottom), buf):
        for ax in (top, bottom):
            shade_faults(ax, faults, label=ax is top)
            ax.grid(alpha=0.3)
        for (f, outcome), counts in series.items():
            ax = top if outcome == "ok" else bottom
            ax.step(times, counts, where="post", color=colors[f], lw=1.2,
                    linestyle="-" if outcome != "info" else "--", label=f"{f} {outcome}")
        top.set_ylabel("ok / s")
        top.set_title("throughput: completions per second by op type; shaded: faults in place")
        bottom.set_ylabel("fail, info / s")
        bottom.set_xlabel("time since run start (s)")
        for ax in (top, bottom):
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="upper right", fontsize=7, ncol=4)
    return _encoded(buf)


def partition_timeline_png(timelines: list[PartitionTimeline], faults: list[LabelledFault],
                           end_ns: int) -> str | None:
    """One band per partition: per broker, when it was a replica, in the ISR, in the ELR, the leader;
    the leader's high watermark on the right axis; leader epochs written where they change."""
    shown = timelines[:MAX_PARTITIONS]
    if not shown:
        return None
    from matplotlib.lines import Line2D

    with _figure(len(shown), 1.1 + 1.9 * len(shown)) as (_fig, axes, buf):
        for ax, tl in zip(axes, shown, strict=True):
            _draw_partition(ax, tl, faults, end_ns)
        proxies = [Line2D([], [], color="lightgray", lw=1.5, label="replica"),
                   Line2D([], [], color="tab:blue", lw=6, label="ISR"),
                   Line2D([], [], color="tab:orange", lw=6, label="ELR"),
                   Line2D([], [], color="tab:red", lw=1.5, ls=":", label="last known ELR"),
                   Line2D([], [], color="black", lw=2, label="leader"),
                   Line2D([], [], color="tab:green", lw=1.2, label="leader HWM (right axis)")]
        axes[0].legend(handles=proxies, loc="lower right", fontsize=7, ncol=6, bbox_to_anchor=(1, 1.02))
        axes[-1].set_xlabel("time since run start (s)")
    return _encoded(buf)


def _draw_partition(ax: Any, tl: PartitionTimeline, faults: list[LabelledFault], end_ns: int) -> None:
    shade_faults(ax, faults, label=False)
    brokers = tl.brokers
    none_y = (min(brokers) if brokers else 1) - 1
    ends = [s["time"] for s in tl.states[1:]] + [max(end_ns, tl.states[-1]["time"])]
    last_epoch = None
    epoch_labels = 0
    for state, stop in zip(tl.states, ends, strict=True):
        t0, t1 = state["time"] / 1e9, stop / 1e9
        for b in brokers:
            if b in state["isr"]:
                ax.hlines(b, t0, t1, color="tab:blue", lw=6)
            elif b in state["elr"]:
                ax.hlines(b, t0, t1, color="tab:orange", lw=6)
            elif b in state["last_known_elr"]:
                ax.hlines(b, t0, t1, color="tab:red", lw=1.5, linestyles=":")
            elif b in state["replicas"]:
                ax.hlines(b, t0, t1, color="lightgray", lw=1.5)
        leader = state.get("leader")
        if isinstance(leader, int) and leader >= 0:
            ax.hlines(leader, t0, t1, color="black", lw=2)
        else:
            ax.hlines(none_y, t0, t1, color="tab:red", lw=4)
        if state.get("leader_epoch") != last_epoch:
            last_epoch = state.get("leader_epoch")
            ax.axvline(t0, color="black", lw=0.5, alpha=0.4)
            # alternate heights so that epochs changing in quick succession stay readable
            ax.text(t0, 0.99 - 0.12 * (epoch_labels % 2), f" LE {last_epoch}", transform=ax.get_xaxis_transform(),
                    fontsize=7, va="top")
            epoch_labels += 1
    ax.set_yticks([none_y, *brokers], ["no leader", *(f"b{b}" for b in brokers)])
    ax.set_ylim(none_y - 0.6, (max(brokers) if brokers else 1) + 0.8)
    ax.set_ylabel(f"{tl.topic}-{tl.partition}")
    if tl.hwm:
        hwm_ax = ax.twinx()
        hwm_ax.step([t / 1e9 for t, _, _ in tl.hwm] + [end_ns / 1e9], [h for _, _, h in tl.hwm] + [tl.hwm[-1][2]],
                    where="post", color="tab:green", lw=1.2)
        hwm_ax.set_ylabel("HWM", fontsize=8, color="tab:green")
        hwm_ax.tick_params(axis="y", labelsize=7, colors="tab:green")
    ax.grid(alpha=0.2, axis="x")
