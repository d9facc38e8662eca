"""The HTTP edge every route shares: problem documents, bounded JSON bodies and the
values they may hold, CORS, and the middleware stack."""
