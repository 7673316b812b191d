"""Produce-and-read round trips through each real client library, with Kafka's security
settings, used by the broker's security tests."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context


def confluent_settings(protocol: str, ca: Path | None, mechanism: str | None = None,
                       user: str | None = None, password: str | None = None,
                       cert: Path | None = None) -> dict[str, Any]:
    settings: dict[str, Any] = {"security.protocol": protocol}
    if ca is not None:
        settings["ssl.ca.location"] = str(ca)
    if cert is not None:  # key and chain in one PEM file
        settings["ssl.certificate.location"] = str(cert)
        settings["ssl.key.location"] = str(cert)
    if mechanism:
        settings.update({"sasl.mechanism": mechanism, "sasl.username": user,
                         "sasl.password": password})
    return settings


def confluent_roundtrip(bootstrap: str, settings: dict[str, Any], topic: str) -> bytes:
    from confluent_kafka import Consumer, KafkaException, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000,
                         **settings})
    errors: list[Any] = []
    value = f"confluent-{uuid.uuid4().hex}".encode()
    try:
        producer.produce(topic, value, on_delivery=lambda err, msg: err and errors.append(err))
        if producer.flush(15) or errors:
            raise KafkaException(errors[0] if errors else "produce did not finish")
    finally:
        del producer  # librdkafka's threads stop now, not when a traceback lets go of the frame
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", **settings})
    try:
        consumer.subscribe([topic])
        for _ in range(40):
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            if message.value() == value:
                return value
    finally:
        consumer.close()
    raise AssertionError("the produced record was not read back")


def aiokafka_settings(protocol: str, ca: Path | None, mechanism: str | None = None,
                      user: str | None = None, password: str | None = None,
                      cert: Path | None = None) -> dict[str, Any]:
    settings: dict[str, Any] = {"security_protocol": protocol}
    if ca is not None:
        context = create_ssl_context(cafile=str(ca))
        if cert is not None:
            context.load_cert_chain(str(cert))
        settings["ssl_context"] = context
    if mechanism:
        settings.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                         "sasl_plain_password": password})
    return settings


def aiokafka_roundtrip(bootstrap: str, settings: dict[str, Any], topic: str) -> bytes:
    async def run() -> bytes:
        value = f"aiokafka-{uuid.uuid4().hex}".encode()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000,
                                    **settings)
        await producer.start()
        try:
            await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap,
                                    auto_offset_reset="earliest",
                                    group_id=f"g-{uuid.uuid4().hex}", **settings)
        await consumer.start()
        try:
            async with asyncio.timeout(20):
                async for message in consumer:
                    if message.value == value:
                        return value
        finally:
            await consumer.stop()
        raise AssertionError("unreachable")

    return asyncio.run(run())


def kafka_python_settings(protocol: str, ca: Path | None, mechanism: str | None = None,
                          user: str | None = None, password: str | None = None,
                          cert: Path | None = None) -> dict[str, Any]:
    settings: dict[str, Any] = {"security_protocol": protocol}
    if ca is not None:
        settings["ssl_cafile"] = str(ca)
    if cert is not None:
        settings["ssl_certfile"] = str(cert)
        settings["ssl_keyfile"] = str(cert)
    if mechanism:
        settings.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                         "sasl_plain_password": password})
    return settings


def kafka_python_roundtrip(bootstrap: str, settings: dict[str, Any], topic: str) -> bytes:
    from kafka import KafkaConsumer, KafkaProducer

    value = f"kafka-python-{uuid.uuid4().hex}".encode()
    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10000,
                             **settings)
    try:
        producer.send(topic, value).get(15)
    finally:
        producer.close(5)
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             group_id=f"g-{uuid.uuid4().hex}", consumer_timeout_ms=20000,
                             **settings)
    try:
        for message in consumer:
            if message.value == value:
                return value
    finally:
        consumer.close()
    raise AssertionError("the produced record was not read back")


CLIENTS = {
    "confluent": (confluent_settings, confluent_roundtrip),
    "aiokafka": (aiokafka_settings, aiokafka_roundtrip),
    "kafka-python": (kafka_python_settings, kafka_python_roundtrip),
}


def ssl_client_context(ca: Path, cert: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        context.load_cert_chain(str(cert))
    return context
