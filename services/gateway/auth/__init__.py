"""Who a request is: the bearer-token gate, the tenant scope of what it reads and
writes, and ``GET /v1/whoami``."""
