"""The gateway: FastAPI app for submissions, views materialised from the log, and SSE."""
