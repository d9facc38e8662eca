"""The blob store of payloads by reference (``headwater/blobs.py``): where a large value's
JSON is kept (``store``), and how a service puts values in and takes them out
(``claims``)."""
