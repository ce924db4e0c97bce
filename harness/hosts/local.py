"""The ``local`` host: every node is a process on this machine with its own 127.x.y.z address.

- Addresses: each run gets its own /24 inside 127.0.0.0/8 (``127.A.B.0``, A and B derived from the run
  id, or ``$KRAFTCHECK_LOCAL_PREFIX`` such as ``127.0.0.``); nodes get ``.10``, ``.11``, ... in the order
  they are first named. Linux routes the whole 127/8 to ``lo``, so no setup is needed, and concurrent
  runs on one machine (several engineers, CI) never collide on ports.
- Processes: each node runs in its own session/process group (signals reach the node and anything it
  forks), with stdout and stderr appended to ``<node_dir>/node.log``. A pid file per node in the state
  directory lets ``kraftcheck clean`` kill nodes after the harness itself was killed.
- Parent death: nodes get PR_SET_PDEATHSIG=SIGKILL, so they die with the harness. The kernel ties that
  signal to the *thread* that forked, so every node is forked by one long-lived spawner thread (a node
  restarted by a short-lived nemesis thread would otherwise be killed when that thread ends).
- Identity for the network: loopback connections leave from 127.0.0.1 whatever address the target
  has, so a node's *source address* cannot tell iptables who sent a packet. Each node therefore runs
  (as root still) with its own primary group id (``node_gid``), and ``block(src, dst)`` matches its
  packets with ``-m owner --gid-owner`` in the host's OUTPUT chain on ``lo`` plus the destination
  address; the clients are this process (its own gid, reached at 127.0.0.1). Needs root.
- ``exec`` runs a command on this host with the node's group id (so a probe connects *as* the node);
  there is no separate network namespace on this backend.
- FUSE daemons (``start_fuse_daemon``) are host processes in their own session with a pid file, not
  tied to the harness's life: a mount outlives a killed harness until ``kraftcheck clean``. Needs root,
  ``/dev/fuse`` and ``fusermount3``.
- Abilities: ``Killable``, ``Pausable``, ``NetworkRules``, ``ClockSkew``, ``FuseMounts``, ``NodeExec``
  (``harness.interfaces``).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness.hosts import state
from harness.hosts.base import NodeDirsMixin, SignalsMixin
from harness.hosts.faketime import FaketimeClockMixin
from harness.hosts.iptables import IptablesRulesMixin, Runner, host_iptables
from harness.interfaces import CLIENTS

_PR_SET_PDEATHSIG = 1


def _set_pdeathsig() -> None:
    """preexec_fn: ask the kernel to SIGKILL the child when its parent (the spawner thread) dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass


def run_prefix(run_id: str) -> str:
    """The 127.A.B. prefix of a run (A in 1..254, B in 0..255), stable for a run id."""
    override = os.environ.get("KRAFTCHECK_LOCAL_PREFIX")
    if override:
        return override if override.endswith(".") else override + "."
    digest = hashlib.sha256(run_id.encode()).digest()
    return f"127.{1 + digest[0] % 254}.{digest[1]}."


def run_gid_base(run_id: str) -> int:
    """First of the 256 group ids reserved for the nodes of a run (see ``LocalHost.node_gid``)."""
    digest = hashlib.sha256(run_id.encode()).digest()
    return 300_000 + int.from_bytes(digest[2:5], "big") % 10_000 * 256


def resolve_python(argv: list[str]) -> list[str]:
    """Map a leading ``python``/``python3`` to this interpreter, so nodes use the harness's venv."""
    if argv and argv[0] in ("python", "python3"):
        return [sys.executable, *argv[1:]]
    return list(argv)


class _Spawner:
    """One long-lived thread that forks every node (see the module docstring: PR_SET_PDEATHSIG)."""

    def __init__(self) -> None:
        self._requests: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="kraftcheck-spawner", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            kwargs, reply = self._requests.get()
            try:
                reply.put(subprocess.Popen(**kwargs))
            except BaseException as exc:  # handed back to the caller's thread
                reply.put(exc)

    def popen(self, **kwargs) -> subprocess.Popen:
        """Start a process from the spawner thread; exceptions are re-raised in the caller."""
        reply: queue.Queue = queue.Queue()
        self._requests.put((kwargs, reply))
        result = reply.get()
        if isinstance(result, BaseException):
            raise result
        return result


_SPAWNER: _Spawner | None = None
_SPAWNER_LOCK = threading.Lock()


def _spawner() -> _Spawner:
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            _SPAWNER = _Spawner()
        return _SPAWNER


