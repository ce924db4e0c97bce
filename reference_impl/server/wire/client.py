"""asyncio client for inter-node requests (follower fetch, registration, heartbeats, AlterPartition,
metadata-log pulls, forwarding admin requests to the controller).

Same framing and codec as the server. Requests on one ``WireClient`` are pipelined on a single
connection; a reader task matches responses to requests by correlation id. A request that gets no answer
within its timeout raises ``TimeoutError`` and closes the connection (as Kafka clients do), because a late
answer on that connection could otherwise be mistaken for a newer request's; the next ``send`` reconnects.
Connection problems raise ``ConnectionError``. Neither is a protocol error: those come back as error codes
inside the decoded response.
"""

from __future__ import annotations

import asyncio
import struct

from kafka.protocol.api_message import ApiMessage

from reference_impl.server.tasks import cancel_all
from reference_impl.server.wire import codec
from reference_impl.server.wire.streams import close_writer

DEFAULT_MAX_RESPONSE_BYTES = 100 * 1024 * 1024


class WireClient:
    """A pipelined Kafka-protocol connection to ``host:port``."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "kraftcheck",
        timeout_s: float = 30.0,
        connect_timeout_s: float = 5.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_response_bytes = max_response_bytes
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task | None = None
        self._pending: dict[int, asyncio.Future] = {}
        self._next_correlation_id = 1
        self._connect_lock = asyncio.Lock()

    @property
    def connected(self) -> bool:
        """True while a connection is open."""
        return self._writer is not None and not self._writer.is_closing()

    async def connect(self) -> None:
        """Open the connection if it is not open (called by ``send`` as needed)."""
        async with self._connect_lock:
            if self.connected:
                return
            try:
                self._reader, self._writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), self.connect_timeout_s
                )
            except (TimeoutError, OSError) as exc:
                raise ConnectionError(f"cannot connect to {self.host}:{self.port}: {exc!r}") from exc
            self._reader_task = asyncio.create_task(self._read_responses(self._reader))

    async def close(self) -> None:
        """Close the connection; requests still waiting fail with ``ConnectionError``."""
        writer, task = self._writer, self._reader_task
        self._writer = self._reader = self._reader_task = None
        self._fail_pending(ConnectionError("connection closed"))
        if task is not None:
            await cancel_all([task])
        if writer is not None:
            await close_writer(writer)

    async def __aenter__(self) -> WireClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def send(self, request: ApiMessage, api_version: int, timeout_s: float | None = None) -> ApiMessage:
        """Send ``request`` at ``api_version`` and return the decoded response."""
        correlation_id = self._take_correlation_id()
        request.with_header(correlation_id=correlation_id, client_id=self.client_id)
        frame = bytes(request.encode(version=api_version, header=True, framed=True))
        payload = await self._roundtrip(correlation_id, frame, timeout_s)
        spec = codec.ALL_APIS.get(request.API_KEY)
        response_class = spec.response_class if spec is not None else request.header.get_response_class()
        skip = codec.response_header_length(request.API_KEY, api_version, payload)
        if request.API_KEY == codec.API_VERSIONS_KEY:
            return response_class.decode(payload, version=api_version, header=True)
        return response_class.decode(memoryview(payload)[skip:], version=api_version)

    async def send_raw(self, api_key: int, api_version: int, request: bytes, timeout_s: float | None = None) -> bytes:
        """Relay a complete request (header + body, no size prefix) under a fresh correlation id and
        return the response BODY (response header stripped). Used to forward admin requests."""
        if len(request) < 8:
            raise codec.MalformedRequest("request shorter than a header")
        correlation_id = self._take_correlation_id()
        frame = struct.pack(">ihhi", len(request), api_key, api_version, correlation_id) + bytes(request[8:])
        payload = await self._roundtrip(correlation_id, frame, timeout_s)
        return payload[codec.response_header_length(api_key, api_version, payload):]

    def _take_correlation_id(self) -> int:
        cid = self._next_correlation_id
        self._next_correlation_id = cid + 1 if cid < 2**31 - 1 else 1
        return cid

    async def _roundtrip(self, correlation_id: int, frame: bytes, timeout_s: float | None) -> bytes:
        await self.connect()
        future = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = future
        try:
            self._writer.write(frame)
            await self._writer.drain()
            return await asyncio.wait_for(future, timeout_s if timeout_s is not None else self.timeout_s)
        except TimeoutError:
            await self.close()  # a late answer must not be matched to a later request
            raise
        except OSError as exc:
            await self.close()
            raise ConnectionError(str(exc)) from exc
        finally:
            self._pending.pop(correlation_id, None)

    async def _read_responses(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                if size < 4 or size > self.max_response_bytes:
                    raise ConnectionError(f"bad response size {size}")
                payload = await reader.readexactly(size)
                (correlation_id,) = struct.unpack_from(">i", payload, 0)
                future = self._pending.pop(correlation_id, None)
                if future is not None and not future.done():
                    future.set_result(payload)
        except asyncio.CancelledError:
            raise
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            self._fail_pending(ConnectionError(f"connection to {self.host}:{self.port} lost: {exc!r}"))
            if self._writer is not None:
                self._writer.close()
            self._writer = None

    def _fail_pending(self, exc: Exception) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(exc)
        self._pending.clear()
