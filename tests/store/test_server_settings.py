"""PostgreSQL's settings beside the indexes' size, and the advice ``stats`` gives on them."""

from __future__ import annotations

from simhash_filter.store import FingerprintStore, StoreOptions
from simhash_filter.store.key_columns import index_name
from simhash_filter.store.server_settings import (
    WAL_PER_INDEX,
    ServerSettings,
    advice,
    server_settings,
)

MIB = 1024**2


def settings(*, buffers: int, wal: int, index: int) -> ServerSettings:
    return ServerSettings(buffers, wal, 300, "off", index)


def test_no_advice_while_the_indexes_fit() -> None:
    assert advice(settings(buffers=128 * MIB, wal=1024 * MIB, index=100 * MIB)) == []
    # at the bounds: buffers exactly the indexes, WAL exactly WAL_PER_INDEX times them
    index = 500 * MIB
    assert advice(settings(buffers=index, wal=WAL_PER_INDEX * index, index=index)) == []


def test_advice_names_each_setting_below_the_index() -> None:
    index = 10_000 * MIB  # a 10M-page database's indexes
    found = advice(settings(buffers=128 * MIB, wal=1024 * MIB, index=index))
    assert [(a.setting, a.value, a.wanted) for a in found] == [
        ("shared_buffers", 128 * MIB, index),
        ("max_wal_size", 1024 * MIB, WAL_PER_INDEX * index),
    ]
    only_wal = advice(settings(buffers=12_000 * MIB, wal=1024 * MIB, index=index))
    assert [a.setting for a in only_wal] == ["max_wal_size"]
    only_buffers = advice(settings(buffers=128 * MIB, wal=20_480 * MIB, index=index))
    assert [a.setting for a in only_buffers] == ["shared_buffers"]


def test_sqlite_has_no_server_settings(sqlite_url: str) -> None:
    with FingerprintStore.open(sqlite_url, StoreOptions(spec="test")) as store:
        assert server_settings(store) is None


def test_server_settings_read_the_server_and_the_store_indexes(pg_url: str) -> None:
    import psycopg

    with FingerprintStore.open(pg_url, StoreOptions(spec="test")) as store:
        store.check_and_add("http://a.example/", 0x1234, text_length=100)
        found = server_settings(store)
        band_indexes = [index_name(t) for t in range(store.scheme.n_tables)]
    plain = pg_url.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(plain) as conn:
        unit = dict(conn.execute("SELECT name, setting FROM pg_settings").fetchall())
        block = int(unit["block_size"])
        indexes = conn.execute(
            "SELECT sum(pg_relation_size(c.oid)) FROM pg_class c WHERE c.relname = ANY(%s)",
            (["pages_pkey", "pages_url_key", "ix_pages_domain", *band_indexes],),
        ).fetchone()
    assert found == ServerSettings(
        shared_buffers=int(unit["shared_buffers"]) * block,
        max_wal_size=int(unit["max_wal_size"]) * MIB,
        checkpoint_timeout_s=int(unit["checkpoint_timeout"]),
        wal_compression=unit["wal_compression"],
        index_bytes=int(indexes[0]),
    )
    assert found.index_bytes > 0


def test_stats_lines_say_what_to_raise_and_to_what() -> None:
    from simhash_filter.cli.queries import _server_fields

    index = 10_000 * MIB
    short = settings(buffers=128 * MIB, wal=20_480 * MIB, index=index)
    fields = dict(_server_fields(short, advice(short)))
    assert fields["shared_buffers"] == f"128.0 MiB ({128 * MIB} bytes)"
    assert fields["advice"].startswith(
        f"raise shared_buffers to at least 9.8 GiB ({index} bytes): "
    )
    assert fields["advice"].endswith("(docs/distributed.md)")
    sized = settings(buffers=index, wal=2 * index, index=index)
    assert "advice" not in dict(_server_fields(sized, advice(sized)))
