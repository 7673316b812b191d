"""DataGen: a source of realistic example records for demos and benchmarks.

``quickstart`` picks a data set (``pageviews``, ``users``, ``orders``, ``clicks``); records have a
string key, a JSON-able dict value and a timestamp. ``max.rate`` caps records/s (0 = as fast as
possible) and ``iterations`` the total count (-1 = forever), both split over the tasks. The count
is the source offset, so a restarted task continues rather than starting over.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from connect.api import ExactlyOnceSupport, SourceConnector, SourceTask
from connect.config_def import ConfigDef, ConfigType, Importance, Range, ValidString
from connect.data import Schema
from connect.records import SourceRecord

_REGIONS = ["Region_1", "Region_2", "Region_3", "Region_4", "Region_5", "Region_6",
            "Region_7", "Region_8", "Region_9"]
_GENDERS = ["MALE", "FEMALE", "OTHER"]
_PAGES = ["/", "/home", "/search", "/cart", "/checkout", "/product/1", "/product/2",
          "/product/3", "/account", "/help"]
_ITEMS = [("Item_1", 4.99), ("Item_2", 12.5), ("Item_3", 19.99), ("Item_4", 7.25),
          ("Item_5", 99.0), ("Item_6", 2.49), ("Item_7", 35.0), ("Item_8", 14.75)]
_STATES = ["CA", "NY", "TX", "WA", "IL", "FL", "MA", "OR", "CO"]
_AGENTS = ["Mozilla/5.0 (Windows NT 10.0)", "Mozilla/5.0 (Macintosh)", "Mozilla/5.0 (X11)",
           "Mozilla/5.0 (iPhone)", "Mozilla/5.0 (Android)"]


def _user(rng: random.Random) -> str:
    return f"User_{rng.randint(1, 9)}"


def pageview(rng: random.Random, n: int, now: int) -> tuple[str, dict[str, Any]]:
    user = _user(rng)
    return user, {"viewtime": now, "userid": user, "pageid": f"Page_{rng.randint(1, 99)}",
                  "url": rng.choice(_PAGES), "agent": rng.choice(_AGENTS)}


def user(rng: random.Random, n: int, now: int) -> tuple[str, dict[str, Any]]:
    uid = _user(rng)
    return uid, {"registertime": now - rng.randint(0, 10**10), "userid": uid,
                 "regionid": rng.choice(_REGIONS), "gender": rng.choice(_GENDERS)}


def order(rng: random.Random, n: int, now: int) -> tuple[str, dict[str, Any]]:
    item, price = rng.choice(_ITEMS)
    qty = rng.randint(1, 5)
    order_id = n + 1
    return str(order_id), {
        "ordertime": now, "orderid": order_id, "itemid": item, "orderunits": qty,
        "price": price, "total": round(price * qty, 2), "userid": _user(rng),
        "address": {"city": f"City_{rng.randint(1, 99)}", "state": rng.choice(_STATES),
                    "zipcode": rng.randint(10000, 99999)},
    }


def click(rng: random.Random, n: int, now: int) -> tuple[str, dict[str, Any]]:
    ip = f"{rng.randint(1, 254)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    return ip, {"ip": ip, "userid": rng.randint(1, 99), "time": now,
                "request": f"GET {rng.choice(_PAGES)} HTTP/1.1",
                "status": rng.choice([200, 200, 200, 302, 404, 500]),
                "bytes": rng.randint(100, 50000), "agent": rng.choice(_AGENTS)}


QUICKSTARTS: dict[str, Callable[[random.Random, int, int], tuple[str, dict[str, Any]]]] = {
    "pageviews": pageview, "users": user, "orders": order, "clicks": click,
}

CONFIG_DEF = (
    ConfigDef()
    .define("quickstart", ConfigType.STRING, "pageviews", ValidString(list(QUICKSTARTS)),
            Importance.HIGH, "The data set: " + ", ".join(QUICKSTARTS))
    .define("kafka.topic", ConfigType.STRING, "", None, Importance.HIGH,
            "Topic to write to (default: the quickstart's name).")
    .define("topic", ConfigType.STRING, "", None, Importance.LOW, "Alias of kafka.topic.")
    .define("max.rate", ConfigType.DOUBLE, 0.0, Range.at_least(0), Importance.MEDIUM,
            "Maximum records per second over all tasks; 0 = unlimited.")
    .define("iterations", ConfigType.LONG, -1, None, Importance.MEDIUM,
            "Total records over all tasks; -1 = forever.")
    .define("batch.size", ConfigType.INT, 1000, Range.at_least(1), Importance.LOW,
            "Records returned by one poll at most.")
    .define("random.seed", ConfigType.LONG, None, None, Importance.LOW,
            "Seed for reproducible data (per task: seed + task number).")
)


class DataGenConnector(SourceConnector):
    def start(self, props: dict[str, str]) -> None:
        self.props = dict(props)
        self.parsed = CONFIG_DEF.parse(props)

    def task_class(self) -> type:
        return DataGenTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        p = self.parsed
        topic = p["kafka.topic"] or p["topic"] or p["quickstart"]
        iterations, rate = p["iterations"], p["max.rate"]
        configs = []
        for i in range(max_tasks):
            share = -1 if iterations < 0 else iterations // max_tasks + (
                1 if i < iterations % max_tasks else 0)
            cfg = {"quickstart": p["quickstart"], "kafka.topic": topic, "task.number": str(i),
                   "task.count": str(max_tasks),
                   "iterations": str(share), "max.rate": str(rate / max_tasks),
                   "batch.size": str(p["batch.size"])}
            if p["random.seed"] is not None:
                cfg["random.seed"] = str(p["random.seed"] + i)
            configs.append(cfg)
        return configs

    def config_def(self) -> ConfigDef:
        return CONFIG_DEF

    def exactly_once_support(self, props: dict[str, str]) -> ExactlyOnceSupport:
        """The offset (records generated) determines the next record: a restarted task continues
        from the committed count, so exactly-once holds."""
        return ExactlyOnceSupport.SUPPORTED


class DataGenTask(SourceTask):
    def __init__(self) -> None:
        self.stopped = threading.Event()  # here, not in start(): stop() may come first

    def start(self, props: dict[str, str]) -> None:
        self.generate = QUICKSTARTS[props.get("quickstart", "pageviews")]
        self.topic = props["kafka.topic"]
        self.task_number = int(props.get("task.number", 0))
        self.task_count = int(props.get("task.count", 1))
        self.iterations = int(props.get("iterations", -1))
        self.rate = float(props.get("max.rate", 0) or 0)
        self.batch_size = int(props.get("batch.size", 1000))
        seed = props.get("random.seed")
        self.rng = random.Random(int(seed) if seed is not None else None)
        self.partition = {"task": self.task_number}
        last = self.context.offset_storage_reader().offset(self.partition)
        self.count = int((last or {}).get("count", 0))
        self.started_at = time.monotonic()
        self.started_count = self.count
        self.key_schema = Schema.STRING_SCHEMA

    def poll(self) -> list[SourceRecord] | None:
        if self.stopped.is_set():
            return None
        remaining = self.batch_size if self.iterations < 0 else min(
            self.batch_size, self.iterations - self.count)
        if remaining <= 0:
            self.stopped.wait(0.5)  # done: idle until stopped
            return None
        if self.rate > 0:
            allowed = int((time.monotonic() - self.started_at) * self.rate) - (
                self.count - self.started_count)
            if allowed <= 0:
                self.stopped.wait(min(0.5, 1.0 / self.rate))
                return None
            remaining = min(remaining, allowed)
        now = int(time.time() * 1000)
        records = []
        for _ in range(remaining):
            # Sequence numbers interleave over tasks, so ids (order ids...) are unique overall.
            key, value = self.generate(self.rng, self.count * self.task_count + self.task_number,
                                       now)
            self.count += 1
            records.append(SourceRecord(self.partition, {"count": self.count}, self.topic, None,
                                        self.key_schema, key, None, value, now))
        return records

    def stop(self) -> None:
        self.stopped.set()
