"""One refresh per provider at a time, and counting a task's deliveries, in the Django cache.

The cache is Redis when REDIS_URL is set (shared by every worker) and local memory otherwise
(one process only: enough for `make run`, not for several workers).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from django.core.cache import cache

logger = logging.getLogger(__name__)

# Delete the key only if it still holds our token: a lock that expired and was taken by
# another task is never released by the first one.
_RELEASE_SCRIPT = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def lock_key(slug: str) -> str:
    return f"refresh-lock:{slug}"


def _redis_client():
    """The raw redis client behind Django's RedisCache, or None for other backends."""
    inner = getattr(cache, "_cache", None)
    get_client = getattr(inner, "get_client", None)
    return get_client(write=True) if get_client else None


def release(key: str, token: str) -> bool:
    """Release `key` if `token` still holds it; True when released."""
    client = _redis_client()
    if client is not None:
        # RedisCache pickles values; compare against the stored bytes of our own token.
        full_key = cache.make_and_validate_key(key)
        stored = cache._cache._serializer.dumps(token)
        return bool(client.eval(_RELEASE_SCRIPT, 1, full_key, stored))
    if cache.get(key) == token:  # local memory: one process, no race to guard against
        cache.delete(key)
        return True
    return False


@contextmanager
def provider_lock(slug: str, token: str, timeout: int) -> Iterator[bool]:
    """Hold the provider's refresh lock for the block; yields False when another task holds it.

    A redelivery of the same task (same token) takes over the lock its lost delivery left.
    """
    key = lock_key(slug)
    acquired = cache.add(key, token, timeout)
    if not acquired and cache.get(key) == token:
        logger.warning("%s: taking over the lock an earlier delivery of this task left", slug)
        cache.set(key, token, timeout)
        acquired = True
    try:
        yield acquired
    finally:
        if acquired and not release(key, token):
            logger.warning("%s: the refresh lock expired before the task finished", slug)


def count_delivery(task_id: str, retries: int, timeout: int) -> int:
    """Count this delivery of a task attempt (retries give new attempts); 1 on the first."""
    key = f"refresh-deliveries:{task_id}:{retries}"
    cache.add(key, 0, timeout)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout)
        return 1
