"""The core: page text → tokens → features → simhash and MinHash sketch, and the match rule.

Pure code: no I/O, no global mutable state, and nothing else of the package; it imports the
standard library, jieba, mmh3 and numpy only (``tests/test_layers.py`` holds it to that).
"""
