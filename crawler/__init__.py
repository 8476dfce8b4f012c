"""A plain Scrapy project that uses simhash-filter like any other project would.

``scrapy crawl site -a start_url=https://example.com`` crawls a site with the near-duplicate
filter on (``ADDONS`` in :mod:`crawler.settings`); ``python -m crawler.demo`` runs the same
crawl against a loopback site with built-in near-duplicates, no internet needed.
"""
