"""The OpenAPI document (``/openapi.json``): request-body schemas, answers, problem
answers and examples, and the completion of FastAPI's document."""
