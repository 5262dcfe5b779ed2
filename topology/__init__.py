"""The logical graph of an application: nodes, sub-topologies, ``describe()``, and the split of a
sub-topology between Spark's Catalyst and the processing core (:mod:`deltastreams.topology.compile`)."""

from deltastreams.topology.describe import TopologyDescription
from deltastreams.topology.graph import GraphBuilder, SubTopology, Topology
from deltastreams.topology.nodes import StoreSpec, Windows
from deltastreams.topology.records import Windowed

__all__ = ["GraphBuilder", "StoreSpec", "SubTopology", "Topology", "TopologyDescription", "Windowed", "Windows"]
