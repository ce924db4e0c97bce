"""Host backends: where nodes run (local processes on 127.0.0.x, or Docker containers)."""
