"""The harness: starts a cluster, drives workloads and nemeses, records one history, checks it, stores it."""
