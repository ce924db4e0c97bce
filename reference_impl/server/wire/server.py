"""asyncio server for Kafka framing: one request at a time per connection, answered in order.

Each connection runs one loop: read the 4-byte size, refuse it if it is negative or above
``max_request_bytes`` (Kafka's ``socket.request.max.bytes``, 100 MiB by default) BEFORE reading the body,
read the body, decode, await the handler, write the response, repeat. Handling a connection's requests
strictly one after another is what Kafka does (it mutes a channel while a request is in flight), and it
is what keeps per-connection ordering: two produce requests pipelined on one connection append in the
order they were sent, and their responses come back in that order (librdkafka pipelines and relies on
it). Other connections are independent tasks, so a long-polling fetch stalls only its own connection.

Bad input never escapes a connection: a malformed frame (bad size, shorter than the fixed request header,
a body that does not decode) closes that connection with one log line; an exception inside a handler is
logged and answered with UNKNOWN_SERVER_ERROR (or closes the connection if no error response can be built).
A handler that fails a whole request on purpose raises ``RequestFailed(code)``: the API's error response
carries that code in every item (a controller that is not the active one: NOT_CONTROLLER).

An unknown API key or an unserved version is not malformed: it is answered with UNSUPPORTED_VERSION and
the connection stays open. In order of preference: the ApiVersions rule (``on_unserved``: v0 body with our
ranges); the API's own error response at the requested version when kafka-python's schema covers it
(``on_error``); otherwise ``codec.encode_bare_error`` (response header + int16 error code: there is no
schema to build a body from). The one exception is an acks=0 Produce, which by contract gets no response
at all: like Kafka, the connection is closed so the producer notices.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Awaitable, Callable

from kafka.protocol.api_message import ApiMessage

from reference_impl.protocol.errors import Errors
from reference_impl.server.tasks import cancel_all
from reference_impl.server.wire import codec
from reference_impl.server.wire.api_keys import ApiKey
from reference_impl.server.wire.codec import ApiSpec, DecodedRequest, MalformedRequest
from reference_impl.server.wire.streams import close_writer

log = logging.getLogger("kraftcheck.wire")

DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024


class RequestFailed(Exception):
    """Raised by a handler to fail the whole request with Kafka error ``code`` (answered, not logged)."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or f"request failed with error {code}")
        self.code = code

Handler = Callable[[DecodedRequest], Awaitable[ApiMessage | None]]
"""Serves one decoded request; returns the response body, or None to send nothing (Produce acks=0)."""

ErrorResponder = Callable[[DecodedRequest, int], ApiMessage | None]
"""Builds an error response for a decoded request and a Kafka error code (None when it cannot)."""

UnservedResponder = Callable[[DecodedRequest], ApiMessage | None]
"""Answers a request for an api key / version this node does not serve (``body`` is None)."""


