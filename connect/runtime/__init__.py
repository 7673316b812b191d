"""The Connect worker runtime: workers, herders, task runners, offsets, statuses, errors."""
