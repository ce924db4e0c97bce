"""Bounded fuzzing of the wire server: malformed, truncated, oversized and random frames.

Property: whatever one connection sends, the server stays up, keeps answering other connections
(a long-lived "witness" connection and fresh ones), answers or closes the bad connection within a
bounded time, and leaks neither connection tasks nor sockets once the clients are gone.
Bounded: a fixed number of hypothesis examples, each with a short deadline.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_impl.server.client_apis import build_server
from reference_impl.server.wire.codec import CLIENT_APIS
from tests.reference_impl.server.test_wire_codec import request_for
from tests.reference_impl.server.test_wire_memory_services import MemoryServices

MAX_REQUEST_BYTES = 64 * 1024
# Examples against a real broker process; bounded by default, raise it for a longer soak.
BROKER_FUZZ_EXAMPLES = int(os.environ.get("KRAFTCHECK_FUZZ_EXAMPLES", "200"))


def valid_payloads() -> list[bytes]:
    """One valid request payload (no size prefix) per served client API version, as mutation seeds."""
    out = []
    for spec in CLIENT_APIS:
        for version in range(spec.min_version, spec.max_version + 1):
            req = request_for(spec.api_key, version)
            req.with_header(correlation_id=1, client_id="fuzz")
            out.append(bytes(req.encode(version=version, header=True)))
    return out


SEEDS = valid_payloads()


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@st.composite
def mutated(draw) -> bytes:
    """A valid payload with a few bytes flipped, a slice cut out, or junk appended."""
    payload = bytearray(draw(st.sampled_from(SEEDS)))
    kind = draw(st.sampled_from(["flip", "cut", "append", "header"]))
    if kind == "flip":
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(payload) - 1))
            payload[i] = draw(st.integers(0, 255))
    elif kind == "cut":
        i = draw(st.integers(0, len(payload) - 1))
        j = draw(st.integers(i, len(payload)))
        del payload[i:j]
    elif kind == "append":
        payload += draw(st.binary(min_size=1, max_size=64))
    else:
        # Keep the body, lie about api key / version.
        struct.pack_into(">hh", payload, 0, draw(st.integers(-5, 80)), draw(st.integers(-2, 20)))
    return frame(bytes(payload))


frames = st.one_of(
    mutated(),
    st.binary(max_size=200).map(frame),  # random bodies, correctly framed
    st.binary(max_size=64),  # random bytes, no framing at all
    st.sampled_from(SEEDS).map(lambda p: frame(p)[: len(p) // 2]),  # truncated mid-frame, then EOF
    st.integers(MAX_REQUEST_BYTES + 1, 2**31 - 1).map(lambda n: struct.pack(">i", n)),  # oversized claim
    st.integers(-(2**31), -1).map(lambda n: struct.pack(">i", n)),  # negative size
)


class ServerThread:
    """A broker wire server on a background loop, shared by all examples of one test."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        services = MemoryServices()
        services.create("t")
        self.server = build_server("127.0.0.1", 0, broker=services, max_request_bytes=MAX_REQUEST_BYTES)
        self.call(self.server.start())

    def call(self, coro, timeout=20):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self):
        try:
            self.call(self.server.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)
            self.loop.close()


def api_versions_frame(cid: int) -> bytes:
    req = request_for(18, 3)
    req.with_header(correlation_id=cid, client_id="witness")
    return bytes(req.encode(version=3, header=True, framed=True))


async def ask(reader, writer, cid: int) -> int:
    writer.write(api_versions_frame(cid))
    await writer.drain()
    (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))
    payload = await asyncio.wait_for(reader.readexactly(size), 5)
    return struct.unpack_from(">i", payload)[0]


