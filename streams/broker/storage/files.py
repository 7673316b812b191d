"""A bounded cache of open segment files, so idle partitions hold no file descriptors.

Kafka keeps every segment of every partition open; with thousands of partitions that exhausts
the process's file limit (one flood of CreateTopics left 19,999 files open here). Segments
instead open their log and index files on use through this least-recently-used cache, which
closes the coldest files beyond ``capacity``.

Thread safety: the event loop and worker threads (fsync in an executor, the cleaner) share it.
Code that uses a descriptor across a call pins it (``pinned``, or ``acquire``/``release`` when the
use outlives a block: a fetch response sent with sendfile(2) after its handler returned). A pinned
descriptor is never closed by eviction, and ``close`` (segment deleted by retention, replaced by
the cleaner) defers closing it to its last release: the number cannot be reused for another file
while a response still reads from it, and an unlinked file stays readable until then. Only
callers that pass ``evict=True`` (the event loop) close other files; worker threads may push the
cache over its capacity until the loop trims it again.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

LOG, INDEX, TIME_INDEX = "log", "index", "timeindex"
_FLAGS = {
    LOG: os.O_RDWR | os.O_CREAT,
    INDEX: os.O_WRONLY | os.O_APPEND | os.O_CREAT,
    TIME_INDEX: os.O_WRONLY | os.O_APPEND | os.O_CREAT,
}


class HasFiles(Protocol):
    def file_path(self, kind: str) -> os.PathLike[str]: ...


Key = tuple[HasFiles, str]


class FileCache:
    def __init__(self, capacity: int = 512) -> None:
        self.capacity = capacity
        self._fds: OrderedDict[Key, int] = OrderedDict()
        self._pins: dict[int, int] = {}  # descriptor -> pin count
        self._closed_while_pinned: set[int] = set()  # closed at their last release
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._fds)

    def is_open(self, owner: HasFiles, kind: str) -> bool:
        return (owner, kind) in self._fds

    def get(self, owner: HasFiles, kind: str, evict: bool = True) -> int:
        """The open descriptor of ``owner``'s file ``kind``, opening it if needed (unpinned:
        use it at once, on the thread that evicts)."""
        with self._lock:
            return self._get(owner, kind, evict)

    def _get(self, owner: HasFiles, kind: str, evict: bool) -> int:
        key = (owner, kind)
        fd = self._fds.get(key)
        if fd is not None:
            self._fds.move_to_end(key)
            return fd
        if evict:
            self._trim(self.capacity - 1)
        fd = os.open(owner.file_path(kind), _FLAGS[kind], 0o644)
        self._fds[key] = fd
        return fd

    @contextmanager
    def pinned(self, owner: HasFiles, kind: str, evict: bool = True) -> Iterator[int]:
        """A descriptor nobody closes until the block ends."""
        fd = self.acquire(owner, kind, evict)
        try:
            yield fd
        finally:
            self.release(fd)

    def acquire(self, owner: HasFiles, kind: str, evict: bool = True) -> int:
        """A pinned descriptor of ``owner``'s file ``kind``; give it back with ``release``."""
        with self._lock:
            fd = self._get(owner, kind, evict)
            self._pins[fd] = self._pins.get(fd, 0) + 1
            return fd

    def release(self, fd: int) -> None:
        with self._lock:
            left = self._pins[fd] - 1
            if left:
                self._pins[fd] = left
                return
            del self._pins[fd]
            if fd in self._closed_while_pinned:
                self._closed_while_pinned.discard(fd)
                os.close(fd)

    def pinned_count(self) -> int:
        """Descriptors pinned now (tests: every response gives its pins back)."""
        with self._lock:
            return len(self._pins)

    def _trim(self, size: int) -> None:
        if len(self._fds) <= size:
            return
        for key in list(self._fds):
            if len(self._fds) <= size:
                break
            if self._fds[key] not in self._pins:
                os.close(self._fds.pop(key))

    def close(self, owner: HasFiles, kinds: tuple[str, ...] = (LOG, INDEX, TIME_INDEX)) -> None:
        """Close ``owner``'s files (segment closed, deleted or replaced); a pinned one at its
        last release."""
        with self._lock:
            for kind in kinds:
                fd = self._fds.pop((owner, kind), None)
                if fd is None:
                    continue
                if fd in self._pins:
                    self._closed_while_pinned.add(fd)
                else:
                    os.close(fd)


# One cache per process: the broker sets its capacity from `log.max.open.files`.
FILES = FileCache()
