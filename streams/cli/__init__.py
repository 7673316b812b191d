"""The `streams` command line."""
