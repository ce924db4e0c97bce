"""WireServer / WireClient behaviour over loopback: ordering, pipelining, bad input, timeouts."""

from __future__ import annotations

import asyncio
import struct

import pytest

from reference_impl.server.client_apis import build_server
from reference_impl.server.wire import WireClient
from reference_impl.server.wire.codec import ALL_APIS
from tests.reference_impl.server.test_wire_memory_services import MemoryServices


def api_versions_frame(correlation_id: int, version: int = 3) -> bytes:
    req = ALL_APIS[18].request_class(client_software_name="t", client_software_version="1")
    req.with_header(correlation_id=correlation_id, client_id="t")
    return bytes(req.encode(version=version, header=True, framed=True))


async def read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


async def closed_by_server(reader: asyncio.StreamReader, timeout: float = 5.0) -> bool:
    """True when the server closed the connection (EOF) without answering."""
    data = await asyncio.wait_for(reader.read(), timeout)
    return data == b""


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


async def started(max_request_bytes=1 << 20, extra_handlers=None):
    services = MemoryServices()
    services.create("t")
    server = build_server("127.0.0.1", 0, broker=services, max_request_bytes=max_request_bytes,
                          extra_handlers=extra_handlers)
    await server.start()
    return services, server


def test_pipelined_requests_are_answered_in_order():
    async def body():
        _, server = await started()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"".join(api_versions_frame(cid) for cid in (5, 6, 7, 8)))
            await writer.drain()
            cids = [struct.unpack_from(">i", await read_frame(reader))[0] for _ in range(4)]
            writer.close()
            return cids
        finally:
            await server.close()

    assert run(body()) == [5, 6, 7, 8]


def test_oversized_frame_is_refused_before_its_body_is_read():
    async def body():
        _, server = await started(max_request_bytes=1024)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            # Claim 1 GiB but send only the size: the server must close without waiting for the body.
            writer.write(struct.pack(">i", 1 << 30))
            await writer.drain()
            closed = await closed_by_server(reader, timeout=3)
            writer.close()
            # Other connections keep working.
            async with WireClient("127.0.0.1", server.port) as client:
                resp = await client.send(ALL_APIS[18].request_class(client_software_name="a",
                                                                    client_software_version="1"), 3)
            return closed, resp.error_code, server.connections_closed_for_bad_input
        finally:
            await server.close()

    assert run(body()) == (True, 0, 1)


@pytest.mark.parametrize("payload", [
    struct.pack(">i", -5),
    struct.pack(">i", 3) + b"abc",  # shorter than a request header
    struct.pack(">i", 12) + struct.pack(">hhi", 3, 12, 1) + b"\xff\xff\xff\xff",  # Metadata v12, garbage body
])
def test_bad_frames_close_only_their_connection(payload):
    async def body():
        _, server = await started()
        try:
            good_reader, good_writer = await asyncio.open_connection("127.0.0.1", server.port)
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(payload)
            await writer.drain()
            closed = await closed_by_server(reader)
            writer.close()
            good_writer.write(api_versions_frame(11))
            await good_writer.drain()
            cid = struct.unpack_from(">i", await read_frame(good_reader))[0]
            good_writer.close()
            return closed, cid
        finally:
            await server.close()

    assert run(body()) == (True, 11)


async def exchange_then_api_versions(frame: bytes) -> tuple[bytes, int]:
    """Send ``frame`` and read its answer, then an ApiVersions on the SAME connection (it must stay open);
    return the first answer's payload and the second's correlation id."""
    _, server = await started()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(frame)
        await writer.drain()
        first = await asyncio.wait_for(read_frame(reader), 5)
        writer.write(api_versions_frame(12))
        await writer.drain()
        cid = struct.unpack_from(">i", await asyncio.wait_for(read_frame(reader), 5))[0]
        writer.close()
        assert server.connections_closed_for_bad_input == 0
        return first, cid
    finally:
        await server.close()


