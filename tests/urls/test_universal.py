"""Universal rules: tracking and session parameters out, content parameters kept."""

from __future__ import annotations

import pytest

from simhash_filter.urls.ruleset import RuleSet
from simhash_filter.urls.universal import SESSION, TRACKING, classify_parameter


@pytest.mark.parametrize(
    ("url", "expected", "reason"),
    [
        ("http://a.example/x?utm_source=rss&utm_medium=feed", "http://a.example/x", TRACKING),
        ("http://a.example/x?fbclid=IwAR0abc&id=7", "http://a.example/x?id=7", TRACKING),
        ("http://a.example/x?gclid=Cj0K&msclkid=1f2e", "http://a.example/x", TRACKING),
        ("http://a.example/x?mc_cid=1&mc_eid=2", "http://a.example/x", TRACKING),
        ("http://a.example/x?PHPSESSID=0123abcd4567ef89", "http://a.example/x", SESSION),
        ("http://a.example/x;jsessionid=A1B2C3D4?q=1", "http://a.example/x?q=1", SESSION),
        ("http://a.example/x?sid=4f9a2c7e81b3d5f0a6c2", "http://a.example/x", SESSION),
    ],
)
def test_universal_parameters_go(url: str, expected: str, reason: str) -> None:
    form = RuleSet().form(url)
    assert form.url == expected
    assert form.changed
    assert form.reason == reason


@pytest.mark.parametrize(
    "url",
    [
        "http://a.example/?p=123",
        "http://a.example/list?page=2",
        "http://a.example/doc?lang=de",
        "http://a.example/view.php?id=42",
        "http://a.example/section?sid=3",  # a section id, not a session
        "http://a.example/section?sid=news",
        "http://a.example/search?source=web&ref=home&cid=9&uid=7",  # courlan's fuzzy names stay
    ],
)
def test_content_parameters_stay(url: str) -> None:
    form = RuleSet().form(url)
    assert not form.changed
    assert form.url == form.own


def test_a_session_token_needs_letters_and_digits_and_length() -> None:
    assert classify_parameter("sid", "4f9a2c7e81b3d5f0a6c2") is not None
    assert classify_parameter("sid", "12345678901234567890") is None  # a number: an id
    assert classify_parameter("sid", "abc123") is None  # too short
    assert classify_parameter("utm_campaign", "x") == classify_parameter("UTM_Source", "y")


def test_universal_rules_off_and_exempt_hosts() -> None:
    url = "http://a.example/x?utm_source=rss"
    assert not RuleSet(universal=False).form(url).changed
    from simhash_filter.urls.rules import UrlRule

    exempt = RuleSet(exempt=[UrlRule("a.example", TRACKING, "utm_*")])
    assert not exempt.form(url).changed
    assert exempt.form("http://b.example/x?utm_source=rss").changed
