"""The small protocols the harness is built from (docs/interfaces.md).

Jepsen's habit: one small protocol per responsibility, optional abilities as separate runtime-checkable
protocols that callers test for with ``isinstance``. The harness never imports the reference
implementation: it reaches a system under test only through ``Cluster`` and the Kafka wire protocol.

``Host`` is what the cluster adapter needs to run nodes. What a nemesis needs from a host is split into
*abilities*, each a small protocol: ``Killable`` (signal a node's process and watch it), ``Pausable``,
``NetworkRules`` (drop traffic from one node to another, one direction at a time), ``ClockSkew`` (move a
node's wall clock), ``FuseMounts`` (run a FUSE daemon under a node's data, the disk ability behind
fsync-loss faults) and ``NodeExec`` (run a command where the node runs). A nemesis asks
``isinstance(run.host, Ability)`` and refuses with ``NemesisUnsupported`` when the host lacks it, so no
nemesis knows which backend it runs on and a new backend implements abilities, not nemesis code. The
abilities that depend on the machine (root, iptables, libfaketime, /dev/fuse) also say, through their
``*_problem`` method, why they cannot work right now.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

CLIENTS = "client"
"""The node name that stands for the harness's own clients in ``NetworkRules`` (they run beside the hosts)."""


@runtime_checkable
class Host(Protocol):
    """Where nodes run: processes on 127.0.0.x (``local``) or Docker containers (``docker``)."""

    name: str

    def start(self, node: str, argv: list[str], env: dict[str, str] | None = None) -> int:
        """Start ``argv`` as node ``node`` and return its pid (as seen from the host)."""

    def stop(self, node: str, timeout_s: float = 10.0) -> None:
        """Stop node gracefully (SIGTERM, then SIGKILL after ``timeout_s``)."""

    def kill(self, node: str, signal: int) -> None:
        """Send ``signal`` to the node's main process (SIGKILL for kill -9, SIGSTOP/SIGCONT to pause)."""

    def exec(self, node: str, argv: list[str], timeout_s: float = 30.0) -> tuple[int, str]:
        """Run ``argv`` in the node's environment (its network namespace); return (exit code, output)."""

    def ip(self, node: str) -> str:
        """The node's address on the cluster network."""

    def node_dir(self, node: str) -> str:
        """Host-side directory of the node (config, data dir, trace, logs); created on first use."""

    def node_path(self, node: str, host_path: str) -> str:
        """``host_path`` (inside ``node_dir``) as the node's own processes see it (identity when local)."""

    def pid(self, node: str) -> int | None:
        """The node's main process id on the host, or None when it is not running."""

    def is_running(self, node: str) -> bool:
        """Whether the node's main process is alive (a paused process is alive)."""

    def logs(self, node: str) -> str:
        """Everything the node's process wrote to stdout and stderr so far."""

    def teardown(self) -> None:
        """Stop every node and remove everything this host created (idempotent)."""


@runtime_checkable
class Cluster(Protocol):
    """The system-under-test adapter: one controller and N brokers reachable over the Kafka protocol."""

    def setup(self, spec: dict[str, Any]) -> None:
        """Start every node and wait until all brokers are registered and unfenced."""

    def teardown(self) -> None:
        """Stop every node and release everything (idempotent, safe after a partial setup)."""

    def bootstrap_servers(self) -> list[str]:
        """``host:port`` of every broker, as clients should use them."""

    def brokers(self) -> list[str]:
        """Node names of the brokers."""

    def start_node(self, node: str) -> None:
        """Start a stopped node."""

    def kill_node(self, node: str) -> int | None:
        """kill -9 the node; return the pid that was killed (None if it was not running)."""

    def restart_node(self, node: str) -> int:
        """Start a killed or stopped node again; return its new pid."""

    def create_topic(self, topic: str, partitions: int, replication_factor: int) -> None:
        """Create a topic through the Kafka admin API and wait until every partition has a leader."""

    def leaders(self, topic: str) -> dict[int, int]:
        """Partition -> leader broker id, from Metadata."""

    def active_controller(self) -> str:
        """Node name of the active controller."""

    def collect_logs(self, dest_dir: str) -> None:
        """Copy each node's logs and a listing of its data directory to ``dest_dir/<node>/``."""

    def collect_traces(self) -> list[dict]:
        """All trace events the nodes emitted so far (docs/history-schema.md), times in monotonic ns."""

    def write_trace(self, path: str, start_ns: int) -> int:
        """Write the merged, time-ordered trace with times relative to ``start_ns``; return its length."""

    def wait_recovered(self, timeout_s: float, topic: str | None = None) -> bool:
        """After healing: restart any node that is down, then wait until every broker is unfenced, every
        partition of ``topic`` has a leader and every broker's metadata agrees on it; False when
        ``timeout_s`` passed first."""


