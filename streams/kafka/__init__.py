"""The seam between our code and the Kafka client library (aiokafka): the streams runtime, the
CLI and console, Connect, Spark and the registry reach Kafka through this package.

- ``client_config``: Kafka's client properties (security, per-client prefixes) checked and
  mapped onto aiokafka's arguments; ``client_settings`` gives the arguments a component's
  clients share (bootstrap servers, client.id, request.timeout.ms, security).
- ``clients``: the one way to build (and start) an aiokafka client from those settings; nothing
  outside this package constructs one (``tests/unit/test_kafka_seam.py``).
- ``internals``: every use of aiokafka's private internals (contract-tested in
  ``tests/unit/test_kafka_internals*.py``); nothing else touches aiokafka's privates.
- ``batching``: batched producing per partition (``RecordCollector``, murmur2 partitioning).
- ``fetch``: reading exact offset ranges of a partition with raw Fetch requests (aborted
  transactions filtered under read_committed) and the offset lookups that plan them (the Spark
  source's reader, contract-tested in ``tests/unit/test_kafka_fetch.py``).
- ``loop_thread``: an event loop on a thread, for synchronous callers of async clients.
- ``admin``: the one request path for the admin requests aiokafka has no method for (ACLs, SCRAM
  credentials, OffsetDelete, DeleteGroups, member-less OffsetCommit, ListGroups with types,
  ConsumerGroupDescribe, the share-group admin requests); ``requests`` and ``group_requests`` hold
  the request formats we write ourselves. What a broker cannot answer raises
  ``admin.AdminRequestError``.
- ``acls``: CreateAcls, DescribeAcls and DeleteAcls (Kafka's ACL codes, bindings and filters),
  for the CLI, the console and MirrorMaker 2's ACL sync.
"""
