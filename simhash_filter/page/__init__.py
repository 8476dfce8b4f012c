"""The page work: a page's HTML or text → its signature, in this process or in worker processes.

Extraction (trafilatura), the page work itself, the pool of worker processes and the worker's
entry point. It imports the core only (and trafilatura, lxml); never the store or Scrapy.
"""