class WireServer:
    """Accepts Kafka-framed connections on ``host:port`` and dispatches requests to ``handlers``.

    ``apis`` declares which api keys and versions are served (``codec.ApiSpec``); ``handlers`` maps each
    served api key to an async handler. ``on_unserved`` answers requests outside ``apis`` (the ApiVersions
    rule: a v0 body with UNSUPPORTED_VERSION and our ranges); ``on_error`` builds per-API error responses.
    Port 0 picks a free port (read ``port`` after ``start``).
    """

    def __init__(
        self,
        apis: dict[int, ApiSpec],
        handlers: dict[int, Handler],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        on_unserved: UnservedResponder | None = None,
        on_error: ErrorResponder | None = None,
        name: str = "wire",
    ) -> None:
        self.apis = apis
        self.handlers = handlers
        self.host = host
        self.port = port
        self.max_request_bytes = max_request_bytes
        self.on_unserved = on_unserved
        self.on_error = on_error
        self.name = name
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()
        self.requests_served = 0
        self.connections_closed_for_bad_input = 0

    @property
    def open_connections(self) -> int:
        """Number of connections currently being served (for leak checks)."""
        return len(self._connections)

    async def start(self) -> None:
        """Bind and start accepting connections."""
        self._server = await asyncio.start_server(self._accept, self.host, self.port, limit=2**16)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("%s listening on %s:%d", self.name, self.host, self.port)

    async def close(self) -> None:
        """Stop accepting, close every connection and wait until their tasks have finished."""
        if self._server is not None:
            self._server.close()
        await cancel_all(list(self._connections))
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> WireServer:
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        try:
            await self._serve_connection(reader, writer, peer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the peer went away; nothing to answer
        except asyncio.CancelledError:
            pass  # server shutdown
        except Exception:  # the broker never dies of input: log and drop this connection only
            log.exception("%s: connection %s failed", self.name, peer)
        finally:
            self._connections.discard(task)
            try:
                await close_writer(writer)
            except asyncio.CancelledError:
                pass  # server shutdown while closing: the transport was aborted

    async def _serve_connection(self, reader, writer, peer) -> None:
        next_size: asyncio.Task | None = None
        answer: asyncio.Task | None = None
        try:
            while True:
                try:
                    size_bytes = await (next_size if next_size is not None else reader.readexactly(4))
                except asyncio.IncompleteReadError:
                    return  # clean EOF between requests
                finally:
                    next_size = None
                (size,) = struct.unpack(">i", size_bytes)
                if size < 0 or size > self.max_request_bytes:
                    # Refuse before reading: never allocate what an attacker or a corrupt length claims.
                    self._bad_input(peer, f"frame of {size} bytes exceeds limit {self.max_request_bytes}")
                    return
                payload = await reader.readexactly(size)
                answer = asyncio.create_task(self._answer(payload, peer))
                # While the request is served (a long-polling fetch, an acks=all produce), watch the socket:
                # the next request's size may arrive (pipelining: it waits its turn, order is kept), or the
                # peer may go away, in which case the pending work is cancelled instead of pinning this
                # connection and its socket until a timeout the client chose.
                next_size = asyncio.create_task(reader.readexactly(4))
                await asyncio.wait({answer, next_size}, return_when=asyncio.FIRST_COMPLETED)
                if not answer.done() and next_size.done() and next_size.exception() is not None:
                    answer.cancel()
                    await asyncio.gather(answer, return_exceptions=True)
                    return
                frame = await answer
                if frame is _CLOSE:
                    return
                if frame is not None:
                    writer.write(frame)
                    await writer.drain()
                self.requests_served += 1
        finally:
            # Never leave a task behind (server shutdown cancels us while a handler or a read is pending).
            await cancel_all([task for task in (answer, next_size) if task is not None])

    async def _answer(self, payload: bytes, peer) -> bytes | object | None:
        """Turn one request payload into a response frame, None (no response) or ``_CLOSE``."""
        try:
            request = codec.decode_request(payload, self.apis)
        except MalformedRequest as exc:
            self._bad_input(peer, f"malformed request: {exc}")
            return _CLOSE
        if request.body is None:
            return self._answer_unserved(request, payload, peer)
        handler = self.handlers.get(request.api_key)
        if handler is None:
            self._bad_input(peer, f"no handler for api {request.api_key}")
            return _CLOSE
        try:
            response = await handler(request)
        except asyncio.CancelledError:
            raise
        except RequestFailed as failed:
            response = self.on_error(request, failed.code) if self.on_error else None
            if response is None:
                return codec.encode_bare_error(request.api_key, request.api_version, request.correlation_id,
                                               failed.code)
        except Exception:
            log.exception("%s: handler for api %d v%d failed", self.name, request.api_key, request.api_version)
            response = self.on_error(request, -1) if self.on_error else None
            if response is None:
                return _CLOSE
        if response is None:
            return None
        try:
            return codec.encode_response(response, request.api_version, request.correlation_id)
        except Exception:
            # A handler built a response the schema cannot encode: a bug, logged; answer with the error form.
            log.exception("%s: cannot encode response to api %d v%d", self.name, request.api_key, request.api_version)
            try:
                fallback = self.on_error(request, -1) if self.on_error else None
                if fallback is not None:
                    return codec.encode_response(fallback, request.api_version, request.correlation_id)
            except Exception:
                log.exception("%s: cannot encode the error response either", self.name)
            return _CLOSE

    def _answer_unserved(self, request: DecodedRequest, payload: bytes, peer) -> bytes | object:
        """Answer a request outside ``apis`` with UNSUPPORTED_VERSION (issue 3), keeping the connection."""
        if self.on_unserved is not None:
            response = self.on_unserved(request)
            if response is not None:
                version = 0 if request.api_key == codec.API_VERSIONS_KEY else request.api_version
                return codec.encode_response(response, version, request.correlation_id)
        spec = self.apis.get(request.api_key) or codec.ALL_APIS.get(request.api_key)
        decoded = None
        if spec is not None:
            try:
                decoded = codec.decode_unserved(payload, spec)
            except MalformedRequest:
                decoded = None  # the version is unserved anyway; its body is not ours to judge
        if decoded is not None and decoded.api_key == ApiKey.PRODUCE and decoded.body.acks == 0:
            self._bad_input(peer, f"unsupported version {decoded.api_version} of an acks=0 produce")
            return _CLOSE
        if decoded is not None and self.on_error is not None:
            response = self.on_error(decoded, int(Errors.UNSUPPORTED_VERSION))
            if response is not None:
                try:
                    return codec.encode_response(response, decoded.api_version, decoded.correlation_id)
                except Exception:
                    log.exception("%s: cannot encode the error response to api %d v%d", self.name,
                                  decoded.api_key, decoded.api_version)
        log.info("%s: api %d v%d from %s not served: UNSUPPORTED_VERSION", self.name, request.api_key,
                 request.api_version, peer)
        return codec.encode_bare_error(request.api_key, request.api_version, request.correlation_id,
                                       int(Errors.UNSUPPORTED_VERSION))

    def _bad_input(self, peer, why: str) -> None:
        self.connections_closed_for_bad_input += 1
        log.warning("%s: closing connection from %s: %s", self.name, peer, why)


_CLOSE = object()
