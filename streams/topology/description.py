"""``Topology.describe()``: Kafka Streams' ``TopologyDescription``, text layout included.

Visualisers and people diff ``describe()`` output between Kafka Streams and us, so ``str()`` is
byte-for-byte what Kafka prints for the same graph. That means reproducing three accidents of
Kafka's Java implementation:

* sub-topology ids follow the order in which nodes were added, with global stores taking ids
  of their own (``Sub-topology: N for global store (will not generate tasks)``);
* nodes of a sub-topology are listed by the size of the sub-graph they root (largest first),
  then by name; the ``-->``/``<--`` lists use the same comparator, but evaluated while the
  sizes are still being computed, in ``java.util.HashMap`` iteration order (emulated below);
* topic and store lists are printed in ``java.util.HashSet`` order.

The description is also a small object model (sub-topologies, nodes with predecessors and
successors, topics, stores, global stores) and renders as a Mermaid flowchart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .topology import ProcessorDef, SinkDef, SourceDef, SubTopology, Topology

# -- Java collection emulation -------------------------------------------------------------------


def _java_string_hash(text: str) -> int:
    """``String.hashCode()``: UTF-16 code units, 32-bit signed overflow."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def _bucket(text: str, capacity: int) -> int:
    h = _java_string_hash(text)
    return (h ^ (h >> 16)) & (capacity - 1)  # HashMap.hash() spreads the high bits


def _default_capacity(size: int) -> int:
    """Table size of a default-constructed HashMap after ``size`` insertions."""
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def _copy_capacity(size: int) -> int:
    """Table size of ``new HashSet<>(collection)`` (JDK 8-17 sizing)."""
    wanted = max(int(size / 0.75) + 1, 16)
    capacity = 1
    while capacity < wanted:
        capacity *= 2
    return capacity


def _hash_order(items: Iterable[str], capacity: int | None = None) -> list[str]:
    """Iteration order of a Java HashSet<String> filled with ``items`` in this order.

    Buckets in index order; within a bucket, insertion order (resizes keep it). Treeified
    buckets (8+ colliding keys) are not modelled.
    """
    unique = list(dict.fromkeys(items))
    cap = capacity if capacity is not None else _default_capacity(len(unique))
    return [s for _, _, s in sorted((_bucket(s, cap), i, s) for i, s in enumerate(unique))]


def _hash_set_copy(items: Iterable[str]) -> list[str]:
    """``new HashSet<>(aHashSetFilledWith(items))``: what Kafka's describe() prints."""
    unique = list(dict.fromkeys(items))
    return _hash_order(unique, _copy_capacity(len(unique)))


def _utf16_key(text: str) -> bytes:
    """Java's ``String.compareTo`` order (UTF-16 code units)."""
    return text.encode("utf-16-be")


class _Entry:
    __slots__ = ("item", "left", "right", "parent", "red")

    def __init__(self, item: Any, parent: _Entry | None) -> None:
        self.item = item
        self.left: _Entry | None = None
        self.right: _Entry | None = None
        self.parent = parent
        self.red = True


