"""The group admin requests aiokafka lacks (ListGroups v5, ConsumerGroupDescribe, the KIP-932
share-group requests, DescribeGroups pinned to v2) through streams.kafka against the bundled broker, and the error the
kafka layer raises when a broker cannot answer them, which the CLI prints as one line."""

from __future__ import annotations

import asyncio

from aiokafka import TopicPartition
from helpers import create_topics

from streams.cli.client import run_command
from streams.kafka import clients
from streams.kafka.admin import (
    AdminRequestError,
    alter_share_group_offsets,
    commit_offsets,
    describe_consumer_group,
    describe_share_group,
    list_groups_with_types,
    share_group_offsets,
)
from streams.kafka.client_config import client_settings
from streams.kafka.internals import send_to_node
from streams.kafka.requests import DescribeGroupsV2

GROUP_ID_NOT_FOUND = 69


def test_group_requests_see_a_classic_group_as_what_it_is(broker) -> None:
    create_topics(broker.bootstrap, {"t": 1})

    async def run() -> None:
        admin = clients.admin(client_settings(broker.bootstrap))
        await admin.start()
        try:
            codes = await commit_offsets(admin, "classic-g", {TopicPartition("t", 0): 3})
            assert codes == {TopicPartition("t", 0): 0}
            typed = await list_groups_with_types(admin)
            assert ("classic-g", "classic", "Empty") in typed
            assert await describe_consumer_group(admin, "classic-g") is None  # not KIP-848
            info = await describe_share_group(admin, "classic-g")
            assert info.error_code == GROUP_ID_NOT_FOUND
            assert "not a share group" in (info.error_message or "")
            assert await share_group_offsets(admin, "no-such-share-group") == {}
            code, _message, _per_partition = await alter_share_group_offsets(
                admin, "classic-g", {("t", 0): 0})
            assert code == GROUP_ID_NOT_FOUND
            # DescribeGroups pinned to v2 reads an answer of two groups (the console's groups
            # page): aiokafka's own request misreads the second group.
            await commit_offsets(admin, "classic-h", {TopicPartition("t", 0): 1})
            node = (await admin.describe_cluster())["brokers"][0]["node_id"]
            response = await send_to_node(admin, node, DescribeGroupsV2(["classic-g", "classic-h"]))
            assert response.API_VERSION == 2
            assert [(g[0], g[1], g[2]) for g in response.groups] == [
                (0, "classic-g", "Empty"), (0, "classic-h", "Empty")]
        finally:
            await admin.close()

    asyncio.run(run())


def test_the_cli_prints_an_admin_request_error_as_one_line(capsys) -> None:
    async def refused() -> int:
        raise AdminRequestError("the broker does not offer share groups (KIP-932)")

    assert run_command("streams share-groups", refused) == 1
    err = capsys.readouterr().err
    assert err == "streams share-groups: the broker does not offer share groups (KIP-932)\n"
