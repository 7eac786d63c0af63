"""The console's Redis cache: Django's own backend, with one Redis client per connection pool.

Django's `RedisCacheClient` builds a new `redis.Redis` for every cache call, and building one
fills its table of response callbacks (about 0.1 ms of CPU here); the API-key cache is read on
every API request, so that was paid on every request. A `redis.Redis` over a connection pool is
safe to share between threads, so each pool's client is built once and kept.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class SharedClients(RedisCacheClient):
    """`RedisCacheClient` keeping the client it builds for each server's pool."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key=None, *, write=False):  # noqa: ANN001, ANN201
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            pool = self._pools.get(index)
            if pool is None:
                pool = self._pools.setdefault(
                    index,
                    self._pool_class.from_url(self._servers[index], **self._pool_options),
                )
            client = self._clients.setdefault(index, self._client(connection_pool=pool))
        return client


class SharedRedisCache(RedisCache):
    """Django's Redis cache backend over `SharedClients`."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = SharedClients
