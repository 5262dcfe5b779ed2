"""Kafka Streams itself as the oracle: random scenarios from a catalogue of topology shapes run
through Kafka's own TopologyTestDriver (a JVM, ``jvm/``) and through deltastreams' own, and must
give the same records and the same ``describe()``. ``python -m deltastreams.devtools.differential`` runs it."""
