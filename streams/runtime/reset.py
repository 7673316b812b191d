"""Offset and group tools: what ``kafka-consumer-groups --reset-offsets / --delete /
--delete-offsets`` and ``kafka-streams-application-reset`` do, through the Kafka protocol only.

Offsets are written with OffsetCommit as a member-less client (generation -1), which the group
coordinator accepts only while the group has no members: as Kafka's tools, every change refuses
to run against an active group. The application reset (see the Kafka Streams documentation,
"Application Reset Tool") moves the input topics' committed offsets (to the earliest by
default), moves intermediate topics' offsets to their end, and deletes the application's internal
topics (``<application.id>-...-changelog`` / ``-repartition`` and the foreign-key join topics);
the local state is removed separately by ``KafkaStreams.clean_up()`` on each instance.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import for_code

from ..kafka import admin as kafka_admin
from ..kafka import clients
from ..kafka.client_config import client_settings
from .statedir import PROCESS_FILE, StateDirectory

INTERNAL_SUFFIXES = ("-changelog", "-repartition", "-subscription-registration-topic",
                     "-subscription-response-topic")


class ResetError(RuntimeError):
    """A reset that must not (or cannot) run; the message says why."""


@dataclass(frozen=True)
class OffsetSpec:
    """Where to move offsets: exactly one of Kafka's reset scenarios."""

    kind: str  # earliest | latest | current | given | offset | datetime | shift | duration
    value: int = 0

    @classmethod
    def parse_datetime(cls, text: str) -> OffsetSpec:
        """``--to-datetime``: ISO 8601 (``2024-01-31T10:00:00``, ``...Z``, ``...+01:00``);
        without a zone it is UTC."""
        try:
            when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ResetError(f"--to-datetime {text!r} is not an ISO 8601 date-time "
                             "(e.g. 2024-01-31T10:00:00.000 or 2024-01-31T10:00:00Z)") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return cls("datetime", int(when.timestamp() * 1000))

    @classmethod
    def parse_duration(cls, text: str) -> OffsetSpec:
        """``--by-duration``: ISO 8601 duration as Kafka takes it (``PnDTnHnMnS``)."""
        import re
        match = re.fullmatch(r"-?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?",
                             text.strip().upper())
        if not match or text.strip().upper() in ("P", "PT", "-P", "-PT"):
            raise ResetError(f"--by-duration {text!r} is not an ISO 8601 duration "
                             "(e.g. PT1H30M, P1DT2H)")
        days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
        ms = int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)
        return cls("duration", ms)


@dataclass
class OffsetChange:
    partition: TopicPartition
    current: int | None
    new: int


@dataclass
class ResetPlan:
    """What a reset does (or, with dry-run, would do)."""

    offsets: list[OffsetChange] = field(default_factory=list)
    intermediate: list[OffsetChange] = field(default_factory=list)
    internal_topics: list[str] = field(default_factory=list)


def _raise_for(code: int, what: str) -> None:
    if code:
        error = for_code(code)
        raise ResetError(f"{what}: {error.__name__}"
                         + (f" ({error.description})" if error.description else ""))


# -- group operations ---------------------------------------------------------------------------

async def group_state(admin: AIOKafkaAdminClient, group: str) -> tuple[str, int]:
    """(state, number of members) as DescribeGroups reports them."""
    responses = await admin.describe_consumer_groups([group])
    for response in responses:
        for g in response.to_object()["groups"]:
            _raise_for(g["error_code"], f"cannot describe group {group!r}")
            return g["state"], len(g["members"])
    raise ResetError(f"the broker returned no description for group {group!r}")


async def require_inactive(admin: AIOKafkaAdminClient, group: str) -> None:
    state, members = await group_state(admin, group)
    if members:
        raise ResetError(f"consumer group {group!r} has {members} active member(s) "
                         f"(state {state}): stop every instance first")


async def committed_offsets(admin: AIOKafkaAdminClient, group: str) -> dict[TopicPartition, int]:
    offsets = await admin.list_consumer_group_offsets(group)
    return {tp: meta.offset for tp, meta in offsets.items() if meta.offset >= 0}


async def commit_offsets(admin: AIOKafkaAdminClient, group: str,
                         offsets: dict[TopicPartition, int]) -> None:
    """Commit offsets for a group with no members (OffsetCommit, generation -1)."""
    for tp, code in (await kafka_admin.commit_offsets(admin, group, offsets)).items():
        _raise_for(code, f"cannot commit the offset of {tp.topic}-{tp.partition} for {group!r}")


