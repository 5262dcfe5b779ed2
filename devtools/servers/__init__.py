"""Real servers on loopback for tests, harnesses and benchmarks, each started and stopped by its user:
Apache Kafka from the jars bin/setup builds, SeaweedFS (S3), a Spark standalone cluster from the pyspark
wheel, and hosts in network namespaces."""
