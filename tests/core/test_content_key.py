"""The exact-content key: byte-identical pages (white space aside) share it, and its signature
matches only theirs."""

from __future__ import annotations

from simhash_filter import Fingerprinter
from simhash_filter.core.content_key import KEY_BYTES, content_key, exact_signature
from simhash_filter.core.signature import MatchRule, decode_sketch

PAGE = b"<html>\n<body>\n  <h1>Gallery</h1>\n  <p>Twelve photos.</p>\n</body>\n</html>\n"


def test_white_space_runs_do_not_change_the_key() -> None:
    key = content_key(PAGE)
    assert len(key) == KEY_BYTES
    assert content_key(PAGE.replace(b"\n", b"\r\n\t")) == key
    assert content_key(PAGE.decode()) == key
    assert content_key(PAGE.replace(b"photos", b"photo")) != key
    assert content_key(PAGE.replace(b"<h1>", b"<h2>")) != key  # markup is content here


def test_the_exact_signature_matches_its_own_key_only() -> None:
    rule = MatchRule()
    a = exact_signature(content_key(PAGE))
    again = exact_signature(content_key(PAGE + b"  "))
    other = exact_signature(content_key(PAGE.replace(b"Twelve", b"Eleven")))
    assert a.exact
    assert a.text_length == 0
    assert a == again
    assert rule.verify(a.sketch, again.sketch).similarity == 1.0
    assert rule.verify(a.sketch, other.sketch).similarity < 0.05
    assert a.fingerprint != other.fingerprint


def test_an_exact_signature_is_no_candidate_of_a_text_signature() -> None:
    fingerprinter = Fingerprinter()
    text = " ".join(f"word{n} of a page about the harbour and its ferries" for n in range(40))
    signed = fingerprinter.sign(text)
    assert signed is not None
    assert not signed.exact
    exact = exact_signature(content_key(text))
    assert len(decode_sketch(exact.sketch).text) == len(decode_sketch(signed.sketch).text)
    assert MatchRule().verify(exact.sketch, signed.sketch).similarity < 0.05
