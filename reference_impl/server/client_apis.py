"""One node's client-facing API table: broker and/or admin APIs, ApiVersions, error responses.

The handlers themselves are in ``reference_impl.server.apis`` (``broker``: data-plane APIs; ``admin``:
admin APIs, served or forwarded; ``error_responses``: whole-request errors). ``ClientApiHandlers`` puts
them together for one of two kinds of node:

- a broker: ``ClientApiHandlers(broker=services)``: data-plane APIs locally; admin APIs relayed raw to the
  controller (DescribeConfigs answered locally when the services offer it), so kafka-python's
  KafkaAdminClient works against whatever node Metadata names as ``controller_id``;
- the controller: ``ClientApiHandlers(admin=services)``: ApiVersions plus the admin APIs, served locally.

``build_server`` assembles a ``wire.WireServer`` from these handlers plus any inter-node handlers a
process adds (BrokerRegistration, BrokerHeartbeat, AlterPartition, MetadataLogFetch); ApiVersions then
advertises exactly what that server serves.
"""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from reference_impl.protocol.errors import Errors
from reference_impl.server import services as sv
from reference_impl.server.apis import error_responses
from reference_impl.server.apis.admin import ADMIN_API_KEYS, AdminApis
from reference_impl.server.apis.broker import BROKER_API_KEYS, BrokerApis
from reference_impl.server.apis.common import response_class
from reference_impl.server.apis.groups import GROUP_API_KEYS, GroupApis
from reference_impl.server.wire import codec
from reference_impl.server.wire.api_keys import PRIVATE_KEYS_START, ApiKey
from reference_impl.server.wire.codec import ApiSpec, DecodedRequest
from reference_impl.server.wire.server import DEFAULT_MAX_REQUEST_BYTES, Handler, WireServer


class ClientApiHandlers:
    """The client-facing handlers of one node (see the module docstring for broker vs controller)."""

    def __init__(
        self,
        broker: sv.BrokerServices | None = None,
        admin: sv.AdminServices | None = None,
    ) -> None:
        if broker is None and admin is None:
            raise ValueError("a node needs broker services, admin services, or both")
        self.broker = broker
        self.admin = admin
        self.broker_apis = None if broker is None else BrokerApis(broker)
        self.admin_apis = AdminApis(admin, broker)
        # The group coordinator, on brokers that have one (``BrokerServicesImpl.groups``); it answers
        # FindCoordinator for groups and leaves other key types to the broker's own handler.
        shell = getattr(broker, "groups", None)
        self.group_apis = None if shell is None or self.broker_apis is None else GroupApis(
            shell, other_coordinators=self.broker_apis.handle_find_coordinator)
        # Filled by ``build_server`` with everything the server serves, so ApiVersions tells the truth.
        self.served: dict[int, ApiSpec] = self.own_apis()

    # ----------------------------------------------------------------------------------- registration

    def own_apis(self) -> dict[int, ApiSpec]:
        """The api keys (with version ranges) these handlers serve on this node."""
        keys = {ApiKey.API_VERSIONS, *ADMIN_API_KEYS}
        if self.broker_apis is not None:
            keys |= BROKER_API_KEYS
        if self.group_apis is not None:
            keys |= GROUP_API_KEYS
        return {k: codec.ALL_APIS[k] for k in sorted(keys)}

    def handlers(self) -> dict[int, Handler]:
        """Map api key -> async handler for ``WireServer``."""
        table: dict[int, Handler] = {ApiKey.API_VERSIONS: self.handle_api_versions}
        if self.broker_apis is not None:
            table.update(self.broker_apis.handlers())
        if self.group_apis is not None:
            table.update(self.group_apis.handlers())
            table[ApiKey.FIND_COORDINATOR] = self.group_apis.handle_find_coordinator
        table.update(self.admin_apis.handlers())
        return table

    # --------------------------------------------------------------------------------- ApiVersions

    def api_versions_body(self, version: int, error: Errors = Errors.NONE) -> ApiMessage:
        """An ApiVersions response listing ``self.served``."""
        cls = response_class(ApiKey.API_VERSIONS)
        keys = [
            cls.ApiVersion(api_key=s.api_key, min_version=s.min_version, max_version=s.max_version)
            for s in sorted(self.served.values(), key=lambda s: s.api_key)
            if s.api_key < PRIVATE_KEYS_START  # kraftcheck-private keys stay out: clients may map keys to an enum
        ]
        return cls(version=version, error_code=int(error), api_keys=keys, throttle_time_ms=0)

    async def handle_api_versions(self, request: DecodedRequest) -> ApiMessage:
        """ApiVersions 0-3: the APIs and version ranges this node serves."""
        return self.api_versions_body(request.api_version)

    def on_unserved(self, request: DecodedRequest) -> ApiMessage | None:
        """ApiVersions above our max gets a v0 body with UNSUPPORTED_VERSION and our ranges (so the client
        retries with a version we serve, as with Kafka); other unserved requests get None here."""
        if request.api_key == ApiKey.API_VERSIONS:
            return self.api_versions_body(0, Errors.UNSUPPORTED_VERSION)
        return None

    # ------------------------------------------------------------------------------ error responses

    def error_response(self, request: DecodedRequest, code: int) -> ApiMessage | None:
        """The response Kafka would send for ``request`` failing as a whole with ``code`` (every item
        carries the error; ``apis.error_responses``); None for APIs without one. ApiVersions' lists this
        node's APIs."""
        if request.api_key == ApiKey.API_VERSIONS:
            return None if request.body is None else self.api_versions_body(request.api_version, Errors(code))
        return error_responses.error_response(request, code)


def build_server(
    host: str,
    port: int,
    *,
    broker: sv.BrokerServices | None = None,
    admin: sv.AdminServices | None = None,
    extra_handlers: dict[int, Handler] | None = None,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    name: str = "node",
) -> WireServer:
    """A ``WireServer`` serving the client APIs (broker and/or admin) plus ``extra_handlers``.

    ``extra_handlers`` maps inter-node api keys (``codec.INTER_NODE_APIS``: ALTER_PARTITION,
    BROKER_REGISTRATION, BROKER_HEARTBEAT, METADATA_LOG_FETCH) to the process's own handlers; their version
    ranges come from ``codec.ALL_APIS``. Call ``await server.start()`` to listen.
    """
    handlers = ClientApiHandlers(broker=broker, admin=admin)
    table = handlers.handlers()
    apis = handlers.own_apis()
    for key, handler in (extra_handlers or {}).items():
        if key not in codec.ALL_APIS:
            raise ValueError(f"no schema for api key {key}")
        table[key] = handler
        apis[key] = codec.ALL_APIS[key]
    handlers.served = apis
    return WireServer(
        apis, table, host, port,
        max_request_bytes=max_request_bytes,
        on_unserved=handlers.on_unserved,
        on_error=lambda req, code: handlers.error_response(req, code),
        name=name,
    )