class _TreeSet:
    """``java.util.TreeSet`` with a comparator: a red-black tree.

    Kafka's node comparator reads sizes that change after insertion, so the printed order
    depends on the tree's shape at each insertion; only a real red-black tree reproduces it.
    """

    def __init__(self, compare: Callable[[Any, Any], int]) -> None:
        self.compare = compare
        self.root: _Entry | None = None
        self.size = 0

    def add(self, item: Any) -> None:
        node = self.root
        if node is None:
            self.root = _Entry(item, None)
            self.root.red = False
            self.size = 1
            return
        while True:
            c = self.compare(item, node.item)
            if c == 0:
                return
            child = node.left if c < 0 else node.right
            if child is None:
                entry = _Entry(item, node)
                if c < 0:
                    node.left = entry
                else:
                    node.right = entry
                break
            node = child
        self.size += 1
        self._rebalance(entry)

    def _rotate_left(self, p: _Entry) -> None:
        r = p.right
        assert r is not None
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        r.parent = p.parent
        if p.parent is None:
            self.root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        r.left = p
        p.parent = r

    def _rotate_right(self, p: _Entry) -> None:
        q = p.left
        assert q is not None
        p.left = q.right
        if q.right is not None:
            q.right.parent = p
        q.parent = p.parent
        if p.parent is None:
            self.root = q
        elif p.parent.right is p:
            p.parent.right = q
        else:
            p.parent.left = q
        q.right = p
        p.parent = q

    def _rebalance(self, x: _Entry) -> None:
        while x is not self.root and x.parent is not None and x.parent.red:
            parent = x.parent
            grand = parent.parent
            assert grand is not None
            if parent is grand.left:
                uncle = grand.right
                if uncle is not None and uncle.red:
                    parent.red, uncle.red, grand.red = False, False, True
                    x = grand
                    continue
                if x is parent.right:
                    x = parent
                    self._rotate_left(x)
                assert x.parent is not None and x.parent.parent is not None
                x.parent.red = False
                x.parent.parent.red = True
                self._rotate_right(x.parent.parent)
            else:
                uncle = grand.left
                if uncle is not None and uncle.red:
                    parent.red, uncle.red, grand.red = False, False, True
                    x = grand
                    continue
                if x is parent.left:
                    x = parent
                    self._rotate_right(x)
                assert x.parent is not None and x.parent.parent is not None
                x.parent.red = False
                x.parent.parent.red = True
                self._rotate_left(x.parent.parent)
        assert self.root is not None
        self.root.red = False

    def __iter__(self) -> Iterator[Any]:
        stack: list[_Entry] = []
        node = self.root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield node.item
            node = node.right

    def __len__(self) -> int:
        return self.size


# -- the description model -------------------------------------------------------------------


def _node_names(nodes: list[Node]) -> str:
    return ", ".join(n.name for n in nodes) if nodes else "none"


@dataclass(eq=False)
class Node:
    """A node of a sub-topology; ``predecessors``/``successors`` are in Kafka's print order."""

    name: str
    predecessors: list[Node] = field(default_factory=list, repr=False)
    successors: list[Node] = field(default_factory=list, repr=False)


@dataclass(eq=False)
class Source(Node):
    topics: list[str] = field(default_factory=list)

    def topic_set(self) -> set[str]:
        return set(self.topics)

    def __str__(self) -> str:
        return (f"Source: {self.name} (topics: [{', '.join(self.topics)}])\n"
                f"      --> {_node_names(self.successors)}")


@dataclass(eq=False)
class Processor(Node):
    stores: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return (f"Processor: {self.name} (stores: [{', '.join(self.stores)}])\n"
                f"      --> {_node_names(self.successors)}\n"
                f"      <-- {_node_names(self.predecessors)}")


@dataclass(eq=False)
class Sink(Node):
    topic: str | None = None  # None when a TopicNameExtractor picks the topic per record
    topic_name_extractor: Any = None

    def __str__(self) -> str:
        target = (f"topic: {self.topic}" if self.topic is not None
                  else f"extractor class: {_extractor_name(self.topic_name_extractor)}")
        return f"Sink: {self.name} ({target})\n      <-- {_node_names(self.predecessors)}"


@dataclass(eq=False)
class Subtopology:
    id: int
    nodes: list[Node]

    def __str__(self) -> str:
        body = "".join(f"    {node}\n" for node in self.nodes)
        return f"Sub-topology: {self.id}\n{body}\n"


@dataclass(eq=False)
class GlobalStore:
    id: int
    source: Source
    processor: Processor

    @property
    def store(self) -> str:
        return self.processor.stores[0]

    def __str__(self) -> str:
        return (f"Sub-topology: {self.id} for global store (will not generate tasks)\n"
                f"    {self.source}\n    {self.processor}\n")


