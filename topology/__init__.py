"""The logical graph of an application: nodes, sub-topologies, ``describe()``, and the split of a
sub-topology between Spark's Catalyst and the processing core (:mod:`topology.compile`)."""

from topology.describe import TopologyDescription
from topology.graph import GraphBuilder, SubTopology, Topology
from topology.nodes import StoreSpec, Windows
from topology.records import Windowed

__all__ = ["GraphBuilder", "StoreSpec", "SubTopology", "Topology", "TopologyDescription", "Windowed", "Windows"]
