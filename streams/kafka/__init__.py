"""The seam between our code and the Kafka client library (aiokafka).

``streams.kafka.admin`` is the one request path for the admin requests aiokafka has no method
for (ACLs, SCRAM credentials, OffsetDelete, DeleteGroups, member-less OffsetCommit), and
``streams.kafka.requests`` holds the request formats we write ourselves. The adapter for
aiokafka's private internals is ``streams.kafka.internals`` (contract-tested in
``tests/unit/test_kafka_internals*.py``); nothing else touches aiokafka's privates.
"""
