"""Dependency cycles (G0, G1c and their realtime variants) from per-key version orders.

Definitions and result shape: ``checkers/queue.py`` (kinds ``G0``, ``G1c``, ``G0-realtime``,
``G1c-realtime``). Realtime edges would be quadratic in number, so they go through a chain of virtual
"barrier" nodes, one per distinct completion time: A -> barrier(A.complete) -> ... -> barrier(last
completion before B.invoke) -> B. A path through barriers exists exactly when A completed before B was
invoked, so strongly connected components are unchanged and the graph stays linear in size.

Only the full graph (ww + wr + rt) is searched first; when it has no cycle neither has any subgraph, which
is the common case, so a valid history costs one pass of Tarjan's algorithm. Otherwise each graph of
``SEARCHES`` is searched in turn, the cycles without ww edges first.

``without_ww(cycle)`` tells the cycles no read-committed execution can produce (the profile forbids them
whatever their class's status).
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import Any

from checkers.queue_extract import OpRec

WW, WR, RT = "ww", "wr", "rt"
CLASSES = (("G0", (WW,)), ("G1c", (WW, WR)), ("G0-realtime", (WW, RT)), ("G1c-realtime", (WW, WR, RT)))
# Cycles without a ww edge are searched first (see checkers/queue.py): no read-committed execution
# produces them, so they must be found even where a shorter cycle with ww edges shares their component.
SEARCHES = (("G1c", (WR,)), ("G1c-realtime", (WR, RT)), *CLASSES)


def _build(a, nodes: list[OpRec]) -> tuple[int, dict[str, list[list[tuple[int, Any, Any]]]]]:
    """Return (number of vertices, per edge type adjacency lists) over real + barrier vertices."""
    pos = {r.index: i for i, r in enumerate(nodes)}
    n = len(nodes)
    # Only ok ops have a known end: an info op may take effect after its completion, so it gets no
    # outgoing realtime edge.
    times = sorted({r.complete_time for r in nodes if r.complete_time is not None and r.type == "ok"})
    total = n + len(times)
    adj = {WW: [[] for _ in range(total)], WR: [[] for _ in range(total)], RT: [[] for _ in range(total)]}

    def node_of(k, v):
        w = a.writer.get((k, v))
        return None if w is None else pos.get(w.index)

    for k, by_index in a.vo.by_index.items():
        for i in range(1, len(by_index)):
            for v2 in by_index[i]:
                w2 = node_of(k, v2)
                if w2 is None:
                    continue
                for v1 in by_index[i - 1]:
                    w1 = node_of(k, v1)
                    if w1 is not None and w1 != w2:
                        adj[WW][w1].append((w2, k, v2))
    for i, r in enumerate(nodes):
        if r.type != "ok":
            continue
        for k, seq in r.reads.items():
            for _, v in seq:
                w = node_of(k, v)
                if w is not None and w != i:
                    adj[WR][w].append((i, k, v))
    for j in range(len(times) - 1):
        adj[RT][n + j].append((n + j + 1, None, None))
    for i, r in enumerate(nodes):
        if r.complete_time is not None and r.type == "ok":
            adj[RT][i].append((n + bisect.bisect_left(times, r.complete_time), None, None))
        if r.invoke_time is not None:
            j = bisect.bisect_left(times, r.invoke_time) - 1  # last barrier strictly before the invocation
            if j >= 0:
                adj[RT][n + j].append((i, None, None))
    return total, adj


def _sccs(total: int, succ) -> list[list[int]]:
    """Iterative Tarjan; returns the components with more than one vertex."""
    index = [-1] * total
    low = [0] * total
    on_stack = [False] * total
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(total):
        if index[root] != -1:
            continue
        work = [(root, iter(succ(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, iter(succ(w))))
                    advanced = True
                    break
                if on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            if advanced:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def _shortest_cycle(start: int, members: set[int], edges_of) -> list[tuple[int, int, str, Any, Any]]:
    """BFS from ``start`` back to itself inside ``members``; returns the edges of the cycle."""
    parent: dict[int, tuple[int, str, Any, Any]] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        u = queue.popleft()
        for w, typ, k, v in edges_of(u):
            if w not in members:
                continue
            if w == start:
                path = [(u, w, typ, k, v)]
                while u != start:
                    p, ptyp, pk, pv = parent[u]
                    path.append((p, u, ptyp, pk, pv))
                    u = p
                path.reverse()
                return path
            if w not in seen:
                seen.add(w)
                parent[w] = (u, typ, k, v)
                queue.append(w)
    return []


def find_cycles(a) -> dict[str, list[dict]]:
    """The four cycle kinds of ``checkers/queue.py`` for a ``QueueAnalysis``."""
    result: dict[str, list[dict]] = {name: [] for name, _ in CLASSES}
    nodes = [r for r in a.recs if r.assign is None and (r.sends or r.reads) and a.committed(r)]
    if len(nodes) < 2:
        return result
    if _acyclic_fast(a, nodes):
        return result
    total, adj = _build(a, nodes)
    n = len(nodes)

    def succ_for(types):
        lists = [adj[t] for t in types]
        if len(lists) == 1:
            only = lists[0]
            return lambda v: [w for w, _, _ in only[v]]
        return lambda v: [w for lst in lists for w, _, _ in lst[v]]

    if not _sccs(total, succ_for((WW, WR, RT))):
        return result
    reported: set[tuple[int, ...]] = set()
    for name, types in SEARCHES:
        def edges_of(u, types=types):
            return [(w, t, k, v) for t in types for w, k, v in adj[t][u]]
        for comp in _sccs(total, succ_for(types)):
            real = [v for v in comp if v < n]
            if len(real) < 2:  # a barrier chain only runs forward in time, so one op cannot close a cycle
                continue
            start = min(real, key=lambda v: nodes[v].index)
            path = _shortest_cycle(start, set(comp), edges_of)
            edges = _collapse(path, n, nodes)
            kinds = {e["type"] for e in edges}
            cls = ("G1c-realtime" if WR in kinds else "G0-realtime") if RT in kinds else (
                "G1c" if WR in kinds else "G0")
            cycle = [e["from"] for e in edges]
            canon = tuple(sorted(cycle))
            if cls != name or canon in reported:
                continue
            reported.add(canon)
            result[name].append({"cycle": cycle, "edges": edges})
    for name in result:
        result[name].sort(key=lambda c: (len(c["cycle"]), c["cycle"]))
    return result


def _acyclic_fast(a, nodes: list[OpRec]) -> bool:
    """True when the ww + wr + rt graph certainly has no cycle (Kahn's algorithm on a reduced graph).

    The reductions keep reachability between the vertices that can lie on a cycle:

    * writers of consecutive indices of a key are linked by ww edges, so of the values one op read from
      one key only the highest-index one needs its wr edge, plus any value whose chain up to that one
      passes an index without a writer in the graph;
    * an ok op that only reads has no outgoing edge but its realtime one, to the barrier of its
      completion, and the barrier chain already leads from before its invocation to that barrier: such an
      op is replaced by edges from its writers straight to its completion barrier (a cycle through it
      becomes a cycle through that barrier, and back); an info op that only reads has no outgoing edge
      at all and is left out;
    * an edge that a realtime path already implies is left out: from an ok writer A to B when A completed
      before B was invoked (A -> barrier(A) -> ... -> B), and from A to a reader's completion barrier
      when A completed no later than the reader (the common case in a valid history);
    * barriers are kept only for the completion times that edges lead into (ok writers, and readers with
      an edge left); a barrier nothing but the chain leads into reaches exactly what its predecessor
      reaches, so it is merged into it.

    Fast paths (the common case of a large valid history), same graph: a key whose offsets each carry one
    value is walked offset by offset; in a key without duplicates, conflicts or odd offsets
    (``VersionOrders.odd_offsets``) a read pair's index order is its offset order, so the highest-index
    value of a read sequence is its ``max`` pair, and when every index of the key has a writer in the
    graph that value's edge is the only one needed.
    """
    # Vertices: ops that send (in ``nodes`` order), then one barrier per kept completion time.
    writers = [r for r in nodes if r.sends]
    n = len(writers)
    pos = {r.index: i for i, r in enumerate(writers)}
    pos_get = pos.get
    # done[i]: completion time of writer i when it has a realtime out-edge (ok), else None;
    # began[i]: its invocation time (None: no realtime in-edge)
    done = [r.complete_time if r.type == "ok" else None for r in writers]
    began = [r.invoke_time for r in writers]
    wnode: dict = {}  # (key, value) -> vertex of its writer, for writers in the graph
    for kv, w in a.writer.items():
        i = pos_get(w.index)
        if i is not None:
            wnode[kv] = i
    wnode_get = wnode.get
    succ: list[list[int]] = [[] for _ in range(n)]

    def link(u: int, v: int) -> None:
        """Writer edge u -> v unless u's completion precedes v's invocation (a realtime path has it)."""
        d, b = done[u], began[v]
        if d is None or b is None or d >= b:
            succ[u].append(v)

    vo = a.vo
    conflicts = vo.conflicts
    first_value = vo._first_value
    # ww chains and, per key, prefix counts of indices with no writer in the graph
    broken_prefix: dict = {}
    conflict_keys = {k for k, _ in conflicts} if conflicts else set()
    for k, offsets in vo.offsets.items():
        prefix = [0]
        broken = 0
        if k not in conflict_keys:
            fv = first_value[k]
            prev = None
            for o in offsets:
                c = wnode_get((k, fv[o]))
                if c is None:
                    broken += 1
                elif prev is not None and prev != c:
                    link(prev, c)
                prefix.append(broken)
                prev = c
        else:
            prev_nodes: list[int] = []
            for i in range(len(offsets)):
                cur = [c for c in (wnode_get((k, v)) for v in vo.values_at(k, i)) if c is not None]
                for p in prev_nodes:
                    for c in cur:
                        if p != c:
                            link(p, c)
                broken += 0 if cur else 1
                prefix.append(broken)
                prev_nodes = cur
        broken_prefix[k] = prefix
    simple = {k for k in vo.offsets if k not in vo.has_duplicates and k not in conflict_keys
              and k not in vo.odd_offsets and broken_prefix[k][-1] == 0}
    firsts = vo.first

    def general_sources(k, seq) -> list[int]:
        """The writer vertices whose wr edges into a reader of ``seq`` from key ``k`` are needed."""
        first = firsts.get(k)
        if not first:
            return []
        idxs = [(first.get(v), v) for _, v in seq]
        idxs = [(i, v) for i, v in idxs if i is not None]
        if not idxs:
            return []
        top_i = max(i for i, _ in idxs)
        prefix = broken_prefix[k]
        out = []
        for i, v in idxs:
            if i == top_i or prefix[top_i + 1] - prefix[i + 1] > 0:
                wi = wnode_get((k, v))
                if wi is not None:
                    out.append(wi)
        return out

    def sources(r: OpRec) -> list[int]:
        """The writer vertices whose wr edges into ``r`` are needed (see the reductions above)."""
        out: list[int] = []
        for k, seq in r.reads.items():
            if not seq:
                continue
            if k in simple:
                try:
                    top = max(seq)
                except TypeError:  # pairs of both kinds (lists and tuples) in one sequence
                    top = None
                if top is not None:
                    wi = wnode_get((k, top[1]))
                    if wi is not None:
                        out.append(wi)
                    continue
            out.extend(general_sources(k, seq))
        return out

    # wr edges into writers that also read
    for j, r in enumerate(writers):
        if r.type == "ok" and r.reads:
            for wi in sources(r):
                if wi != j:
                    link(wi, j)
    # wr edges into pure readers' completion barriers, when no realtime path implies them
    into_barrier: list[tuple[int, int]] = []
    for r in nodes:
        if r.sends or r.type != "ok" or not r.reads:
            continue
        t = r.complete_time
        for wi in sources(r):
            d = done[wi]
            if d is None or d > t:
                into_barrier.append((wi, t))
    times = sorted({d for d in done if d is not None} | {t for _, t in into_barrier})
    barrier_of = {t: n + b for b, t in enumerate(times)}  # == n + bisect_left(times, t) for t in times
    total = n + len(times)
    succ.extend([n + b + 1] for b in range(len(times) - 1))
    if times:
        succ.append([])
    for wi, t in into_barrier:
        succ[wi].append(barrier_of[t])
    # realtime edges of the writers through barrier vertices (see the module docstring)
    bisect_left = bisect.bisect_left
    for i in range(n):
        d = done[i]
        if d is not None:
            succ[i].append(barrier_of[d])
        b = began[i]
        if b is not None:
            b = bisect_left(times, b) - 1  # last barrier strictly before the invocation
            if b >= 0:
                succ[n + b].append(i)
    indeg = [0] * total
    for lst in succ:
        for w in lst:
            indeg[w] += 1
    stack = [v for v in range(total) if indeg[v] == 0]
    removed = 0
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        removed += 1
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                push(w)
    return removed == total


def _collapse(path, n: int, nodes: list[OpRec]) -> list[dict]:
    """Turn a vertex path (possibly through barriers) into op-to-op edges."""
    edges: list[dict] = []
    pending_from = None
    for u, w, typ, k, v in path:
        if u < n and w < n:
            edges.append({"from": nodes[u].index, "to": nodes[w].index, "type": typ, "key": k, "value": v})
        elif u < n:
            pending_from = u
        elif w < n:
            edges.append({"from": nodes[pending_from].index, "to": nodes[w].index, "type": RT,
                          "key": None, "value": None})
    return edges


def without_ww(cycle: dict) -> bool:
    """Whether a cycle row has no ww edge: round its loop each op wrote a value the next one read, or
    completed before the next one began - impossible when reads see committed data only."""
    return all(e["type"] != WW for e in cycle["edges"])
