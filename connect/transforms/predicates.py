"""Built-in predicates: TopicNameMatches, HasHeaderKey, RecordIsTombstone."""

from __future__ import annotations

import re

from connect.records import ConnectRecord
from connect.transforms._base import SMT
from connect.transforms._config import REQUIRED, ConfigKey, non_empty
from streams.config import ConfigError

PREDICATE_PACKAGE = "org.apache.kafka.connect.transforms.predicates."


class TopicNameMatches(SMT):
    """True when the whole topic name matches ``pattern`` (Java ``Matcher.matches``)."""

    KAFKA_NAME = PREDICATE_PACKAGE + "TopicNameMatches"
    CONFIG = {
        "pattern": ConfigKey("string", REQUIRED, "medium",
                             "A Java regular expression for matching against the name of a "
                             "record's topic.", non_empty),
    }

    def configured(self) -> None:
        try:
            self.pattern = re.compile(self.config["pattern"])
        except re.error as exc:
            raise ConfigError(f"TopicNameMatches: invalid pattern {self.config['pattern']!r}: "
                              f"{exc}") from None

    def test(self, record: ConnectRecord) -> bool:
        return record.topic is not None and self.pattern.fullmatch(record.topic) is not None


class HasHeaderKey(SMT):
    """True when the record has at least one header called ``name``."""

    KAFKA_NAME = PREDICATE_PACKAGE + "HasHeaderKey"
    CONFIG = {
        "name": ConfigKey("string", REQUIRED, "medium", "The header name.", non_empty),
    }

    def test(self, record: ConnectRecord) -> bool:
        return self.config["name"] in record.headers


class RecordIsTombstone(SMT):
    """True when the record value is null."""

    KAFKA_NAME = PREDICATE_PACKAGE + "RecordIsTombstone"
    CONFIG: dict[str, ConfigKey] = {}

    def test(self, record: ConnectRecord) -> bool:
        return record.value is None
