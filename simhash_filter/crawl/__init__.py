"""The Scrapy side: the add-on, the settings, the filter, the pipeline and the middleware.

Everything that runs inside a crawl and knows Scrapy. It calls the store and the page work;
nothing below it imports it, and the command line never does.
"""
