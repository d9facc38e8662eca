"""``headwater serve``: the gateway, a coordinator, the projector and the workers of the
named queues in one process (``app``), for small deployments."""
