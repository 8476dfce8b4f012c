"""The WordPress benchmark site: posts of real articles, and the content behind each URL.

    sh bench/aliasing/wordpress.sh                            # install, configure, start (root)
    .venv/bin/python -m bench.aliasing.wordpress fill         # posts from ../shared/data

A second, larger site (``--posts N``: more posts, the first 120 unchanged)::

    WP_PORT=8082 WP_STATE=/var/lib/simhash-bench-wp-large WP_DB=simhash_bench_wp_large \\
        WP_CONFIG=simhashbenchlarge sh bench/aliasing/wordpress.sh
    WP_PORT=8082 WP_STATE=/var/lib/simhash-bench-wp-large \\
        .venv/bin/python -m bench.aliasing.wordpress fill --posts 480

WordPress makes its own aliases: ``/?p=ID`` (a redirect to the permalink), ``?replytocom=N``
on every threaded comment, a permalink without its slash (a redirect), paginated home,
category, tag, date and author archives listing the same posts, query strings it ignores
(``?utm_source=``, ``?amp=1``, ``?print=1``), and it emits ``rel=canonical`` on posts. The
posts' authors add the aliases people paste: a "See also" paragraph links two other posts as
a shortlink, a share link with ``utm_*`` or ``fbclid``, ``?amp=1``, ``?print=1``, no slash, or
an upper-case slug.

Ground truth: the content of a URL is what WordPress renders there: a single post (``post/ID``,
from the ``postid-ID`` body class), an archive (``list/`` and the ids of the posts it lists),
else the page's title; the canonical URL of a post is its permalink (from WordPress itself).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from bench._common import DATA_DIR
from bench.aliasing.corpus import chinese_texts, english_texts, ud_texts
from crawler.testsite.aliasing import Text

__all__ = ["HOME", "STATE", "classify", "fill", "posts_json"]

HOME = f"http://127.0.0.1:{os.environ.get('WP_PORT', '8081')}"
STATE = Path(os.environ.get("WP_STATE", "/var/lib/simhash-bench-wp"))
FILL_SCRIPT = Path(__file__).with_name("wp_fill.php")
_NGINX_CONFIG = re.compile(r"fastcgi_param WORDPRESS_CONFIG (\S+);")
CATEGORIES = ("Business", "Politics", "Technology", "Sport", "Culture", "World")
LINK_KINDS = ("p", "utm", "noslash", "amp", "print", "fbclid", "upper", "plain")
"""How the "See also" paragraphs link other posts, in turn."""


def _post(k: int, text: Text, count: int, kind: str = "post") -> dict[str, object]:
    """One post of the JSON ``wp_fill.php`` reads (links as ``{{link:K:kind}}``)."""
    paragraphs = "\n\n".join(text.paragraphs)
    see_also = ""
    if kind == "post":
        targets = [(k + step) % count for step in (1, 5)]
        links = [
            f'<a href="{{{{link:{t}:{LINK_KINDS[t % len(LINK_KINDS)]}}}}}">{label}</a>'
            for t, label in zip(targets, ("this story", "our earlier report"), strict=True)
        ]
        see_also = f"\n\n<p>See also {links[0]} and {links[1]}.</p>"
    comments = []
    if k % 3 == 0:
        comments = [
            {"author": "Ana", "text": "Thanks, this was useful.", "reply": False},
            {"author": "Bram", "text": "I read it differently, see the third part.", "reply": True},
        ]
    return {
        "title": text.title,
        "content": paragraphs + see_also,
        "type": kind,
        "date": f"2024-{1 + k % 12:02d}-{1 + k % 28:02d} 09:{k % 60:02d}:00",
        "category": CATEGORIES[k % len(CATEGORIES)],
        "tags": [f"topic-{k % 9}", f"region-{k % 4}"],
        "comments": comments,
    }


def config_name() -> str:
    """The site's ``/etc/wordpress/config-NAME.php``: ``WP_CONFIG``, else the name
    ``wordpress.sh`` wrote into ``STATE/nginx.conf``, else the default site's."""
    nginx = STATE / "nginx.conf"
    found = _NGINX_CONFIG.search(nginx.read_text()) if nginx.exists() else None
    return os.environ.get("WP_CONFIG") or (found.group(1) if found else "simhashbench")


def posts_json(
    data: Path, *, english: int = 100, chinese: int = 20, posts: int = 120
) -> dict[str, object]:
    """The site's posts: ``english`` articles of ``pages_en`` (from its end, so that they are
    not the generated site's), ``chinese`` of ``pages_zh``, and a page. Beyond
    ``english + chinese``, up to ``posts`` posts: the rest of ``pages_en`` (but the page's
    article), the rest of ``pages_zh``, then Universal Dependencies documents."""
    en = english_texts(data)
    zh = chinese_texts(data)
    texts = en[-english:] + zh[:chinese]
    if posts > len(texts):
        extra = en[1:-english] + zh[chinese:]
        if posts - len(texts) > len(extra):
            extra += ud_texts(data)
        texts += extra[: posts - len(texts)]
    entries = [_post(k, text, len(texts)) for k, text in enumerate(texts)]
    about = Text("About the Harbour Herald", en[0].paragraphs[:4])
    entries.append(_post(len(entries), about, len(texts), kind="page"))
    return {"posts": entries}


def fill(data: Path, home: str = HOME, *, posts: int = 120) -> dict[str, object]:
    """Load the posts into WordPress (``wp_fill.php``; skipped when already loaded) and save
    its ground truth (post ids and permalinks) as ``STATE/truth.json``."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(posts_json(data, posts=posts), handle)
    try:
        out = subprocess.run(
            ["php", str(FILL_SCRIPT), handle.name, home, config_name()],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(handle.name)
    truth: dict[str, object] = json.loads(out[out.index("{") :])
    (STATE / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    return truth


_BODY_CLASS = re.compile(r'<body[^>]*class="([^"]*)"')
_SINGLE = re.compile(r"\b(?:postid|page-id|attachmentid)-(\d+)\b")
_LISTED = re.compile(r'<article id="post-(\d+)"')
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)


def classify(html: str) -> str:
    """The content id of a WordPress page (see the module docstring)."""
    body = _BODY_CLASS.search(html)
    classes = body.group(1) if body else ""
    single = _SINGLE.search(classes)
    if (single and "single" in classes) or (single and "page-template" in classes):
        return f"post/{single.group(1)}"
    if single:
        return f"post/{single.group(1)}"
    listed = _LISTED.findall(html)
    if listed:
        return "list/" + ",".join(listed)
    title = _TITLE.search(html)
    return "page/" + (title.group(1).strip() if title else classes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["fill", "posts"])
    parser.add_argument("--data", type=Path, default=DATA_DIR)
    parser.add_argument("--posts", type=int, default=120, help="posts (beyond 120: more texts)")
    args = parser.parse_args(argv)
    if args.command == "posts":
        print(json.dumps(posts_json(args.data, posts=args.posts), indent=2, ensure_ascii=False))
        return 0
    truth = fill(args.data, posts=args.posts)
    posts = truth["posts"]
    assert isinstance(posts, list)
    print(f"{len(posts)} posts and pages at {truth['home']} ({STATE / 'truth.json'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
