"""JSON message schemas for the inter-node APIs kafka-python does not ship (loaded by ``wire.messages``).

Same format as Apache Kafka's ``clients/src/main/resources/common/message/*.json`` (and kafka-python's
copy), so kafka-python's ``ApiMessage`` machinery loads them unchanged. Keys: BrokerRegistration 62,
BrokerHeartbeat 63, AlterPartition 56, GetReplicaLogInfo 93 (field lists as in Kafka), and kraftcheck's
own MetadataLogFetch 10000 (api keys >= 10000 are never used by Kafka).
"""
