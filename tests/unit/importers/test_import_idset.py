"""ragsnap.importers.idset: the on-disk id set behind duplicate and dangling-id checks."""

from __future__ import annotations

from ragsnap.importers.idset import IdSet


def test_add_contains_order_and_first_origin() -> None:
    with IdSet() as ids:
        assert ids.add("b", "f line 1") is None
        assert ids.add("a", "f line 2") is None
        assert ids.add("b", "f line 9") == "f line 1"  # the first place wins
        assert ids.add("c") is None
        assert ids.add("c") == "?"
        assert "a" in ids and "z" not in ids and 3 not in ids
        assert list(ids) == ["b", "a", "c"] and len(ids) == 3
        assert ids == {"a", "b", "c"}  # a real Set: comparisons and operators work
        assert ids & {"a", "z"} == {"a"}


def test_lookups_while_iterating() -> None:
    with IdSet() as ids:
        for n in range(50):
            ids.add(f"id{n}")
        assert [i for i in ids if f"id{int(i[2:]) + 1}" in ids] == [f"id{n}" for n in range(49)]


def test_close_deletes_the_file() -> None:
    ids = IdSet()
    ids.add("x")
    path = ids._path
    assert path.is_file()
    ids.close()
    assert not path.exists()
    ids.close()  # twice is fine


def test_where_an_id_was_read() -> None:
    with IdSet() as ids:
        ids.add("a", "f line 1")
        ids.add("b")
        assert (ids.where("a"), ids.where("b"), ids.where("z")) == ("f line 1", "?", None)
