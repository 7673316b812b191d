"""Transactions: the coordinator and its durable state in ``__transaction_state``."""
