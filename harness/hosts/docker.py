"""The ``docker`` host: every node is a container on one internal network with fixed addresses.

Containers and the network are created and removed through testcontainers (``DockerContainer``,
``Network``); what it does not cover (image build and import in ``harness.image``, detached execs,
listing networks to find a free subnet) goes through the docker SDK. testcontainers' Ryuk reaper is
off: it would be pulled from a registry, and there is none; kraftcheck's own cleanup
(``harness.cleanup``, by labels) removes what a killed harness left behind.

- Image: ``harness.image.ensure_image()`` (debootstrap + docker import + host wheels; no registry). A node
  whose role needs more Debian packages (a system under test's PostgreSQL store) runs from the image
  variant that has them (``use_packages``, before its container starts; built on first need, then cached).
- Programs: a system under test's build (its cached build directory, or a user's distribution) is
  bind-mounted read-only into every container at ``/opt/kraftcheck/sut/<name>`` (``share_readonly``, before
  the first container starts), and its command line names the program there.
- Network: ``kraftcheck-<run id>``, internal (no route outside), subnet ``172.29.<n>.0/24`` with the
  first ``n`` (starting from one derived from the run id) that no Docker network or host route uses;
  the gateway ``.1`` is the host (where the clients run), nodes get ``.10``, ``.11``, ... in the order
  they are first named, fixed when the container is created.
- Containers: ``kraftcheck-<run id>-<node>``, with NET_ADMIN (iptables), SYS_ADMIN and ``/dev/fuse``
  (lazyfs), the project source bind-mounted read-only at ``/kraftcheck`` (``PYTHONPATH``; code
  changes need no rebuild) and the node directory bind-mounted at *the same path* as on the host, so
  ``node_path`` is the identity and config files can name host paths.
- Processes: the container's PID 1 is a tiny reaper; the node is started with ``docker exec`` through
  ``sh -c 'echo $$ > pidfile; exec ...'``, its output appended to ``<node_dir>/node.log``. So a kill -9
  of the node leaves the container (and a FUSE daemon in it) alive, and a restart is just another exec.
  ``pid`` is the node's pid as the host sees it (found through ``NSpid`` in ``/proc``), so evidence
  such as ``/proc/<pid>/stat`` works the same on both backends.
- Every container and the network carry labels ``kraftcheck=1``, ``kraftcheck.run=<run id>`` and
  ``kraftcheck.owner_pid`` (beside testcontainers' own ``org.testcontainers.*``); ``kraftcheck clean``
  removes them after a crash.
- Abilities (``harness.interfaces``): ``Killable``, ``Pausable``, ``NodeExec``; ``NetworkRules`` in
  the receiving container's own network namespace (``iptables -I INPUT -s <sender>``; a rule against
  the clients sits in the sender's OUTPUT chain, since the clients live on the host and reach the
  containers from the gateway address); ``ClockSkew`` (libfaketime in the image); ``FuseMounts`` (the
  daemon runs inside the node's container, started before the node, so the node sees the mount).
  ``exit_code`` comes from Docker's record of the node's exec (``exec_inspect``: the shell execs the
  node, so the exec's status is the node's), in the local backend's convention: negative for a signal.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import docker
from docker.types import EndpointConfig, IPAMConfig, IPAMPool
from testcontainers.core.config import testcontainers_config
from testcontainers.core.container import DockerContainer, ExecConfig
from testcontainers.core.network import Network

from harness.hosts import state
from harness.hosts.base import NodeDirsMixin, SignalsMixin
from harness.hosts.faketime import FaketimeClockMixin
from harness.hosts.iptables import IptablesRulesMixin, Runner
from harness.hosts.state import proc_start_time, same_process_alive
from harness.image import VENV_PYTHON, docker_client, ensure_image
from harness.interfaces import CLIENTS

PROJECT_MOUNT = "/kraftcheck"
SHARED_MOUNT = "/opt/kraftcheck/sut"
# Execs wait for their command (up to a minute for a log scan): more than the SDK's default 60 s read timeout.
_CLIENT_OPTIONS = {"timeout": 600}
PIDFILE = "/run/kraftcheck-node.pid"
_REAPER = (
    "import os,signal,time\n"
    "signal.signal(signal.SIGTERM,lambda *a:os._exit(0))\n"
    "while True:\n"
    " try:\n  os.wait()\n"
    " except ChildProcessError:\n  time.sleep(1)\n"
)


def project_root() -> Path:
    """The project checkout (the directory holding ``harness/``; this file is ``harness/hosts/docker.py``)."""
    return Path(__file__).resolve().parents[2]


def _used_subnets(client) -> list[ipaddress.IPv4Network]:
    used = []
    for net in client.networks.list():
        for cfg in (net.attrs.get("IPAM") or {}).get("Config") or []:
            try:
                used.append(ipaddress.ip_network(cfg.get("Subnet"), strict=False))
            except (TypeError, ValueError):
                pass
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, check=False).stdout
    for line in routes.splitlines():
        try:
            used.append(ipaddress.ip_network(line.split()[0], strict=False))
        except (IndexError, ValueError):
            pass
    return used


def pick_subnet(run_id: str, used: list[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """First free 172.29.n.0/24, starting at an n derived from the run id."""
    start = hashlib.sha256(run_id.encode()).digest()[0]
    for i in range(256):
        net = ipaddress.ip_network(f"172.29.{(start + i) % 256}.0/24")
        if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
            return net
    raise RuntimeError("no free 172.29.n.0/24 subnet for the kraftcheck network")


def host_pid_of(ns_init_pid: int, container_pid: int) -> int | None:
    """Host pid of the process whose pid is ``container_pid`` inside the pid namespace of
    ``ns_init_pid`` (the container's PID 1 as the host sees it)."""
    try:
        ns = os.readlink(f"/proc/{ns_init_pid}/ns/pid")
    except OSError:
        return None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/ns/pid") != ns:
                continue
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as fh:
                for line in fh:
                    if line.startswith("NSpid:"):
                        if int(line.split()[-1]) == container_pid:
                            return int(entry)
                        break
        except (OSError, ValueError):
            continue
    return None


def resolve_python(argv: list[str]) -> list[str]:
    """Map the host's python (or a bare ``python``/``python3``) to the image's venv python."""

    if argv and (argv[0] in ("python", "python3") or argv[0] == sys.executable):
        return [VENV_PYTHON, *argv[1:]]
    return list(argv)


class DockerHost(NodeDirsMixin, SignalsMixin, IptablesRulesMixin, FaketimeClockMixin):
    """Nodes as containers (see the module docstring). Implements ``harness.interfaces.Host`` and the
    abilities listed there."""

    name = "docker"

    def __init__(self, base_dir: str | os.PathLike, run_id: str | None = None, image: str | None = None):
        # No registry to pull the reaper from; kraftcheck's cleanup takes its place.
        testcontainers_config.ryuk_disabled = True
        self.run_id = run_id or state.new_run_id()
        self.base_dir = Path(base_dir).resolve()
        self.client = docker_client()
        self.image = image or ensure_image()
        self.labels = {"kraftcheck": "1", "kraftcheck.run": self.run_id, "kraftcheck.owner_pid": str(os.getpid())}
        self._nodes: list[str] = []
        self._containers: dict[str, DockerContainer] = {}
        self._pids: dict[str, tuple[int, int | None]] = {}  # node -> (host pid, start time)
        self._exec_ids: dict[str, tuple[DockerContainer, str]] = {}  # node -> its last start's exec
        self._node_images: dict[str, str] = {}  # node -> the image variant it runs from (default: image)
        self._shared: dict[str, str] = {}  # host directory -> where containers see it (read-only)
        self._lock = threading.RLock()
        self._torn_down = False
        state.write_run_record(self.run_id, "docker", base_dir=str(self.base_dir), node_dirs=[])
        self.subnet, self.network = self._create_network()

    def _create_network(self) -> tuple[ipaddress.IPv4Network, Network]:
        """Create the run's network on a free subnet; retry when a concurrent run took it first."""

        last: Exception | None = None
        for attempt in range(6):
            subnet = pick_subnet(f"{self.run_id}/{attempt}", _used_subnets(self.client))
            network = Network(docker_client_kw=_CLIENT_OPTIONS, docker_network_kw={
                "driver": "bridge",
                "internal": True,
                "labels": dict(self.labels),
                "ipam": IPAMConfig(pool_configs=[IPAMPool(subnet=str(subnet), gateway=str(subnet[1]))]),
            })
            network.name = f"kraftcheck-{self.run_id}"
            try:
                return subnet, network.create()
            except docker.errors.APIError as exc:  # "Pool overlaps": someone else got there first
                last = exc
                time.sleep(0.2 * (attempt + 1))
        state.remove_run_record(self.run_id)
        raise RuntimeError(f"could not create the kraftcheck network: {last}")

    # -- addressing and directories ------------------------------------------------------------
    def _index(self, node: str) -> int:
        with self._lock:
            if node not in self._nodes:
                self._nodes.append(node)
            return self._nodes.index(node)

    def ip(self, node: str) -> str:
        """The node's fixed address on the run's network."""
        return str(self.subnet[10 + self._index(node)])

    def gateway(self) -> str:
        """The host's address on the run's network (where clients come from)."""
        return str(self.subnet[1])

    def container_name(self, node: str) -> str:
        """Name of the node's container."""
        return f"kraftcheck-{self.run_id}-{node}"

    # -- what goes into the containers -----------------------------------------------------------
    def use_packages(self, node: str, packages: list[str] | tuple[str, ...]) -> str:
        """Run ``node`` from the image variant that has the Debian ``packages`` too (``harness.image``;
        built the first time a run needs it); return its tag. Must come before the node's container
        starts."""
        with self._lock:
            if node in self._containers:
                raise RuntimeError(f"{node}: its container runs already; choose its packages before it starts")
            tag = ensure_image(packages=packages)
            if tag != self.image:
                self._node_images[node] = tag
            return tag

    def image_of(self, node: str) -> str:
        """The image the node's container runs from."""
        return self._node_images.get(node, self.image)

    def share_readonly(self, host_dir: str | os.PathLike) -> str:
        """Bind-mount ``host_dir`` read-only into every node container, at ``/opt/kraftcheck/sut/<name>``;
        return that path (what command lines name). Must come before the first container starts."""
        source = str(Path(host_dir).resolve())
        with self._lock:
            if source in self._shared:
                return self._shared[source]
            if self._containers:
                raise RuntimeError(f"containers run already: share {source} before the first node starts")
            name, taken = Path(source).name or "root", set(self._shared.values())
            target = f"{SHARED_MOUNT}/{name}"
            suffix = 2
            while target in taken:  # two directories of one name: number the later ones
                target, suffix = f"{SHARED_MOUNT}/{name}-{suffix}", suffix + 1
            self._shared[source] = target
            return target

    # -- containers ----------------------------------------------------------------------------
    def is_container_up(self, node: str) -> bool:
        """Whether the node's container exists and runs (the node process may not)."""
        container = self._containers.get(node)
        if container is None:
            return False
        try:
            container.reload()
        except docker.errors.NotFound:
            return False
        return container.status == "running"

    def ensure_container(self, node: str) -> DockerContainer:
        """Create and start the node's container (idempotent); return it."""
        with self._lock:
            container = self._containers.get(node)
            if container is not None:
                container.reload()
                if container.status != "running":
                    container.get_wrapped_container().start()
                return container
            node_dir = self.node_dir(node)
            container = DockerContainer(
                self.image_of(node),
                docker_client_kw=_CLIENT_OPTIONS,
                command=[VENV_PYTHON, "-c", _REAPER],
                name=self.container_name(node),
                env={"PYTHONPATH": PROJECT_MOUNT, "KRAFTCHECK_RUN_ID": self.run_id, "KRAFTCHECK_NODE": node},
                volumes=[(str(project_root()), PROJECT_MOUNT, "ro"), (node_dir, node_dir, "rw"),
                         *((source, target, "ro") for source, target in self._shared.items())],
                network=self.network,
                hostname=node,
                labels={**self.labels, "kraftcheck.node": node},
                cap_add=["NET_ADMIN", "SYS_ADMIN"],
                devices=["/dev/fuse:/dev/fuse:rwm"],
                security_opt=["apparmor:unconfined"],
                working_dir=node_dir,
                # The fixed address goes into the endpoint config at create time.
                networking_config={self.network.name: EndpointConfig(self.client.api.api_version,
                                                                     ipv4_address=self.ip(node))},
            )
            container.start()
            self._containers[node] = container
            return container

    def _exec(self, container: DockerContainer, argv: list[str]) -> tuple[int, str]:
        result = container.exec(ExecConfig(command=argv))
        return result.exit_code or 0, (result.output or b"").decode(errors="replace")

    def _exec_detached(self, container: DockerContainer, argv: list[str], env: dict[str, str] | None = None,
                       workdir: str | None = None) -> str:
        # testcontainers' exec waits for the command; a node or a daemon must run on in the background.
        # The low-level calls keep the exec's id, through which Docker reports its exit status later.
        api = container.get_wrapped_container().client.api
        exec_id = api.exec_create(container.get_wrapped_container().id, argv, environment=env or {},
                                  workdir=workdir)["Id"]
        api.exec_start(exec_id, detach=True)
        return exec_id

    # -- processes ----------------------------------------------------------------------------
    def start(self, node: str, argv: list[str], env: dict[str, str] | None = None) -> int:
        """Start ``argv`` in the node's container (creating it on first use); return its host pid."""
        with self._lock:
            if self._torn_down:
                raise RuntimeError(f"host of run {self.run_id} is torn down")
            if self.is_running(node):
                raise RuntimeError(f"node {node} is already running")
            container = self.ensure_container(node)
            log = str(Path(self.node_dir(node)) / "node.log")
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"--- kraftcheck: start {node} at {time.time():.3f}: {argv}\n")
            self._exec(container, ["rm", "-f", PIDFILE])
            script = f'echo $$ > {PIDFILE}; exec "$@" >> {log} 2>&1 < /dev/null'
            self._exec_ids[node] = (container, self._exec_detached(
                container, ["sh", "-c", script, "sh", *resolve_python(argv)], env, self.node_dir(node)))
            host_pid = self._wait_host_pid(container)
            if host_pid is None:
                raise RuntimeError(f"node {node} did not start; log tail: {self.logs(node)[-1500:]}")
            self._pids[node] = (host_pid, proc_start_time(host_pid))
            return host_pid

    def _wait_host_pid(self, container: DockerContainer, timeout_s: float = 15.0) -> int | None:
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        init_pid = wrapped.attrs["State"]["Pid"]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code, out = self._exec(container, ["cat", PIDFILE])
            if code == 0 and out.strip().isdigit():
                host_pid = host_pid_of(init_pid, int(out.strip()))
                if host_pid is not None:
                    return host_pid
            time.sleep(0.1)
        return None

    def pid(self, node: str) -> int | None:
        """Host pid of the node's process, or None when it is not running."""
        entry = self._pids.get(node)
        if entry is None or not same_process_alive(*entry):
            return None
        return entry[0]

    def is_running(self, node: str) -> bool:
        """Whether the node's process is alive (paused counts)."""
        return self.pid(node) is not None

    def exit_code(self, node: str) -> int | None:
        """The exit status of the node's last process (negative: killed by that signal), None while it
        runs or when Docker no longer knows the exec (its container is gone)."""
        entry = self._exec_ids.get(node)
        if entry is None or self.is_running(node):
            return None
        container, exec_id = entry
        # The process is gone, but Docker learns of the exit a moment after the kernel reaps it: until
        # then the exec still reads as running. Wait that moment out rather than report "still running".
        deadline = time.monotonic() + 5.0
        while True:
            try:
                info = container.get_wrapped_container().client.api.exec_inspect(exec_id)
            except docker.errors.APIError:
                return None
            code = info.get("ExitCode")
            if not info.get("Running") and code is not None:
                break
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
        # The shell reports a signal death as 128 + signal, as every shell does.
        return -(code - 128) if code > 128 else code

    def kill(self, node: str, signal: int) -> None:
        """Send ``signal`` to the node's process (from the host: root sees container processes)."""
        pid = self.pid(node)
        if pid is None:
            return
        try:
            os.kill(pid, signal)
        except ProcessLookupError:
            return
        if signal == _SIGKILL:
            deadline = time.monotonic() + 10
            while self.is_running(node) and time.monotonic() < deadline:
                time.sleep(0.05)

    def stop(self, node: str, timeout_s: float = 10.0) -> None:
        """The node's stop signal (SIGTERM unless set otherwise; +SIGCONT for a paused node), SIGKILL after
        ``timeout_s``."""
        pid = self.pid(node)
        if pid is None:
            return
        for sig in (self.stop_signal(node), signal.SIGCONT):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                return
        deadline = time.monotonic() + timeout_s
        while self.is_running(node) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.is_running(node):
            self.kill(node, _SIGKILL)

    def exec(self, node: str, argv: list[str], timeout_s: float = 30.0) -> tuple[int, str]:
        """Run ``argv`` inside the node's container (its network namespace); (exit code, output)."""
        container = self.ensure_container(node)
        argv = resolve_python(argv)
        if argv and argv[0] == "env":  # env VAR=... python3 ...: map the python after the assignments
            rest = argv[1:]
            i = next((k for k, a in enumerate(rest) if "=" not in a), len(rest))
            argv = ["env", *rest[:i], *resolve_python(rest[i:])]
        return self._exec(container, ["timeout", str(int(max(1, timeout_s))), *argv])

    # -- network rules (NetworkRules, with IptablesRulesMixin) ---------------------------------------
    def network_rules_problem(self) -> str | None:
        """None: every container has NET_ADMIN and iptables."""
        return None

    def _address(self, node: str) -> str:
        return self.gateway() if node == CLIENTS else self.ip(node)

    def _rules_for(self, src: str, dst: str) -> list[tuple[str, list[str]]]:
        if dst == CLIENTS:
            # The clients live on the host, not in a container: drop in the sender's OUTPUT instead.
            return [(src, ["OUTPUT", "-d", self._address(dst), *self._tag(), "-j", "DROP"])]
        return [(dst, ["INPUT", "-s", self._address(src), *self._tag(), "-j", "DROP"])]

    def _rule_runners(self) -> list[Runner]:
        def runner_for(node: str) -> Runner:
            return lambda args: self.exec(node, ["iptables", "-w", *args], timeout_s=20.0)

        return [runner_for(node) for node in self.nodes() if self.is_container_up(node)]

    # -- FUSE daemons (FuseMounts) ----------------------------------------------------------------
    def fuse_problem(self) -> str | None:
        """None: every container gets ``/dev/fuse`` and SYS_ADMIN."""
        return None

    def start_fuse_daemon(self, node: str, argv: list[str], log_path: str) -> None:
        """Start the daemon inside the node's container (detached), so the node's processes see the mount."""
        container = self.ensure_container(node)
        script = f'exec "$@" >> {log_path} 2>&1 < /dev/null'
        self._exec_detached(container, ["sh", "-c", script, "sh", *resolve_python(argv)])

    def stop_fuse_daemon(self, node: str, mount_point: str) -> None:
        """Unmount inside the container (the daemon then ends); nothing to do once the container is gone."""
        try:
            if self.is_container_up(node):
                self.exec(node, ["fusermount3", "-uz", mount_point], timeout_s=20)
        except Exception as exc:  # teardown goes on; clean removes the container and the mount with it
            print(f"[kraftcheck] unmounting {mount_point} in {node}: {exc}", file=sys.stderr)

    def teardown(self) -> None:
        """Stop the nodes, remove the containers and the network; idempotent, never raises."""
        with self._lock:
            self._torn_down = True
            for node, container in list(self._containers.items()):
                try:
                    self.stop(node, timeout_s=5.0)
                except Exception:
                    pass
                try:
                    container.stop(force=True, delete_volume=True)
                except docker.errors.NotFound:
                    pass
                except Exception as exc:
                    print(f"[kraftcheck] removing container of {node}: {exc}", file=sys.stderr)
                self._containers.pop(node, None)
            try:
                self.network.remove()
            except Exception:
                pass
        state.remove_run_record(self.run_id)


_SIGKILL = signal.SIGKILL
