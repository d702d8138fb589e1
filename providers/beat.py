"""Beat's scheduler: the code-defined schedule kept in Redis (RedBeat), sent by one beat at a time.

`SingleBeatScheduler` is RedBeat's scheduler (entries and their last-run times in Redis, so a
restarted or replacement beat neither repeats nor skips a run) with its lock handled here rather
than by RedBeat's start-up hook, which blocks in a loop no log line explains and leaves a beat
that lost the lock (Redis restarted empty) or never got it (Redis down at start) crashing on its
next tick. Here every tick first holds the lock, a Redis key with a timeout:

- it extends the lock it holds, or takes it when free (SET NX), then sends what is due;
- when another beat holds it, it sends nothing, says so once, and tries again next tick;
- when Redis does not answer, it sends nothing, logs why, and tries again a few seconds later.

Only the holder writes the schedule from `providers/schedule.py` into Redis, each time it takes
the lock (so a Redis restarted without its data gets the entries back). A beat stopped cleanly
releases the lock and a standby takes over within one tick; a beat killed outright keeps it until
it expires (BEAT_LOCK_TIMEOUT_SECONDS). Two beats therefore never send the same run, and a dozen
may be started for availability.
"""

from __future__ import annotations

import logging

from redbeat.schedulers import RedBeatScheduler, get_redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import LockError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger("celery.beat")

# How soon a beat that cannot reach Redis tries again (capped by its tick interval).
REDIS_RETRY_SECONDS = 2.0


class SingleBeatScheduler(RedBeatScheduler):
    """RedBeat whose every tick sends only while this beat holds the Redis lock."""

    def __init__(self, app, **kwargs) -> None:
        super().__init__(app, **kwargs)
        # RedBeat's beat_init hook skips a scheduler without lock_key: the lock is ours.
        self.beat_lock_key, self.lock_key = self.lock_key, None
        self.lock = None
        self.holding = False
        self.standing_by = False
        self.redis_down = False

    def setup_schedule(self) -> None:
        """Written to Redis by the lock holder (`install_schedule`), not by every beat at start."""

    def install_schedule(self) -> None:
        super().setup_schedule()
        logger.info(
            "beat: schedule installed in Redis (%d entries)", len(self.app.conf.beat_schedule)
        )

    def hold_lock(self) -> bool:
        """Extend the lock this beat holds, or take it when free; False while another holds it."""
        if self.lock is None:
            self.lock = get_redis(self.app).lock(
                self.beat_lock_key, timeout=self.lock_timeout, thread_local=False
            )
        if self.holding:
            try:
                return self.lock.extend(self.lock_timeout, replace_ttl=True)
            except LockError:  # expired while Redis was away, or Redis restarted empty
                logger.warning("beat: lost the lock %s", self.beat_lock_key)
                self.holding = False
        if not self.lock.acquire(blocking=False):
            if not self.standing_by:
                logger.info(
                    "beat: another beat holds the lock %s: standing by, sending nothing",
                    self.beat_lock_key,
                )
                self.standing_by = True
            return False
        self.holding, self.standing_by = True, False
        logger.info(
            "beat: acquired the lock %s (%s s): this beat sends the schedule",
            self.beat_lock_key,
            self.lock_timeout,
        )
        self.install_schedule()
        return True

    def tick(self, min=min, **kwargs) -> float:
        try:
            if not self.hold_lock():
                return self.max_interval
            due_in = [
                self.maybe_due(entry, **self._maybe_due_kwargs) for entry in self.schedule.values()
            ]
        except (RedisConnectionError, RedisTimeoutError) as exc:
            if not self.redis_down:
                logger.error("beat: Redis does not answer, nothing is sent until it does: %s", exc)
            self.redis_down = True
            return min(REDIS_RETRY_SECONDS, self.max_interval)
        if self.redis_down:
            logger.warning("beat: Redis answers again")
            self.redis_down = False
        return min([seconds for seconds in due_in if seconds] + [self.max_interval])

    def close(self) -> None:
        if self.lock is not None and self.holding:
            try:
                self.lock.release()
                logger.info("beat: released the lock %s", self.beat_lock_key)
            except (LockError, RedisError) as exc:  # it expires on its own
                logger.warning("beat: could not release the lock: %s", exc)
        self.lock, self.holding = None, False
        super().close()

    @property
    def info(self) -> str:
        return (
            f"       . redis -> {self.app.redbeat_conf.redis_url.split('@')[-1]}\n"
            f"       . lock -> {self.beat_lock_key} ({self.lock_timeout} s)"
        )
