"""Sans-IO core of the KRaft replication protocol (rule map filled in by the modules that implement it)."""
