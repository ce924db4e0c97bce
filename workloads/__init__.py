"""Workloads: the clients that drive a cluster (queue send/poll with kafka-python, admin operations)."""
