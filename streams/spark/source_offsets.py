"""Options and offset arithmetic of the ``streams`` Spark source, free of Spark and of the network.

Kept apart from :mod:`streams.spark.source` so the rules that decide *which* records a query reads
(option parsing, ``startingOffsets``/``endingOffsets`` JSON, how ``maxOffsetsPerTrigger`` is
shared between partitions) can be read and unit-tested on their own. Option names and meanings
follow Spark's Kafka source; where we differ it is said next to the code.

Offsets travel in Spark's checkpoint as JSON, so they are kept in that shape throughout:
``{"topic": {"0": 42}}`` (partition ids as strings, values = the next offset to read).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

from streams.kafka.client_config import JVM_ONLY_KEYS, SECURITY_KEYS, ClientConfigError
from streams.kafka.fetch import READ_COMMITTED, READ_UNCOMMITTED, READER_KEYS, ReaderSettings

# {"topic": {"0": next_offset}}: the JSON shape Spark stores in the checkpoint.
Offsets = dict[str, dict[str, int]]
TopicPartition = tuple[str, int]
# "earliest", "latest", or {(topic, partition): offset} where -2 = earliest and -1 = latest.
OffsetSpec = str | dict[TopicPartition, int]
Mode = Literal["batch", "stream"]

EARLIEST = -2
LATEST = -1

# kafka.<consumer key> options: the keys streams.kafka.fetch's reader honours (from the one
# client table), each onto the ClientSettings field of aiokafka's argument name.
_CLIENT_OPTIONS = {f"kafka.{key}": name for key, (name, _convert) in READER_KEYS.items()}
# Options we read (lower case: Spark hands data sources a case-insensitive, lower-cased dict).
_KNOWN = {
    "kafka.bootstrap.servers", "bootstrap.servers", "subscribe", "subscribepattern", "assign",
    "startingoffsets", "endingoffsets", "maxoffsetspertrigger", "failondataloss",
    "kafkaconsumer.polltimeoutms", "includeheaders", *_CLIENT_OPTIONS,
}
# Options of Spark's Kafka source that this source does not implement: refused by name rather
# than silently ignored, so nobody believes they took effect.
_SPARK_UNSUPPORTED = {
    "startingtimestamp", "endingtimestamp", "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy", "minoffsetspertrigger",
    "maxtriggerdelay", "minpartitions", "maxrecordsperpartition", "groupidprefix",
    "kafka.group.id", "fetchoffset.numretries", "fetchoffset.retryintervalms",
}
_DISPLAY = ("kafka.bootstrap.servers (or bootstrap.servers), subscribe | subscribePattern | "
            "assign, startingOffsets, endingOffsets, maxOffsetsPerTrigger, failOnDataLoss, "
            "kafkaConsumer.pollTimeoutMs, includeHeaders, " + ", ".join(_CLIENT_OPTIONS) +
            ", kafka.security.protocol, kafka.sasl.mechanism, kafka.sasl.jaas.config, "
            "kafka.ssl.*")


def _security_option(key: str) -> bool:
    """Spark's Kafka source passes kafka.<client key> to its consumers; we take the security
    ones (kafka.security.protocol, kafka.sasl.*, kafka.ssl.*)."""
    name = key[len("kafka."):] if key.startswith("kafka.") else ""
    return name in SECURITY_KEYS or name in JVM_ONLY_KEYS or \
        name.startswith(("sasl.", "ssl.")) or name == "security.protocol"


class SourceOptionError(ValueError):
    """An option of the ``streams`` source is missing, unknown or has an invalid value."""


@dataclass(frozen=True)
class Subscription:
    """Which topic-partitions a query reads: Spark's ``subscribe``/``subscribePattern``/``assign``."""

    kind: Literal["subscribe", "subscribePattern", "assign"]
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assigned: tuple[TopicPartition, ...] = ()

    def select(self, cluster: Mapping[str, Iterable[int]]) -> list[TopicPartition]:
        """The subscribed partitions among ``cluster`` ({topic: partition ids}), sorted."""
        if self.kind == "assign":
            chosen = [tp for tp in self.assigned if tp[1] in set(cluster.get(tp[0], ()))]
        elif self.kind == "subscribe":
            chosen = [(t, p) for t in self.topics for p in cluster.get(t, ())]
        else:
            regex = re.compile(self.pattern or "")
            # Like Java's Pattern.matcher(topic).matches(): the whole name must match.
            chosen = [(t, p) for t, ps in cluster.items() if regex.fullmatch(t) for p in ps]
        return sorted(set(chosen))

    def missing_assigned(self, cluster: Mapping[str, Iterable[int]]) -> list[TopicPartition]:
        """Partitions named by ``assign`` that the cluster does not have."""
        return [tp for tp in self.assigned if tp[1] not in set(cluster.get(tp[0], ()))]