@dataclass(eq=False)
class TopologyDescription:
    subtopologies: list[Subtopology]
    global_stores: list[GlobalStore]

    def __str__(self) -> str:
        parts: list[Subtopology | GlobalStore] = [*self.subtopologies, *self.global_stores]
        parts.sort(key=lambda part: part.id)
        return "Topologies:\n " + "".join(f"  {part}" for part in parts)

    def __repr__(self) -> str:
        return (f"TopologyDescription({len(self.subtopologies)} sub-topologies, "
                f"{len(self.global_stores)} global stores)")

    def node(self, name: str) -> Node:
        """The node called ``name`` (sub-topologies and global stores)."""
        for sub in self.subtopologies:
            for node in sub.nodes:
                if node.name == name:
                    return node
        for store in self.global_stores:
            for node in (store.source, store.processor):
                if node.name == name:
                    return node
        raise KeyError(name)

    def to_mermaid(self) -> str:
        """A Mermaid flowchart: sub-topologies as subgraphs, topics and stores as shapes."""
        return _render_mermaid(self)


def _extractor_name(extractor: Any) -> str:
    """Deterministic stand-in for Java's ``extractor.toString()`` (no memory addresses)."""
    if hasattr(extractor, "__qualname__"):  # a function, method or class
        return f"{extractor.__module__}.{extractor.__qualname__}"
    cls = type(extractor)
    if cls.__str__ is not object.__str__ or cls.__repr__ is not object.__repr__:
        return str(extractor)
    return f"{cls.__module__}.{cls.__qualname__}"


# -- building it from a Topology ---------------------------------------------------------------


def _compare(a: Node, b: Node, sizes: dict[str, int]) -> int:
    """Kafka's NodeComparator: bigger sub-graph first, then name."""
    if a is b:
        return 0
    if sizes[a.name] != sizes[b.name]:
        return sizes[b.name] - sizes[a.name]
    ka, kb = _utf16_key(a.name), _utf16_key(b.name)
    return (ka > kb) - (ka < kb)


def _describe_group(topology: Topology, group_id: int, names: list[str]) -> Subtopology:
    nodes: dict[str, Node] = {}
    parents: dict[str, list[str]] = {}
    for name in names:
        definition = topology.nodes[name]
        if isinstance(definition, SourceDef):
            nodes[name] = Source(name, topics=_hash_set_copy(definition.topics))
            parents[name] = []
        elif isinstance(definition, ProcessorDef):
            nodes[name] = Processor(name, stores=_hash_set_copy(definition.stores))
            parents[name] = definition.parents
        elif isinstance(definition, SinkDef):
            topic = definition.topic if isinstance(definition.topic, str) else None
            extractor = None if topic is not None else definition.topic
            nodes[name] = Sink(name, topic=topic, topic_name_extractor=extractor)
            parents[name] = definition.parents

    sizes = {name: 1 for name in nodes}

    def compare(a: Node, b: Node) -> int:
        return _compare(a, b, sizes)

    preds = {name: _TreeSet(compare) for name in nodes}
    succs = {name: _TreeSet(compare) for name in nodes}

    def grow(name: str, delta: int) -> None:
        sizes[name] += delta
        for pred in preds[name]:
            grow(pred.name, delta)

    # Kafka walks a HashSet of the group's names copied into a HashMap: both default-sized.
    for name in _hash_order(_hash_order(names)):
        node = nodes[name]
        for parent in parents[name]:
            preds[name].add(nodes[parent])
            succs[parent].add(node)
            grow(parent, sizes[name])
    for name, node in nodes.items():
        node.predecessors = list(preds[name])
        node.successors = list(succs[name])
    ordered = sorted(nodes.values(), key=lambda n: (-sizes[n.name], _utf16_key(n.name)))
    return Subtopology(group_id, ordered)