@pytest.mark.parametrize("frame", [
    struct.pack(">i", 10) + struct.pack(">hhi", 9999, 0, 41) + b"\x00\x00",  # unknown key, client id ""
    struct.pack(">i", 8) + struct.pack(">hhi", 77, 3, 41),  # unknown key, nothing after the fixed header
])
def test_unknown_api_gets_unsupported_version_with_v0_header_and_connection_stays_open(frame):
    # No schema exists for the response: correlation id (v0 header) + int16 UNSUPPORTED_VERSION.
    assert run(exchange_then_api_versions(frame)) == (struct.pack(">ih", 41, 35), 12)


def test_known_api_this_node_does_not_serve_gets_unsupported_version():
    # BrokerRegistration (62) sent to a client-facing listener: known, flexible from v0, so the header is
    # v1 (empty tagged fields); its body does not decode, which does not matter for an unserved API.
    frame = struct.pack(">i", 10) + struct.pack(">hhi", 62, 0, 41) + b"\xff\xff"
    assert run(exchange_then_api_versions(frame)) == (struct.pack(">ibh", 41, 0, 35), 12)


def test_version_beyond_schema_gets_unsupported_version_and_connection_stays_open():
    # Metadata v99: kafka-python has no schema for it, so no body can be encoded; Metadata is flexible
    # from v9 on, so a client that sent v99 expects the v1 response header (an empty tagged-field section).
    frame = struct.pack(">i", 12) + struct.pack(">hhi", 3, 99, 42) + b"\x00\x00\x00\x00"
    assert run(exchange_then_api_versions(frame)) == (struct.pack(">ibh", 42, 0, 35), 12)


def test_unserved_version_with_a_schema_gets_the_apis_own_error_response():
    # Produce v2 is below our range but kafka-python knows it: the client gets a Produce v2 response whose
    # partitions carry UNSUPPORTED_VERSION, and the connection serves the next request.
    from tests.reference_impl.server.test_wire_codec import request_for

    req = request_for(0, 2)
    req.with_header(correlation_id=43, client_id="p")
    payload, cid = run(exchange_then_api_versions(bytes(req.encode(version=2, header=True, framed=True))))
    parsed = ALL_APIS[0].response_class.decode(payload, version=2, header=True)
    assert (parsed.header.correlation_id, cid) == (43, 12)
    assert [p.error_code for t in parsed.responses for p in t.partition_responses] == [35]


def test_api_versions_v4_answered_with_v0_unsupported_version_over_the_socket():
    async def body():
        _, server = await started()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(api_versions_frame(21, version=4))
            await writer.drain()
            payload = await read_frame(reader)
            writer.close()
            parsed = ALL_APIS[18].response_class.decode(payload, header=True)
            return parsed.header.correlation_id, parsed.error_code, len(parsed.api_keys) > 5
        finally:
            await server.close()

    assert run(body()) == (21, 35, True)


def test_handler_exception_becomes_unknown_server_error_and_connection_survives():
    async def boom(_request):
        raise RuntimeError("deliberate")

    async def body():
        services, server = await started()
        server.handlers[3] = boom  # Metadata handler replaced by one that fails
        try:
            async with WireClient("127.0.0.1", server.port) as client:
                cls = ALL_APIS[3].request_class
                resp = await client.send(cls(topics=[cls.MetadataRequestTopic(name="t")],
                                             allow_auto_topic_creation=False), 12)
                again = await client.send(ALL_APIS[18].request_class(client_software_name="a",
                                                                     client_software_version="1"), 3)
            return resp.topics[0].error_code, again.error_code
        finally:
            await server.close()

    assert run(body()) == (-1, 0)