@dataclass(frozen=True)
class ClientSettings(ReaderSettings):
    """The reader settings of one query (``streams.kafka.fetch``); small and picklable so they
    ride in an InputPartition. ``security`` holds kafka.security.protocol, kafka.sasl.*,
    kafka.ssl.* without "kafka."."""

    client_id: str = "streams-spark-source"

    SECURITY_PREFIX: ClassVar[str] = "kafka."
    POLL_TIMEOUT_NAME: ClassVar[str] = "kafkaConsumer.pollTimeoutMs"


@dataclass(frozen=True)
class SourceOptions:
    """Validated options of one ``spark.read``/``spark.readStream`` of the ``streams`` format."""

    client: ClientSettings
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec = "latest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True


def parse_options(options: Mapping[str, str], mode: Mode | None) -> SourceOptions:
    """Validate Spark's option map; ``mode`` None checks only what holds for batch and stream.

    Raises :class:`SourceOptionError` naming the option and the values it accepts.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    for key in opts:
        if key in _SPARK_UNSUPPORTED:
            raise SourceOptionError(
                f"option '{key}' of Spark's Kafka source is not supported by the streams source; "
                f"supported options: {_DISPLAY}")
        if key not in _KNOWN and not _security_option(key):
            raise SourceOptionError(f"unknown option '{key}' for the streams source; "
                                    f"supported options: {_DISPLAY}")

    bootstrap = (opts.get("kafka.bootstrap.servers") or opts.get("bootstrap.servers") or "").strip()
    if not bootstrap:
        raise SourceOptionError(
            "option 'kafka.bootstrap.servers' (or 'bootstrap.servers') is required: "
            "the broker address(es), e.g. 'localhost:9092'")

    isolation = opts.get("kafka.isolation.level", READ_COMMITTED).strip().lower()
    if isolation not in (READ_COMMITTED, READ_UNCOMMITTED):
        raise SourceOptionError(
            f"option 'kafka.isolation.level' must be '{READ_COMMITTED}' (the default) or "
            f"'{READ_UNCOMMITTED}', got {opts['kafka.isolation.level']!r}")

    if opts.get("includeheaders", "true").strip().lower() != "true":
        raise SourceOptionError("option 'includeHeaders': the streams source always includes the "
                                "'headers' column; only 'true' is accepted")

    tuned: dict[str, str | int] = {}
    for option, name in _CLIENT_OPTIONS.items():
        if option == "kafka.isolation.level" or option not in opts:
            continue
        default = getattr(ClientSettings, name)
        tuned[name] = _positive_int(opts, option, default) if isinstance(default, int) \
            else opts[option]
    client = ClientSettings(
        bootstrap_servers=bootstrap,
        isolation_level=isolation,
        **tuned,  # type: ignore[arg-type]
        poll_timeout_ms=_positive_int(opts, "kafkaconsumer.polltimeoutms",
                                      ClientSettings.poll_timeout_ms,
                                      display="kafkaConsumer.pollTimeoutMs"),
        security=tuple(sorted((k[len("kafka."):], v) for k, v in opts.items()
                              if _security_option(k))),
    )
    try:
        client.security_kwargs()  # a bad key, file or jaas entry fails at load()
    except ClientConfigError as exc:
        raise SourceOptionError(str(exc)) from None
    subscription = _parse_subscription(opts)

    default_start = "earliest" if mode == "batch" else "latest"
    starting = _parse_offset_spec(opts.get("startingoffsets", default_start), "startingOffsets",
                                  allow_earliest=True)
    if "endingoffsets" in opts and mode == "stream":
        raise SourceOptionError("option 'endingOffsets' is only valid for batch reads "
                                "(spark.read), not for streaming queries")
    ending = _parse_offset_spec(opts.get("endingoffsets", "latest"), "endingOffsets",
                                allow_earliest=False)

    max_offsets = None
    if "maxoffsetspertrigger" in opts:
        max_offsets = _positive_int(opts, "maxoffsetspertrigger", 0,
                                    display="maxOffsetsPerTrigger")

    fail_raw = opts.get("failondataloss", "true").strip().lower()
    if fail_raw not in ("true", "false"):
        raise SourceOptionError(
            f"option 'failOnDataLoss' must be 'true' or 'false', got {opts['failondataloss']!r}")

    return SourceOptions(client=client, subscription=subscription, starting=starting,
                         ending=ending, max_offsets_per_trigger=max_offsets,
                         fail_on_data_loss=fail_raw == "true")


def _positive_int(opts: Mapping[str, str], key: str, default: int,
                  display: str | None = None) -> int:
    if key not in opts:
        return default
    try:
        value = int(opts[key].strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise SourceOptionError(
            f"option '{display or key}' must be a positive integer, got {opts[key]!r}")
    return value


def _parse_subscription(opts: Mapping[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(given) != 1:
        found = ", ".join(given) if given else "none"
        raise SourceOptionError(
            "exactly one of the options 'subscribe' (comma-separated topics), 'subscribePattern' "
            f"(a regex) or 'assign' (JSON like {{\"topic\":[0,1]}}) is required; got: {found}")
    key = given[0]
    raw = opts[key].strip()
    if key == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))
        if not topics:
            raise SourceOptionError("option 'subscribe' must name at least one topic "
                                    "(comma-separated), got an empty value")
        return Subscription("subscribe", topics=topics)
    if key == "subscribepattern":
        if not raw:
            raise SourceOptionError("option 'subscribePattern' must be a non-empty regex")
        try:
            re.compile(raw)
        except re.error as exc:
            raise SourceOptionError(f"option 'subscribePattern' is not a valid regex: {exc}") \
                from None
        return Subscription("subscribePattern", pattern=raw)
    try:
        parsed = json.loads(raw)
        if not isinstance(parsed, dict) or not parsed:
            raise ValueError
        assigned = []
        for topic, parts in parsed.items():
            if not isinstance(parts, list) or not all(_is_int(p) and p >= 0 for p in parts):
                raise ValueError
            assigned.extend((str(topic), int(p)) for p in parts)
    except ValueError:
        raise SourceOptionError(
            "option 'assign' must be JSON mapping topics to lists of partition ids, like "
            f"{{\"topicA\":[0,1],\"topicB\":[2]}}, got {raw!r}") from None
    return Subscription("assign", assigned=tuple(sorted(set(assigned))))


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_offset_spec(raw: str, name: str, allow_earliest: bool) -> OffsetSpec:
    value = raw.strip()
    lowered = value.lower()
    allowed = "'earliest', 'latest'" if allow_earliest else "'latest'"
    if lowered == "latest" or (allow_earliest and lowered == "earliest"):
        return lowered
    example = '{"topicA":{"0":23,"1":-2}}' if allow_earliest else '{"topicA":{"0":50,"1":-1}}'
    meaning = "-2 = earliest, -1 = latest" if allow_earliest else "-1 = latest"
    error = SourceOptionError(
        f"option '{name}' must be {allowed} or JSON like {example} ({meaning}), got {raw!r}")
    if not value.startswith("{"):
        raise error
    try:
        parsed = json.loads(value)
    except ValueError:
        raise error from None
    if not isinstance(parsed, dict):
        raise error
    spec: dict[TopicPartition, int] = {}
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise error
        for part, offset in parts.items():
            try:
                partition = int(part)
            except ValueError:
                raise error from None
            lowest = EARLIEST if allow_earliest else LATEST
            if not _is_int(offset) or offset < lowest or partition < 0:
                raise error
            spec[(str(topic), partition)] = offset
    return spec


# ---- offsets as Spark stores them ------------------------------------------------------------


def to_json_offsets(offsets: Mapping[TopicPartition, int]) -> Offsets:
    """{(topic, partition): offset} -> {"topic": {"partition": offset}}, sorted for stable JSON."""
    out: Offsets = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def from_json_offsets(offsets: Mapping[str, Mapping[str, int]] | None) -> dict[TopicPartition, int]:
    """The inverse of :func:`to_json_offsets` (accepts what came back from Spark's checkpoint)."""
    return {(topic, int(part)): int(offset)
            for topic, parts in (offsets or {}).items() for part, offset in parts.items()}


def resolve_spec(spec: OffsetSpec, name: str, partitions: Iterable[TopicPartition],
                 earliest: Mapping[TopicPartition, int],
                 latest: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Concrete offsets for ``partitions`` from an ``OffsetSpec``.

    Like Spark, a JSON spec must name exactly the subscribed partitions: a missing partition would
    otherwise be read from an arbitrary place, an extra one points at a typo.
    """
    parts = sorted(partitions)
    if spec == "earliest":
        return {tp: earliest[tp] for tp in parts}
    if spec == "latest":
        return {tp: latest[tp] for tp in parts}
    assert isinstance(spec, dict)
    missing = [tp for tp in parts if tp not in spec]
    extra = sorted(tp for tp in spec if tp not in set(parts))
    if missing or extra:
        problems = []
        if missing:
            problems.append("it does not give an offset for " + _names(missing))
        if extra:
            problems.append(_names(extra) + " are not among the subscribed partitions "
                            f"({_names(parts) or 'none'})")
        raise SourceOptionError(f"option '{name}': " + "; ".join(problems) +
                                ". Specific offsets must cover every subscribed partition.")
    resolved = {}
    for tp in parts:
        offset = spec[tp]
        resolved[tp] = earliest[tp] if offset == EARLIEST else latest[tp] if offset == LATEST \
            else offset
    return resolved


def _names(tps: Iterable[TopicPartition]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in tps)


def cap_offsets(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
                max_offsets: int) -> dict[TopicPartition, int]:
    """Move ``end`` back so that at most ``max_offsets`` offsets lie between ``start`` and it.

    Like Spark's Kafka source the budget is shared in proportion to each partition's backlog, so
    all partitions catch up together; unlike Spark (which rounds small shares up and can overshoot)
    the largest-remainder method makes the total exactly ``max_offsets``. A partition missing
    from ``start`` is new and starts at 0. Partitions whose end is below their start (data loss,
    reported later) are left alone.
    """
    backlog = {tp: end[tp] - start.get(tp, 0) for tp in end if end[tp] > start.get(tp, 0)}
    total = sum(backlog.values())
    if total <= max_offsets:
        return dict(end)
    capped = dict(end)
    shares = {tp: max_offsets * size // total for tp, size in backlog.items()}
    left = max_offsets - sum(shares.values())
    # Hand out what rounding down left over: largest remainders first, then the bigger backlog.
    order = sorted(backlog, key=lambda tp: (-(max_offsets * backlog[tp] % total), -backlog[tp], tp))
    for tp in order[:left]:
        shares[tp] += 1
    for tp, share in shares.items():
        capped[tp] = start.get(tp, 0) + share
    return capped
