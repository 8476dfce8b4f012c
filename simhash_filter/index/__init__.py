"""The index kinds: how the store finds the pages the match rule may call copies of a page.

Permuted tables and multi-index hashing over the simhash, LSH bands over the MinHash sketch,
one interface for the store (a page's table keys, a query's probe keys). Pure code over the
core; no I/O.
"""
