"""The public API is exactly what ``ragsnap.__all__`` lists."""

import ragsnap


def test_all_names_exist_and_are_sorted() -> None:
    assert ragsnap.__all__ == sorted(ragsnap.__all__)
    for name in ragsnap.__all__:
        assert hasattr(ragsnap, name), name


def test_lazy_exports_match_all() -> None:
    assert set(ragsnap._EXPORTS) | {"__version__"} == set(ragsnap.__all__)
    for name in ragsnap.__all__:
        value = getattr(ragsnap, name)
        if name != "__version__":
            assert value.__module__ == f"ragsnap.{ragsnap._EXPORTS[name]}"
