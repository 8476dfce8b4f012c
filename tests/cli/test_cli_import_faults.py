"""``import`` on bad input (issue 10): every case with a real truncated or corrupt file made
here. Every readable record is imported, a bad one is skipped and named, a damaged source
keeps what was complete and says where it stopped, the next source is read, nothing is
made or changed in a file that is not a simhash-filter database, and Ctrl-C keeps the
batch in hand. The summary counts every source."""

# ruff: noqa: E501 -- expected outputs are as wide as the command prints them

from __future__ import annotations

import fcntl
import gzip
import hashlib
import json
import os
import random
import signal
import sqlite3
import struct
import subprocess
import sys
import termios
import time
import zlib
from collections.abc import Iterable
from pathlib import Path

import pytest
from support.cli_corpus import run, write_warc

from simhash_filter.store import FingerprintStore
from simhash_filter.store.reports import iter_pages

WORDS = [f"w{n:03d}{chr(97 + n % 26)}" for n in range(600)]


def text(n: int) -> str:
    """A text of its own: 60 words drawn for ``n`` (texts are far apart)."""
    rng = random.Random(n)
    return " ".join(rng.choice(WORDS) for _ in range(60))


def line(n: int) -> bytes:
    return (json.dumps({"url": f"https://example.com/{n}", "text": text(n)}) + "\n").encode()


def stored_urls(url: str) -> set[str]:
    with FingerprintStore.open_existing(url) as store:
        return {page.url for page in iter_pages(store)}


def db_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def import_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    code, out, err = run(capsys, "import", "--json", *argv)
    document = json.loads(out)
    document.pop("seconds")
    return code, document, err


def complete_lines(truncated_gzip: bytes) -> int:
    """How many whole lines the readable part of a cut gzip stream holds."""
    data = zlib.decompressobj(wbits=31).decompress(truncated_gzip)
    return data.count(b"\n")


# --- truncated and corrupt JSON Lines --------------------------------------------------