def describe(topology: Topology) -> TopologyDescription:
    """Describe ``topology`` the way Kafka Streams' ``Topology.describe()`` does."""
    index = {name: i for i, name in enumerate(topology.nodes)}
    # Kafka numbers node groups in the order their first node was added; a global store's
    # source and processor form a group of their own, added where add_global_store was called.
    entries: list[tuple[tuple[int, int, int], Any]] = []
    for sub in topology.sub_topologies():
        entries.append(((index[sub.nodes[0]], 1, 0), sub))
    for seq, global_store in enumerate(topology.global_stores.values()):
        position = getattr(global_store, "position", len(topology.nodes))
        entries.append(((position, 0, seq), global_store))
    entries.sort(key=lambda entry: entry[0])

    subtopologies: list[Subtopology] = []
    global_stores: list[GlobalStore] = []
    for group_id, (_, item) in enumerate(entries):
        if isinstance(item, SubTopology):
            subtopologies.append(_describe_group(topology, group_id, item.nodes))
            continue
        source = Source(item.source.name, topics=list(item.source.topics[:1]))
        processor = Processor(item.processor.name, stores=[item.store.name])
        source.successors.append(processor)
        processor.predecessors.append(source)
        global_stores.append(GlobalStore(group_id, source, processor))
    return TopologyDescription(subtopologies, global_stores)


# -- Mermaid -----------------------------------------------------------------------------------


def _label(text: str) -> str:
    """A quoted Mermaid label; quotes and angle brackets become entity codes."""
    escaped = text.replace("#", "#35;").replace('"', "#quot;")
    return '"' + escaped.replace("<", "#lt;").replace(">", "#gt;") + '"'


def _render_mermaid(description: TopologyDescription) -> str:
    """Processors are boxes, sources stadiums, sinks subroutines; topics are parallelograms
    outside the sub-topologies (so a repartition topic links two of them) and stores are
    cylinders inside the sub-topology that owns them, linked to their processors by dotted
    lines."""
    lines = ["flowchart TD"]
    ids: dict[str, str] = {}
    topic_ids: dict[str, str] = {}
    store_ids: dict[str, str] = {}
    edges: list[str] = []

    def node_id(name: str) -> str:
        return ids.setdefault(name, f"n{len(ids)}")

    def topic_id(topic: str) -> str:
        return topic_ids.setdefault(topic, f"t{len(topic_ids)}")

    def emit_node(node: Node, local_stores: list[str]) -> None:
        nid, label = node_id(node.name), _label(node.name)
        if isinstance(node, Source):
            lines.append(f"        {nid}([{label}])")
            edges.extend(f"    {topic_id(t)} --> {nid}" for t in node.topics)
        elif isinstance(node, Sink):
            lines.append(f"        {nid}[[{label}]]")
            if node.topic is not None:
                edges.append(f"    {nid} --> {topic_id(node.topic)}")
            else:
                extractor = f"extractor: {_extractor_name(node.topic_name_extractor)}"
                edges.append(f"    {nid} -.-> {topic_id(extractor)}")
        else:
            lines.append(f"        {nid}[{label}]")
        if isinstance(node, Processor):
            for store in node.stores:
                if store not in store_ids:
                    store_ids[store] = f"s{len(store_ids)}"
                    local_stores.append(store)
                edges.append(f"    {nid} -.- {store_ids[store]}")
        edges.extend(f"    {nid} --> {node_id(child.name)}" for child in node.successors)

    parts: list[tuple[int, str, list[Node]]] = [
        (sub.id, f"Sub-topology: {sub.id}", sub.nodes) for sub in description.subtopologies]
    parts.extend((g.id, f"Sub-topology: {g.id} for global store", [g.source, g.processor])
                 for g in description.global_stores)
    for part_id, title, nodes in sorted(parts, key=lambda part: part[0]):
        lines.append(f"    subgraph sub_{part_id}[{_label(title)}]")
        local_stores: list[str] = []
        for node in nodes:
            emit_node(node, local_stores)
        lines.extend(f"        {store_ids[store]}[({_label(store)})]" for store in local_stores)
        lines.append("    end")
    lines.extend(f"    {tid}[/{_label(topic)}/]" for topic, tid in topic_ids.items())
    lines.extend(edges)
    return "\n".join(lines) + "\n"
