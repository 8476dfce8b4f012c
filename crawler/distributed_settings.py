"""Settings for a distributed crawl: this project's settings plus a shared Redis frontier.

    SCRAPY_SETTINGS_MODULE=crawler.distributed_settings scrapy crawl site \\
        -a start_url=https://example.com/ -s REDIS_URL=redis://redis-host:6379/0 \\
        -s SIMHASH_FILTER_DATABASE_URL=postgresql+psycopg://user:pw@db-host/dedup

Run that command on every worker (any number, any machine). The first worker to schedule
the start URL queues it; for the others it is already seen. Requests go through one Redis
queue, so each page is fetched by one worker, and every worker checks its pages against one
PostgreSQL index, so a near-duplicate found by any worker is dropped by all of them.
"""

from crawler.settings import *  # noqa: F403
from crawler.settings import EXTENSIONS

# The frontier: scrapy-redis's scheduler (a Redis sorted set of requests, by priority)
# and its duplicate filter (a Redis set of request fingerprints), shared by every worker.
# (crawler.frontier.FrontierScheduler: scrapy-redis's, riding out a Redis outage and
# stopping with finish_reason "frontier_lost" when a Redis restart lost the frontier)
SCHEDULER = "crawler.frontier.FrontierScheduler"
DUPEFILTER_CLASS = "scrapy_redis.dupefilter.RFPDupeFilter"
REDIS_URL = "redis://127.0.0.1:6379/0"
# Keep the queue and the seen-set when a worker stops: a worker that finishes early must
# not delete its peers' queue, and a killed or restarted worker resumes where the crawl is.
# Clear them for a fresh crawl: python -m crawler.distributed --prefix site clear
SCHEDULER_PERSIST = True
# Keys <REDIS_KEY_PREFIX>:requests / :dupefilter (scrapy-redis: %(spider)s:...).
SCHEDULER_QUEUE_KEY = "%(spider)s:requests"
SCHEDULER_DUPEFILTER_KEY = "%(spider)s:dupefilter"
# Which workers are working (WaitForPeers keeps idle workers open while one is).
DISTRIBUTED_WORKERS_KEY = "%(spider)s:workers"
# The frontier's mark: gone means Redis lost the queue and the seen-set (crawler/frontier.py).
DISTRIBUTED_FRONTIER_KEY = "%(spider)s:frontier"

# An idle worker stays open while a peer is working, then waits this long before it closes.
EXTENSIONS = {**EXTENSIONS, "crawler.distributed.WaitForPeers": 500}
DISTRIBUTED_IDLE_TIMEOUT = 10

# One index for every worker: PostgreSQL (a SQLite file works for workers on one machine).
SIMHASH_FILTER_DATABASE_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/dedup"
