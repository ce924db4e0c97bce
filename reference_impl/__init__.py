"""The reference implementation of the Kafka KRaft replication protocol: the system under test.

Theory of operation: ``protocol`` is a sans-IO core (pure Python, standard library only) that holds every
decision of the controller and of the replicas; ``server`` is a thin asyncio shell that gives that core
sockets, files and clocks and speaks the Kafka wire protocol so real clients can use it; ``conformance``
runs the controller's partition-change logic on JSON cases (docs/conformance.md).
"""
