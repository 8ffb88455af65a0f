"""Hit lists split into records and entries (infra/hit_lists.py): lossless, each list and record named once."""

from __future__ import annotations

from godot_rag.infra.hit_lists import RECORD_FIELDS, HitListSplitter, expand_hits, json_sha256


def _hit(i: int, score: float) -> dict:
    return {
        "table": "docs_chunks",
        "record_id": f"r{i}",
        "title": f"Node.method_{i}",
        "content": 'text with "quotes" and \\ backslashes ' * (i + 1),
        "score": score,
        "component_scores": {"keys": score / 2, "vector": None},
        "metadata_json": '{"class": "Node"}',
    }


def test_a_split_list_puts_back_together_as_it_was():
    hits = [_hit(0, 0.9), _hit(1, 0.5), _hit(2, 0.25)]
    split = HitListSplitter().split(hits)
    assert expand_hits(split.entries, split.records) == hits
    assert all(set(r) == set(RECORD_FIELDS) for r in split.records.values())
    assert all(set(e) == {"r", "score", "component_scores"} for e in split.entries)
    assert split.sha256 == json_sha256(split.entries)


def test_lists_that_differ_only_in_scores_share_their_records_and_have_other_names():
    splitter = HitListSplitter()
    a = splitter.split([_hit(0, 0.9), _hit(1, 0.5)])
    b = splitter.split([_hit(0, 0.8), _hit(1, 0.5)])
    assert a.sha256 != b.sha256 and a.records == b.records
    assert splitter.split([_hit(0, 0.9), _hit(1, 0.5)]).sha256 == a.sha256  # equal lists, equal names


def test_the_same_list_object_is_split_once_and_an_equal_new_one_gets_the_same_name():
    splitter = HitListSplitter()
    hits = [_hit(0, 0.9)]
    first = splitter.split(hits)
    assert splitter.split(hits) is first
    again = splitter.split([dict(h) for h in hits])
    assert again is not first and again.sha256 == first.sha256


def test_a_hit_of_a_callers_own_shape_is_kept_whole():
    hits = [{"record_id": "x", "content": {"nested": [1, 2]}, "score": 1.0}, {"record_id": "y"}]
    split = HitListSplitter().split(hits)
    assert expand_hits(split.entries, split.records) == hits


def test_a_record_not_at_hand_keeps_its_name():
    split = HitListSplitter().split([_hit(0, 0.9)])
    (hit,) = expand_hits(split.entries, {})
    assert hit == {"record_sha256": split.entries[0]["r"], "score": 0.9, "component_scores": {"keys": 0.45, "vector": None}}
