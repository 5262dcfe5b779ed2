"""The peers of the pageview job in ``python -m deltastreams.devtools.bench.peers``: the same computation as a user
of Kafka Streams or of plain Spark would write it, how each is started, fed, timed, stopped and
checked. One module per concern: the plain Spark job (:mod:`.spark_pageview`), the inputs every
peer reads (:mod:`.inputs`), how each peer runs (:mod:`.runners`), correctness (:mod:`.checks`),
latency on a steady stream (:mod:`.latency`) and the report (:mod:`.report`)."""
