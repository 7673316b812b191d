"""An instance of the count topology run by Kafka Streams 4.4 instead of ours, so a fault
scenario can be measured on the reference itself (``pause_feed --framework kafka-streams``).

The app is tests/reference/java/PauseCountApp.java, compiled with javac against the jars that
tests/reference/kafka.py prepares (the same build as the other reference apps). The child
process is the JVM itself: the harness's SIGSTOP and SIGCONT stop and resume Kafka Streams'
threads, not a wrapper.
"""

from __future__ import annotations

from pathlib import Path

from .app_runner import HEARTBEAT_MS, SESSION_TIMEOUT_MS
from .cluster import ROOT, AppInstance

SOURCE = ROOT / "tests" / "reference" / "java" / "PauseCountApp.java"

# Kafka Streams' own INFO lines (rebalances, task migration, commits refused, restores) to the
# instance's log; the clients' config dumps and version banners are left out.
LOG4J = """\
status = error
appender.out.type = Console
appender.out.name = out
appender.out.target = SYSTEM_OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p [%t] %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.configs.name = org.apache.kafka.common.config
logger.configs.level = warn
logger.consumerconfig.name = org.apache.kafka.clients.consumer.ConsumerConfig
logger.consumerconfig.level = warn
logger.producerconfig.name = org.apache.kafka.clients.producer.ProducerConfig
logger.producerconfig.level = warn
logger.adminconfig.name = org.apache.kafka.clients.admin.AdminClientConfig
logger.adminconfig.level = warn
logger.streamsconfig.name = org.apache.kafka.streams.StreamsConfig
logger.streamsconfig.level = warn
logger.appinfo.name = org.apache.kafka.common.utils.AppInfoParser
logger.appinfo.level = warn
"""


def prepare() -> list[str]:
    """The java command line up to the main class (jars prepared, the app compiled); raises
    ``reference.kafka.PrepareError`` when that cannot be done here."""
    from reference import kafka  # tests/reference: imported only when Kafka Streams is wanted
    from reference.dsl_runner import compile_java

    kafka.prepare()
    classes = compile_java(SOURCE, kafka.CACHE / "pause-count-app")
    return ["java", *kafka.JAVA_OPTS, "-cp", f"{classes}:{kafka.LIBS}/*"]


class KafkaStreamsInstance(AppInstance):
    """PauseCountApp with the settings our instances get (app_runner.config): application.id
    ``faults-count``, session/heartbeat timeouts, cache, max.poll.records, commit interval."""

    def __init__(self, name: str, java: list[str], bootstrap: str, guarantee: str,
                 cache_bytes: int, max_poll_records: int, commit_ms: int | None,
                 state_dir: Path, log: Path) -> None:
        super().__init__(name, [], state_dir, log)
        log4j = log.with_name("kstreams-log4j2.properties")
        log4j.write_text(LOG4J)
        self.java_command = [*java, f"-Dlog4j2.configurationFile={log4j}", "PauseCountApp",
                        bootstrap, "faults-count", guarantee, str(state_dir),
                        str(SESSION_TIMEOUT_MS), str(HEARTBEAT_MS), str(cache_bytes),
                        str(max_poll_records), str(-1 if commit_ms is None else commit_ms)]

    def command(self) -> tuple[list[str], dict[str, str] | None]:
        return self.java_command, None
