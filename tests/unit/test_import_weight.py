"""The light parts of the package stay light: importing the broker, Connect, a serde or the config
models must not load the DSL, the runtime, rocksdict or pyspark (``streams/__init__`` is lazy).

Each check runs in a fresh interpreter, since this test process has long imported everything.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("streams.dsl", "streams.runtime", "streams.state", "rocksdict", "pyspark")


def loaded_after(statement: str) -> list[str]:
    """The heavy modules present in ``sys.modules`` after running ``statement`` afresh."""
    code = (f"import json, sys\n{statement}\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", [
    "streams", "streams.broker", "connect", "streams.serde", "streams.config",
    "streams.kafka.internals", "streams.kafka.loop_thread", "connect.runtime.worker",
    "connect.runtime.distributed", "connect.runtime.background",
])
def test_light_modules_do_not_load_the_dsl_runtime_or_rocksdict(module: str) -> None:
    assert loaded_after(f"import {module}") == []


def test_public_names_still_import_from_the_package() -> None:
    statement = "from streams import StreamsBuilder, KafkaStreams, Serdes, StreamsConfig"
    assert set(loaded_after(statement)) >= {"streams.dsl", "streams.runtime"}


def test_every_public_name_resolves_and_is_listed() -> None:
    import streams
    from streams.dsl.builder import StreamsBuilder
    from streams.runtime import KafkaStreams, StreamsConfig

    for name in streams.__all__:
        assert getattr(streams, name) is not None, name
    assert set(streams.__all__) <= set(dir(streams))
    assert streams.StreamsBuilder is StreamsBuilder
    assert streams.KafkaStreams is KafkaStreams
    assert streams.StreamsConfig is StreamsConfig
    assert isinstance(streams.__version__, str)


def test_star_import_gives_every_public_name() -> None:
    namespace: dict[str, object] = {}
    exec("from streams import *", namespace)  # the statement users write
    import streams

    assert {name: namespace[name] for name in streams.__all__} == {
        name: getattr(streams, name) for name in streams.__all__}


def test_subpackages_are_attributes_and_unknown_names_raise() -> None:
    import streams

    assert streams.testing.__name__ == "streams.testing"  # loaded on attribute access
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = streams.no_such_name
    with pytest.raises(ImportError):
        exec("from streams import NoSuchName", {})
