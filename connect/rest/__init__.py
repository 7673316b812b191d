"""The Connect REST API."""
