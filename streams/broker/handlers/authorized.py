"""Authorized-operations bitfields for Metadata, DescribeCluster and DescribeGroups (KIP-430).

Without an authorizer Kafka answers every operation the resource type supports
(`AuthHelper.authorizedOperations` returns `supportedOps` when no authorizer is configured), and
Int.MinValue when the client did not ask. Bits are AclOperation codes
(`clients/.../acl/AclOperation.java`); the sets are `AclEntry.supportedOperations`.
"""

from __future__ import annotations

READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

NOT_REQUESTED = -2147483648

TOPIC_OPERATIONS = (READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS,
                    ALTER_CONFIGS)
GROUP_OPERATIONS = (READ, DESCRIBE, DELETE)
CLUSTER_OPERATIONS = (CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE,
                      ALTER, DESCRIBE)


def authorized_operations(operations: tuple[int, ...], requested: bool) -> int:
    if not requested:
        return NOT_REQUESTED
    return sum(1 << op for op in operations)
