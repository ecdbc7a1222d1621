"""tests/external holds a test-time ``jax`` -> ``tangentia`` shim and runners for other
projects' test suites (see README.md).  Nothing here is part of tangentia's own suite:
the shim must never be imported by it, so pytest collects nothing below this directory."""
collect_ignore_glob = ["*"]
