"""This project's ``scrapy`` commands (``COMMANDS_MODULE``): ``crawl`` with a failing exit
status when the shared frontier stopped the worker."""
