"""The logical graph of an application: nodes, sub-topologies, ``describe()``; later its
compilation to Spark queries."""

from topology.describe import TopologyDescription
from topology.graph import GraphBuilder, SubTopology, Topology
from topology.nodes import StoreSpec, Windows

__all__ = ["GraphBuilder", "StoreSpec", "SubTopology", "Topology", "TopologyDescription", "Windows"]
