"""Group coordination (classic protocol, and the seam for Kafka 4's other group types) and
committed offsets.

``coordinator`` drives ``group`` (state and pure transitions) and ``member``, and mixes in
``offset_ops`` (OffsetCommit/OffsetFetch rules, expiry, the transaction hooks); ``offsets`` keeps
committed offsets in ``__consumer_offsets`` using the record layout in ``offsets_codec``.
``protocols`` is the interface KIP-848 consumer groups and KIP-932 share groups plug into.
"""
