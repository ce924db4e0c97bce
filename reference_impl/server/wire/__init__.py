"""Kafka wire protocol for kraftcheck's reference nodes: framing, codec, server, client, record batches.

Theory of operation. Every Kafka request is a 4-byte big-endian size followed by a request header and a
body; the response is a size, a response header (correlation id, plus tagged fields for flexible
versions) and a body. kraftcheck does not hand-write message codecs: ``codec`` drives kafka-python 3.x's
schema-generated classes (Kafka's own JSON message definitions) to decode requests and encode responses,
and ``messages`` loads the inter-node APIs kafka-python lacks from ``schemas/*.json`` with the same
machinery (BrokerRegistration 62, BrokerHeartbeat 63, AlterPartition 56, and kraftcheck's MetadataLogFetch
10000, which carries the controller's metadata records as JSON).

- ``server.WireServer`` serves one request at a time per connection, so responses come back in request
  order (pipelining clients such as librdkafka rely on it) and produce requests on one connection append
  in order. Oversized frames are refused before their body is read; malformed frames close only their
  connection; an unknown API key or unserved version is answered with UNSUPPORTED_VERSION and the
  connection stays open; handler failures become UNKNOWN_SERVER_ERROR. A node never dies of input.
- ``client.WireClient`` is the matching pipelined client for node-to-node calls, with correlation ids and
  per-request timeouts (a timeout closes the connection so a late reply can never be misattributed).
- ``records`` parses v2 record-batch headers, verifies CRC-32C and stamps base offsets / leader epochs
  (fields outside the CRC, so no re-checksumming).

What it cannot see: anything about state. Handlers for the client APIs live in
``reference_impl.server.apis`` (put together per node by ``reference_impl.server.client_apis``) and reach
state only through ``reference_impl.server.services``. API keys are named by ``api_keys.ApiKey``.
A process adds its own handlers (e.g. the controller's BrokerRegistration) to the handler dict it gives
``WireServer``, with ``codec.INTER_NODE_APIS`` specs in ``apis``.
"""

from reference_impl.server.wire.client import WireClient
from reference_impl.server.wire.codec import (
    ALL_APIS,
    CLIENT_APIS,
    INTER_NODE_APIS,
    ApiSpec,
    DecodedRequest,
    MalformedRequest,
)
from reference_impl.server.wire.server import DEFAULT_MAX_REQUEST_BYTES, WireServer

__all__ = [
    "ALL_APIS",
    "CLIENT_APIS",
    "DEFAULT_MAX_REQUEST_BYTES",
    "INTER_NODE_APIS",
    "ApiSpec",
    "DecodedRequest",
    "MalformedRequest",
    "WireClient",
    "WireServer",
]
