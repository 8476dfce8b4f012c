"""Fingerprinter: pinned golden fingerprints and spec, a reference per-bit
implementation, determinism across processes, near-duplicate behaviour on real
paragraphs, too-little-text, options and threads."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import mmh3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_filter import Fingerprinter, IdfTable, hamming_distance, similarity
from simhash_filter.core.simhash import mmh3_64, simhash
from simhash_filter.core.stopwords import ENGLISH as ENGLISH_STOPWORDS

ROOT = Path(__file__).resolve().parents[2]
DETERMINISTIC = settings(derandomize=True, deadline=None, max_examples=100)

# --- texts written for these tests (309 words) -------------------------------------------------

ENGLISH = (
    "The old lighthouse at Carrow Point had been dark for almost forty years when the harbour "
    "trust finally voted to restore it. Nobody in the village could agree on why it mattered so "
    "much. The fishing fleet had long since moved to satellite navigation, and the ferry to the "
    "islands ran on a timetable that ignored the weather. Still, the tower stood on the headland "
    "like an unfinished sentence, and every summer visitors climbed the rusted stairs to "
    "photograph the empty lantern room. The restoration began in March with a survey of the "
    "masonry. Engineers found that the granite blocks were sound, but the iron gallery rail had "
    "corroded through in a dozen places, and salt had crept into the mortar between the upper "
    "courses. A firm from Aberdeen was hired to repoint the walls with lime, which breathes "
    "better than cement and lets trapped moisture escape. Meanwhile a volunteer group catalogued "
    "the surviving fittings: a brass clockwork mechanism that once turned the lens, a keeper's "
    "logbook with entries from 1912 to 1958, and a box of spare mantles still wrapped in waxed "
    "paper. The lens itself had been removed in the sixties and sold to a museum in Bristol. "
    "After long negotiation the museum agreed to lend it back for ten years, on condition that "
    "the lantern room be fitted with climate control and a modern security system. Electricians "
    "ran a cable up from the keeper's cottage, and a small solar array was installed on the roof "
    "of the old oil store. By October the work was complete. On the first clear night the lamp "
    "was lit again, not for ships but for the village, and people came out onto the beach to "
    "watch the beam sweep slowly across the water, the way their grandparents had watched it. "
    "Some of them cried, and nobody could quite explain why."
)

UNRELATED = (
    "A sourdough starter is a living culture of wild yeast and lactic acid bacteria, fed every "
    "day with flour and water. Bakers keep it in a jar on the counter and discard half before "
    "each feeding, so that the population stays vigorous and the acidity does not climb too "
    "high. A loaf made with it needs a long, cool fermentation: the dough is mixed in the "
    "morning, folded four times during the afternoon, shaped at dusk and proofed overnight in "
    "the refrigerator. The slow rise develops a tangy flavour, an open crumb and a crust that "
    "crackles as it cools on the rack.",
    "Generational garbage collection rests on the observation that most objects die young. The "
    "heap is split into a nursery, where new allocations land, and an older space that is "
    "scanned far less often. When the nursery fills, the collector traces only the objects "
    "reachable from roots and from a remembered set of pointers that cross from old to young, "
    "copies the survivors out, and resets the allocation pointer. Write barriers keep the "
    "remembered set accurate, at the cost of a few instructions on every pointer store, and "
    "compaction of the old space runs concurrently with the program threads.",
    "Every autumn, millions of songbirds cross the Gulf of Mexico in a single night, flying "
    "nonstop for eighteen hours over open sea. Radar stations along the coast record their "
    "departure as a bloom of echoes shortly after sunset. Warblers, thrushes and tanagers double "
    "their body weight before leaving, storing fat that fuels the crossing. Researchers fit "
    "some of them with tiny radio tags weighing less than a paperclip, and receiving towers "
    "from Texas to Florida log each bird that passes. Headwinds and storms can exhaust them, "
    "and exhausted flocks sometimes land on oil platforms or fishing boats.",
    "The final round of the regional chess championship was decided by a single blunder. Going "
    "into the last game, the two leaders were tied on points, and the younger player chose a "
    "sharp Sicilian defence instead of a quiet draw. For thirty moves the position stayed "
    "balanced, with both clocks running low. Then, with four minutes left, her opponent pushed "
    "a pawn that loosened his king, and she found a knight sacrifice that opened the file for "
    "her rooks. The arbiter confirmed checkmate two moves later, and the hall burst into "
    "applause.",
)

CHINESE = (
    "北京大学人工智能研究院今天在北京发布了新一代中文大语言模型。研究团队表示，该模型在阅读理解、"
    "机器翻译和代码生成等任务上的表现明显优于上一代系统，训练数据覆盖新闻、百科、法律文书和科技论文。"
    "研究院院长在发布会上介绍，团队用了两年时间搭建计算平台，并与多家高校和企业合作，共同制定数据"
    "安全和隐私保护规范。专家认为，国产大模型的快速发展将推动教育、医疗和金融等行业的数字化转型，"
    "但同时也需要加强监管，防止虚假信息传播。据悉，该模型将于明年春季向科研机构免费开放。"
)

CHINESE_UNRELATED = (
    "今年夏天，长江中下游地区持续高温少雨，多个省份的水库蓄水量比常年同期偏少三成以上。气象部门"
    "预计，未来十天副热带高压仍将控制江南大部，局地最高气温可达四十摄氏度。农业部门提醒农民抓住"
    "早晚时段灌溉水稻，及时做好病虫害防治，减少干旱对秋粮生产的影响。电力公司也启动了迎峰度夏"
    "应急预案，优先保障居民生活和医院等重要单位的用电需求。"
)

# --- pinned values (they guard the spec: changing one must change DEFAULT_SPEC) ---------------

DEFAULT_SPEC = (
    "simhash-filter/2;f=64;norm=content+nfkc+casefold+ws;"
    "tok=words+rjieba-0.2.2+hmm+kana-hangul-bigrams;"
    "stop=2edfc5032801;numbers=keep;shingle=1;weight=tf;idf=none;top_n=all;max_chars=50000;"
    "hash=mmh3_x64_128_low64:24301;sketch=c5-oph256x16:20931+page64;"
    "extract=trafilatura-precision-fast+balanced-fast-below-500-prose-0.5"
    "+table-layout-0.5-tables-over-p-full-contained-0.9+browser-decode"
)
# The extraction of an HTML page is named too (``extract=``): a new one fingerprints the same
# pages anew, while a text's fingerprint is unchanged (these are texts).
# Spec 2 removes machine text (URLs, addresses, link targets, tags) before tokenizing and
# adds the sketch; these texts have none, so their fingerprints are those of spec 1.
ENGLISH_FINGERPRINT = 0x21461A408C51A0E0
CHINESE_FINGERPRINT = 0x11D0211D6A1EA99B

# --- an independent reference: tf weights, the textbook per-bit loop over mmh3 -----------------


def reference_simhash(tokens: list[str], seed: int = 0x5EED) -> int:
    sums = [0] * 64
    for feature, count in Counter(tokens).items():
        h = mmh3.hash64(feature, seed, signed=False)[0]
        for i in range(64):
            sums[i] += count if (h >> i) & 1 else -count
    return sum(1 << i for i in range(64) if sums[i] > 0)


def reference_english_tokens(text: str) -> list[str]:
    """Tokens of ASCII English text: lower-cased words, bundled stopwords dropped."""
    words = re.findall(r"[a-z0-9]+(?:'[a-z0-9]+)*", text.lower())
    return [w for w in words if w not in ENGLISH_STOPWORDS]


@pytest.fixture(scope="module")
def fp() -> Fingerprinter:
    return Fingerprinter()


def test_default_spec_is_pinned(fp: Fingerprinter) -> None:
    assert fp.spec == DEFAULT_SPEC
    assert fp.min_tokens == 20
    assert Fingerprinter().spec == fp.spec


def test_golden_english_fingerprint(fp: Fingerprinter) -> None:
    assert fp.fingerprint(ENGLISH) == ENGLISH_FINGERPRINT


def test_golden_chinese_fingerprint(fp: Fingerprinter) -> None:
    assert fp.fingerprint(CHINESE) == CHINESE_FINGERPRINT


def test_golden_values_agree_with_the_reference_implementation(fp: Fingerprinter) -> None:
    assert reference_english_tokens(ENGLISH) == fp.tokens(ENGLISH)
    assert reference_simhash(reference_english_tokens(ENGLISH)) == ENGLISH_FINGERPRINT
    assert reference_simhash(fp.tokens(CHINESE)) == CHINESE_FINGERPRINT


@pytest.mark.parametrize("text", [*UNRELATED, CHINESE_UNRELATED])
def test_paragraphs_agree_with_the_reference_implementation(fp: Fingerprinter, text: str) -> None:
    assert fp.fingerprint(text) == reference_simhash(fp.tokens(text))


WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=7)
SEPARATORS = st.sampled_from([" ", "  ", "\n", ", ", ". ", " - ", "\t", "; ", "! "])


@DETERMINISTIC
@given(st.lists(st.tuples(WORDS, SEPARATORS, st.booleans()), min_size=0, max_size=80))
def test_english_fingerprint_matches_the_reference(words: list[tuple[str, str, bool]]) -> None:
    text = "".join((w.upper() if shout else w) + sep for w, sep, shout in words)
    expected_tokens = reference_english_tokens(text)
    fp = Fingerprinter()
    assert fp.tokens(text) == expected_tokens
    got = fp.fingerprint(text)
    if len(expected_tokens) < 20:
        assert got is None
    else:
        assert got == reference_simhash(expected_tokens)


CHINESE_WORDS = st.sampled_from(
    ["北京", "大学", "人工智能", "模型", "发布", "研究", "团队", "数据", "安全", "的", "了",
     "，", "。", "python", "AI", "2024", "水库", "气象", "部门", "农民", "灌溉"]
)  # fmt: skip


@DETERMINISTIC
@given(st.lists(CHINESE_WORDS, max_size=80), st.integers(min_value=0, max_value=2**32 - 1))
def test_mixed_text_fingerprint_matches_the_reference(parts: list[str], seed: int) -> None:
    text = "".join(parts)
    fp = Fingerprinter(seed=seed)
    tokens = fp.tokens(text)
    got = fp.fingerprint(text)
    if len(tokens) < 20:
        assert got is None
    else:
        assert got == reference_simhash(tokens, seed)
        assert 0 <= got < 2**64


def test_changing_any_option_changes_the_spec() -> None:
    idf_a = IdfTable({"lamp": 2.0}, default=1.0)
    idf_b = IdfTable({"lamp": 3.0}, default=1.0)
    variants = {
        "default": Fingerprinter(),
        "weighting": Fingerprinter(weighting="sublinear"),
        "uniform": Fingerprinter(weighting="uniform"),
        "shingle_size": Fingerprinter(shingle_size=2),
        "stopwords": Fingerprinter(stopwords=ENGLISH_STOPWORDS),
        "no stopwords": Fingerprinter(stopwords=()),
        "seed": Fingerprinter(seed=1),
        "top_n": Fingerprinter(top_n=20),
        "idf a": Fingerprinter(weighting="tfidf", idf=idf_a),
        "idf b": Fingerprinter(weighting="tfidf", idf=idf_b),
        "drop_numbers": Fingerprinter(drop_numbers=True),
        "hmm": Fingerprinter(hmm=False),
        "hash_function": Fingerprinter(hash_function=mmh3_64),
        "max_chars": Fingerprinter(max_chars=1000),
        "machine_text": Fingerprinter(machine_text="keep"),
        "sketch_slots": Fingerprinter(sketch_slots=128),
    }
    specs = {name: f.spec for name, f in variants.items()}
    assert len(set(specs.values())) == len(specs), specs
    assert f"idf={idf_a.name}" in specs["idf a"]
    # min_tokens decides whether a text gets a fingerprint, not its value
    assert Fingerprinter(min_tokens=5).spec == DEFAULT_SPEC


def test_idf_is_ignored_and_unnamed_unless_weighting_is_tfidf() -> None:
    idf = IdfTable({"lamp": 2.0}, default=1.0)
    assert Fingerprinter(idf=idf).spec == DEFAULT_SPEC
    assert Fingerprinter(idf=idf).fingerprint(ENGLISH) == ENGLISH_FINGERPRINT


def test_fitted_idf_table_is_named_in_the_spec_and_changes_the_fingerprint(
    fp: Fingerprinter,
) -> None:
    table = IdfTable.fit(fp.tokens(t) for t in (ENGLISH, *UNRELATED))
    tfidf = Fingerprinter(weighting="tfidf", idf=table)
    assert f";idf={table.name};" in tfidf.spec
    assert ";weight=tfidf;" in tfidf.spec
    named = Fingerprinter(weighting="tfidf", idf=IdfTable.fit([["lamp"]], name="crawl-1"))
    assert ";idf=crawl-1;" in named.spec
    result = tfidf.fingerprint(ENGLISH)
    assert result is not None
    assert result == simhash(tfidf.features(ENGLISH))
    assert result != ENGLISH_FINGERPRINT


def test_seed_changes_the_fingerprint(fp: Fingerprinter) -> None:
    seeded = Fingerprinter(seed=1)
    assert seeded.fingerprint(ENGLISH) == reference_simhash(fp.tokens(ENGLISH), seed=1)
    assert seeded.fingerprint(ENGLISH) != ENGLISH_FINGERPRINT


def test_injected_hash_function_is_used(fp: Fingerprinter) -> None:
    same = Fingerprinter(hash_function=lambda feature: mmh3_64(feature))
    assert same.fingerprint(ENGLISH) == ENGLISH_FINGERPRINT
    assert "hash=custom:" in same.spec
    constant = Fingerprinter(hash_function=lambda feature: 0b1011)
    assert constant.fingerprint(ENGLISH) == 0b1011


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"shingle_size": 0}, "got 0"),
        ({"weighting": "bm25"}, "'bm25'"),
        ({"weighting": "tfidf"}, "IdfTable"),
        ({"top_n": 0}, "got 0"),
        ({"top_n": -5}, "got -5"),
        ({"min_tokens": 0}, "got 0"),
        ({"seed": -1}, "got -1"),
        ({"seed": 2**32}, f"got {2**32}"),
        ({"machine_text": "strip"}, "got 'strip'"),
        ({"sketch_slots": 100}, "got 100"),
    ],
)
def test_invalid_options_are_rejected_naming_the_value(
    options: dict[str, object], named: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        Fingerprinter(**options)  # type: ignore[arg-type]


# --- determinism --------------------------------------------------------------------------------

CHILD = """
import json, sys
from simhash_filter import Fingerprinter
fp = Fingerprinter()
texts = json.load(sys.stdin)
json.dump({
    "spec": fp.spec,
    "fingerprints": [fp.fingerprint(t) for t in texts],
    "sketches": [fp.sketch(t, page_text=t + " menu").hex() for t in texts],
}, sys.stdout)
"""


@pytest.mark.parametrize("hash_seed", ["0", "4242"])
def test_deterministic_across_processes(fp: Fingerprinter, hash_seed: str) -> None:
    texts = [ENGLISH, CHINESE, *UNRELATED, CHINESE_UNRELATED, "too short"]
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    child = json.loads(done.stdout)
    assert child["spec"] == fp.spec
    assert child["fingerprints"] == [fp.fingerprint(t) for t in texts]
    assert child["fingerprints"][:2] == [ENGLISH_FINGERPRINT, CHINESE_FINGERPRINT]
    assert child["sketches"] == [fp.sketch(t, page_text=t + " menu").hex() for t in texts]


def test_instances_agree(fp: Fingerprinter) -> None:
    other = Fingerprinter()
    for text in (ENGLISH, CHINESE, *UNRELATED):
        assert other.fingerprint(text) == fp.fingerprint(text)
        assert other.features(text) == fp.features(text)


# --- near duplicates and unrelated texts -------------------------------------------------------


def one_word_edit(words: list[str], vocabulary: list[str], rng: random.Random) -> str:
    edited = list(words)
    where = rng.randrange(len(edited))
    kind = rng.choice(("replace", "insert", "delete"))
    if kind == "replace":
        edited[where] = rng.choice(vocabulary)
    elif kind == "insert":
        edited.insert(where, rng.choice(vocabulary))
    else:
        del edited[where]
    return " ".join(edited)


def test_one_word_edits_stay_within_three_bits(fp: Fingerprinter) -> None:
    """Replace, insert or delete one random word of the 309-word paragraph (the new
    words come from the unrelated paragraphs): at least 99% of 600 seeded trials land
    within 3 bits of the original."""
    words = ENGLISH.split()
    assert len(words) >= 300
    vocabulary = sorted({w for text in UNRELATED for w in text.split()})
    rng = random.Random(20070508)
    distances = []
    for _ in range(600):
        edited = fp.fingerprint(one_word_edit(words, vocabulary, rng))
        assert edited is not None
        distances.append(hamming_distance(ENGLISH_FINGERPRINT, edited))
    within = sum(d <= 3 for d in distances) / len(distances)
    assert within >= 0.99, Counter(distances)
    assert max(distances) <= 6, Counter(distances)


def test_unrelated_paragraphs_land_far_apart(fp: Fingerprinter) -> None:
    texts = [ENGLISH, *UNRELATED, CHINESE, CHINESE_UNRELATED]
    fingerprints = [fp.fingerprint(t) for t in texts]
    assert all(isinstance(f, int) for f in fingerprints)
    distances = [
        hamming_distance(a, b)  # type: ignore[arg-type]
        for a, b in itertools.combinations(fingerprints, 2)
    ]
    assert min(distances) > 10, distances
    # unrelated fingerprints behave like random 64-bit strings: about 32 bits apart
    assert 24 <= sum(distances) / len(distances) <= 40, distances


def test_formatting_changes_do_not_change_the_fingerprint(fp: Fingerprinter) -> None:
    full_width = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in ENGLISH)
    assert full_width != ENGLISH
    assert fp.fingerprint(full_width) == ENGLISH_FINGERPRINT
    assert fp.fingerprint(ENGLISH.upper()) == ENGLISH_FINGERPRINT
    assert fp.fingerprint(ENGLISH.replace(" ", "\n  \t")) == ENGLISH_FINGERPRINT
    assert fp.fingerprint(ENGLISH.replace("keeper's", "keeper\u2019s")) == ENGLISH_FINGERPRINT
    assert fp.fingerprint(CHINESE.replace("，", ",").replace("。", ". ")) == CHINESE_FINGERPRINT


def test_stopwords_do_not_count(fp: Fingerprinter) -> None:
    padded = ENGLISH.replace(". ", ". And so it was that the ").replace("，", "，的")
    assert fp.fingerprint(padded) == ENGLISH_FINGERPRINT
    assert fp.fingerprint(CHINESE.replace("，", "，而且")) == CHINESE_FINGERPRINT
    assert Fingerprinter(stopwords=()).fingerprint(ENGLISH) != ENGLISH_FINGERPRINT


def test_similarity_of_a_near_copy(fp: Fingerprinter) -> None:
    copy = fp.fingerprint(ENGLISH.replace("forty years", "fifty years"))
    assert copy is not None
    assert similarity(ENGLISH_FINGERPRINT, copy) >= 1 - 3 / 64


# --- too little text ----------------------------------------------------------------------------

TWENTY_WORDS = (
    "lamp tower keeper harbour granite lantern beam ferry island village museum lens brass "
    "cottage solar masonry mortar gallery survey beach"
).split()


def test_below_min_tokens_is_none(fp: Fingerprinter) -> None:
    assert len(TWENTY_WORDS) == 20
    assert fp.fingerprint(" ".join(TWENTY_WORDS[:19])) is None
    assert fp.fingerprint(" ".join(TWENTY_WORDS)) is not None
    # stopwords do not count towards the minimum
    assert fp.fingerprint(" the ".join(TWENTY_WORDS[:19])) is None
    assert Fingerprinter(min_tokens=5).fingerprint("lamp tower keeper harbour granite") is not None
    assert Fingerprinter(min_tokens=5).fingerprint("lamp tower keeper harbour") is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "\n\t \u3000\n",
        "!!! ??? ... --- ,,, ;;; ::: ''' \"\"\" ((( ))) [[[ ]]]" * 20,
        "，。！？、；：「」『』（）" * 20,
        "🎉🚀🔥😀👍🏽🌍🍰🎈 " * 20,
        "the of and to in is it that was for on " * 20,
        "的 了 是 在 和 与 也 都 就" * 20,
    ],
)
def test_no_content_is_never_fingerprinted(text: str) -> None:
    for fingerprinter in (Fingerprinter(), Fingerprinter(min_tokens=1)):
        assert fingerprinter.fingerprint(text) is None
        assert fingerprinter.features(text) == {}


def test_short_chinese_is_none(fp: Fingerprinter) -> None:
    assert fp.fingerprint("北京大学发布人工智能模型。") is None
    assert fp.fingerprint(CHINESE) is not None


# --- features -----------------------------------------------------------------------------------


def test_features_are_tf_weights_heaviest_first(fp: Fingerprinter) -> None:
    features = fp.features(ENGLISH)
    tokens = fp.tokens(ENGLISH)
    assert features == {t: float(c) for t, c in Counter(tokens).items()}
    ranked = list(features.items())
    assert ranked == sorted(ranked, key=lambda fw: (-fw[1], fw[0]))
    assert features["keeper's"] == 2.0
    assert features["lantern"] == 2.0
    assert "the" not in features
    assert simhash(features) == ENGLISH_FINGERPRINT


def test_chinese_features_are_words(fp: Fingerprinter) -> None:
    features = fp.features(CHINESE)
    assert features["模型"] == 4.0
    for word in ("北京大学", "人工智能", "研究院", "机器翻译", "数字化"):
        assert word in features
    assert "的" not in features
    assert sum(len(w) for w in features) / len(features) >= 1.8


def test_mixed_chinese_english_text(fp: Fingerprinter) -> None:
    mixed = CHINESE + " The lighthouse at Carrow Point was restored with granite and lime."
    features = fp.features(mixed)
    assert "人工智能" in features
    assert "lighthouse" in features
    assert "granite" in features
    assert fp.fingerprint(mixed) == reference_simhash(fp.tokens(mixed))
    assert hamming_distance(fp.fingerprint(mixed), CHINESE_FINGERPRINT) <= 16  # type: ignore[arg-type]


def test_shingles_and_top_n(fp: Fingerprinter) -> None:
    bigrams = Fingerprinter(shingle_size=2).features(ENGLISH)
    assert "lantern room" in bigrams
    assert bigrams["lantern room"] == 2.0
    assert all(len(f.split(" ")) == 2 for f in bigrams)
    top = Fingerprinter(top_n=10)
    chosen = top.features(ENGLISH)
    assert len(chosen) == 10
    everything = fp.features(ENGLISH)
    assert chosen == dict(list(everything.items())[:10])  # heaviest, ties by feature
    assert top.fingerprint(ENGLISH) == simhash(chosen)
    assert Fingerprinter(top_n=10).features(ENGLISH) == chosen


def test_drop_numbers_option(fp: Fingerprinter) -> None:
    assert "1912" in fp.features(ENGLISH)
    assert "1912" not in Fingerprinter(drop_numbers=True).features(ENGLISH)


# --- threads ------------------------------------------------------------------------------------


def test_threads_fingerprint_chinese_like_serial() -> None:
    sentences = [s for s in re.split(r"(?<=。)", CHINESE + CHINESE_UNRELATED) if s]
    texts = ["".join(sentences[i:] + sentences[:i]) for i in range(len(sentences))]
    texts += [t + "\n" + ENGLISH[: 40 * (i + 1)] for i, t in enumerate(texts)]
    shared = Fingerprinter()
    serial = [Fingerprinter().fingerprint(t) for t in texts]
    assert all(f is not None for f in serial)
    results: dict[int, list[int | None]] = {}
    barrier = threading.Barrier(8)

    def work(n: int) -> None:
        barrier.wait()
        fingerprinter = shared if n % 2 else Fingerprinter()
        results[n] = [fingerprinter.fingerprint(t) for t in texts * 3]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == list(range(8))
    for got in results.values():
        assert got == serial * 3


def test_only_the_first_max_chars_characters_are_fingerprinted() -> None:
    capped = Fingerprinter(max_chars=len(ENGLISH))
    assert capped.fingerprint(ENGLISH + " zebra quagga okapi" * 50) == capped.fingerprint(ENGLISH)
    assert Fingerprinter().fingerprint(ENGLISH + " zebra quagga okapi" * 50) != capped.fingerprint(
        ENGLISH
    )
    with pytest.raises(ValueError, match="max_chars must be >= 1, got 0"):
        Fingerprinter(max_chars=0)


def test_machine_text_is_not_fingerprinted(fp: Fingerprinter) -> None:
    """A site that moves its images and links to another host publishes the same page."""
    links = " ".join(
        f"![figure {n}](https://cdn{n}.example.com/img/{n}.png) see https://example.com/p/{n} "
        f"or write to desk{n}@example.com"
        for n in range(12)
    )
    moved = links.replace("example.com", "images.other-host.net")
    assert fp.fingerprint(ENGLISH + links) == fp.fingerprint(ENGLISH + moved)
    keep = Fingerprinter(machine_text="keep")
    assert keep.fingerprint(ENGLISH + links) != keep.fingerprint(ENGLISH + moved)


@settings(max_examples=40, deadline=None)
@given(
    main=st.text(alphabet="abcdefgh 港口大桥", min_size=0, max_size=400),
    extra=st.text(alphabet="abcdefgh 港口大桥\n", min_size=0, max_size=600),
    unsure=st.booleans(),
)
def test_a_page_sketch_made_once_signs_as_the_visible_text_does(
    main: str, extra: str, unsure: bool
) -> None:
    """The page work signs a template-stripped page twice with one visible-text sketch
    (``page_sketch``): each signature is the one its text would get from the text itself."""
    fp = Fingerprinter(min_tokens=1)
    visible = main + "\n" + extra
    made_once = fp.page_sketch(visible)
    assert fp.sign(main, page_text=made_once, unsure=unsure) == fp.sign(
        main, page_text=visible, unsure=unsure
    )
    assert fp.sketch(main, page_text=made_once) == fp.sketch(main, page_text=visible)
