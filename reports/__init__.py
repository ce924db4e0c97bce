"""Reports: a self-contained HTML page per run and conformance matrices across runs."""
