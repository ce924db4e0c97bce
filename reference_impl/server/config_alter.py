"""AlterConfigs (33) / IncrementalAlterConfigs (44): which dynamic config changes a request asks for.

Pure planning over one resource, before the controller core turns each change into a ``ConfigRecord``
(``Controller.set_config``) and commits it (C1). What is dynamic here is what some node honours while it
runs:

- BROKER resources (``""`` = the cluster-wide default, or a broker id = that node's own override):
  ``reassignment.mode`` and the three KIP-435 parallelism settings (seed 002: dynamic, affecting only the
  next step), and ``unclean.leader.election.enable`` (the controller decides elections, C12). The
  controller reads its own id's override first, then the cluster default, then its file (Kafka's order).
  ``min.insync.replicas`` is not dynamic at broker level: brokers honour it only per topic.
- TOPIC resources: ``min.insync.replicas`` (controller and brokers, L1/C16) and
  ``unclean.leader.election.enable``.

Errors follow Kafka's answers: a known but static key is INVALID_REQUEST ("cannot be updated
dynamically"), an unknown key or a bad value is INVALID_CONFIG, APPEND/SUBTRACT on a non-list key is
INVALID_CONFIG, duplicate keys / a null SET / an unknown operation / a malformed broker id are
INVALID_REQUEST, a missing topic is UNKNOWN_TOPIC_OR_PARTITION. A resource is all-or-nothing.
AlterConfigs (not incremental) replaces the resource's whole dynamic set: dynamic keys it leaves out are
deleted, as Kafka does (kafka-python re-sends the modified ones for this reason).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reference_impl.protocol.errors import Errors
from reference_impl.server import services as sv
from reference_impl.server.config import PARSERS, ConfigError
from reference_impl.server.config_describe import BROKER_DYNAMIC_KEYS, TOPIC_DYNAMIC_KEYS, TOPIC_KEYS, render

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

RESOURCE_KINDS = {sv.RESOURCE_BROKER: "broker", sv.RESOURCE_TOPIC: "topic"}


@dataclass(frozen=True)
class ConfigPlan:
    """The outcome for one resource: an error, or the ``(key, value | None)`` changes (None = delete)."""

    error: Errors = Errors.NONE
    message: str | None = None
    changes: tuple[tuple[str, str | None], ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the resource's changes may be committed."""
        return self.error == Errors.NONE


def _refuse(error: Errors, message: str) -> ConfigPlan:
    return ConfigPlan(error, message)


def plan_alter(resource: sv.AlterConfigsResource, *, incremental: bool, current: Mapping[str, str],
               topic_exists: bool) -> ConfigPlan:
    """Validate one resource of an (Incremental)AlterConfigs request against ``current`` (the resource's
    dynamic values now) and return the changes it asks for (see the module docstring)."""
    kind = RESOURCE_KINDS.get(resource.resource_type)
    if kind is None:
        return _refuse(Errors.INVALID_REQUEST, f"unsupported resource type {resource.resource_type}")
    name = resource.resource_name
    if kind == "broker" and name != "" and not (name.isdigit() and name.isascii()):
        return _refuse(Errors.INVALID_REQUEST, f"broker resource name must be empty or a broker id, got {name!r}")
    if kind == "topic" and not topic_exists:
        return _refuse(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
    dynamic = BROKER_DYNAMIC_KEYS if kind == "broker" else TOPIC_DYNAMIC_KEYS
    known = set(PARSERS) if kind == "broker" else set(TOPIC_KEYS)
    keys = [key for key, _, _ in resource.configs]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        return _refuse(Errors.INVALID_REQUEST, f"duplicate config keys: {', '.join(duplicates)}")
    changes: list[tuple[str, str | None]] = []
    for key, op, value in resource.configs:
        if op not in (SET, DELETE, APPEND, SUBTRACT):
            return _refuse(Errors.INVALID_REQUEST, f"unknown config operation {op} for {key}")
        if key not in dynamic:
            if key in known:
                return _refuse(Errors.INVALID_REQUEST, f"cannot update these configs dynamically: {key}")
            return _refuse(Errors.INVALID_CONFIG, f"unknown {kind} config {key!r}")
        if op in (APPEND, SUBTRACT):
            return _refuse(Errors.INVALID_CONFIG, f"{key} is not a list config: APPEND/SUBTRACT not allowed")
        if op == DELETE:
            changes.append((key, None))
            continue
        if value is None:
            return _refuse(Errors.INVALID_REQUEST, f"null value for {key} (use DELETE to remove it)")
        try:
            parsed = PARSERS[key](key, value)
        except ConfigError as exc:
            return _refuse(Errors.INVALID_CONFIG, f"invalid value for {key}: {exc}")
        changes.append((key, render(parsed)))
    if not incremental:
        # AlterConfigs semantics: the request is the resource's whole dynamic set.
        changes += [(key, None) for key in sorted(current) if key in dynamic and key not in keys]
    # Only real changes become records (a SET to the current value, or deleting an unset key, is a no-op).
    effective = tuple((k, v) for k, v in changes if current.get(k) != v)
    return ConfigPlan(Errors.NONE, None, effective)