def test_extra_inter_node_handler_and_client_timeout():
    """A process adds its own handlers (here BrokerHeartbeat); a slow one makes the client time out and
    drop the connection, and the next request reconnects."""
    calls = []

    async def heartbeat(request):
        calls.append(request.body.broker_id)
        if request.body.want_fence:
            await asyncio.sleep(5)
        return ALL_APIS[63].response_class(error_code=0, is_caught_up=True, is_fenced=False, should_shut_down=False)

    async def body():
        _, server = await started(extra_handlers={63: heartbeat})
        try:
            client = WireClient("127.0.0.1", server.port, timeout_s=0.3)
            cls = ALL_APIS[63].request_class
            with pytest.raises(TimeoutError):
                await client.send(cls(broker_id=1, broker_epoch=3, current_metadata_offset=0, want_fence=True,
                                      want_shut_down=False), 0)
            assert not client.connected
            resp = await client.send(cls(broker_id=2, broker_epoch=3, current_metadata_offset=0,
                                         want_fence=False, want_shut_down=False), 0)
            await client.close()
            return resp.is_caught_up, calls
        finally:
            await server.close()

    assert run(body()) == (True, [1, 2])


def test_client_reports_connection_refused():
    async def body():
        client = WireClient("127.0.0.1", 1, connect_timeout_s=1)
        with pytest.raises(ConnectionError):
            await client.send(ALL_APIS[18].request_class(client_software_name="a", client_software_version="1"), 3)

    run(body())


def test_long_poll_fetch_on_one_connection_does_not_block_another():
    async def body():
        services, server = await started()
        try:
            cls = ALL_APIS[1].request_class
            t = cls.FetchTopic
            fetch = cls(replica_id=-1, max_wait_ms=3000, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[t(topic="t", partitions=[t.FetchPartition(
                            partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                            log_start_offset=-1, partition_max_bytes=1 << 20)])], forgotten_topics_data=[],
                        rack_id="")
            async with WireClient("127.0.0.1", server.port) as c1, WireClient("127.0.0.1", server.port) as c2:
                waiting = asyncio.create_task(c1.send(fetch, 12))
                await asyncio.sleep(0.2)
                assert not waiting.done()  # long-polling: no data yet
                from tests.reference_impl.server.test_wire_codec import request_for

                produced = await c2.send(request_for(0, 9), 9)  # another connection is served meanwhile
                got = await waiting
            return produced.responses[0].partition_responses[0].base_offset, got.responses[0].partitions[0].high_watermark
        finally:
            await server.close()

    assert run(body()) == (0, 2)


def test_pipelined_produces_on_one_connection_append_and_answer_in_order():
    """The first produce is slow (an acks=all wait, say); the second, pipelined behind it on the same
    connection, must neither overtake it in the log nor in the responses (librdkafka relies on both)."""

    class SlowFirst(MemoryServices):
        async def produce(self, topic, partition, records, acks, timeout_ms, transactional_id=None):
            if self.produce_calls == 0:
                self.produce_calls += 1
                await asyncio.sleep(0.3)
                self.produce_calls -= 1
            return await super().produce(topic, partition, records, acks, timeout_ms, transactional_id)

    async def body():
        services = SlowFirst()
        services.create("t")
        server = build_server("127.0.0.1", 0, broker=services)
        await server.start()
        try:
            from tests.reference_impl.server.test_wire_codec import batch, request_for

            frames = []
            for cid, value in ((1, b"first"), (2, b"second")):
                req = request_for(0, 9)
                req.topic_data[0].partition_data[0].records = batch([value])
                req.with_header(correlation_id=cid, client_id="p")
                frames.append(bytes(req.encode(version=9, header=True, framed=True)))
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"".join(frames))
            await writer.drain()
            answers = []
            for _ in range(2):
                payload = await read_frame(reader)
                parsed = ALL_APIS[0].response_class.decode(payload, version=9, header=True)
                answers.append((parsed.header.correlation_id,
                                parsed.responses[0].partition_responses[0].base_offset))
            writer.close()
            from reference_impl.server.wire.records import decode_records

            log = b"".join(d for _, _, d, _ in services.topics["t"][0].batches)
            return answers, [r.value for r in decode_records(log)]
        finally:
            await server.close()

    assert run(body()) == ([(1, 0), (2, 1)], [b"first", b"second"])
