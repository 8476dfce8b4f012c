"""The Scrapy side, in two rooms: ``pages`` (the page check: filter, pipeline, middleware)
and ``requests`` (URL rules, request fingerprints, skips before the download).

At the top: the add-on, the settings (``config``), the signals and the start-up report,
which both rooms use. The page room never imports the request room (``tests/test_layers.py``);
nothing below the Scrapy side imports it, and the command line never does.
"""