async def delete_offsets(admin: AIOKafkaAdminClient, group: str,
                         partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    """OffsetDelete (KIP-496): error code per partition (0 = deleted)."""
    code, results = await kafka_admin.delete_offsets(admin, group, partitions)
    _raise_for(code, f"cannot delete offsets of group {group!r}")
    return results


async def delete_group(admin: AIOKafkaAdminClient, group: str) -> None:
    _raise_for(await kafka_admin.delete_group(admin, group), f"cannot delete group {group!r}")


async def topic_partitions(admin: AIOKafkaAdminClient, topics: Iterable[str]
                           ) -> list[TopicPartition]:
    wanted = sorted(set(topics))
    if not wanted:
        return []
    described = await admin.describe_topics(wanted)
    result = []
    for topic in described:
        if topic["error_code"]:
            _raise_for(topic["error_code"], f"topic {topic['topic']!r}")
        result.extend(TopicPartition(topic["topic"], p["partition"])
                      for p in topic["partitions"])
    return sorted(result)


async def target_offsets(consumer: AIOKafkaConsumer, partitions: list[TopicPartition],
                         current: dict[TopicPartition, int], spec: OffsetSpec,
                         now_ms: int | None = None) -> dict[TopicPartition, int]:
    """The new offset of each partition, kept within [log start, log end] as Kafka's tool
    does (an offset out of range is clamped, with no error)."""
    if not partitions:
        return {}
    begin = await consumer.beginning_offsets(partitions)
    end = await consumer.end_offsets(partitions)
    result: dict[TopicPartition, int] = {}
    if spec.kind in ("datetime", "duration"):
        at = spec.value if spec.kind == "datetime" else (
            (now_ms if now_ms is not None else int(dt.datetime.now(dt.UTC).timestamp() * 1000))
            - spec.value)
        found = await consumer.offsets_for_times(dict.fromkeys(partitions, at))
        for tp in partitions:
            hit = found.get(tp)
            result[tp] = hit.offset if hit is not None else end[tp]
    for tp in partitions:
        if spec.kind == "earliest":
            offset = begin[tp]
        elif spec.kind == "latest":
            offset = end[tp]
        elif spec.kind == "offset":
            offset = spec.value
        elif spec.kind == "shift":
            offset = current.get(tp, end[tp]) + spec.value
        elif spec.kind in ("current", "given"):  # given: ``current`` holds the wanted ones
            offset = current.get(tp, end[tp])
        elif spec.kind in ("datetime", "duration"):
            offset = result[tp]
        else:
            raise ResetError(f"unknown reset scenario {spec.kind!r}")
        result[tp] = min(max(offset, begin[tp]), end[tp])
    return result


# -- local state ---------------------------------------------------------------------------------

def clean_local_state(app_dir: Path) -> list[str]:
    """Delete everything under ``state.dir/application.id`` but the lock file and the process
    id (kept so the instance keeps its transactional id). Takes the directory's lock first,
    so it fails, naming the directory, while any instance uses it. Returns what it removed."""
    app_dir = Path(app_dir)
    if not app_dir.is_dir():
        return []
    directory = StateDirectory(app_dir)
    directory.lock()
    removed = []
    try:
        for entry in sorted(app_dir.iterdir()):
            if entry.name in (".lock", PROCESS_FILE):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry.name)
    finally:
        directory.unlock()
    return removed


# -- the application reset ----------------------------------------------------------------------

def is_internal_topic(topic: str, application_id: str) -> bool:
    """Kafka Streams' naming of internal topics (StreamsResetter.isInternalTopic)."""
    return topic.startswith(application_id + "-") and topic.endswith(INTERNAL_SUFFIXES)


async def reset_application(bootstrap: str, application_id: str, input_topics: list[str],
                            intermediate_topics: list[str] | None = None,
                            spec: OffsetSpec | None = None, dry_run: bool = False,
                            client_kwargs: dict[str, Any] | None = None,
                            internal_topics: list[str] | None = None) -> ResetPlan:
    """Reset an application (no instance may be running): input topics' offsets to ``spec``
    (earliest by default), intermediate topics' to their end, internal topics deleted (and
    their committed offsets with them): all of the application's, or only ``internal_topics``
    (each must be one of them, as Kafka's ``--internal-topics``). With ``dry_run`` nothing
    changes; the plan says what would."""
    spec = spec or OffsetSpec("earliest")
    settings = {**client_settings(bootstrap), **(client_kwargs or {})}
    admin = clients.admin(settings)
    consumer = clients.consumer(settings, enable_auto_commit=False)
    await admin.start()
    try:
        await consumer.start()
        await require_inactive(admin, application_id)
        existing = set(await admin.list_topics())
        missing = sorted(set(input_topics) - existing)
        missing += sorted(set(intermediate_topics or ()) - existing)
        if missing:
            raise ResetError(f"topic(s) not found: {', '.join(missing)}")
        current = await committed_offsets(admin, application_id)
        plan = ResetPlan()
        inputs = await topic_partitions(admin, input_topics)
        new = await target_offsets(consumer, inputs, current, spec)
        plan.offsets = [OffsetChange(tp, current.get(tp), new[tp]) for tp in inputs]
        middle = await topic_partitions(admin, intermediate_topics or ())
        ends = await target_offsets(consumer, middle, current, OffsetSpec("latest"))
        plan.intermediate = [OffsetChange(tp, current.get(tp), ends[tp]) for tp in middle]
        inferred = sorted(t for t in existing if is_internal_topic(t, application_id))
        if internal_topics is not None:
            foreign = sorted(set(internal_topics) - set(inferred))
            if foreign:
                raise ResetError(f"not internal topics of application {application_id!r}: "
                                 f"{', '.join(foreign)} (its internal topics: "
                                 f"{', '.join(inferred) or 'none'})")
            inferred = sorted(set(internal_topics))
        plan.internal_topics = inferred
        if dry_run:
            return plan
        await commit_offsets(admin, application_id, {**new, **ends})
        internal_offsets = [tp for tp in current if tp.topic in plan.internal_topics]
        if internal_offsets:
            await delete_offsets(admin, application_id, internal_offsets)
        if plan.internal_topics:
            await admin.delete_topics(plan.internal_topics)
        return plan
    finally:
        await consumer.stop()
        await admin.close()