class LocalHost(NodeDirsMixin, SignalsMixin, IptablesRulesMixin, FaketimeClockMixin):
    """Nodes as local processes (see the module docstring). Implements ``harness.interfaces.Host``
    and the abilities listed there."""

    name = "local"

    def __init__(self, base_dir: str | os.PathLike, run_id: str | None = None):
        self.run_id = run_id or state.new_run_id()
        self.base_dir = Path(base_dir).resolve()
        self.prefix = run_prefix(self.run_id)
        self._nodes: list[str] = []
        self._procs: dict[str, subprocess.Popen] = {}
        self._fuse_daemons: dict[str, subprocess.Popen] = {}
        self._lock = threading.RLock()
        self._torn_down = False
        state.write_run_record(
            self.run_id, "local", base_dir=str(self.base_dir), node_dirs=[], prefix=self.prefix
        )

    # -- addressing and directories ------------------------------------------------------------
    def _index(self, node: str) -> int:
        with self._lock:
            if node not in self._nodes:
                if len(self._nodes) >= 200:
                    raise ValueError("at most 200 nodes per local host")
                self._nodes.append(node)
            return self._nodes.index(node)

    def ip(self, node: str) -> str:
        """The node's own loopback address."""
        return f"{self.prefix}{10 + self._index(node)}"

    def node_gid(self, node: str) -> int:
        """The primary group id the node's processes run with (its identity for iptables)."""
        return run_gid_base(self.run_id) + self._index(node)

    # -- processes ----------------------------------------------------------------------------
    def start(self, node: str, argv: list[str], env: dict[str, str] | None = None) -> int:
        """Start ``argv`` as ``node`` (its own process group, parent-death signal); return its pid."""
        with self._lock:
            if self._torn_down:
                raise RuntimeError(f"host of run {self.run_id} is torn down")
            if self.is_running(node):
                raise RuntimeError(f"node {node} is already running (pid {self._procs[node].pid})")
            self.ip(node)
            full_env = dict(os.environ)
            full_env.update(env or {})
            full_env["KRAFTCHECK_RUN_ID"] = self.run_id
            full_env["KRAFTCHECK_NODE"] = node
            log = open(self.log_path(node), "ab", buffering=0)
            try:
                log.write(f"--- kraftcheck: start {node} at {time.time():.3f}: {argv}\n".encode())
                proc = _spawner().popen(
                    args=resolve_python(argv),
                    env=full_env,
                    cwd=self.node_dir(node),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_set_pdeathsig,
                    **self._identity(node),
                )
            finally:
                log.close()
            self._procs[node] = proc
            state.write_pid_file(self.run_id, node, proc.pid, pgid=proc.pid, argv=list(argv))
            return proc.pid

    def _identity(self, node: str) -> dict:
        # Only root may switch groups; without root the net nemesis refuses at setup anyway.
        if os.geteuid() != 0:
            return {}
        return {"group": self.node_gid(node), "extra_groups": []}

    def pid(self, node: str) -> int | None:
        """Pid of the node's process, or None when it is not running."""
        with self._lock:
            proc = self._procs.get(node)
            if proc is None or proc.poll() is not None:
                return None
            return proc.pid

    def is_running(self, node: str) -> bool:
        """Whether the node's process is alive (paused counts as alive)."""
        return self.pid(node) is not None

    def exit_code(self, node: str) -> int | None:
        """The exit status of the node's last process (negative: killed by that signal), None if running."""
        with self._lock:
            proc = self._procs.get(node)
            return None if proc is None else proc.poll()

    def kill(self, node: str, signal: int) -> None:
        """Send ``signal`` to the node's whole process group (no-op when it is not running)."""
        with self._lock:
            proc = self._procs.get(node)
            if proc is None or proc.poll() is not None:
                return
            try:
                os.killpg(proc.pid, signal)
            except ProcessLookupError:
                return
            if signal == _SIGKILL:
                self._reap(node, proc, 10.0)

    def _reap(self, node: str, proc: subprocess.Popen, timeout_s: float) -> bool:
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        state.remove_pid_file(self.run_id, node)
        return True

    def stop(self, node: str, timeout_s: float = 10.0) -> None:
        """The node's stop signal (SIGTERM unless set otherwise; a paused node is continued so it can act on
        it), SIGKILL after ``timeout_s``."""
        with self._lock:
            proc = self._procs.get(node)
            if proc is None:
                return
            if proc.poll() is not None:
                state.remove_pid_file(self.run_id, node)
                return
            for sig in (self.stop_signal(node), signal.SIGCONT):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass
            if not self._reap(node, proc, timeout_s):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._reap(node, proc, 10.0)

    def exec(self, node: str, argv: list[str], timeout_s: float = 30.0) -> tuple[int, str]:
        """Run ``argv`` on this host (there is no per-node namespace locally); (exit code, output)."""
        try:
            done = subprocess.run(
                resolve_python(argv),
                cwd=self.node_dir(node),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
                check=False,
                **self._identity(node),
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.output.decode(errors="replace") if exc.output else ""
            return 124, out + f"\n[timed out after {timeout_s}s]"
        except OSError as exc:
            return 127, str(exc)
        return done.returncode, done.stdout.decode(errors="replace")

    # -- network rules (NetworkRules, with IptablesRulesMixin) ---------------------------------------
    def network_rules_problem(self) -> str | None:
        """Owner rules on ``lo`` need root and iptables."""
        if os.geteuid() != 0:
            return ("partitions on the local backend need root (iptables owner rules on lo); "
                    "run as root or use --backend docker")
        if shutil.which("iptables") is None:
            return "iptables is not installed (apt-get install iptables)"
        return None

    def _address(self, node: str) -> str:
        # Loopback packets to a client go to 127.0.0.1 (the clients' source address).
        return "127.0.0.1" if node == CLIENTS else self.ip(node)

    def _rules_for(self, src: str, dst: str) -> list[tuple[str, list[str]]]:
        gid = os.getgid() if src == CLIENTS else self.node_gid(src)
        addr = self._address(dst)
        return [("", ["OUTPUT", "-o", "lo", "-m", "owner", "--gid-owner", str(gid), "-d", addr,
                      *self._tag(), "-j", "DROP"]),
                # A socket closed with unacknowledged data (a request that timed out) is orphaned: the kernel
                # keeps retransmitting it, and orphaned packets carry no owner, so the rule above cannot see
                # them; without this rule a request sent before the cut reaches ``dst`` seconds later, through
                # the cut. Resets stay allowed (probes read "refused" from them).
                ("", ["OUTPUT", "-o", "lo", "-p", "tcp", "!", "--tcp-flags", "RST", "RST", "-m", "owner",
                      "!", "--socket-exists", "-d", addr, *self._tag(), "-j", "DROP"])]

    def _rule_runners(self) -> list[Runner]:
        return [host_iptables]

    # -- FUSE daemons (FuseMounts) ----------------------------------------------------------------
    def fuse_problem(self) -> str | None:
        """Mounting needs root, ``/dev/fuse`` and ``fusermount3`` on this machine."""
        if os.geteuid() != 0 or not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None:
            return ("fsync-loss on the local backend needs root, /dev/fuse and fusermount3 (apt-get install "
                    "fuse3); use --backend docker")
        return None

    def start_fuse_daemon(self, node: str, argv: list[str], log_path: str) -> None:
        """Start the daemon as a host process in its own session (it outlives a killed harness until
        ``kraftcheck clean``, which finds it by its pid file)."""
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(resolve_python(argv), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self._fuse_daemons[node] = proc
        state.write_pid_file(self.run_id, f"fuse-{node}", proc.pid, pgid=proc.pid)

    def stop_fuse_daemon(self, node: str, mount_point: str) -> None:
        """``fusermount3 -uz``, then wait for the daemon to end (SIGKILL after 5 s); never raises."""
        subprocess.run(["fusermount3", "-uz", mount_point], capture_output=True, check=False)
        proc = self._fuse_daemons.pop(node, None)
        if proc is not None:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    return  # stuck in the kernel: its pid file stays, so clean tries again
        state.remove_pid_file(self.run_id, f"fuse-{node}")

    def teardown(self) -> None:
        """Stop every node (continuing paused ones first), forget them; idempotent, never raises."""
        with self._lock:
            self._torn_down = True
            for node in list(self._procs):
                try:
                    self.stop(node, timeout_s=5.0)
                except Exception as exc:  # teardown must go on with the other nodes
                    print(f"[kraftcheck] teardown of {node} failed: {exc}", file=sys.stderr)
            self._procs.clear()
        state.remove_run_record(self.run_id)

    def remove_node_dirs(self) -> None:
        """Delete every node directory (data dirs); call after the logs were collected."""
        shutil.rmtree(self.base_dir / "node-dirs", ignore_errors=True)


_SIGKILL = signal.SIGKILL
