"""Group APIs (registered once the coordinator lands)."""