def test_truncated_jsonl_gz_keeps_every_complete_line(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = gzip.compress(b"".join(line(n) for n in range(300)))
    source = tmp_path / "items.jsonl.gz"
    source.write_bytes(whole[: len(whole) * 2 // 3])
    complete = complete_lines(source.read_bytes())
    assert 100 < complete < 299  # several batches of 50, and lines after the last full one
    code, document, err = import_json(capsys, str(source), "--batch-size", "50", "--db", sqlite_url)
    assert code == 1
    assert err == (
        f"simhash-filter: error: {source}:{complete + 1}: the gzip data ends early (a truncated "
        f"file); the {complete} complete lines before it were read\n"
    )
    assert document["read"] == document["kept"] == complete
    assert document["sources"] == [
        {
            "source": str(source),
            "read": complete,
            "kept": complete,
            "dropped": 0,
            "unchanged": 0,
            "changed": 0,
            "no_text": 0,
            "skipped": 0,
            "status": "stopped",
            "error": err.removeprefix("simhash-filter: error: ").strip(),
        }
    ]
    assert stored_urls(sqlite_url) == {f"https://example.com/{n}" for n in range(complete)}


def test_a_line_that_is_not_utf8_is_skipped_and_the_rest_read(
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = [line(n) for n in range(30)]
    body[20] = body[20].replace(b'"text": "', b'"text": "caf\xff ')
    source = tmp_path / "items.jsonl"
    source.write_bytes(b"".join(body))
    column = body[20].index(b"\xff") + 1
    code, document, err = import_json(capsys, str(source), "--batch-size", "7", "--db", sqlite_url)
    assert (code, err) == (0, f"skipped {source}:21: not UTF-8 (byte 0xff at column {column})\n")
    assert (document["read"], document["kept"], document["skipped"]) == (29, 29, 1)
    assert document["sources"][0]["status"] == "complete"
    assert stored_urls(sqlite_url) == {f"https://example.com/{n}" for n in range(30) if n != 20}
    # Through stdin the same.
    other = f"sqlite:///{tmp_path / 'stdin.db'}"
    monkeypatch.setattr(sys, "stdin", open(source, "rb"))  # noqa: SIM115 -- closed by pytest's gc
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": sys.stdin})())
    code, document, err = import_json(capsys, "-", "--db", other)
    assert (code, err) == (0, f"skipped <stdin>:21: not UTF-8 (byte 0xff at column {column})\n")
    assert (document["read"], document["kept"], document["skipped"]) == (29, 29, 1)


def test_a_corrupt_gzip_stream_keeps_what_came_before(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = bytearray(gzip.compress(b"".join(line(n) for n in range(300))))
    middle = len(whole) // 2
    whole[middle : middle + 64] = bytes(64)  # zeroes in the deflate stream
    source = tmp_path / "items.jsonl.gz"
    source.write_bytes(bytes(whole))
    code, document, err = import_json(capsys, str(source), "--db", sqlite_url)
    assert code == 1
    # The damaged stretch decompresses to garbage (lines skipped as not JSON, named) and
    # the stream's check fails: the file stops there, one error line names it.
    errors = [e for e in err.splitlines() if e.startswith("simhash-filter: error:")]
    assert len(errors) == 1
    assert errors[0].startswith(f"simhash-filter: error: {source}:")
    assert "corrupt gzip data" in errors[0]
    kept = document["kept"]
    assert 0 < kept < 300
    assert document["skipped"] > 0
    assert document["sources"][0]["status"] == "stopped"
    # Everything before the damage is kept.
    assert stored_urls(sqlite_url) == {f"https://example.com/{n}" for n in range(kept)}


# --- WARC archives cut short or not WARC at all ----------------------------------------


def record_offsets(path: Path) -> list[tuple[int, int, str | None]]:
    """(offset, length, target URL) of each record of a whole archive."""
    from warcio.archiveiterator import ArchiveIterator

    found = []
    with path.open("rb") as raw:
        records = ArchiveIterator(raw)
        for record in records:
            record.content_stream().read()
            found.append(
                (
                    records.get_record_offset(),
                    records.get_record_length(),
                    record.rec_headers.get_header("WARC-Target-URI"),
                )
            )
    return found


@pytest.mark.parametrize("name", ["crawl.warc", "crawl.warc.gz"])
@pytest.mark.parametrize("where", ["payload", "headers"])
def test_a_warc_cut_in_a_record_does_not_import_that_record(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, where: str
) -> None:
    whole = write_warc(tmp_path / f"whole-{name}", gzip_records=name.endswith(".gz"))
    offsets = record_offsets(whole)
    galaxy = next(i for i, (_, _, url) in enumerate(offsets) if url and "galaxy" in url)
    offset, length, _ = offsets[galaxy]
    before = offsets[galaxy - 1][0] + offsets[galaxy - 1][1]  # the end of the record before
    cut = offset + (length * 3 // 4 if where == "payload" else 40)
    source = tmp_path / name
    source.write_bytes(whole.read_bytes()[:cut])
    code, document, err = import_json(capsys, str(source), "--db", sqlite_url)
    assert code == 1
    assert err.startswith(f"simhash-filter: error: {source}@{before}: ")
    assert err.count("\n") == 1
    assert "not imported" in err
    # The river page before the cut is kept; the galaxy page, cut short, is not.
    assert stored_urls(sqlite_url) == {"https://news.example.com/river"}
    assert document["sources"][0]["status"] == "stopped"
    assert (document["read"], document["kept"]) == (1, 1)


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("junk.warc", os.urandom(3000), "not a WARC or ARC archive"),
        ("text.warc", b"hello\nworld\n" * 50, "not a WARC or ARC archive"),
        ("junk.warc.gz", b"not gzip at all" * 10, "not gzip data"),
        ("items.jsonl.gz", b"PK\x03\x04 a zip file" * 10, "not gzip data"),
        ("binary.jsonl", b"\x00\x01\x02\xff" * 500, "binary data, not JSON Lines"),
    ],
)
def test_a_file_that_is_not_what_its_name_says_is_one_line_and_the_others_go_on(
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes,
    reason: str,
) -> None:
    bad = tmp_path / name
    bad.write_bytes(content)
    # Alone: one line, exit 1, and no database made for nothing.
    code, out, err = run(capsys, "import", str(bad), "--db", sqlite_url)
    assert (code, out) == (1, "")
    assert err.startswith(f"simhash-filter: error: {bad}: {reason}")
    assert err.count("\n") == 1
    assert not db_path(sqlite_url).exists()
    # With a good file: the good one is imported, the summary shows both.
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"".join(line(n) for n in range(5)))
    code, out, err = run(capsys, "import", str(bad), str(good), "--db", sqlite_url)
    assert code == 1
    assert err.startswith(f"simhash-filter: error: {bad}: {reason}")
    width = max(len(str(good)), len(str(bad)))
    assert out.splitlines()[-5:] == [
        "per source",
        f"{'source'.ljust(width)}  read  kept  dropped  unchanged  changed  no text  skipped  status",
        f"{'-' * width}  ----  ----  -------  ---------  -------  -------  -------  ----------",
        f"{str(bad).ljust(width)}     0     0        0          0        0        0        0  unreadable",
        f"{str(good).ljust(width)}     5     5        0          0        0        0        0  complete",
    ]
    assert stored_urls(sqlite_url) == {f"https://example.com/{n}" for n in range(5)}


# --- a database that is not a simhash-filter one ---------------------------------------


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_another_applications_sqlite_file_is_left_alone_unless_create(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = tmp_path / "app.sqlite"
    with sqlite3.connect(app) as connection:
        connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        connection.execute("INSERT INTO notes (body) VALUES ('mine')")
    connection.close()
    before = digest(app)
    source = tmp_path / "items.jsonl"
    source.write_bytes(b"".join(line(n) for n in range(3)))
    code, out, err = run(capsys, "import", str(source), "--db", str(app))
    assert (code, out) == (1, "")
    assert err == (
        f"simhash-filter: error: sqlite:///{app} is not a simhash-filter database (it holds "
        "table(s) notes); nothing was written to it. Name another database with --db, or "
        "pass --create to add simhash-filter's tables to this one\n"
    )
    # Queries do not touch it either (no switch to WAL, no tables).
    code, _, _ = run(capsys, "stats", "--db", str(app))
    assert code == 1
    assert digest(app) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite", "items.jsonl"]
    with sqlite3.connect(app) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    connection.close()
    # Said so: the tables are added next to the application's.
    code, out, _ = run(capsys, "import", "--create", str(source), "--db", str(app))
    assert code == 0
    assert stored_urls(f"sqlite:///{app}") == {f"https://example.com/{n}" for n in range(3)}
    with sqlite3.connect(app) as connection:
        assert connection.execute("SELECT body FROM notes").fetchall() == [("mine",)]
    connection.close()


def test_an_empty_file_or_a_new_path_is_a_new_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "items.jsonl"
    source.write_bytes(b"".join(line(n) for n in range(3)))
    empty = tmp_path / "empty.db"
    empty.touch()
    assert run(capsys, "import", str(source), "--db", str(empty))[0] == 0
    assert len(stored_urls(f"sqlite:///{empty}")) == 3


# --- Ctrl-C ----------------------------------------------------------------------------


def _unread(fd: int) -> int:
    """Bytes written to a pipe and not yet read from it."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0])


def _waiting_on_stdin(pid: int) -> bool:
    """True when the process's main thread is blocked reading a pipe on fd 0."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
        syscall = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return wchan.endswith("pipe_read") and len(syscall) > 1 and syscall[1] == "0x0"


def _feed_and_wait(process: subprocess.Popen[bytes], numbers: Iterable[int]) -> None:
    """Write the lines ``numbers`` to the import's stdin and wait until it has read them all
    and waits for more."""
    assert process.stdin is not None
    process.stdin.write(b"".join(line(n) for n in numbers))
    process.stdin.flush()
    deadline = time.monotonic() + 300  # a guard against a hang, not the condition
    while not (_unread(process.stdin.fileno()) == 0 and _waiting_on_stdin(process.pid)):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the import never waited for more input"
        time.sleep(0.05)


def _default_sigint() -> None:
    """In the child, before exec: SIGINT back to its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("jobs", "expected"), [(1, 25), (2, 25)])
def test_ctrl_c_keeps_the_batch_in_hand_and_shows_the_counts(
    tmp_path: Path, jobs: int, expected: int
) -> None:
    """25 lines go in, batches of 10: two batches are committed, five pages are in hand
    when Ctrl-C comes (the process waits on stdin for more). They are committed and
    counted. With worker processes, the pages in the pool are finished and kept too."""
    if not Path("/proc/self/wchan").exists():
        pytest.skip("needs /proc to see the import wait on stdin")
    url = f"sqlite:///{tmp_path / 'dedup.db'}"
    process = subprocess.Popen(
        [sys.executable, "-m", "simhash_filter", "import", "-", "--batch-size", "10",
         "--jobs", str(jobs), "--json", "--db", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        # Ctrl-C as a terminal's program gets it: a shell's background job passes SIGINT
        # on ignored, and a Python started so never raises KeyboardInterrupt
        preexec_fn=_default_sigint,
    )  # fmt: skip
    assert process.stdin is not None
    try:
        _feed_and_wait(process, range(25))
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C does
        out, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    document = json.loads(out)
    assert document["interrupted"] is True
    assert (document["read"], document["kept"]) == (expected, expected)
    assert document["sources"][0]["status"] == "interrupted"
    assert err.decode().endswith("simhash-filter: interrupted: the counts above were committed\n")
    assert "Traceback" not in err.decode()
    assert stored_urls(url) == {f"https://example.com/{n}" for n in range(expected)}


def test_a_database_error_mid_import_still_shows_what_was_committed(tmp_path: Path) -> None:
    """Two batches are committed, then another process holds the write lock (the URL's
    ?timeout=0: no waiting) when the third batch is written: one error line, exit 1, and
    the summary says what the database holds."""
    if not Path("/proc/self/wchan").exists():
        pytest.skip("needs /proc to see the import wait on stdin")
    path = tmp_path / "dedup.db"
    url = f"sqlite:///{path}?timeout=0"
    process = subprocess.Popen(
        [sys.executable, "-m", "simhash_filter", "import", "-", "--batch-size", "5", "--json",
         "--db", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert process.stdin is not None
    holder = None
    try:
        _feed_and_wait(process, range(10))
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the write lock, held
        process.stdin.write(b"".join(line(n) for n in range(10, 15)))
        out, err = process.communicate(timeout=300)  # (closes stdin: the import ends)
    finally:
        if holder is not None:
            holder.execute("ROLLBACK")
            holder.close()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, err
    errors = err.decode().splitlines()
    assert errors[-1].startswith("simhash-filter: error: "), err
    assert "locked" in errors[-1]
    document = json.loads(out)
    assert (document["read"], document["kept"]) == (15, 10)
    assert document["sources"][0]["status"] == "failed"
    assert stored_urls(f"sqlite:///{path}") == {f"https://example.com/{n}" for n in range(10)}
