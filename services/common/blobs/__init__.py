"""The blob store of payloads by reference (``headwater/blobs.py``): where a large value's
JSON is kept (``store``: PostgreSQL; ``s3``: a bucket, its rows in PostgreSQL), how a
service puts values in and takes them out (``claims``), and when they go (``collect``)."""
