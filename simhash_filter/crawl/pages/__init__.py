"""The page check: a downloaded page's verdict (``filter``), committed in groups, and the
Scrapy components that act on it (``pipeline``, ``middleware``). Never imports ``requests``."""
