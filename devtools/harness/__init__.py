"""Harnesses: jobs killed with kill -9 at random moments and inside the commit protocol, on local disk,
object stores and clusters, and the soak test; each checks what survives against a computation that
shares no code with the job (:mod:`.pageview_reference`, :mod:`.checks`)."""
