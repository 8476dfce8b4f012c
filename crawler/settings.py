"""Settings of the ``crawler`` project (``scrapy.cfg``: ``default = crawler.settings``).

The near-duplicate filter is on through its add-on; everything else is ordinary Scrapy.
Depth and page limits are the usual ones: ``-s DEPTH_LIMIT=3``, ``-s CLOSESPIDER_PAGECOUNT=500``.
"""

BOT_NAME = "crawler"
SPIDER_MODULES = ["crawler.spiders"]
# `scrapy crawl` exits 1 when the shared frontier stopped the worker (crawler/commands/)
COMMANDS_MODULE = "crawler.commands"
NEWSPIDER_MODULE = "crawler.spiders"

USER_AGENT = "simhash-filter-crawler/0.1 (+https://github.com/simhash-filter/simhash-filter)"
ROBOTSTXT_OBEY = True
# Scrapy's RobotsTxtMiddleware, mended: see crawler/middlewares.py.
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawler.middlewares.RobotsTxtMiddleware": 100,
}

# Polite by default; the demo and the tests override these for their loopback site.
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 4
DOWNLOAD_DELAY = 0.25

ADDONS = {"simhash_filter.Addon": 100}
SIMHASH_FILTER_DATABASE_URL = "sqlite:///dedup.db"
SIMHASH_FILTER_FINGERPRINT_FIELD = "fingerprint"
SIMHASH_FILTER_REMOVE_HTML = False  # the items keep their (decoded: str) HTML in pages.jsonl

# -s STATS_FILE=stats.json writes the crawl's final stats as JSON.
EXTENSIONS = {"crawler.extensions.StatsFile": 500}
# a storage pipeline that replaces superseded pages (-s KEPT_PAGES_FILE=kept.jsonl)
ITEM_PIPELINES = {"crawler.pipelines.KeptPagesFile": 800}

FEED_EXPORT_ENCODING = "utf-8"
TELNETCONSOLE_ENABLED = False
LOG_LEVEL = "INFO"