@runtime_checkable
class Client(Protocol):
    """A workload client; one per logical process."""

    def open(self, run: Any, node: str) -> None:
        """Connect to the cluster (``node`` is the preferred bootstrap node)."""

    def invoke(self, run: Any, op: dict) -> dict:
        """Execute the invocation ``op`` and return its completion (type ok / fail / info)."""

    def close(self) -> None:
        """Release connections (must not raise)."""


# -- host abilities: what a nemesis asks a host for ------------------------------------------------


@runtime_checkable
class NodeExec(Protocol):
    """Ability: run a short command where a node runs (its network view, its file system)."""

    def exec(self, node: str, argv: list[str], timeout_s: float = 30.0) -> tuple[int, str]:
        """Run ``argv`` for ``node`` and return (exit code, output); a leading ``python3`` means the
        interpreter that has the project importable; 124 means it timed out."""


@runtime_checkable
class Killable(Protocol):
    """Ability: signal a node's main process, stop it gracefully, and watch what became of it."""

    def nodes(self) -> list[str]:
        """Every node this host has named so far (the set a heal brings back)."""

    def pid(self, node: str) -> int | None:
        """The node's current process id, or None when it is not running."""

    def is_running(self, node: str) -> bool:
        """Whether the node's process is alive (a paused process is alive)."""

    def kill(self, node: str, signal: int) -> None:
        """Send ``signal`` to the node's process; for SIGKILL, return once it is gone."""

    def stop(self, node: str, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``."""

    def process_state(self, node: str, pid: int) -> str | None:
        """The kernel's one-letter state of process ``pid`` of ``node`` (``T`` stopped, ``Z`` zombie),
        None when that process is gone."""

    def exit_code(self, node: str) -> int | None:
        """Exit status of the node's last process (negative: the signal that ended it); None while it
        runs or when the host cannot tell."""


@runtime_checkable
class Pausable(Protocol):
    """Ability: freeze a node's process and let it go on (SIGSTOP / SIGCONT on both backends)."""

    def pause(self, node: str) -> None:
        """Freeze the node's process (no-op when it is not running)."""

    def resume(self, node: str) -> None:
        """Let a frozen process go on (no-op when it is not running or not frozen)."""


@runtime_checkable
class NetworkRules(Protocol):
    """Ability: drop the packets one node sends to another (one direction per rule), and test reachability.

    Node names are the host's nodes or ``CLIENTS`` (the harness's clients). Every rule is tagged with the
    run id, so ``kraftcheck clean`` finds the rules a killed harness left behind.
    """

    def network_rules_problem(self) -> str | None:
        """Why rules cannot be installed on this host right now (a one-line hint), or None."""

    def block(self, src: str, dst: str) -> str | None:
        """Drop what ``src`` sends to ``dst``; None when the rule is in place, else the error text."""

    def unblock(self, src: str, dst: str) -> str | None:
        """Remove the rule ``block(src, dst)`` added; None when it is gone (or was never there), else the
        error text."""

    def unblock_all(self) -> int:
        """Remove every rule of this run wherever it is (also ones this process did not add); how many."""

    def rules_in_place(self) -> int:
        """How many rules ``block`` has put in place and ``unblock`` not yet removed (a host may need more
        than one rule to cut one edge)."""

    def probe(self, src: str, dst: str) -> str:
        """A TCP connect from ``src`` to ``dst`` on a port nobody listens on: ``refused`` (reachable),
        ``timeout`` (cut), ``connected`` or ``error ...``."""


@runtime_checkable
class ClockSkew(Protocol):
    """Ability: move a node's wall clock (monotonic time is left alone) while the node runs."""

    def clock_skew_problem(self) -> str | None:
        """Why clocks cannot be moved on this host (a one-line hint), or None."""

    def clock_env(self, node: str) -> dict[str, str]:
        """Environment variables the node's processes must start with for their clock to be movable
        (applied on every start and restart; also what a measuring process needs)."""

    def set_clock_offset(self, node: str, seconds: float) -> None:
        """Set the node's wall clock to the host's plus ``seconds``; running processes follow within
        about a second."""


@runtime_checkable
class FuseMounts(Protocol):
    """Ability: run a FUSE file-system daemon in a node's environment, so the node's processes see its
    mount (the disk ability behind fsync-loss faults)."""

    def fuse_problem(self) -> str | None:
        """Why FUSE mounts cannot be made on this host (a one-line hint), or None."""

    def start_fuse_daemon(self, node: str, argv: list[str], log_path: str) -> None:
        """Start ``argv`` (a daemon that mounts and stays in the foreground) for ``node`` in the background,
        its output appended to ``log_path`` (paths as the node sees them); recorded so ``kraftcheck clean``
        can stop it."""

    def stop_fuse_daemon(self, node: str, mount_point: str) -> None:
        """Unmount ``mount_point`` lazily and let the daemon end (killed if it does not); never raises."""
