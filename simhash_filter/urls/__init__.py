"""URLs (pure): a page URL's keys, and a request URL's canonical form under universal and
learned site rules.

- :mod:`~simhash_filter.urls.key`: a page URL's keys (canonical form, domain, declared
  canonical), made once a page;
- :mod:`~simhash_filter.urls.universal`: tracking and session parameters every site shares;
- :mod:`~simhash_filter.urls.rules`: one learned site rule (DUST: a parameter, a path prefix or
  suffix, case) and what it does to a URL;
- :mod:`~simhash_filter.urls.ruleset`: the rules a crawl applies, indexed for one request;
- :mod:`~simhash_filter.urls.learning`: candidate rules from pairs of URLs with the same content,
  and the evidence a verdict gives for or against a rule.

No I/O, no global mutable state: the store keeps the rules, the crawl applies them.
"""
