"""Consumer group coordination (classic protocol) and committed offsets.

``coordinator`` drives ``group`` (state and pure transitions) and ``member``, and mixes in
``offset_ops`` (OffsetCommit/OffsetFetch rules, expiry, the transaction hooks); ``offsets`` keeps
committed offsets in ``__consumer_offsets`` using the record layout in ``offsets_codec``.
"""
