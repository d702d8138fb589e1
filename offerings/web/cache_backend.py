"""Django's Redis cache backend, with one Redis client per connection pool.

Django's `RedisCacheClient.get_client` builds a new `redis.Redis` for every operation, and
redis-py's constructor is not cheap (it builds its table of reply parsers each time): on a cached
page that was a fifth of the request. A `redis.Redis` is thread-safe and holds no data, only its
pool, so one per pool serves every thread of the process."""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class PooledClientRedisCacheClient(RedisCacheClient):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, object] = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class PooledClientRedisCache(RedisCache):
    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = PooledClientRedisCacheClient
