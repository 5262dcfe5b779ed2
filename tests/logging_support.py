"""Logging put back as it was: an application run in the test process sets up its own logging
(console and log file handlers on the root and ``deltastreams`` loggers), which would otherwise
leak into the tests that run after it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def logging_put_back() -> Iterator[None]:
    loggers = [logging.getLogger(), logging.getLogger("deltastreams")]
    saved = [(logger, list(logger.handlers), logger.level, logger.propagate) for logger in loggers]
    try:
        yield
    finally:
        for logger, handlers, level, propagate in saved:
            for handler in [h for h in logger.handlers if h not in handlers]:
                logger.removeHandler(handler)
                handler.close()
            logger.setLevel(level)
            logger.propagate = propagate
