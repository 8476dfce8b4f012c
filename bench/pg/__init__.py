"""The PostgreSQL write path benchmark (``python -m bench.bench_pg``), by concern.

``main`` (the command line and the run), ``setup`` (the rule a database is made with and
its random pages), ``floor`` (the one-round-trip lower bound), ``equivalence`` (the floor
checked against the store), ``load`` (the COPY loader), ``workers`` (the timed processes),
``cells`` (a measured cell), ``cpu`` (backend CPU from /proc), ``pgbench`` (the yardstick),
``proxy`` (round trips counted on the wire), ``database`` (URLs and connections).
"""
