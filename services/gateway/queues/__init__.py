"""Task queues: their figures, the workers that serve them, the admission of
submissions by them, and ``GET /v1/queues``."""
