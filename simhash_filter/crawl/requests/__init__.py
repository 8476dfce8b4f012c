"""The request side: URL rules learned from drops (``rule_learner``, ``rule_book``), the
request fingerprint that carries a URL's rule form, and the requests skipped or rewritten
before the download. May use the page room's results (``pages.filter``, ``pages.outcomes``)."""