async def throw(port: int, data: bytes, host: str = "127.0.0.1") -> None:
    """Send ``data`` on a fresh connection, half-close, and drain whatever comes back (bounded)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(data)
        await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
        # The server either answers (the bytes happened to be valid) or closes; either way EOF comes.
        await asyncio.wait_for(reader.read(), 5)
    except (ConnectionError, OSError):
        pass  # the server may reset a connection it refused; that is allowed
    finally:
        writer.close()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_fuzzed_frames_never_hurt_the_server(caplog):
    caplog.set_level(logging.WARNING, logger="kraftcheck")
    node = ServerThread()
    witness = node.call(asyncio.open_connection("127.0.0.1", node.server.port))
    counter = iter(range(1000, 10**6))
    try:
        fds_before = open_fds()

        @settings(max_examples=150, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(data=frames)
        def example(data):
            node.call(throw(node.server.port, data))
            cid = next(counter)
            assert node.call(ask(*witness, cid)) == cid  # the long-lived connection is still served

        example()

        async def settle():
            for _ in range(100):
                if node.server.open_connections == 1:  # only the witness
                    return
                await asyncio.sleep(0.05)

        node.call(settle())
        assert node.server.open_connections == 1
        assert node.server.connections_closed_for_bad_input > 0  # the fuzzer did hit the bad-input paths
        # No leaked sockets: same descriptor count as before the run (witness still open in both).
        assert open_fds() <= fds_before
        # And a fresh connection still works.
        async def fresh():
            reader, writer = await asyncio.open_connection("127.0.0.1", node.server.port)
            try:
                return await ask(reader, writer, 7)
            finally:
                writer.close()

        assert node.call(fresh()) == 7
        witness[1].close()
        node.call(node.server.close())

        async def other_tasks():
            await asyncio.sleep(0.1)
            return [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]

        assert node.call(other_tasks()) == []  # no connection task outlives the server
    finally:
        witness[1].close()
        node.close()
    # Bad input is a WARNING (one line per closed connection); an ERROR would mean an unexpected failure
    # path inside the server or a handler.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


# ---------------------------------------------------------------------------------------------------------
# Against a real broker process (issue 3: "a bounded fuzz run of malformed frames against a broker")
# ---------------------------------------------------------------------------------------------------------


def _socket_count(pid: int) -> int:
    """Open sockets of ``pid`` (files are not counted: a fuzzed CreateTopics may legitimately create logs)."""
    return sum(1 for name in _fds(pid) if name.startswith("socket:"))


def _fds(pid: int) -> list[str]:
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return sorted(out)


@pytest.mark.jepsen
def test_fuzzed_frames_against_a_broker_process(tmp_path):
    """1 controller + 1 broker as real processes; 200 fuzzed connections; the broker stays alive, keeps
    serving a real kafka-python client, and its open sockets return to the baseline (no leak)."""
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic

    from reference_impl.server.local_cluster import LocalCluster

    cluster = LocalCluster(str(tmp_path / "cluster"), broker_ids=(1,))
    try:
        cluster.start(wait_s=60)
        broker = cluster.brokers[1]
        host, port = broker.address.split(":")
        pid = broker.proc.pid
        # Create the topic first: this also opens the broker's forwarding link to the controller, so the
        # socket baseline below includes every long-lived connection the broker keeps.
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=15000)
        try:
            admin.create_topics([NewTopic("after-fuzz", num_partitions=1, replication_factor=1)])
        finally:
            admin.close()
        time.sleep(1.0)
        sockets_before = _socket_count(pid)

        @settings(max_examples=BROKER_FUZZ_EXAMPLES, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(data=frames)
        def example(data):
            asyncio.run(asyncio.wait_for(throw(int(port), data, host), 10))
            assert broker.proc.poll() is None, "the broker died of input"

        example()

        deadline = time.monotonic() + 10
        while _socket_count(pid) > sockets_before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _socket_count(pid) <= sockets_before, f"sockets leaked in the broker: {_fds(pid)}"

        # ... and it still serves real clients end to end.
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
        try:
            offset = producer.send("after-fuzz", value=b"alive", partition=0).get(30).offset
        finally:
            producer.close(5)
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, auto_offset_reset="earliest")
        try:
            consumer.assign([TopicPartition("after-fuzz", 0)])
            got = []
            end = time.monotonic() + 20
            while not got and time.monotonic() < end:
                for records in consumer.poll(timeout_ms=200).values():
                    got.extend((r.offset, r.value) for r in records)
        finally:
            consumer.close()
        assert got == [(offset, b"alive")]
        assert broker.proc.poll() is None
        # Bad input is logged as one warning line per closed connection, never as a traceback (which
        # would mean a handler or a services method failed on input that passed the codec).
        for node in cluster.nodes():
            with open(node.log_path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            assert "Traceback" not in text, f"{node.role}-{node.node_id} logged a traceback:\n{text[-3000:]}"
    finally:
        cluster.close()
