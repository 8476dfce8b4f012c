"""The fast path of ``canonicalize`` (simhash_filter/urls/canonicalize.py) is w3lib's
``canonicalize_url`` written a second time: pinned to it on edge cases and generated URLs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from w3lib.url import canonicalize_url

from simhash_filter.urls.canonicalize import _PLAIN, canonicalize

EDGES = [
    "http://a.example",
    "http://a.example:80/x",
    "HTTP://A.example/X",
    "http://a.example/a?",
    "http://a.example/a?&b=1&&a",
    "http://a.example/a?b=2&b=1&a=+",
    "http://a.example/a/./b/../c",
    "http://a.example/a/.",
    "http://a.example/.hidden/x",
    "http://a.example/a#f",
    "http://a.example/a?b=1#f?c=2",
    "http://a.example./a",
    "http://a.example/a?a=1&A=2&_=3&-=4&~=5&.=6",
    "http://a.example/a?b=&a",
    "http://a.example/~x/y-z_.",
    "http://a.example/a;b=1",
    "http://a.example/a?x=y=z",
    "http://a.example/a?=1",
    "http://a.example//a",
    "http://a.example/a?q=%41",
    "https://a.example:443/a?b=1&a=1",
    "http://127.0.0.1:8080/news/x/?utm_source=y&replytocom=3",
    "http://xn--bcher-kva.example/a",
    "http://-a-.example/a",
    "http://a.example/a?b=1&b=1&a=2&a=10",
    "http://a.example/a\t?b=1",
    " http://a.example/a",
    "http://a.example/a ",
    "http://a.example:080/x",
    "http://a.example:0/x",
    "http://a.example:9999/x",
    "http://127.0.0.1:34461/a?b=1&a=2",
    "http://a.example:65535/x",
    "http://a.example:65536/x",
    "http://a.example:70000/x",
    "http://a.example:99999/x",
    "http://a.example:10000/x",
    "http://a.example:123456/x",
]


@pytest.mark.parametrize("url", EDGES)
def test_edge_cases_agree_with_w3lib(url: str) -> None:
    assert _outcome(canonicalize, url) == _outcome(canonicalize_url, url)


def test_plain_urls_take_the_fast_path() -> None:
    """Else the test above compares w3lib with itself."""
    assert _PLAIN.fullmatch("https://a.example:443/a?b=1&a=1")
    assert _PLAIN.fullmatch("http://a.example/a#f")
    assert _PLAIN.fullmatch("http://127.0.0.1:34461/a?b=1")  # an ephemeral port (a test site)
    assert not _PLAIN.fullmatch("http://a.example:65536/a")  # w3lib: out of range
    assert not _PLAIN.fullmatch("http://a.example/a?q=%41")


_HOSTS = st.sampled_from(["a.example", "A.example", "a-b.example.", "127.0.0.1", "x.y.z"])
_PORTS = st.one_of(
    st.sampled_from(["", ":80", ":8080", ":0", ":080", ":65535", ":65536", ":9999", ":10000"]),
    st.integers(min_value=0, max_value=99_999).map(lambda n: f":{n}"),
)
_CHARS = "aAzZ09-._~/?&=#%+;:@!$'()*, \té"


@settings(max_examples=2000, deadline=None)
@given(
    scheme=st.sampled_from(["http", "https", "HTTP", "ftp"]),
    host=_HOSTS,
    port=_PORTS,
    rest=st.text(alphabet=_CHARS, max_size=24),
)
def test_generated_urls_agree_with_w3lib(scheme: str, host: str, port: str, rest: str) -> None:
    url = f"{scheme}://{host}{port}{rest}"
    assert _outcome(canonicalize, url) == _outcome(canonicalize_url, url)


def _outcome(function: Callable[[str], str], url: str) -> str:
    try:
        return function(url)
    except ValueError as error:  # a port out of range: both refuse the URL
        return f"{type(error).__name__}: {error}"
