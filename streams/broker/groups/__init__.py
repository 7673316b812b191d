"""Consumer group coordination (classic protocol) and committed offsets."""
