"""Benchmarks: each measures a job or a part of the runtime beside the peer or baseline it is
compared with, in the same run (``python -m deltastreams.devtools.bench`` is the pageview suite,
``python -m deltastreams.devtools.bench.peers`` every peer of it)."""
