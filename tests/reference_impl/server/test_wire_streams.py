"""A connection whose peer stopped reading is closed within the grace, not when TCP gives up."""

import asyncio
import time

from reference_impl.server.wire.streams import close_writer


async def _stuck_peer_close(grace_s: float) -> tuple[float, bool]:
    accepted: list[asyncio.StreamWriter] = []

    async def never_read(reader, writer):
        accepted.append(writer)
        await asyncio.sleep(3600)

    server = await asyncio.start_server(never_read, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    # More than the kernel buffers of both ends hold, so bytes stay in the writer's own buffer.
    writer.write(b"x" * (64 << 20))
    await asyncio.sleep(0.2)
    buffered = writer.transport.get_write_buffer_size() > 0
    start = time.monotonic()
    await close_writer(writer, grace_s)
    took = time.monotonic() - start
    closed = writer.transport.is_closing()
    server.close()
    for w in accepted:
        w.transport.abort()
    await server.wait_closed()
    return took, buffered and closed


def test_close_is_bounded_when_the_peer_does_not_read():
    took, closed_with_pending_bytes = asyncio.run(_stuck_peer_close(0.3))
    assert closed_with_pending_bytes
    assert took < 2.0


async def _reading_peer_close() -> bytes:
    got = asyncio.get_running_loop().create_future()

    async def read_all(reader, writer):
        got.set_result(await reader.read())
        writer.close()

    server = await asyncio.start_server(read_all, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"all of it")
    await close_writer(writer, 5.0)
    data = await asyncio.wait_for(got, 5.0)
    server.close()
    await server.wait_closed()
    return data


def test_a_reading_peer_gets_every_byte_before_the_close():
    assert asyncio.run(_reading_peer_close()) == b"all of it"
