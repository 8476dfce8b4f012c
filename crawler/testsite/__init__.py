"""A loopback web site with near-duplicates, for the demo, the end-to-end tests and benchmarks.

:func:`build_site` returns every page as bytes (with its ``Content-Type``), and
:class:`SiteServer` serves any such mapping on ``127.0.0.1`` at an ephemeral port from a
thread. Nothing touches the network beyond loopback, so the demo runs on a machine with no
internet. The pages look like real sites: each template has navigation, sidebars and a
footer around the article, and:

- ``harbour-bridge`` appears five times: the original news page, the same page under a URL
  with a tracking parameter, a print version with a changed date (linked only from the other
  four, and itself linking to ``/print/help.html``), a blog repost with a reader comment
  block, and a news page with one paragraph removed;
- four distinct articles share one heavy portal template;
- a Chinese article in UTF-8, and the same article, GBK-encoded (``charset=gbk`` in the header
  and the ``<meta>``), in another template with a changed date; a second, distinct Chinese
  article;
- broken input: an empty page, random bytes served as ``text/html``, a 5 MB page (an article
  followed by a huge inline JSON blob), a photo gallery page with no main text;
- ``robots.txt`` disallowing ``/private/`` (linked from the home page);
- on request, boilerplate traps (issue 13.E): forum threads whose extracted text is the
  forum's moderation notice alone, and a portal article reposted in the news template.
"""

from .generated import GENERATED_CLUSTER_SIZES, generated_article, generated_site
from .pages import FORUM_THREADS, HUGE_PAGE_BYTES, SHORT_PARAGRAPH, build_site
from .server import HTML_UTF8, Page, SiteServer
from .templates import (
    FORUM_NOTICE,
    blog_template,
    forum_template,
    html_page,
    news_template,
    portal_template,
    print_template,
    zh_news_template,
    zh_portal_template,
)

__all__ = [
    "FORUM_NOTICE",
    "FORUM_THREADS",
    "GENERATED_CLUSTER_SIZES",
    "HTML_UTF8",
    "HUGE_PAGE_BYTES",
    "SHORT_PARAGRAPH",
    "Page",
    "SiteServer",
    "blog_template",
    "build_site",
    "forum_template",
    "generated_article",
    "generated_site",
    "html_page",
    "news_template",
    "portal_template",
    "print_template",
    "zh_news_template",
    "zh_portal_template",
]
