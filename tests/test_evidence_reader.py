"""The one reader every evidence record is read with (wakelab.evidence.bundle.read_record): lenient, driven by the fields."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Optional, Tuple

from wakelab.evidence.bundle import Record, json_field, json_meta, read_as
from wakelab.evidence.figures import ComponentBand, TraceComponents
from wakelab.evidence.arms import SamplesFile


@dataclasses.dataclass(frozen=True)
class Leaf(Record):
    n: int = 0
    label: str = ""


@dataclasses.dataclass(frozen=True)
class Section(Record):
    EMPTY_IS_ABSENT = True
    value: Any = None


@dataclasses.dataclass(frozen=True)
class Sample(Record):
    raw: Any = None
    flag: bool = False
    count: int = 0
    rate: float = 0.0
    name: str = ""
    limit: Optional[int] = None
    ratio: Optional[float] = None
    text: Optional[str] = None
    words: Tuple[str, ...] = ()
    leaves: Tuple[Leaf, ...] = ()
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    by_name: Mapping[str, Leaf] = dataclasses.field(default_factory=dict)
    leaf: Leaf = dataclasses.field(default_factory=Leaf)
    maybe: Optional[Leaf] = None
    section: Optional[Section] = None
    deep: Any = json_field("outer.inner", default=None)
    whole: bool = json_field("", lambda doc: isinstance(doc, Mapping), default=False)
    shouted: str = dataclasses.field(default="", metadata=json_meta(read=lambda text: str(text).upper(), absent="none"))


def test_missing_keys_and_a_value_that_is_no_mapping_read_as_the_defaults() -> None:
    empty = Sample.from_dict({})
    assert empty == Sample(whole=True, shouted="NONE")
    assert Sample.from_dict(["not", "a", "record"]) == Sample(whole=False, shouted="NONE")
    assert Sample.from_dict(None).leaf == Leaf()


def test_each_type_reads_leniently() -> None:
    doc = {"raw": [1, "x"], "flag": "yes", "count": "7", "rate": None, "name": 0, "limit": 3.9, "ratio": 2, "text": 5,
           "words": ["a", 1, None], "extra": {"k": [1]}, "deep": "nope", "outer": {"inner": {"x": 1}}, "shouted": "hi"}
    read = Sample.from_dict(doc)
    assert (read.raw, read.flag, read.count, read.rate, read.name) == ([1, "x"], True, 7, 0.0, "")
    assert (read.limit, read.ratio, read.text) == (3, 2.0, 5)  # Optional[str] is kept as stored
    assert isinstance(read.ratio, float) and read.words == ("a", "1", "None")
    assert read.extra is doc["extra"] and read.deep == {"x": 1} and read.shouted == "HI"


def test_wrong_types_give_the_defaults() -> None:
    doc = {"words": "abc", "leaves": {"n": 1}, "extra": [1, 2], "by_name": "x", "leaf": 7, "maybe": [1], "outer": 3}
    read = Sample.from_dict(doc)
    assert (read.words, read.leaves, read.extra, read.by_name, read.leaf, read.maybe, read.deep) == ((), (), {}, {}, Leaf(), None, None)


def test_nested_records_are_read_and_an_empty_section_is_none() -> None:
    doc = {"leaves": [{"n": 2, "label": "a"}, "junk", {"n": None}], "by_name": {"x": {"n": 1}, "y": 5},
           "leaf": {"n": "4"}, "maybe": {}, "section": {}}
    read = Sample.from_dict(doc)
    assert read.leaves == (Leaf(2, "a"), Leaf(0, ""))  # an entry that is not a record is left out
    assert read.by_name == {"x": Leaf(1, ""), "y": Leaf()}
    assert read.leaf == Leaf(4, "") and read.maybe == Leaf() and read.section is None
    assert Sample.from_dict({"section": {"value": 1}}).section == Section(1)
    assert read_as(Optional[Section], {}) is None and read_as(Optional[Leaf], {}) == Leaf() and read_as(Optional[Leaf], "x") is None


def test_a_bool_is_not_a_count_where_the_record_says_so() -> None:
    assert ComponentBand.from_dict({"wakes": True, "latency_ns": None}).wakes == 0
    assert ComponentBand.from_dict({"wakes": 3.0}).wakes == 0 and ComponentBand.from_dict({"wakes": 3}).wakes == 3
    assert SamplesFile.from_dict({"kind": "rate", "n_per_round": True}).n_per_round is None
    assert SamplesFile.from_dict({"kind": "rate", "n_per_round": 4}).n_per_round == 4
    assert Sample.from_dict({"count": True, "limit": False}).count == 1  # a plain int field converts, as before


def test_a_record_writes_back_what_it_reads() -> None:
    stored = {"wakes": 3, "fully_attributed": 2, "with_gil_cycles": 1, "from_idle_fraction": 0.5, "cross_cpu_fraction": None,
              "parked_at_t0_fraction": None, "inferred_switch_ins": 0, "percentiles": {"notify": {"p50_ns": 10.0}},
              "at_p50": {"wakes": 1, "latency_ns": 5.0, "parts_ns": {"notify": 5.0}}, "at_p99": None,
              "reblocks": {"causes": {"gil/main": {"wakes": 1, "total_ns": 9, "p50_ns": None}},
                           "holders": [{"on": "gil", "role": "main", "tids": [4], "wakes": 1, "asleep_ns": 9}]}}
    read = TraceComponents.from_dict(stored)
    assert read.to_dict() == stored  # the band's reblocks_ns, None here, is left out
    assert TraceComponents.from_dict(read.to_dict()) == read
