"""Runnable applications: the pageview example, its data generator, benchmarks and harnesses."""
