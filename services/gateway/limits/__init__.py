"""The limits of concurrency keys and rate limits as the projection shows them
(``GET /v1/limits``; docs/architecture.md §4n)."""
