"""Every option's bad value is a usage error (exit 2) with a message that says what is
wanted, never a traceback or an argparse-internal name (issue 10 item 3); good values
are accepted. A property test over the command line's options."""

from __future__ import annotations

import io
import re
import sys
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli_corpus import fill, run

from simhash_filter.cli.options import COUNT_MAX

# (argv before the option, option, smallest and largest good value)
NUMBER_OPTIONS = [
    (["stats"], "--domains", 0, COUNT_MAX),
    (["dupes"], "--limit", 0, COUNT_MAX),
    (["near", "0123456789abcdef"], "--k", 0, 64),
    (["near", "0123456789abcdef"], "--limit", 0, COUNT_MAX),
    (["clusters"], "--k", 0, 64),
    (["clusters"], "--min-size", 1, COUNT_MAX),
    (["clusters"], "--limit", 0, COUNT_MAX),
    (["fingerprint", "--text", "a few words to fingerprint here"], "--features", 1, COUNT_MAX),
    (["import", "-"], "--batch-size", 1, 1_000_000),
    (["import", "-"], "--jobs", 1, 256),
    (["import", "-"], "--max-distance", 0, 63),
    (["import", "-"], "--blocks", 1, 64),
    (["reindex"], "--max-distance", 0, 63),
    (["reindex"], "--blocks", 1, 64),
]
SCHEME_OPTIONS = {"--max-distance", "--blocks"}  # a good number may not fit the other one

EDGES = [
    "",
    " ",
    "abc",
    "1.5",
    "1e3",
    "0x10",
    "-1",
    "-0",
    "+7",
    " 7 ",
    "5_0",
    "\u0661\u0662",  # Arabic-Indic digits: int() takes them, the option does not
    "\x00",
    "0",
    "1",
    "63",
    "64",
    "65",
    "256",
    "257",
    "1000000",
    "1000001",
    str(COUNT_MAX),
    str(COUNT_MAX + 1),
    "9" * 30,
    "9" * 5000,  # beyond int()'s digit limit
]
number_values = st.one_of(
    st.sampled_from(EDGES),
    st.integers(min_value=-(10**25), max_value=10**25).map(str),
    st.text(max_size=8),
)


def good_number(value: str, low: int, high: int) -> bool:
    """The oracle: ASCII digits (a sign, spaces around) in low..high."""
    text = value.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", text, re.ASCII) or len(text) > 20:
        return False
    return low <= int(text) <= high


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('options') / 'dedup.db'}"
    fill(url)
    return url


def call(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    return run(capsys, *argv)


def assert_clean(code: int, err: str) -> None:
    assert code in (0, 1, 2), err
    assert "Traceback" not in err
    assert re.search(r"invalid [\w ]+ value", err) is None, err  # argparse's type-name message


@pytest.mark.parametrize(("before", "option", "low", "high"), NUMBER_OPTIONS)
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=number_values)
def test_number_options(
    database: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    before: list[str],
    option: str,
    low: int,
    high: int,
    value: str,
) -> None:
    extra = ["--no-progress"] if before[0] == "import" else []
    code, out, err = call(
        capsys, monkeypatch, [*before, f"{option}={value}", *extra, "--db", database]
    )
    assert_clean(code, err)
    command = before[0]
    if not good_number(value, low, high):
        assert (code, out) == (2, ""), err
        last = err.splitlines()[-1]
        shown = {"--k": "-k/--k", "--jobs": "-j/--jobs"}.get(option, option)
        assert last.startswith(f"simhash-filter {command}: error: argument {shown}: ")
        assert "not a whole number" in last or "must be " in last
        assert len(last) < 200 + len(value)
    elif option not in SCHEME_OPTIONS:
        assert code in (0, 1), err  # accepted (1: e.g. k beyond the index's max_distance)
    elif code == 2:  # a good number that does not fit the other scheme option
        assert "blocks" in err.splitlines()[-1], err


since_values = st.one_of(
    st.sampled_from(
        [
            "3000000d",
            "300000000000d",
            "9" * 40 + "w",
            "0001-01-01",
            "0001-01-01T00:00+00:00",
            "9999-12-31",
            "9999-12-31T23:59:59-23:59",
            "last tuesday",
            "",
            "7 d",
            "2024-13-01",
            "\x00",
        ]
    ),
    st.from_regex(r"[0-9]{1,14}[smhdw]", fullmatch=True),
    st.dates(min_value=date(1900, 1, 1)).map(date.isoformat),
    st.text(max_size=12),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=since_values)
def test_since(
    database: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    value: str,
) -> None:
    code, _, err = call(capsys, monkeypatch, ["dupes", f"--since={value}", "--db", database])
    assert_clean(code, err)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) and value >= "1900":
        try:
            date.fromisoformat(value)
        except ValueError:
            pass
        else:
            assert code == 0, err  # a real date of the last centuries is always good
    if code == 2:
        last = err.splitlines()[-1]
        assert last.startswith("simhash-filter dupes: error: argument --since: "), err
    else:
        assert code == 0, err


def test_the_issue_examples(
    database: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = {
        ("dupes", "--since", "3000000d"): "'3000000d' reaches back before the year 1: give a "
        "smaller age or a date",
        ("near", "--k", "abc"): "not a whole number: 'abc'",
        ("dupes", "--since", "0001-01-01"): "'0001-01-01' is out of range: give a date between "
        "the years 1 and 9999 that can be placed in a time zone (e.g. 2024-05-01 or "
        "0001-01-02T00:00+00:00)",
    }
    for (command, option, value), message in examples.items():
        argv = [command, "0123456789abcdef"] if command == "near" else [command]
        code, out, err = call(capsys, monkeypatch, [*argv, option, value, "--db", database])
        assert (code, out) == (2, "")
        assert err.splitlines()[-1] == (
            f"simhash-filter {command}: error: argument {option.replace('--k', '-k/--k')}: "
            f"{message}"
        )


@pytest.mark.parametrize(
    "value",
    ["postgresql+psycopg://user:Secret-9d1@host:notaport/db", "://nothing", "postgresql://[::1"],
)
def test_a_bad_database_url_is_a_usage_error_that_does_not_repeat_it(
    value: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "stats", "--db", value)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].startswith("simhash-filter stats: error: argument --db: ")
    assert "Secret-9d1" not in err
    assert "Traceback" not in err
