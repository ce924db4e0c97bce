"""Dependency cycles (G0, G1c and their realtime variants) from per-key version orders.

Definitions and result shape: ``checkers/queue/anomalies.py`` (kinds ``G0``, ``G1c``, ``G0-realtime``,
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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from checkers.queue.extract import OpRec, value_sort_key

WW, WR, RT = "ww", "wr", "rt"
CLASSES = (("G0", (WW,)), ("G1c", (WW, WR)), ("G0-realtime", (WW, RT)), ("G1c-realtime", (WW, WR, RT)))
# Cycles without a ww edge are searched first (see checkers/queue/anomalies.py): no read-committed execution
# produces them, so they must be found even where a shorter cycle with ww edges shares their component.
SEARCHES = (("G1c", (WR,)), ("G1c-realtime", (WR, RT)), *CLASSES)


def is_vertex(r: OpRec, committed) -> bool:
    """Whether record ``r`` is a vertex of the dependency graph: an ok (or committed info) op that sends
    or reads (``committed``: the analysis's ``committed``). A record restricted to one key
    (``checkers.queue.keys.restrict``) that is the end of an edge of that key is a vertex exactly when
    the whole record is."""
    return r.assign is None and bool(r.sends or r.reads) and committed(r)


def dependency_edges(a) -> Iterator[tuple[OpRec, OpRec, str, Any, Any]]:
    """Every ww and wr edge of ``a`` (a ``QueueAnalysis`` of the whole history or of one key's records)
    as ``(from, to, type, key, value)``: ww edges carry the later value, wr edges the value read.

    Each edge is a fact of one key (its version order, its writers, its reads), so the edges of a whole
    history are the union of those of its keys; the Spark engine emits them key by key."""
    writer = a.writer
    committed = a.committed

    def vertex_of(k, v):
        w = writer.get((k, v))
        return w if w is not None and committed(w) else None

    for k, by_index in a.vo.by_index.items():
        for i in range(1, len(by_index)):
            for v2 in by_index[i]:
                w2 = vertex_of(k, v2)
                if w2 is None:
                    continue
                for v1 in by_index[i - 1]:
                    w1 = vertex_of(k, v1)
                    if w1 is not None and w1.index != w2.index:
                        yield w1, w2, WW, k, v2
    for r in a.recs:
        if r.type != "ok" or r.assign is not None:
            continue
        for k, seq in r.reads.items():
            for _, v in seq:
                w = vertex_of(k, v)
                if w is not None and w.index != r.index:
                    yield w, r, WR, k, v


def implied_by_realtime(src: OpRec, dst: OpRec) -> bool:
    """Whether the graph holds a realtime path from ``src`` to ``dst`` (``src`` ok and completed before
    ``dst`` was invoked): an edge between them adds no reachability, so the components do not need it."""
    return (src.type == "ok" and src.complete_time is not None and dst.invoke_time is not None
            and src.complete_time < dst.invoke_time)


def completion_times(vertices: Iterable[OpRec]) -> list:
    """The sorted distinct completion times of the ok vertices: one barrier each. Only ok ops have a known
    end: an info op may take effect after its completion, so it gets no outgoing realtime edge."""
    return sorted({r.complete_time for r in vertices if r.complete_time is not None and r.type == "ok"})


@dataclass
class Graph:
    """The dependency graph over ``vertices`` (real ops, ``0..n-1``, in op-index order) and barrier
    vertices (``n..``), with adjacency lists per edge type of ``(target, key, value)``."""

    vertices: list[OpRec]
    total: int
    adj: dict[str, list[list[tuple[int, Any, Any]]]]


def build_graph(vertices: list[OpRec], edges: Iterable[tuple], times: Sequence,
                kept: Sequence[int] | None = None) -> Graph:
    """The graph over ``vertices`` (in op-index order) with the ww/wr ``edges`` between them (op records
    or op indices at both ends; edges touching another op are left out) and the realtime edges through
    the barriers of ``times`` (``completion_times`` of the whole history).

    ``kept``: the ranks in ``times`` of the barriers to include (sorted), when the graph is a part of the
    history's (the union of some of its strongly connected components); by default every barrier. A
    realtime edge is included when both its ends are, so a part holding whole components has exactly
    their edges. Each vertex's edges of one type are in a fixed order - by target, then key, then value
    - so the cycle a search names does not depend on the order the edges were produced in."""
    pos = {r.index: i for i, r in enumerate(vertices)}
    n = len(vertices)
    ranks = range(len(times)) if kept is None else kept
    barrier = {rank: n + j for j, rank in enumerate(ranks)}
    total = n + len(ranks)
    adj: dict[str, list[list[tuple[int, Any, Any]]]] = {t: [[] for _ in range(total)] for t in (WW, WR, RT)}
    for src, dst, typ, k, v in edges:
        u = pos.get(getattr(src, "index", src))
        w = pos.get(getattr(dst, "index", dst))
        if u is not None and w is not None:
            adj[typ][u].append((w, k, v))
    for typ in (WW, WR):
        for lst in adj[typ]:
            if len(lst) > 1:
                lst.sort(key=lambda e: (e[0], value_sort_key(e[1]), value_sort_key(e[2])))
    rt = adj[RT]
    for rank, b in barrier.items():
        nxt = barrier.get(rank + 1)
        if nxt is not None:
            rt[b].append((nxt, None, None))
    for i, r in enumerate(vertices):
        if r.complete_time is not None and r.type == "ok":
            b = barrier.get(bisect.bisect_left(times, r.complete_time))
            if b is not None:
                rt[i].append((b, None, None))
        if r.invoke_time is not None:
            b = barrier.get(bisect.bisect_left(times, r.invoke_time) - 1)  # last barrier strictly before
            if b is not None:
                rt[b].append((i, None, None))
    return Graph(vertices, total, adj)


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


def vertices_of(a) -> list[OpRec]:
    """The vertices of ``a``'s dependency graph (``is_vertex``), in op-index order."""
    committed = a.committed
    return [r for r in a.recs if is_vertex(r, committed)]


def find_cycles(a) -> dict[str, list[dict]]:
    """The four cycle kinds of ``checkers/queue/anomalies.py`` for a ``QueueAnalysis``."""
    nodes = vertices_of(a)
    if len(nodes) < 2 or _acyclic_fast(a, nodes):
        return {name: [] for name, _ in CLASSES}
    return search_cycles(build_graph(nodes, dependency_edges(a), completion_times(nodes)))


def search_cycles(g: Graph) -> dict[str, list[dict]]:
    """The cycles of ``g`` by class (the result shape of ``find_cycles``): every graph of ``SEARCHES`` is
    searched in turn, each strongly connected component with two real ops or more yielding the shortest
    cycle through its smallest op, reported under its class once per set of ops.

    Components are independent, so a graph holding only some whole components of the history's graph
    (``build_graph`` with ``kept``) gives the cycles of those components exactly as the whole graph
    does."""
    result: dict[str, list[dict]] = {name: [] for name, _ in CLASSES}
    nodes, total, adj = g.vertices, g.total, g.adj
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
