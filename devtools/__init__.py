"""Development tools: what the project runs to check itself, not what users run, and not shipped in
the wheel (setup.py installs conf, sinks, state, topology, streams and jobs only).

- :mod:`.bench`: benchmarks of the jobs, each beside the peer or baseline it is compared with;
- :mod:`.harness`: crash harnesses (kill -9 at random moments and inside the commit protocol) and the
  soak test, with the independent computations they check against;
- :mod:`.servers`: real servers on loopback for tests and harnesses (Apache Kafka, SeaweedFS S3, a
  Spark standalone cluster, hosts in network namespaces);
- :mod:`.differential`: Kafka Streams' own TopologyTestDriver as the oracle.

Run from a checkout (``bin/setup``): ``python -m deltastreams.devtools.bench --quick``.
"""
